//! The stance model beside the word rules, in one run: `cargo bench --bench stance`.
//!
//! Files scored: the Emergent file named by `MUSEBOT_STANCE_PAIRS` (default: the shared dev
//! split, `../shared/data/stance/emergent-dev.csv`) and the project's own pairs' `test` split
//! (`tests/data/stance/pairs.jsonl` same-claim pairs and `multilingual.jsonl`; their `dev`
//! split is training data). On the default file the shipped model is scored *cross-validated by
//! claim* (5 folds by the claim's hash: each fold's head is fitted on the other folds and the
//! own `dev` pairs, so no claim is both trained and scored), at the threshold this very
//! procedure chooses — the shipped head's threshold. Any other file, and the own test pairs,
//! are scored by the head as it ships. "Label" means the decision says *asserts*; `for`
//! (own: `asserts`) is the only positive. Prints, per scorer and file:
//! `stance shipped: label precision P, recall R, on N pairs (FILE)` and
//! `stance word-rules: label precision P, recall R, on N pairs (FILE)`, the confusion tables,
//! the figures by language and the microseconds per pair (the shipped: embedding both texts
//! included).
//!
//! `--train PATH` also fits the shipped head (all of the dev split and the own dev pairs) and
//! writes it to PATH with its threshold (`scripts/train-stance.sh` does this and re-pins it).
//! Settings: the shipped defaults; the multilingual model is the sandbox's
//! (`MUSEBOT_EMBED_MODEL_MULTI`), as `musebot models install` installs it.

use std::path::{Path, PathBuf};
use std::time::Instant;

use musebot::relevance::{Embedder, RelevanceConfig};
use musebot::stance::train::{self, Figures, Gold, Pair};
use musebot::stance::{rules, Stance};

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
    let default_file = "../shared/data/stance/emergent-dev.csv";
    let file = std::env::var("MUSEBOT_STANCE_PAIRS")
        .ok()
        .filter(|f| !f.is_empty())
        .unwrap_or_else(|| default_file.to_string());
    let path = if Path::new(&file).is_absolute() {
        PathBuf::from(&file)
    } else {
        repo.join(&file)
    };
    let cross_validated = file == default_file;
    let emergent = train::read_emergent(&path).unwrap_or_else(|e| panic!("{e}"));
    let own = train::read_own(repo, &repo.join("../shared/data/claim-matching")).unwrap_or_else(|e| panic!("{e}"));
    let (own_dev, own_test): (Vec<Pair>, Vec<Pair>) = own.into_iter().partition(|p| p.split == "dev");
    let sandbox = sandbox();
    let embedder = Embedder::load(&RelevanceConfig {
        onnxruntime: sandbox["MUSEBOT_ORT_DYLIB"].clone(),
        model: sandbox["MUSEBOT_EMBED_MODEL_MULTI"].clone(),
        tokenizer: sandbox["MUSEBOT_EMBED_TOKENIZER_MULTI"].clone(),
        ..RelevanceConfig::default()
    })
    .expect("the sandbox's multilingual model loads");
    let embed = |pairs: &[Pair]| -> Vec<Vec<f32>> {
        let texts: Vec<String> = pairs
            .iter()
            .flat_map(|p| [musebot::stance::capped(&p.post).to_string(), p.claim.clone()])
            .collect();
        embedder.embed(&texts).expect("embedding")
    };
    println!(
        "settings: shipped defaults; stance head {} (threshold {:.3}); multilingual model {}",
        musebot::pins::STANCE_HEAD,
        musebot::stance::head().map_or(f32::NAN, |h| h.threshold),
        sandbox["MUSEBOT_EMBED_MODEL_MULTI"]
    );

    // The file: cross-validated (the default dev split) or as shipped.
    let started = Instant::now();
    let vectors = embed(&emergent);
    let featured = train::featurize(&emergent, &vectors);
    let embed_us = started.elapsed().as_secs_f64() * 1e6 / emergent.len().max(1) as f64;
    let gold: Vec<Gold> = emergent.iter().map(|p| p.gold).collect();
    let dev_vectors = embed(&own_dev);
    let weight = train::own_weight();
    let extra: Vec<(Vec<f32>, bool)> = train::featurize(&own_dev, &dev_vectors)
        .into_iter()
        .zip(&own_dev)
        .flat_map(|((f, _), p)| std::iter::repeat_n((f, p.gold == Gold::For), weight))
        .collect();
    println!(
        "training: each own dev pair counts {weight} times (train::OWN_WEIGHT {})",
        train::OWN_WEIGHT
    );
    let (decided, threshold) = if cross_validated {
        let folds = train::folds(&emergent, 5);
        let scores = train::cross_validate(&featured, &gold, &folds, 5, &extra);
        let threshold = train::choose_threshold(&scores, &featured, &gold, 0.5);
        let decided: Vec<Stance> = scores
            .iter()
            .zip(&featured)
            .map(|(s, (f, r))| train::stance_at(*s, *r, threshold, f))
            .collect();
        (decided, threshold)
    } else {
        let head = musebot::stance::head().expect("the shipped head loads");
        let decided = emergent
            .iter()
            .zip(&featured)
            .map(|(p, (f, r))| {
                if f.len() == musebot::stance::features::LEN {
                    train::stance_at(head.score(f), *r, head.threshold, f)
                } else {
                    musebot::stance::decide(&p.post, &p.claim, None).stance
                }
            })
            .collect();
        (decided, head.threshold)
    };
    let how = if cross_validated {
        format!("cross-validated by claim, 5 folds; threshold {threshold:.3} chosen on these scores")
    } else {
        format!("the shipped head, threshold {threshold:.3}")
    };
    report("shipped", &file, &emergent, &decided, &how);
    let started = Instant::now();
    let by_rules = train::rules_alone(&emergent);
    let rules_us = started.elapsed().as_secs_f64() * 1e6 / emergent.len().max(1) as f64;
    report(
        "word-rules",
        &file,
        &emergent,
        &by_rules,
        "the rules' asserts as the label",
    );

    // The head this data gives (what `--train` writes; with MUSEBOT_STANCE_OWN_WEIGHT set, a
    // candidate scored below beside the shipped one).
    let mut x: Vec<Vec<f32>> = featured.iter().map(|(f, _)| f.clone()).collect();
    let mut y: Vec<bool> = gold.iter().map(|g| *g == Gold::For).collect();
    for (f, label) in &extra {
        x.push(f.clone());
        y.push(*label);
    }
    let mut fitted = train::fit(&x, &y);
    fitted.threshold = (threshold * 1e4).round() / 1e4;
    // The own test pairs: the head as it ships (fitted on their dev split, never these).
    let own_file = "tests/data/stance/{pairs,multilingual}.jsonl (test split)";
    let started = Instant::now();
    let texts: Vec<(&str, &str)> = own_test.iter().map(|p| (p.post.as_str(), p.claim.as_str())).collect();
    let shipped: Vec<Stance> = musebot::stance::decide_all(Some(&embedder), &texts)
        .into_iter()
        .map(|s| s.stance)
        .collect();
    let own_us = started.elapsed().as_secs_f64() * 1e6 / own_test.len().max(1) as f64;
    report("shipped", own_file, &own_test, &shipped, "the shipped head");
    report(
        "word-rules",
        own_file,
        &own_test,
        &train::rules_alone(&own_test),
        "the rules' asserts as the label",
    );
    by_language(&own_test, &shipped);
    examples(&embedder, None);
    if std::env::var("MUSEBOT_STANCE_OWN_WEIGHT").is_ok() {
        let candidate: Vec<Stance> = own_test
            .iter()
            .zip(train::featurize(&own_test, &embed(&own_test)))
            .map(|(_, (f, r))| train::stance_at(fitted.score(&f), r, fitted.threshold, &f))
            .collect();
        report(
            "candidate",
            own_file,
            &own_test,
            &candidate,
            "the head fitted in this run",
        );
        examples(&embedder, Some(&fitted));
    }
    println!(
        "time per pair: shipped {embed_us:.0} µs on {} (embedding post and claim, 1 thread session; the decision itself {:.1} µs), {own_us:.0} µs on the own pairs; word rules {rules_us:.1} µs",
        file,
        decision_us(&featured)
    );

    if let Some(out) = write_to {
        let mut head = fitted.clone();
        let f = Figures::of(&decided, &gold);
        head.trained = serde_json::json!({
            "by": "scripts/train-stance.sh (cargo bench --bench stance -- --train)",
            "pairs": {"emergent_dev": emergent.len(), "own_dev": own_dev.len(), "own_weight": weight},
            "features": "src/stance/features.rs",
            "l2": train::L2, "steps": train::STEPS,
            "threshold_from": "claim-fold cross-validation on the Emergent dev split: highest label precision at recall >= 0.5",
            "cross_validated": {"precision": (f.precision() * 1e3).round() / 1e3, "recall": (f.recall() * 1e3).round() / 1e3},
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

/// The decision alone (a dot product), per pair.
fn decision_us(featured: &[(Vec<f32>, Stance)]) -> f64 {
    let Some(head) = musebot::stance::head() else {
        return f64::NAN;
    };
    let started = Instant::now();
    let mut n = 0usize;
    for (f, _) in featured {
        n += usize::from(head.score(f) > head.threshold);
    }
    std::hint::black_box(n);
    started.elapsed().as_secs_f64() * 1e6 / featured.len().max(1) as f64
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
    println!(
        "  {how}; against labelled: {}\n{}",
        f.against_labelled(),
        indent(&f.table_text())
    );
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
            .map(|p| rules::stance(&p.post, &p.claim))
            .collect();
        let fr = Figures::of(&r, &g);
        println!(
            "  {lang}: {} pairs; shipped precision {:.3} recall {:.3}; word rules precision {:.3} recall {:.3}",
            d.len(),
            f.precision(),
            f.recall(),
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
        "It is a myth that the Great Wall of China is visible from the Moon with the naked eye. Astronauts have said so many times.",
        "Is the Great Wall visible from the Moon?",
        "Viral post claims the Great Wall is visible from the Moon",
        "La Gran Muralla China se ve desde la Luna a simple vista.",
        "Non, la Grande Muraille de Chine n'est pas visible depuis la Lune.",
    ];
    let pairs: Vec<(&str, &str)> = posts.iter().map(|p| (*p, wall)).collect();
    let texts: Vec<String> = pairs.iter().flat_map(|(p, c)| [p.to_string(), c.to_string()]).collect();
    let v = embedder.embed(&texts).expect("embedding");
    for (i, post) in posts.iter().enumerate() {
        let s = match head {
            Some(h) => musebot::stance::decide_with(Some(h), post, wall, Some((&v[2 * i], &v[2 * i + 1]))),
            None => musebot::stance::decide(post, wall, Some((&v[2 * i], &v[2 * i + 1]))),
        };
        let who = if head.is_some() { "candidate" } else { "shipped" };
        println!("  example ({who}): {} ({:.2}): {post}", s.stance.as_str(), s.score);
    }
}
