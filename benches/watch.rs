//! The network watch at firehose speed (`cargo bench --bench watch`): a recorded stream of real
//! posts replayed as fast as the watch takes it, against the fact-check corpus at
//! `MUSEBOT_BENCH_CLAIMS_AT` fact-checks (default 200,000: CheckThat!'s 14,231 Snopes checks,
//! embedded by the shipped import, then copied under new URLs with their vectors).
//!
//! The stream (`MUSEBOT_BENCH_WATCH_POSTS`, default 40,000 posts): CheckThat! 2022 Task 2A's real
//! tweets, each repeating a fact-checked claim, as 1 post in 100, among unrelated real text — the
//! TweetLID 2014 tweets (Spanish, Portuguese, Catalan, Galician, Basque, English), the Muse posts
//! and sentences of the extraction set's news articles — cycled and shuffled with a fixed seed.
//! A producer sends them into the watch's bounded queue as fast as it takes them; the consumer
//! is the daemon's loop (batches of `watch.batch`, `watch.linger_ms`) around the shipped cheap
//! path (`watch::cheap::decide`, `WatchConfig::default()`). Printed: posts/s sustained, p50/p99
//! from a post entering the queue to its decision, what the posts became, and the peak RSS of the
//! replaying process (a child holding what the daemon holds for this: the English model, the
//! matcher and its warmed vectors); beside it, in the same run, today's one-post-at-a-time path
//! (`Matcher::find` on every post, as a mention's match step runs) on the first 1,000 posts.
//! The CPU, its instruction sets and the scan's SIMD kernel are printed too, and where each
//! batch's time went (`watch::cheap::Phases`: the cheap tests, each model's embedding runs, the
//! scan, the stance), and what became of the posts that repeat a checked claim: which
//! fact-check each post decided "same claim" matched (the very one the tweet repeats, another,
//! or a post the stream says repeats none, the first of those printed), and the same decision's
//! precision and recall on CheckThat!'s held-out dev tweets (or on the labelled set that
//! `MUSEBOT_QUERIES`, id TAB text, and `MUSEBOT_QRELS`, CheckThat!'s qrels, name, as for
//! `cargo bench --bench claim_matching`), and how many dev tweets restated in Spanish and
//! Portuguese (`tests/data/watch/translated.tsv`, our translations) it decides beside their
//! English originals. The resident memory each loaded
//! part adds is printed too. `MUSEBOT_BENCH_WATCH_MARGIN` and `MUSEBOT_BENCH_SCAN_KERNEL` change
//! the margin and the first pass's kernel, and the changed setting is printed beside the figures. The stance of each match is in the path: the shipped
//! stance model (`crate::stance`: the multilingual model embeds the matched posts and their
//! claims, one run a batch; loaded as `musebot models install` sets it), and beside it, in the
//! same run, the word rules alone as the watch decided before the model (no multilingual model
//! loaded). "Same claim" is the shipped decision (the learned head of `claims::same` for English
//! posts); beside it, in the same run, the cosine bar alone as the watch decided before the head
//! (`Matcher::without_same_head`, the stance model in the path). The labelled repeats are
//! checked against the project's stance labels of the same tweets (`tests/data/stance/`): how
//! many assert the claim they were labelled for. The live read of a matched
//! fact-check's page is the job's, after.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use musebot::claims::import::Importer;
use musebot::claims::matcher::Matcher;
use musebot::claims::{ClaimsConfig, Models};
use musebot::config::WatchConfig;
use musebot::model::{PlatformKind, Seen};
use musebot::relevance::{Embedder, RelevanceConfig};

#[path = "common/checkthat.rs"]
mod checkthat;
mod common;
#[path = "../tests/common/llm.rs"]
mod llm;
#[path = "common/watch_data.rs"]
mod watch_data;

use watch_data::{dev_tweets, our_labels, stream, translated};

fn models(relevance: &RelevanceConfig) -> Models {
    Models {
        model: musebot::claims::model_id(&relevance.model),
        multilingual: String::new(),
    }
}

/// How many of `posts` (text, language, the fact-check id it repeats) the watch's cheap path
/// decides "same claim" with the very fact-check, and how many it decides at all.
fn very_checks(
    matcher: &std::sync::Arc<musebot::claims::matcher::Matcher>,
    config: &WatchConfig,
    posts: &[(String, Option<String>, String)],
) -> (usize, usize) {
    let (right, decided, _) = very_checks_and_fates(matcher, config, posts);
    (right, decided)
}

/// [`very_checks`], with what became of each post (`Fate::as_str`, counted).
fn very_checks_and_fates(
    matcher: &std::sync::Arc<musebot::claims::matcher::Matcher>,
    config: &WatchConfig,
    posts: &[(String, Option<String>, String)],
) -> (usize, usize, std::collections::BTreeMap<&'static str, usize>) {
    let (right, decided, fates, _) = very_checks_each(matcher, config, posts);
    (right, decided, fates)
}

/// [`very_checks_and_fates`], with each post's fate in order.
#[allow(clippy::type_complexity)]
fn very_checks_each(
    matcher: &std::sync::Arc<musebot::claims::matcher::Matcher>,
    config: &WatchConfig,
    posts: &[(String, Option<String>, String)],
) -> (
    usize,
    usize,
    std::collections::BTreeMap<&'static str, usize>,
    Vec<&'static str>,
) {
    let mut fates_seen = std::collections::BTreeMap::new();
    let mut each = Vec::with_capacity(posts.len());
    let (mut right, mut decided) = (0, 0);
    for chunk in posts.chunks(config.batch) {
        let batch: Vec<Seen> = chunk
            .iter()
            .enumerate()
            .map(|(i, (text, lang, _))| seen(i, text, lang))
            .collect();
        let fates = musebot::watch::cheap::decide(matcher, config, &batch, chrono::Utc::now()).unwrap();
        for ((_, _, gold), fate) in chunk.iter().zip(fates) {
            *fates_seen.entry(fate.as_str()).or_insert(0) += 1;
            each.push(fate.as_str());
            let review = match &fate {
                musebot::watch::cheap::Fate::Asserts { review, .. }
                | musebot::watch::cheap::Fate::NotAsserted { review, .. } => review,
                _ => continue,
            };
            decided += 1;
            right += usize::from(checkthat::review_id(review) == Some(gold.as_str()));
        }
    }
    (right, decided, fates_seen, each)
}

fn seen(i: usize, text: &str, lang: &Option<String>) -> Seen {
    Seen {
        platform: PlatformKind::Bluesky,
        id: format!("at://did:plc:bench{i}/app.bsky.feed.post/{i}"),
        cid: None,
        author_id: format!("did:plc:bench{}", i % 5000),
        author_handle: None,
        author_is_bot: false,
        author_nobot: false,
        text: text.to_string(),
        langs: lang.iter().cloned().collect(),
        created_at: chrono::Utc::now(),
        is_reply: false,
        public: true,
        cursor: Some(("bluesky:jetstream".into(), i.to_string())),
    }
}

/// The child: opens the corpus as the daemon does and replays the stream through the watch,
/// the stance decided by the shipped model (`with_model`) or by the word rules alone, "same
/// claim" by the learned head where it applies (`with_head`) or by the cosine bar alone.
fn replay(corpus: &Path, data: &Path, n: usize, with_model: bool, with_head: bool) {
    // `MUSEBOT_BENCH_SCAN_KERNEL=avx2`: the AVX2 first pass on a machine that has AVX-512 too.
    let forced = std::env::var("MUSEBOT_BENCH_SCAN_KERNEL").ok().filter(|k| {
        let chosen = musebot::claims::prescan::choose(k);
        if !chosen {
            eprintln!("MUSEBOT_BENCH_SCAN_KERNEL={k}: this CPU has no such kernel");
        }
        chosen
    });
    // Resident memory (MB) after each thing the daemon loads: (anonymous, file-backed).
    let mem = || {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let kb = |key: &str| {
            status
                .lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
                .unwrap_or(0.0)
                / 1024.0
        };
        (kb("RssAnon:"), kb("RssFile:"))
    };
    let mut memory: Vec<(&str, (f64, f64))> = vec![("start", mem())];
    let sandbox = common::sandbox();
    let relevance = common::english(&sandbox);
    let embedder = Arc::new(Embedder::load(&relevance).unwrap());
    memory.push(("the English model", mem()));
    let multilingual = with_model.then(|| {
        Arc::new(
            Embedder::load(&RelevanceConfig {
                model: sandbox["MUSEBOT_EMBED_MODEL_MULTI"].clone(),
                tokenizer: sandbox["MUSEBOT_EMBED_TOKENIZER_MULTI"].clone(),
                ..relevance.clone()
            })
            .unwrap(),
        )
    });
    let matcher = Matcher::open(
        corpus,
        Some(embedder),
        multilingual,
        &models(&relevance),
        &ClaimsConfig::default(),
    )
    .unwrap()
    .unwrap();
    let matcher = Arc::new(if with_head {
        matcher
    } else {
        matcher.without_same_head()
    });
    memory.push(("the multilingual model and the matcher", mem()));
    let held = matcher.warm().unwrap();
    memory.push(("the warmed vectors", mem()));
    let mut config = WatchConfig::default();
    // `MUSEBOT_BENCH_WATCH_MARGIN=0.02`: the same-claim bar's margin changed, to measure recall
    // against precision.
    let margin_changed = match std::env::var("MUSEBOT_BENCH_WATCH_MARGIN")
        .ok()
        .and_then(|m| m.parse().ok())
    {
        Some(m) => {
            config.same_claim_margin = m;
            true
        }
        None => false,
    };
    let posts = stream(data, n);
    let repeats = posts.iter().filter(|p| p.2.is_some()).count();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (times, fates, secs, phases, repeat_fates, claims) = runtime.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<((Instant, Option<String>, usize), Seen)>(
            config.batch * musebot::watch::QUEUE_BATCHES,
        );
        let producer = {
            let posts = posts.clone();
            tokio::spawn(async move {
                for (i, (text, lang, repeat)) in posts.iter().enumerate() {
                    if tx
                        .send(((Instant::now(), repeat.clone(), i), seen(i, text, lang)))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
            })
        };
        let started = Instant::now();
        let mut times = Vec::with_capacity(posts.len());
        let mut fates: BTreeMap<&'static str, usize> = BTreeMap::new();
        let mut repeat_fates: BTreeMap<&'static str, usize> = BTreeMap::new();
        // Of the posts decided "same claim": (repeats of the very fact-check matched, repeats
        // matched to another, posts that repeat none).
        let mut claims = (0usize, 0usize, 0usize);
        // The first posts that repeat none yet were decided "same claim", with the review.
        let mut strangers: Vec<String> = Vec::new();
        // Each post's fate, by its place in the stream.
        let mut fate_of: Vec<&'static str> = vec![""; posts.len()];
        let mut phases = musebot::watch::cheap::Phases::default();
        let linger = std::time::Duration::from_millis(config.linger_ms);
        // The daemon's loop (`Watch::run`) around the cheap path.
        while let Some(first) = rx.recv().await {
            let mut batch = vec![first];
            let deadline = tokio::time::Instant::now() + linger;
            while batch.len() < config.batch {
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline) => break,
                    p = rx.recv() => match p { Some(p) => batch.push(p), None => break },
                }
            }
            let (m, c, mut p) = (matcher.clone(), config.clone(), std::mem::take(&mut phases));
            let (arrived, batch): (Vec<(Instant, Option<String>, usize)>, Vec<Seen>) = batch.into_iter().unzip();
            let (decided, p) = tokio::task::spawn_blocking(move || {
                let d = musebot::watch::cheap::decide_timed(&m, &c, &batch, chrono::Utc::now(), &mut p).unwrap();
                (d, p)
            })
            .await
            .unwrap();
            phases = p;
            let now = Instant::now();
            for ((at, repeat, i), fate) in arrived.iter().zip(&decided) {
                fate_of[*i] = fate.as_str();
                times.push((now - *at).as_secs_f64() * 1000.0);
                *fates.entry(fate.as_str()).or_default() += 1;
                if repeat.is_some() {
                    *repeat_fates.entry(fate.as_str()).or_default() += 1;
                }
                let matched = match fate {
                    musebot::watch::cheap::Fate::Asserts { review, .. }
                    | musebot::watch::cheap::Fate::NotAsserted { review, .. } => Some(review),
                    _ => None,
                };
                if let Some(review) = matched {
                    let id = checkthat::review_id(review);
                    match repeat {
                        Some(gold) if id == Some(gold.as_str()) => claims.0 += 1,
                        Some(_) => claims.1 += 1,
                        None => {
                            claims.2 += 1;
                            if strangers.len() < 5 {
                                strangers.push(format!(
                                    "{:?} -> {review}",
                                    posts[*i].0.chars().take(140).collect::<String>()
                                ));
                            }
                        }
                    }
                }
            }
        }
        producer.await.unwrap();
        (
            times,
            fates,
            started.elapsed().as_secs_f64(),
            phases,
            repeat_fates,
            (claims, strangers, fate_of),
        )
    });
    let how = match (with_model, with_head) {
        (true, true) => "stance model, shipped",
        (true, false) => "stance model, cosine bar as before the learned same-claim head",
        _ => "word rules only, as before the stance model",
    };
    memory.push(("the replay", mem()));
    let steps: Vec<String> = memory
        .windows(2)
        .map(|w| {
            let ((_, (a0, f0)), (name, (a1, f1))) = (w[0], w[1]);
            format!("{name} +{:.0} MB (+{:.0} file-backed)", (a1 + f1) - (a0 + f0), f1 - f0)
        })
        .collect();
    println!("watch ({how}): cpu {}", common::cpu());
    println!(
        "watch ({how}): {:.0} posts/s sustained, post-to-decision {}, peak RSS {:.0} MB ({} posts, {repeats} repeating a checked claim; {held} fact-check vectors; batch {}, linger {} ms; scan kernels: first pass {}{}, exact {})",
        posts.len() as f64 / secs,
        common::p50_p99_ms(&times),
        common::peak_rss_mb(),
        posts.len(),
        config.batch,
        config.linger_ms,
        musebot::claims::prescan::kernel(),
        if forced.is_some() { " (changed: MUSEBOT_BENCH_SCAN_KERNEL)" } else { "" },
        musebot::claims::vectors::kernel()
    );
    println!("watch ({how}): resident memory: {}", steps.join("; "));
    println!("watch ({how}): fates {fates:?}");
    let (claims, strangers, fate_of) = claims;
    // A stricter words prefilter (`watch.min_word_score`) would spare the embedding of posts
    // that match nothing: what each bar would drop, of those and of the posts decided.
    {
        let searcher = matcher.searcher();
        let score = |text: &str| {
            let cleaned = musebot::claims::matcher::clean_post(musebot::stance::capped(text));
            matcher.word_score(&searcher, &cleaned)
        };
        let (mut unmatched, mut decided): (Vec<f32>, Vec<f32>) = (Vec::new(), Vec::new());
        for ((text, _, _), fate) in posts.iter().zip(&fate_of) {
            match *fate {
                "no_match" => unmatched.push(score(text)),
                "asserts" | "not_asserted" => decided.push(score(text)),
                _ => {}
            }
        }
        let bars: Vec<String> = [1.5f32, 2.0, 3.0, 4.0, 6.0]
            .iter()
            .map(|bar| {
                format!(
                    "at {bar}: {} of {} unmatched, {} of {} decided",
                    unmatched.iter().filter(|s| *s < bar).count(),
                    unmatched.len(),
                    decided.iter().filter(|s| *s < bar).count(),
                    decided.len()
                )
            })
            .collect();
        println!(
            "watch words prefilter ({how}; shipped bar {}): a stricter bar would drop {}",
            config.min_word_score,
            bars.join("; ")
        );
    }
    let decided = claims.0 + claims.1 + claims.2;
    println!(
        "watch same claim ({how}): {decided} posts decided; {} repeats of the very fact-check matched, {} repeats matched to another, {} posts that repeat none (precision {:.3} on this stream; {})",
        claims.0,
        claims.1,
        claims.2,
        claims.0 as f64 / decided.max(1) as f64,
        match matcher.same_head(musebot::claims::matcher::Space::English) {
            Some(h) => format!(
                "English posts decided by the learned head (claims::same: threshold {:.3}, floor {:.2}), others at claims.same_claim + watch.same_claim_margin = {:.2}{}",
                h.threshold,
                h.floor,
                ClaimsConfig::default().same_claim + config.same_claim_margin,
                if margin_changed { " (changed: MUSEBOT_BENCH_WATCH_MARGIN)" } else { "" }
            ),
            None => format!(
                "bar claims.same_claim + watch.same_claim_margin = {:.2}{}",
                ClaimsConfig::default().same_claim + config.same_claim_margin,
                if margin_changed { " (changed: MUSEBOT_BENCH_WATCH_MARGIN)" } else { "" }
            ),
        },
    );
    for s in &strangers {
        println!("  decided \"same claim\" though the stream says it repeats none: {s}");
    }
    let n = |k: &str| repeat_fates.get(k).copied().unwrap_or(0);
    println!(
        "watch repeats ({how}): {} of {repeats} decided \"same claim\", {} labelled; dropped by language {}, length {}, words {}, no match {}, stance {}",
        n("asserts") + n("not_asserted"),
        n("asserts"),
        n("language"),
        n("length"),
        n("words"),
        n("no_match"),
        n("not_asserted"),
    );
    // The repeats against the project's stance labels of the same tweets
    // (tests/data/stance/pairs.jsonl and tweets.jsonl): how many labelled ones assert the claim.
    {
        let (asserting, dev) = our_labels(data);
        let (mut right, mut wrong, mut unknown, mut gold, mut known) = (0, 0, 0, 0, 0);
        let (mut dev_labelled, mut dev_repeats) = (0, 0);
        for ((text, _, repeat), fate) in posts.iter().zip(&fate_of) {
            if repeat.is_none() {
                continue;
            }
            let labelled = *fate == "asserts";
            if let Some((a, _)) = asserting.get(text) {
                known += 1;
                gold += usize::from(*a);
                if labelled {
                    if *a {
                        right += 1;
                    } else {
                        wrong += 1;
                    }
                }
            } else if labelled {
                unknown += 1;
            }
            if dev.contains(text) {
                dev_repeats += 1;
                dev_labelled += usize::from(labelled);
            }
        }
        println!(
            "watch repeats by our stance labels ({how}): of those labelled, {right} assert the claim, {wrong} do not (deny, ask, report, or state another claim), {unknown} we did not label; {gold} of the {known} repeats we labelled assert it; {dev_labelled} of {dev_repeats} repeats from CheckThat!'s dev split labelled (the others are Train tweets, which the same-claim and stance heads were fitted on)"
        );
    }
    let phase = |name: &str, (took, posts): (std::time::Duration, usize)| {
        let ms = took.as_secs_f64() * 1000.0;
        format!(
            "{name} {:.1} ms/batch, {:.2} ms/post ({posts} posts)",
            ms / phases.batches.max(1) as f64,
            ms / posts.max(1) as f64
        )
    };
    println!(
        "watch phases ({how}, {} batches): {}; {}; {}; {}; {}",
        phases.batches,
        phase("cheap tests (language, length, words)", phases.cheap),
        phase("embedding, English model (tokenising included)", phases.embed_english),
        phase("embedding, multilingual model", phases.embed_multilingual),
        phase("scan", phases.scan),
        phase(
            "stance (multilingual embedding of matches and claims, head)",
            phases.stance
        ),
    );
    // The same decision on CheckThat!'s held-out dev split, the watch's bar as above.
    let (dev_file, dev) = dev_tweets(data);
    let labelled: Vec<(String, Option<String>, String)> = dev
        .iter()
        .map(|(t, g)| (t.clone(), Some("en".into()), g.clone()))
        .collect();
    let (right, decided, _, each) = very_checks_each(&matcher, &config, &labelled);
    println!(
        "watch same claim on {dev_file} ({} tweets): precision {:.3} ({right} of {decided} decided the very fact-check), recall {:.3}",
        dev.len(),
        right as f64 / decided.max(1) as f64,
        right as f64 / dev.len().max(1) as f64
    );
    // The same tweets' labels against the project's stance labels of them: tweets no head
    // (same claim or stance) was fitted on, unlike the stream's.
    {
        let (asserting, _) = our_labels(data);
        let (mut right, mut wrong, mut unknown, mut gold, mut known) = (0, 0, 0, 0, 0);
        let mut wrongly = Vec::new();
        for ((text, _, _), fate) in labelled.iter().zip(&each) {
            let said = *fate == "asserts";
            match asserting.get(text) {
                Some((a, label)) => {
                    known += 1;
                    gold += usize::from(*a);
                    right += usize::from(said && *a);
                    wrong += usize::from(said && !*a);
                    if said && !*a {
                        wrongly.push(format!("({label}) {}", text.chars().take(160).collect::<String>()));
                    }
                }
                None => unknown += usize::from(said),
            }
        }
        println!(
            "watch labels on {dev_file} ({how}): {} of {decided} decided \"same claim\" labelled; by our stance labels {right} assert the claim, {wrong} do not, {unknown} we did not label; {gold} of the {known} tweets we labelled assert it",
            each.iter().filter(|f| **f == "asserts").count()
        );
        for w in &wrongly {
            println!("  labelled, though our label says it does not assert the claim: {w}");
        }
    }
    // Reach across languages: dev tweets restated in Spanish and Portuguese (our translations,
    // `tests/data/watch/translated.tsv`), each read as its language, beside the originals.
    // The shipped watch reads English only (`watch.languages = ["en"]`): here it reads the
    // translations' languages too, and says so beside the figure.
    let (originals, by_lang) = translated(data);
    let mut wider = config.clone();
    wider.languages.extend(by_lang.keys().cloned());
    let mut line = format!(
        "watch same claim across languages (tests/data/watch/translated.tsv, {} tweets, checked in English; changed: watch.languages = {:?}, shipped [\"en\"]): English originals {} decided the very fact-check",
        originals.len(),
        wider.languages,
        very_checks(&matcher, &wider, &originals).0
    );
    for (lang, posts) in &by_lang {
        let (right, decided, fates) = very_checks_and_fates(&matcher, &wider, posts);
        line.push_str(&format!("; {lang} {right} (of {decided} decided; fates {fates:?})"));
    }
    println!("{line}");
    if !(with_model && with_head) {
        return;
    }
    // Today's path beside it: every post through the mention's match step, one at a time.
    let first: Vec<_> = posts.iter().take(1000).collect();
    let started = Instant::now();
    let mut each = Vec::new();
    for (text, lang, _) in &first {
        let t = Instant::now();
        let _ = matcher.find(text, lang.as_deref().or(Some("en")), 10);
        each.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    println!(
        "one post at a time (Matcher::find, the mention's match step): {:.0} posts/s, per post {} ({} posts)",
        first.len() as f64 / started.elapsed().as_secs_f64(),
        common::p50_p99_ms(&each),
        first.len()
    );
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let n: usize = std::env::var("MUSEBOT_BENCH_WATCH_POSTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40_000);
    if let Some(at) = argv.iter().position(|a| a == "--replay") {
        match (argv.get(at + 1), argv.get(at + 2), argv.get(at + 3)) {
            (Some(corpus), Some(data), how) => {
                let how = how.map_or("model", String::as_str);
                replay(Path::new(corpus), Path::new(data), n, how != "rules", how != "bar")
            }
            _ => eprintln!("usage: watch --replay CORPUS DATA [model|bar|rules]"),
        }
        return;
    }
    let Some((_, data)) = common::args("watch", 0) else {
        return;
    };
    let dir = data.join("claim-matching");
    if !dir.join("vclaims.jsonl").exists() {
        eprintln!("skipped: {} is absent", dir.display());
        return;
    }
    let target: usize = std::env::var("MUSEBOT_BENCH_CLAIMS_AT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let sandbox = common::sandbox();
    let relevance = common::english(&sandbox);
    let embedder = Arc::new(Embedder::load(&relevance).unwrap());
    let claims = checkthat::claims(&dir);
    // The corpus is kept between runs (its own folder in the cache): built once per size.
    let cache = PathBuf::from(std::env::var("MUSEBOT_CACHE").unwrap_or_else(|_| "/tmp".into()))
        .join(format!("bench-watch-corpus-{target}"));
    if !cache.join(".complete").exists() {
        let _ = std::fs::remove_dir_all(&cache);
        let started = Instant::now();
        let mut importer = Importer::open(&cache, Some(embedder.clone()), None, models(&relevance), target).unwrap();
        let texts: Vec<String> = claims.iter().map(musebot::claims::import::embedded_text).collect();
        let vectors = embedder.embed(&texts).unwrap();
        let mut added = 0;
        'fill: for copy in 0.. {
            for (e, v) in claims.iter().zip(&vectors) {
                if added >= target {
                    break 'fill;
                }
                let mut e = e.clone();
                if copy > 0 {
                    e.review.url = format!("{}copy-{copy}", e.review.url);
                }
                importer.offer_embedded(&e.review.url.clone(), e, v.clone()).unwrap();
                added += 1;
            }
        }
        importer.finish().unwrap();
        std::fs::write(cache.join(".complete"), b"").unwrap();
        println!(
            "corpus: {added} fact-checks ({} embedded, the rest copies) in {:.0} s",
            claims.len(),
            started.elapsed().as_secs_f64()
        );
    }
    let me = std::env::current_exe().unwrap();
    for how in ["model", "bar", "rules"] {
        let status = std::process::Command::new(&me)
            .arg("--replay")
            .arg(&cache)
            .arg(&data)
            .arg(how)
            .status()
            .unwrap();
        if !status.success() {
            eprintln!("the replay failed: {status}");
        }
    }
}
