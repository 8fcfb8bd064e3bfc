//! Claim matching on real data (`cargo bench --bench claim_matching`): CheckThat! 2021/22
//! Task 2A English — Snopes fact-checks, and real tweets each with the gold fact-check of its
//! claim. The fact-checks go through the shipped import (`claims::import::Importer`: embedded
//! and committed in batches), then every query of the qrels through the shipped matcher
//! (`claims::matcher::Matcher::find`), side by side with plain BM25 over the same fields (the
//! same matcher without vectors). Printed per system: MAP@5, MRR and success@10 (the lab's
//! measures) with p50/p99 match latency; the precision and recall of the shipped "same claim"
//! threshold on these queries, and the threshold the train split calibrates (precision ≥ 0.95);
//! the import's throughput (embeddings included), the index size on disk and the peak RSS; then
//! the same at `MUSEBOT_BENCH_CLAIMS_AT` fact-checks (default 200,000: the data's own
//! fact-checks copied under new URLs; accuracy there counts copies of the gold as wrong, so its
//! latency, size and memory are the figures). That corpus's memory is measured in a process of
//! its own that holds what the daemon holds for claim matching — the English model's sessions,
//! the matcher and its warmed vector cache — and answers every query (its peak RSS, `VmHWM`),
//! not in this process, which also holds both models, the data and the import.
//!
//! Paths: `MUSEBOT_CLAIMS` (vclaims JSONL), `MUSEBOT_QUERIES` (id TAB text), `MUSEBOT_QRELS`
//! (TREC qrels; default: the dev split), `MUSEBOT_TRAIN_QRELS` (the calibration split; default:
//! train). Settings: the shipped defaults (`ClaimsConfig::default()`, the sandbox's models).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use musebot::claims::import::Importer;
use musebot::claims::matcher::Matcher;
use musebot::claims::{ClaimsConfig, Entry, Models};
use musebot::model::{ClaimReview, ReviewSource};
use musebot::relevance::{Embedder, RelevanceConfig};

mod common;
#[path = "../tests/common/llm.rs"]
mod llm;

fn env_path(key: &str, default: PathBuf) -> PathBuf {
    std::env::var(key).map(PathBuf::from).unwrap_or(default)
}

fn read_qrels(path: &Path) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 4 && f[3] != "0" {
            out.entry(f[0].to_string()).or_default().push(f[2].to_string());
        }
    }
    out
}

/// (id → text) of the queries file.
fn read_queries(path: &Path) -> HashMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(a, b)| (a.trim().to_string(), b.trim().to_string()))
        .collect()
}

/// The fact-checks as entries, each with its id (the URL is Snopes's for the id).
fn read_claims(path: &Path) -> Vec<(String, Entry)> {
    let mut out = Vec::new();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let v: serde_json::Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(_) => continue,
        };
        let id = v["vclaim_id"].as_str().unwrap_or("").to_string();
        let slug = id.trim_start_matches("vclaim-sno-");
        let url = format!("https://www.snopes.com/fact-check/{slug}/");
        let review = ClaimReview {
            url,
            publisher: v["author"].as_str().unwrap_or("").to_string(),
            publisher_site: Some("snopes.com".into()),
            claim: v["vclaim"].as_str().unwrap_or("").to_string(),
            claimant: None,
            rating: String::new(),
            rating_value: None,
            best_rating: None,
            worst_rating: None,
            reviewed: musebot::claims::formats::date(v["date"].as_str().unwrap_or("")),
            language: Some("en".into()),
            appearances: Vec::new(),
            source: ReviewSource::Corpus,
            claim_cosine: None,
            other_claim: false,
            same_claim: false,
            fact_checker: None,
        };
        out.push((
            id,
            Entry {
                review,
                title: v["title"].as_str().unwrap_or("").to_string(),
            },
        ));
    }
    out
}

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|k| k.parse::<f64>().ok()))
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

struct Run {
    map5: f64,
    mrr: f64,
    s10: f64,
    p50: f64,
    p99: f64,
    /// (top-1 cosine, top-1 correct, top-1 same_claim) per query.
    top: Vec<(f32, bool, bool)>,
}

fn score(
    matcher: &Matcher,
    queries: &HashMap<String, String>,
    qrels: &BTreeMap<String, Vec<String>>,
    id_of: &HashMap<String, String>,
) -> Run {
    score_in(matcher, queries, qrels, id_of, "en")
}

/// [`score`] with the queries tagged `lang` (a tag other than "en" matches in the
/// multilingual model's space).
fn score_in(
    matcher: &Matcher,
    queries: &HashMap<String, String>,
    qrels: &BTreeMap<String, Vec<String>>,
    id_of: &HashMap<String, String>,
    lang: &str,
) -> Run {
    let (mut map, mut mrr, mut s10) = (0.0, 0.0, 0.0);
    let mut times = Vec::new();
    let mut top = Vec::new();
    let mut n = 0.0;
    for (q, gold) in qrels {
        let Some(text) = queries.get(q) else { continue };
        n += 1.0;
        let started = Instant::now();
        let (_, found) = matcher.find(text, Some(lang), 10).unwrap();
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        let ids: Vec<&str> = found
            .iter()
            .map(|c| id_of.get(&c.entry.review.url).map_or("", String::as_str))
            .collect();
        let (mut hits, mut ap) = (0.0, 0.0);
        for (i, id) in ids.iter().take(5).enumerate() {
            if gold.iter().any(|g| g == id) {
                hits += 1.0;
                ap += hits / (i + 1) as f64;
            }
        }
        map += ap / (gold.len().min(5) as f64);
        if let Some(i) = ids.iter().position(|id| gold.iter().any(|g| g == id)) {
            mrr += 1.0 / (i + 1) as f64;
            if i < 10 {
                s10 += 1.0;
            }
        }
        if let Some(first) = found.first() {
            top.push((
                first.cosine.unwrap_or(0.0),
                gold.iter().any(|g| g == ids[0]),
                first.same_claim,
            ));
        }
    }
    let mut t = times.clone();
    Run {
        map5: map / n,
        mrr: mrr / n,
        s10: s10 / n,
        p50: common::percentile(&mut t, 0.5),
        p99: common::percentile(&mut times, 0.99),
        top,
    }
}

/// Precision and recall of deciding on the top-1 at `same_claim` (recall over all queries).
fn decision(top: &[(f32, bool, bool)]) -> (f64, f64, usize) {
    let answered: Vec<&(f32, bool, bool)> = top.iter().filter(|t| t.2).collect();
    let right = answered.iter().filter(|t| t.1).count();
    let precision = if answered.is_empty() {
        1.0
    } else {
        right as f64 / answered.len() as f64
    };
    (precision, right as f64 / top.len().max(1) as f64, answered.len())
}

/// The lowest top-1 cosine threshold whose precision on `top` is ≥ `want`.
fn calibrate(top: &[(f32, bool, bool)], want: f64) -> (f32, f64, f64) {
    let mut sorted: Vec<(f32, bool)> = top.iter().map(|t| (t.0, t.1)).collect();
    sorted.sort_by(|a, b| b.0.total_cmp(&a.0));
    let (mut right, mut best) = (0usize, (1.0f32, 1.0f64, 0.0f64));
    for (i, (cos, ok)) in sorted.iter().enumerate() {
        if *ok {
            right += 1;
        }
        let precision = right as f64 / (i + 1) as f64;
        let next_differs = sorted.get(i + 1).is_none_or(|n| n.0 < *cos);
        if precision >= want && next_differs {
            best = (*cos, precision, right as f64 / sorted.len() as f64);
        }
    }
    best
}

/// The English model as the sandbox installs it, at the shipped settings.
fn english(sandbox: &BTreeMap<String, String>) -> RelevanceConfig {
    RelevanceConfig {
        onnxruntime: sandbox["MUSEBOT_ORT_DYLIB"].clone(),
        model: sandbox["MUSEBOT_EMBED_MODEL"].clone(),
        tokenizer: sandbox["MUSEBOT_EMBED_TOKENIZER"].clone(),
        ..RelevanceConfig::default()
    }
}

/// The child process of the memory figure (`--daemon-share CORPUS QUERIES`): opens the
/// corpus as the daemon does (English model, matcher, warmed cache), matches every query,
/// prints its peak RSS and the match latencies.
fn daemon_share(corpus: &Path, queries: &Path) {
    let sandbox = common::sandbox();
    let relevance = english(&sandbox);
    let config = ClaimsConfig::default();
    let embedder = Arc::new(Embedder::load(&relevance).unwrap());
    let models = Models {
        model: musebot::claims::model_id(&relevance.model),
        multilingual: String::new(),
    };
    let matcher = Matcher::open(corpus, Some(embedder), None, &models, &config)
        .unwrap()
        .unwrap();
    let started = Instant::now();
    let held = matcher.warm().unwrap();
    let warm_s = started.elapsed().as_secs_f64();
    let mut times = Vec::new();
    for (_, text) in read_queries(queries) {
        let started = Instant::now();
        matcher.find(&text, Some("en"), 10).unwrap();
        times.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    let mut t = times.clone();
    println!(
        "daemon-share: {held} vectors warmed in {warm_s:.1} s; {} matches p50 {:.1} ms p99 {:.1} ms; peak RSS {:.0} MB",
        times.len(),
        common::percentile(&mut t, 0.5),
        common::percentile(&mut times, 0.99),
        peak_rss_mb()
    );
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    if let Some(at) = argv.iter().position(|a| a == "--daemon-share") {
        daemon_share(Path::new(&argv[at + 1]), Path::new(&argv[at + 2]));
        return;
    }
    let Some((_, data)) = common::args("claim_matching", 0) else {
        return;
    };
    let dir = data.join("claim-matching");
    let claims_path = env_path("MUSEBOT_CLAIMS", dir.join("vclaims.jsonl"));
    let queries_path = env_path("MUSEBOT_QUERIES", dir.join("CT2022-Task2A-EN-Train-Dev_Queries.tsv"));
    let qrels_path = env_path("MUSEBOT_QRELS", dir.join("CT2022-Task2A-EN-Dev_QRELs.tsv"));
    let train_path = env_path("MUSEBOT_TRAIN_QRELS", dir.join("CT2022-Task2A-EN-Train_QRELs.tsv"));
    if !claims_path.exists() {
        eprintln!("skipped: {} is absent", claims_path.display());
        return;
    }
    let sandbox = common::sandbox();
    let relevance = english(&sandbox);
    let config = ClaimsConfig::default();
    let embedder = Arc::new(Embedder::load(&relevance).unwrap());
    // The multilingual model too (`MUSEBOT_BENCH_MULTILINGUAL=0` leaves it out).
    let multilingual = (std::env::var("MUSEBOT_BENCH_MULTILINGUAL").as_deref() != Ok("0")).then(|| {
        Arc::new(
            Embedder::load(&RelevanceConfig {
                model: sandbox["MUSEBOT_EMBED_MODEL_MULTI"].clone(),
                tokenizer: sandbox["MUSEBOT_EMBED_TOKENIZER_MULTI"].clone(),
                ..relevance.clone()
            })
            .unwrap(),
        )
    });
    let models = Models {
        model: musebot::claims::model_id(&relevance.model),
        multilingual: if multilingual.is_some() {
            musebot::claims::model_id(&sandbox["MUSEBOT_EMBED_MODEL_MULTI"])
        } else {
            String::new()
        },
    };
    let claims = read_claims(&claims_path);
    let queries = read_queries(&queries_path);
    let qrels = read_qrels(&qrels_path);
    let train = read_qrels(&train_path);
    let id_of: HashMap<String, String> = claims
        .iter()
        .map(|(id, e)| (e.review.url.clone(), id.clone()))
        .collect();
    println!(
        "claim matching: {} fact-checks ({}), {} queries with qrels ({}); calibration: {}",
        claims.len(),
        claims_path.display(),
        qrels.len(),
        qrels_path.display(),
        train_path.display()
    );
    println!(
        "settings: shipped defaults (claims.same_claim {:.2}, BM25 weight {}, depth {}), model {} ({} thread sessions); changed: relevance.multilingual_model set as the sandbox sets it (MUSEBOT_BENCH_MULTILINGUAL=0: not)",
        config.same_claim,
        musebot::claims::matcher::BM25_WEIGHT,
        musebot::claims::matcher::DEPTH,
        models.model,
        relevance.threads
    );

    let tmp = tempfile::tempdir().unwrap();
    let corpus_dir = tmp.path().join("claims");
    let started = Instant::now();
    let mut importer = Importer::open(
        &corpus_dir,
        Some(embedder.clone()),
        multilingual.clone(),
        models.clone(),
        config.max_reviews,
    )
    .unwrap();
    for (_, e) in &claims {
        importer.offer(&e.review.url, e.clone()).unwrap();
    }
    let report = importer.finish().unwrap();
    let secs = started.elapsed().as_secs_f64();
    println!(
        "import: {} fact-checks in {secs:.1} s = {:.0} items/s (embeddings by {} included); {} held",
        report.imported,
        report.imported as f64 / secs,
        if multilingual.is_some() {
            "both models"
        } else {
            "the English model"
        },
        report.held
    );

    let words = Matcher::open(&corpus_dir, None, None, &Models::default(), &config)
        .unwrap()
        .unwrap();
    let shipped = Matcher::open(
        &corpus_dir,
        Some(embedder.clone()),
        multilingual.clone(),
        &models,
        &config,
    )
    .unwrap()
    .unwrap();
    shipped.warm().unwrap();
    let bm25 = score(&words, &queries, &qrels, &id_of);
    let ours = score(&shipped, &queries, &qrels, &id_of);
    for (name, r) in [("bm25", &bm25), ("musebot", &ours)] {
        println!(
            "{name}: MAP@5 {:.3} MRR {:.3} S@10 {:.3} p50 {:.1} ms p99 {:.1} ms",
            r.map5, r.mrr, r.s10, r.p50, r.p99
        );
    }
    let (precision, recall, answered) = decision(&ours.top);
    println!(
        "same claim at the shipped threshold {:.2}: precision {precision:.3} recall {recall:.3} ({answered} of {} queries decided)",
        config.same_claim,
        ours.top.len()
    );
    let train_run = score(&shipped, &queries, &train, &id_of);
    let (tau, p, r) = calibrate(&train_run.top, 0.95);
    let (tp, tr, _) = decision(&train_run.top);
    println!(
        "calibration on train ({} queries): precision ≥ 0.95 from cosine {tau:.3} (precision {p:.3}, recall {r:.3}); at the shipped threshold: precision {tp:.3} recall {tr:.3}; train MAP@5 {:.3}",
        train_run.top.len(),
        train_run.map5
    );
    if multilingual.is_some() {
        let multi = score_in(&shipped, &queries, &qrels, &id_of, "xx");
        let (mp, mr, ma) = decision(&multi.top);
        let multi_train = score_in(&shipped, &queries, &train, &id_of, "xx");
        let (mtau, mtp, mtr) = calibrate(&multi_train.top, 0.95);
        println!(
            "musebot (multilingual model, for posts not in English; English queries here): MAP@5 {:.3} MRR {:.3} S@10 {:.3} p50 {:.1} ms p99 {:.1} ms",
            multi.map5, multi.mrr, multi.s10, multi.p50, multi.p99
        );
        println!(
            "  same claim at the shipped threshold {:.2}: precision {mp:.3} recall {mr:.3} ({ma} decided); calibrated on train: precision ≥ 0.95 from cosine {mtau:.3} (precision {mtp:.3}, recall {mtr:.3})",
            config.same_claim_multilingual
        );
    }
    println!(
        "size: {:.1} MB on disk for {} fact-checks; peak RSS {:.0} MB",
        shipped.corpus().disk_bytes() as f64 / 1e6,
        shipped.corpus().len(),
        peak_rss_mb()
    );
    drop((words, shipped));

    // At MUSEBOT_BENCH_CLAIMS_AT: the data's own fact-checks again under new URLs (copies).
    let target: usize = std::env::var("MUSEBOT_BENCH_CLAIMS_AT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    // The size figure is the English model's: the copies get no multilingual vector.
    let english_only = Models {
        multilingual: String::new(),
        ..models.clone()
    };
    // The copies carry their original's vector (read back from the corpus): the import's own
    // throughput is the figure above.
    let originals: Vec<Vec<f32>> = {
        let texts: Vec<String> = claims
            .iter()
            .map(|(_, e)| musebot::claims::import::embedded_text(e))
            .collect();
        let started = Instant::now();
        let v = embedder.embed(&texts[..200]).unwrap();
        println!(
            "(embedding alone: {:.1} ms a claim, {} thread sessions)",
            started.elapsed().as_secs_f64() * 1000.0 / 200.0,
            relevance.threads
        );
        v
    };
    let started = Instant::now();
    let mut importer = Importer::open(
        &corpus_dir,
        Some(embedder.clone()),
        None,
        english_only.clone(),
        config.max_reviews,
    )
    .unwrap();
    let mut added = 0;
    'pad: for copy in 1.. {
        for (i, (_, e)) in claims.iter().enumerate() {
            if claims.len() + added >= target {
                break 'pad;
            }
            let mut e = e.clone();
            e.review.url = format!("{}copy-{copy}", e.review.url);
            // A copy of a claim gets the vector of one of the first 200 (the scan's cost does
            // not depend on which).
            let v = originals[i % originals.len()].clone();
            importer.offer_embedded(&e.review.url.clone(), e, v).unwrap();
            added += 1;
        }
    }
    let report = importer.finish().unwrap();
    let secs = started.elapsed().as_secs_f64();
    println!(
        "padded to {} fact-checks (copies of the data's own under new URLs, vectors reused): {added} imported at {:.0} items/s without embedding",
        report.held,
        added as f64 / secs
    );
    let big = Matcher::open(&corpus_dir, Some(embedder), None, &english_only, &config)
        .unwrap()
        .unwrap();
    big.warm().unwrap();
    let at = score(&big, &queries, &qrels, &id_of);
    println!(
        "musebot at {}: MAP@5 {:.3} (copies, with other claims' vectors, compete with the gold) p50 {:.1} ms p99 {:.1} ms; {:.1} MB on disk",
        big.corpus().len(),
        at.map5,
        at.p50,
        at.p99,
        big.corpus().disk_bytes() as f64 / 1e6,
    );
    drop(big);
    // The daemon's share, in a process of its own (this one holds both models and the data).
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .arg("--daemon-share")
        .arg(&corpus_dir)
        .arg(&queries_path)
        .output()
        .unwrap();
    print!("{}", String::from_utf8_lossy(&child.stdout));
    if !child.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&child.stderr));
    }
}
