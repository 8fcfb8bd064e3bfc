//! The stance model beside the word rules, in one run: `cargo bench --bench stance`.
//!
//! Files: the Emergent dev split (`../shared/data/stance/emergent-dev.csv`, news headlines), the
//! RumourEval 2017 replies (`rumoureval2017.csv`, real replies on Twitter), and the project's own
//! pairs (`tests/data/stance/`: `pairs.jsonl` same-claim pairs, `multilingual.jsonl`,
//! `contrastive.jsonl`), and the CheckThat! tweets the project labelled (`tweets.jsonl`: the train
//! split's tweets are `dev`, the dev split's `test`). The first two and the own and tweets' `dev`
//! splits are the training data: each is scored *cross-validated by claim* (5 folds by the claim's
//! hash; each fold's head is fitted on the other folds of every file), at the thresholds this very
//! procedure chooses on those probabilities (the shipped head's thresholds). The own `test` split,
//! the tweets' `test` split, `tests/data/stance/shapes.jsonl` (the shapes that fool the model,
//! never trained on), and any file named by `MUSEBOT_STANCE_PAIRS` (comma-separated CSVs in
//! Emergent's columns), are scored by the head as it ships. Per scorer and file it prints `stance
//! shipped: label precision P, recall R, on N pairs (FILE)` ("label": the decision says *asserts*),
//! `stance shipped sentences: asserts precision P recall R; denies …; asks or reports …; neutral U
//! of N (FILE)`, the same two for the word rules (`stance word-rules…`: their own reading, as the
//! bot used it before the model decided), the confusion tables, the own test pairs by language and
//! the contrastive ones, each post of a named file told a sentence its gold label does not match
//! (`misread: …`), and the microseconds per pair. `MUSEBOT_STANCE_LLM` (an OpenAI-compatible
//! `/v1` root, `MUSEBOT_STANCE_LLM_MODEL` its model) scores the own test pairs again with that
//! LLM's second opinion (`verify.stance`): `stance shipped+llm …`, with how many were asked and the
//! milliseconds an ask.
//!
//! `--train PATH` also writes the head fitted on all the training data, with its thresholds, to
//! PATH (`scripts/train-stance.sh` does this and re-pins it); `--candidate` (or an overridden
//! weight, `MUSEBOT_STANCE_OWN_WEIGHT`, `MUSEBOT_STANCE_TWEET_WEIGHT`) scores that head on the test
//! files and the named ones beside the shipped one (`stance candidate …`). Settings: the shipped
//! defaults; the multilingual model is the sandbox's (`MUSEBOT_EMBED_MODEL_MULTI`), as `musebot
//! models install` installs it.

use std::path::{Path, PathBuf};
use std::time::Instant;

use musebot::relevance::{Embedder, RelevanceConfig};
use musebot::stance::fit::DevFile;
use musebot::stance::train::{self, Featured, Figures, Gold, Pair, Set};
use musebot::stance::{rules, Domain, Reading, Stance, CLASSES};

/// The precision each sentence must reach on a dev file (`for`, `against`, `observing`):
/// headlines, real replies, the own posts.
const HEADLINES: [f32; CLASSES] = [0.90, 0.85, 0.80];
const REPLIES: [f32; CLASSES] = [0.50, 0.50, 0.85];
const OWN: [f32; CLASSES] = [0.95, 0.85, 0.80];

/// The labelled CheckThat! tweets (`tests/data/stance/tweets.jsonl`): the train split's
/// tweets are training data, the dev split's are scored by the head as it ships.
const TWEETS_DEV: &str = "tests/data/stance/tweets.jsonl (dev split: CheckThat! train tweets)";
const TWEETS_TEST: &str = "tests/data/stance/tweets.jsonl (test split: CheckThat! dev tweets)";

/// The shapes that fool the model (`tests/data/stance/shapes.jsonl`), never trained on.
const SHAPES: &str = "tests/data/stance/shapes.jsonl (never trained on)";

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("stance benchmark: skipped here; run it with `cargo bench --bench stance`");
        return;
    }
    let argv: Vec<String> = std::env::args().collect();
    let write_to = argv
        .iter()
        .position(|a| a == "--train")
        .and_then(|i| argv.get(i + 1))
        .map(PathBuf::from);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |file: &str| {
        let path = if Path::new(file).is_absolute() {
            PathBuf::from(file)
        } else {
            repo.join(file)
        };
        train::read_emergent(&path).unwrap_or_else(|e| panic!("{e}"))
    };
    let emergent_file = "../shared/data/stance/emergent-dev.csv";
    let replies_file = "../shared/data/stance/rumoureval2017.csv";
    let emergent = read(emergent_file);
    let replies = read(replies_file);
    let own = train::read_own(repo, &repo.join("../shared/data/claim-matching")).unwrap_or_else(|e| panic!("{e}"));
    let (own_dev, own_test): (Vec<Pair>, Vec<Pair>) = own.into_iter().partition(|p| p.split == "dev");
    let tweets =
        train::read_tweets(repo, &repo.join("../shared/data/claim-matching")).unwrap_or_else(|e| panic!("{e}"));
    let (tweets_dev, tweets_test): (Vec<Pair>, Vec<Pair>) = tweets
        .into_iter()
        .filter(|p| p.split == "dev" || p.split == "test")
        .partition(|p| p.split == "dev");
    let sandbox = sandbox();
    let embedder = Embedder::load(&RelevanceConfig {
        onnxruntime: sandbox["MUSEBOT_ORT_DYLIB"].clone(),
        model: sandbox["MUSEBOT_EMBED_MODEL_MULTI"].clone(),
        tokenizer: sandbox["MUSEBOT_EMBED_TOKENIZER_MULTI"].clone(),
        ..RelevanceConfig::default()
    })
    .expect("the sandbox's multilingual model loads");
    let featurize = |pairs: &[Pair]| -> Vec<Featured> {
        let (texts, index) = train::embedded_texts(pairs);
        let v = embedder.embed(&texts).expect("embedding");
        train::featurize(pairs, &v, &index)
    };
    let shipped = musebot::stance::head();
    println!(
        "settings: shipped defaults; stance head {} (thresholds {}); multilingual model {}",
        musebot::pins::STANCE_HEAD,
        shipped.map_or("none: the head does not load".into(), |h| format!("{:?}", h.thresholds)),
        sandbox["MUSEBOT_EMBED_MODEL_MULTI"]
    );

    let started = Instant::now();
    let f_emergent = featurize(&emergent);
    let embed_us = started.elapsed().as_secs_f64() * 1e6 / emergent.len().max(1) as f64;
    let f_replies = featurize(&replies);
    let f_own_dev = featurize(&own_dev);
    let f_tweets_dev = featurize(&tweets_dev);
    let weight = train::own_weight();
    let tweet_weights = train::tweet_weights();
    let (l2, steps) = musebot::stance::fit::l2_and_steps();
    println!("training: the gate on every row (Emergent: headlines; RumourEval: replies; own pairs and tweets: posts); the posts' expert on Emergent dev, the own dev pairs ({weight} times each, train::OWN_WEIGHT {}) and the labelled CheckThat! train tweets ({} times each, train::TWEET_WEIGHTS {:?}); the replies' expert on RumourEval 2017, the own dev pairs once and the tweets {} times; L2 {l2}, {steps} steps", train::OWN_WEIGHT, tweet_weights[0], train::TWEET_WEIGHTS, tweet_weights[1]);
    let gold = |pairs: &[Pair]| pairs.iter().map(|p| p.gold).collect::<Vec<Gold>>();
    let sets = [
        Set {
            featured: &f_emergent,
            gold: gold(&emergent),
            domain: Domain::Headline,
            weights: train::HEADLINES,
            folds: Some(train::folds(&emergent, 5)),
        },
        Set {
            featured: &f_replies,
            gold: gold(&replies),
            domain: Domain::Reply,
            weights: train::REPLIES,
            folds: Some(train::folds(&replies, 5)),
        },
        Set {
            featured: &f_own_dev,
            gold: gold(&own_dev),
            domain: Domain::Post,
            weights: train::own_weights(),
            folds: Some(train::folds(&own_dev, 5)),
        },
        Set {
            featured: &f_tweets_dev,
            gold: gold(&tweets_dev),
            domain: Domain::Post,
            weights: tweet_weights,
            folds: Some(train::folds(&tweets_dev, 5)),
        },
    ];
    let started = Instant::now();
    let cv = train::cross_validate(&sets, 5);
    let fit_s = started.elapsed().as_secs_f64();
    let probs: Vec<Vec<Reading>> = cv.into_iter().map(|p| p.expect("folds")).collect();
    let classes = |g: &[Gold]| g.iter().map(|g| g.class()).collect::<Vec<usize>>();
    let questions = |f: &[Featured]| f.iter().map(|f| f.question).collect::<Vec<bool>>();
    let (c0, c1, c2, c3) = (
        classes(&sets[0].gold),
        classes(&sets[1].gold),
        classes(&sets[2].gold),
        classes(&sets[3].gold),
    );
    let (q0, q1, q2, q3) = (
        questions(&f_emergent),
        questions(&f_replies),
        questions(&f_own_dev),
        questions(&f_tweets_dev),
    );
    let rules_of = |f: &[Featured]| f.iter().map(|f| f.opposed).collect::<Vec<bool>>();
    let (r0, r1, r2, r3) = (
        rules_of(&f_emergent),
        rules_of(&f_replies),
        rules_of(&f_own_dev),
        rules_of(&f_tweets_dev),
    );
    let dev = [
        DevFile {
            name: emergent_file,
            readings: &probs[0],
            gold: &c0,
            question: &q0,
            opposed: &r0,
            targets: HEADLINES,
        },
        DevFile {
            name: replies_file,
            readings: &probs[1],
            gold: &c1,
            question: &q1,
            opposed: &r1,
            targets: REPLIES,
        },
        DevFile {
            name: "own dev",
            readings: &probs[2],
            gold: &c2,
            question: &q2,
            opposed: &r2,
            targets: OWN,
        },
        DevFile {
            name: "tweets dev",
            readings: &probs[3],
            gold: &c3,
            question: &q3,
            opposed: &r3,
            targets: OWN,
        },
    ];
    for file in &dev {
        curve(file);
    }
    if let Ok(out) = std::env::var("MUSEBOT_STANCE_DUMP") {
        // Every dev pair's cross-validated reading, to read the errors by hand.
        let mut text = String::new();
        for (pairs, readings, featured) in [
            (&emergent, &probs[0], &f_emergent),
            (&replies, &probs[1], &f_replies),
            (&own_dev, &probs[2], &f_own_dev),
            (&tweets_dev, &probs[3], &f_tweets_dev),
        ] {
            for ((p, r), f) in pairs.iter().zip(readings).zip(featured) {
                text.push_str(&format!(
                    "{}\t{}\t{:.3}\t{:.3}\t{:.3}\t{:.3}\t{:?}\t{}\t{}\t{}\n",
                    p.group.replace('\t', " "),
                    p.gold.as_str(),
                    r.p[0],
                    r.p[1],
                    r.p[2],
                    r.reply,
                    r.domain,
                    f.opposed,
                    p.claim.replace(['\t', '\n'], " "),
                    p.post.replace(['\t', '\n'], " ")
                ));
            }
        }
        std::fs::write(&out, text).expect("the dump");
    }
    let thresholds = musebot::stance::fit::thresholds(&dev);
    println!("thresholds chosen on the cross-validated probabilities (targets: headlines {HEADLINES:?}, replies {REPLIES:?}, own {OWN:?}): {thresholds:?}; {fit_s:.0} s for 5 fits");
    let cv_thresholds = thresholds;
    let how = "cross-validated by claim, 5 folds; thresholds chosen on these probabilities";
    for (i, (file, pairs, featured)) in [
        (emergent_file, &emergent, &f_emergent),
        (replies_file, &replies, &f_replies),
        ("tests/data/stance (dev split)", &own_dev, &f_own_dev),
        (TWEETS_DEV, &tweets_dev, &f_tweets_dev),
    ]
    .into_iter()
    .enumerate()
    {
        let decided = train::sentences(&cv_thresholds, &probs[i], featured, musebot::stance::POLARITY_GUARD);
        report("shipped", file, pairs, &decided, how);
        let unvetoed = train::sentences(&cv_thresholds, &probs[i], featured, !musebot::stance::POLARITY_GUARD);
        println!(
            "  the same {} the polarity guard: {}",
            if musebot::stance::POLARITY_GUARD {
                "without"
            } else {
                "with"
            },
            Figures::of(&unvetoed, &gold(pairs)).sentences_text()
        );
        report_rules(file, pairs);
    }

    // The test files (own pairs, labelled tweets, shapes) and any named file: the head as it ships.
    let own_file = "tests/data/stance/{pairs,multilingual,contrastive}.jsonl (test split)";
    let started = Instant::now();
    let decided = as_shipped(&embedder, own_file, &own_test);
    let own_us = started.elapsed().as_secs_f64() * 1e6 / own_test.len().max(1) as f64;
    by_language(&own_test, &decided);
    contrastive(&own_test, &decided);
    as_shipped(&embedder, TWEETS_TEST, &tweets_test);
    let shapes = train::read_shapes(repo).unwrap_or_else(|e| panic!("{e}"));
    let decided = as_shipped(&embedder, SHAPES, &shapes);
    contrastive(&shapes, &decided);
    misread(&shapes, &decided);
    if let Ok(base_url) = std::env::var("MUSEBOT_STANCE_LLM") {
        second_opinion(&base_url, own_file, &own_test, &embedder);
    }
    let named: Vec<(String, Vec<Pair>)> = std::env::var("MUSEBOT_STANCE_PAIRS")
        .unwrap_or_default()
        .split(',')
        .filter(|f| !f.trim().is_empty())
        .map(|f| (f.trim().to_string(), read(f.trim())))
        .collect();
    for (file, pairs) in &named {
        let decided = as_shipped(&embedder, file, pairs);
        misread(pairs, &decided);
    }
    examples(&embedder, None);
    let sets_all = &sets;
    // A candidate head (fitted in this run on all the training data) is scored on the test
    // files beside the shipped one when a weight is overridden or `--candidate` is given.
    let candidate = std::env::var("MUSEBOT_STANCE_OWN_WEIGHT").is_ok()
        || std::env::var("MUSEBOT_STANCE_TWEET_WEIGHT").is_ok()
        || argv.iter().any(|a| a == "--candidate");
    let mut fitted = if write_to.is_some() || candidate {
        Some(train::fit_all(sets_all))
    } else {
        None
    };
    if let Some(h) = fitted.as_mut() {
        h.thresholds = thresholds;
        if candidate {
            let files = [(own_file, &own_test), (TWEETS_TEST, &tweets_test), (SHAPES, &shapes)]
                .into_iter()
                .chain(named.iter().map(|(f, p)| (f.as_str(), p)));
            for (file, pairs) in files {
                let f = featurize(pairs);
                let p: Vec<Reading> = f.iter().map(|x| h.read(&x.features)).collect();
                let decided = train::sentences(&h.thresholds, &p, &f, musebot::stance::POLARITY_GUARD);
                report("candidate", file, pairs, &decided, "the head fitted in this run");
                if file == own_file || file == SHAPES {
                    contrastive(pairs, &decided);
                }
                if file != own_file && file != TWEETS_TEST {
                    misread(pairs, &decided);
                }
            }
            examples(&embedder, Some(h));
        }
    }
    println!(
        "time per pair: shipped {embed_us:.0} µs on {emergent_file} (embedding post and claim, 1 thread session; the decision itself {:.1} µs), {own_us:.0} µs on the own pairs; word rules {:.1} µs",
        decision_us(&f_emergent),
        rules_us(&emergent)
    );

    if let (Some(out), Some(mut head)) = (write_to, fitted) {
        let figures = |i: usize, pairs: &[Pair], f: &[Featured]| {
            let fg = Figures::of(
                &train::sentences(&head.thresholds, &probs[i], f, musebot::stance::POLARITY_GUARD),
                &gold(pairs),
            );
            fg.sentences_text()
        };
        head.trained = serde_json::json!({
            "by": "scripts/train-stance.sh (cargo bench --bench stance -- --train)",
            "pairs": {"emergent_dev": emergent.len(), "rumoureval2017": replies.len(), "own_dev": own_dev.len(), "own_weights": train::own_weights(), "tweets_dev": tweets_dev.len(), "tweet_weights": tweet_weights},
            "features": "src/stance/features.rs",
            "l2": musebot::stance::fit::L2, "steps": musebot::stance::fit::STEPS,
            "thresholds_from": "claim-fold cross-validation on the training files: per sentence, the lowest probability whose precision reaches every file's target",
            "cross_validated": {
                "emergent_dev": figures(0, &emergent, &f_emergent),
                "rumoureval2017": figures(1, &replies, &f_replies),
                "own_dev": figures(2, &own_dev, &f_own_dev),
                "tweets_dev": figures(3, &tweets_dev, &f_tweets_dev),
            },
        });
        let text = serde_json::to_string(&head).expect("a head serialises") + "\n";
        std::fs::write(&out, &text).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
        println!(
            "wrote {} (SHA-256 {})",
            out.display(),
            musebot::pins::sha256_bytes(text.as_bytes())
        );
    }
}

/// A file scored by the head as it ships and by the word rules beside it (their two reports);
/// the head's sentence for each pair.
fn as_shipped(embedder: &Embedder, file: &str, pairs: &[Pair]) -> Vec<Stance> {
    let texts: Vec<(&str, &str)> = pairs.iter().map(|p| (p.post.as_str(), p.claim.as_str())).collect();
    let decided: Vec<Stance> = musebot::stance::decide_all(Some(embedder), &texts)
        .into_iter()
        .map(|s| s.stance)
        .collect();
    report("shipped", file, pairs, &decided, "the shipped head");
    report_rules(file, pairs);
    decided
}

/// The word rules' own reading of a file, reported beside the model's.
fn report_rules(file: &str, pairs: &[Pair]) {
    report(
        "word-rules",
        file,
        pairs,
        &train::rules_alone(pairs),
        "the rules' own reading",
    );
}

/// Each sentence's precision and recall on a dev file's cross-validated probabilities at a
/// few thresholds (what the thresholds are chosen from).
fn curve(file: &DevFile) {
    for (k, name) in ["asserts", "denies", "observing"].iter().enumerate() {
        let positives = file.gold.iter().filter(|g| **g == k).count().max(1);
        let mut line = format!("  curve {name} ({}, {positives} gold):", file.name);
        for t in [0.4f32, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95] {
            let (mut said, mut right) = (0usize, 0usize);
            for (r, g) in file.readings.iter().zip(file.gold) {
                let p = r.p;
                let best = (0..CLASSES).max_by(|a, b| p[*a].total_cmp(&p[*b])).unwrap_or(2);
                if best == k && p[k] >= t {
                    said += 1;
                    right += usize::from(*g == k);
                }
            }
            let precision = if said == 0 {
                f32::NAN
            } else {
                right as f32 / said as f32
            };
            line.push_str(&format!(
                " {t}: P {precision:.2} R {:.2} ({said});",
                right as f32 / positives as f32
            ));
        }
        println!("{line}");
    }
}

/// The decision alone (three dot products), per pair.
fn decision_us(featured: &[Featured]) -> f64 {
    let Some(head) = musebot::stance::head() else {
        return f64::NAN;
    };
    let started = Instant::now();
    let mut n = 0usize;
    for f in featured {
        let r = head.read(&f.features);
        n += usize::from(
            musebot::stance::sentence(&head.thresholds, r, f.question, f.opposed, true).0 == Stance::Asserts,
        );
    }
    std::hint::black_box(n);
    started.elapsed().as_secs_f64() * 1e6 / featured.len().max(1) as f64
}

/// `verify.stance` measured: the shipped head with the LLM at `base_url` (an OpenAI-compatible
/// endpoint, e.g. the sandbox's local model) as its second opinion, on `pairs`.
fn second_opinion(base_url: &str, file: &str, pairs: &[Pair], embedder: &Embedder) {
    use musebot::pipeline::muse::opinion;
    let config = musebot::config::LlmConfig {
        base_url: base_url.to_string(),
        model: std::env::var("MUSEBOT_STANCE_LLM_MODEL").unwrap_or_else(|_| "local".into()),
        ..Default::default()
    };
    let llm = musebot::llm::LlmClient::new(&config, None).expect("the LLM client");
    let prompts = musebot::prompts::Prompts::load(Path::new("")).expect("the built-in prompts");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let texts: Vec<(&str, &str)> = pairs.iter().map(|p| (p.post.as_str(), p.claim.as_str())).collect();
    let model = musebot::stance::decide_all(Some(embedder), &texts);
    let (mut asked, mut failed) = (0usize, 0usize);
    let started = Instant::now();
    let decided: Vec<Stance> = model
        .into_iter()
        .zip(pairs)
        .map(|(m, p)| {
            if m.stance != Stance::Unclear {
                asked += 1;
            }
            match runtime.block_on(opinion::second(&llm, &prompts, &p.post, m)) {
                Ok((s, _)) => s.stance,
                Err(e) => {
                    failed += 1;
                    eprintln!("second opinion failed: {e}");
                    Stance::Unclear
                }
            }
        })
        .collect();
    println!(
        "settings: verify.stance = true (default false), the LLM at {base_url} ({}); asked {asked} of {} pairs, {failed} failed, {:.0} ms an ask",
        config.model,
        pairs.len(),
        started.elapsed().as_secs_f64() * 1e3 / asked.max(1) as f64
    );
    report(
        "shipped+llm",
        file,
        pairs,
        &decided,
        "the shipped head, then the LLM's second opinion",
    );
    contrastive(pairs, &decided);
}

fn rules_us(pairs: &[Pair]) -> f64 {
    let started = Instant::now();
    std::hint::black_box(train::rules_alone(pairs));
    started.elapsed().as_secs_f64() * 1e6 / pairs.len().max(1) as f64
}

fn report(scorer: &str, file: &str, pairs: &[Pair], decided: &[Stance], how: &str) {
    let gold: Vec<Gold> = pairs.iter().map(|p| p.gold).collect();
    let f = Figures::of(decided, &gold);
    println!(
        "stance {scorer}: label precision {:.3}, recall {:.3}, on {} pairs ({file})",
        f.precision(),
        f.recall(),
        pairs.len()
    );
    println!("stance {scorer} sentences: {} ({file})", f.sentences_text());
    println!(
        "  {how}; against labelled: {}\n{}",
        f.against_labelled(),
        indent(&f.table_text())
    );
}

/// The contrastive pairs (a claim and its negation, a post stating either): how many true
/// posts were told they assert the false claim.
fn contrastive(pairs: &[Pair], decided: &[Stance]) {
    let (n, wrong) = pairs
        .iter()
        .zip(decided)
        .filter(|(p, _)| p.group.starts_with("cx:") && p.gold == Gold::Against)
        .fold((0, 0), |(n, w), (_, s)| (n + 1, w + usize::from(*s == Stance::Asserts)));
    println!("  contrastive: {wrong} of {n} posts that state a claim's opposite read as asserting it");
    for (p, s) in pairs.iter().zip(decided) {
        if p.group.starts_with("cx:") && p.gold == Gold::Against && *s == Stance::Asserts {
            println!("    read as asserting {:?}: {}", p.claim, p.post);
        }
    }
}

/// Each post of a named file told a sentence its gold label does not match (a neutral
/// reading is never wrong, only silent).
fn misread(pairs: &[Pair], decided: &[Stance]) {
    for (p, s) in pairs.iter().zip(decided) {
        let right = match s {
            Stance::Unclear => continue,
            Stance::Asserts => p.gold == Gold::For,
            Stance::Denies => p.gold == Gold::Against,
            _ => p.gold == Gold::Observing,
        };
        if !right {
            println!(
                "    misread: {} for gold {:?}: {:?} against {:?}",
                s.as_str(),
                p.gold,
                p.post,
                p.claim
            );
        }
    }
}

fn by_language(pairs: &[Pair], decided: &[Stance]) {
    let mut langs: Vec<&str> = pairs.iter().map(|p| p.lang.as_str()).collect();
    langs.sort();
    langs.dedup();
    for lang in langs {
        let (d, g): (Vec<Stance>, Vec<Gold>) = pairs
            .iter()
            .zip(decided)
            .filter(|(p, _)| p.lang == lang)
            .map(|(p, s)| (*s, p.gold))
            .unzip();
        let f = Figures::of(&d, &g);
        let r: Vec<Stance> = pairs
            .iter()
            .filter(|p| p.lang == lang)
            .map(|p| rules::stance(&musebot::stance::seen(&p.post), &p.claim))
            .collect();
        let fr = Figures::of(&r, &g);
        println!(
            "  {lang}: {} pairs; shipped {}; word rules precision {:.3} recall {:.3}",
            d.len(),
            f.sentences_text(),
            fr.precision(),
            fr.recall()
        );
    }
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
}

/// `sandbox.env` (`scripts/setup-sandbox.sh`): the models' paths.
fn sandbox() -> std::collections::BTreeMap<String, String> {
    let cache = std::env::var("MUSEBOT_CACHE")
        .unwrap_or_else(|_| format!("{}/.cache/musebot", std::env::var("HOME").unwrap_or_default()));
    std::fs::read_to_string(format!("{cache}/sandbox.env"))
        .expect("run scripts/setup-sandbox.sh first")
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect()
}

/// The examples a new user tries first, with the shipped decision and score.
fn examples(embedder: &Embedder, head: Option<&musebot::stance::Head>) {
    let wall = "The Great Wall of China is visible from the Moon with the naked eye";
    let posts = [
        "The Great Wall of China is the only man-made structure visible from the Moon with the naked eye.",
        "The Great Wall of China is visible from the Moon with the naked eye!",
        "The Great Wall of China is NOT visible from the Moon with the naked eye, lol. Don't believe it!",
        "Scientists confirmed that the Great Wall of China is visible from the Moon with the naked eye https://www.youtube.com/watch?v=abc",
        "It is a myth that the Great Wall of China is visible from the Moon with the naked eye. Astronauts have said so many times.",
        "Is the Great Wall visible from the Moon?",
        "Viral post claims the Great Wall is visible from the Moon",
        "La Gran Muralla China se ve desde la Luna a simple vista.",
        "Non, la Grande Muraille de Chine n'est pas visible depuis la Lune.",
    ];
    let n = musebot::stance::features::PAIR_TEXTS;
    let texts: Vec<String> = posts
        .iter()
        .flat_map(|p| musebot::stance::pair_texts(p, wall))
        .collect();
    let v = embedder.embed(&texts).expect("embedding");
    for (i, post) in posts.iter().enumerate() {
        let mine = &v[n * i..n * (i + 1)];
        let s = match head {
            Some(h) => musebot::stance::decide_with(Some(h), post, wall, Some(mine)),
            None => musebot::stance::decide(post, wall, Some(mine)),
        };
        let who = if head.is_some() { "candidate" } else { "shipped" };
        println!("  example ({who}): {} ({:.2}): {post}", s.stance.as_str(), s.score);
    }
}
