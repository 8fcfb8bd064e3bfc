//! Claim matching on real data (`cargo bench --bench claim_matching`; `-- --kernels` for the
//! first figure alone: the flat scan's kernel this machine chose beside the portable one, on
//! synthetic vectors): CheckThat! 2021/22
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
//! A file that cannot be read, or a fact-check file with none in it, stops the bench with its
//! name; a split none of whose queries are in the queries file prints its figures as "n/a (no
//! queries scored)".

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

/// The text of `path`, or a message naming it.
fn read_text(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

fn read_qrels(path: &Path) -> Result<BTreeMap<String, Vec<String>>, String> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in read_text(path)?.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 4 && f[3] != "0" {
            out.entry(f[0].to_string()).or_default().push(f[2].to_string());
        }
    }
    Ok(out)
}

/// (id → text) of the queries file.
fn read_queries(path: &Path) -> Result<HashMap<String, String>, String> {
    Ok(read_text(path)?
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(a, b)| (a.trim().to_string(), b.trim().to_string()))
        .collect())
}

/// The fact-checks as entries, each with its id (the URL is Snopes's for the id).
fn read_claims(path: &Path) -> Result<Vec<(String, Entry)>, String> {
    let mut out = Vec::new();
    for line in read_text(path)?.lines() {
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
    Ok(out)
}

struct Run {
    /// The queries scored: those of the qrels that the queries file holds.
    scored: usize,
    map5: f64,
    mrr: f64,
    s10: f64,
    /// Match latency per query scored, ms.
    times: Vec<f64>,
    /// (top-1 cosine, top-1 correct, top-1 same_claim) per query.
    top: Vec<(f32, bool, bool)>,
}

/// What a row prints when its split has no query in the queries file.
const NOTHING_SCORED: &str = "n/a (no queries scored)";

impl Run {
    /// `MAP@5 … MRR … S@10 … p50 … ms p99 … ms`, or [`NOTHING_SCORED`].
    fn summary(&self) -> String {
        if self.scored == 0 {
            return NOTHING_SCORED.into();
        }
        format!(
            "MAP@5 {:.3} MRR {:.3} S@10 {:.3} {}",
            self.map5,
            self.mrr,
            self.s10,
            common::p50_p99_ms(&self.times)
        )
    }

    /// `MAP@5 …`, or [`NOTHING_SCORED`].
    fn map5(&self) -> String {
        if self.scored == 0 {
            NOTHING_SCORED.into()
        } else {
            format!("MAP@5 {:.3}", self.map5)
        }
    }
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
    let mut scored = 0usize;
    for (q, gold) in qrels {
        let Some(text) = queries.get(q) else { continue };
        scored += 1;
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
    let n = scored.max(1) as f64;
    Run {
        scored,
        map5: map / n,
        mrr: mrr / n,
        s10: s10 / n,
        times,
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

/// `precision … recall …` of [`decision`] on `top`, or [`NOTHING_SCORED`] when `top` is empty.
fn decided(top: &[(f32, bool, bool)]) -> String {
    if top.is_empty() {
        return NOTHING_SCORED.into();
    }
    let (precision, recall, answered) = decision(top);
    format!(
        "precision {precision:.3} recall {recall:.3} ({answered} of {} queries decided)",
        top.len()
    )
}

/// The lowest top-1 cosine threshold whose precision on `top` is ≥ `want` (1.0 with recall 0
/// when none is).
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

/// `precision ≥ want from cosine … (precision …, recall …)`, or [`NOTHING_SCORED`] when `top`
/// is empty.
fn calibrated(top: &[(f32, bool, bool)], want: f64) -> String {
    if top.is_empty() {
        return NOTHING_SCORED.into();
    }
    let (tau, p, r) = calibrate(top, want);
    format!("precision ≥ {want:.2} from cosine {tau:.3} (precision {p:.3}, recall {r:.3})")
}

/// The child process of the memory figure (`--daemon-share CORPUS QUERIES`): opens the
/// corpus as the daemon does (English model, matcher, warmed cache), matches every query,
/// prints its peak RSS and the match latencies.
fn daemon_share(corpus: &Path, queries: &Path) {
    let sandbox = common::sandbox();
    let relevance = common::english(&sandbox);
    let config = ClaimsConfig::default();
    let embedder = Arc::new(Embedder::load(&relevance).unwrap());
    let models = Models {
        model: musebot::claims::model_id(&relevance.model),
        multilingual: String::new(),
    };
    let matcher = Matcher::open(corpus, Some(embedder), None, &models, &config)
        .unwrap()
        .unwrap();
    let queries = match read_queries(queries) {
        Ok(q) => q,
        Err(e) => {
            eprintln!("daemon-share: {e}");
            return;
        }
    };
    let started = Instant::now();
    let held = matcher.warm().unwrap();
    let warm_s = started.elapsed().as_secs_f64();
    let mut times = Vec::new();
    for text in queries.values() {
        let started = Instant::now();
        matcher.find(text, Some("en"), 10).unwrap();
        times.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    println!(
        "daemon-share: {held} vectors warmed in {warm_s:.1} s; {} matches {}; peak RSS {:.0} MB",
        times.len(),
        common::p50_p99_ms(&times),
        common::peak_rss_mb()
    );
}

/// The flat scan's kernel alone, on synthetic vectors (no data needed): 200,000 stored vectors
/// of 384 dimensions against one query, with the kernel this machine's run chose beside the
/// portable one every machine has, in the same run. Best of 5 scans each.
fn scan_kernels() {
    use musebot::claims::vectors::{dot, kernel, portable};
    const N: usize = 200_000;
    const DIMS: usize = 384;
    let stored: Vec<i8> = (0..N * DIMS).map(|i| ((i * 2_654_435_761) >> 7) as u8 as i8).collect();
    let query: Vec<f32> = (0..DIMS).map(|i| ((i * 37 % 101) as f32 - 50.0) / 500.0).collect();
    let time = |f: fn(&[f32], &[i8], f32) -> f32| {
        let mut best = f64::MAX;
        let mut sink = 0f32;
        for _ in 0..5 {
            let started = Instant::now();
            for v in stored.chunks_exact(DIMS) {
                sink += f(&query, v, 0.01);
            }
            best = best.min(started.elapsed().as_secs_f64() * 1000.0);
        }
        std::hint::black_box(sink);
        best
    };
    let chosen = time(dot);
    let baseline = time(portable);
    // The first pass the scan runs before `dot` (`claims::prescan`): the query rounded to int8,
    // integer multiply-adds; `dot` then scores only the few rows it keeps.
    let first = {
        use musebot::claims::prescan::{dots, Query};
        let rounded = Query::new(&query).expect("a finite query");
        let (mut best, mut sink) = (f64::MAX, 0i64);
        let (mut scratch, mut out) = (Vec::new(), [0i32]);
        for _ in 0..5 {
            let started = Instant::now();
            for v in stored.chunks_exact(DIMS) {
                dots(&[&rounded], v, &mut scratch, &mut out);
                sink += i64::from(out[0]);
            }
            best = best.min(started.elapsed().as_secs_f64() * 1000.0);
        }
        std::hint::black_box(sink);
        best
    };
    println!(
        "vector scan, 200,000 x 384 int8 (synthetic), one query, one thread: exact kernel {} {chosen:.1} ms; portable {baseline:.1} ms ({:.1}x); first pass {} {first:.1} ms",
        kernel(),
        baseline / chosen,
        musebot::claims::prescan::kernel()
    );
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    if argv.iter().any(|a| a == "--kernels") {
        scan_kernels();
        return;
    }
    if let Some(at) = argv.iter().position(|a| a == "--daemon-share") {
        match (argv.get(at + 1), argv.get(at + 2)) {
            (Some(corpus), Some(queries)) => daemon_share(Path::new(corpus), Path::new(queries)),
            _ => eprintln!("usage: claim_matching --daemon-share CORPUS QUERIES"),
        }
        return;
    }
    let Some((_, data)) = common::args("claim_matching", 0) else {
        return;
    };
    scan_kernels();
    let dir = data.join("claim-matching");
    let claims_path = env_path("MUSEBOT_CLAIMS", dir.join("vclaims.jsonl"));
    let queries_path = env_path("MUSEBOT_QUERIES", dir.join("CT2022-Task2A-EN-Train-Dev_Queries.tsv"));
    let qrels_path = env_path("MUSEBOT_QRELS", dir.join("CT2022-Task2A-EN-Dev_QRELs.tsv"));
    let train_path = env_path("MUSEBOT_TRAIN_QRELS", dir.join("CT2022-Task2A-EN-Train_QRELs.tsv"));
    if !claims_path.exists() {
        eprintln!("skipped: {} is absent", claims_path.display());
        return;
    }
    let read = (|| {
        Ok::<_, String>((
            read_claims(&claims_path)?,
            read_queries(&queries_path)?,
            read_qrels(&qrels_path)?,
            read_qrels(&train_path)?,
        ))
    })();
    let (claims, queries, qrels, train) = match read {
        Ok(read) => read,
        Err(e) => {
            eprintln!("stopped: {e}");
            return;
        }
    };
    if claims.is_empty() {
        eprintln!("stopped: {} holds no fact-checks", claims_path.display());
        return;
    }
    let sandbox = common::sandbox();
    let relevance = common::english(&sandbox);
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
        println!("{name}: {}", r.summary());
    }
    println!(
        "same claim at the shipped threshold {:.2}: {}",
        config.same_claim,
        decided(&ours.top)
    );
    let train_run = score(&shipped, &queries, &train, &id_of);
    println!(
        "calibration on train ({} queries): {}; at the shipped threshold: {}; train {}",
        train_run.top.len(),
        calibrated(&train_run.top, 0.95),
        decided(&train_run.top),
        train_run.map5()
    );
    if multilingual.is_some() {
        let multi = score_in(&shipped, &queries, &qrels, &id_of, "xx");
        let multi_train = score_in(&shipped, &queries, &train, &id_of, "xx");
        println!(
            "musebot (multilingual model, for posts not in English; English queries here): {}",
            multi.summary()
        );
        println!(
            "  same claim at the shipped threshold {:.2}: {}; calibrated on train: {}",
            config.same_claim_multilingual,
            decided(&multi.top),
            calibrated(&multi_train.top, 0.95)
        );
    }
    println!(
        "size: {:.1} MB on disk for {} fact-checks; peak RSS {:.0} MB",
        shipped.corpus().disk_bytes() as f64 / 1e6,
        shipped.corpus().len(),
        common::peak_rss_mb()
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
        // The first 200 (fewer when the data holds fewer; never none: checked above).
        let first = &texts[..texts.len().min(200)];
        let started = Instant::now();
        let v = embedder.embed(first).unwrap();
        println!(
            "(embedding alone: {:.1} ms a claim, {} thread sessions)",
            started.elapsed().as_secs_f64() * 1000.0 / first.len() as f64,
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
    let figures = if at.scored == 0 {
        NOTHING_SCORED.to_string()
    } else {
        format!(
            "{} (copies, with other claims' vectors, compete with the gold) {}",
            at.map5(),
            common::p50_p99_ms(&at.times)
        )
    };
    println!(
        "musebot at {}: {figures}; {:.1} MB on disk",
        big.corpus().len(),
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
