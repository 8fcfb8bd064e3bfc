//! What the benchmarks share: the scripted LLM's answers for every step (zero judgement,
//! realistic shapes) and percentiles.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};

use crate::llm::{block, evidence_urls};

/// The bench's arguments, `[POSTS] [DATA_DIR]`: `None` (with a message) when it should not
/// run — without `--bench` (`cargo test --all-targets` runs bench binaries too: stay quick
/// there), or without the data folder.
pub fn args(name: &str, default_posts: usize) -> Option<(usize, std::path::PathBuf)> {
    if !std::env::args().any(|a| a == "--bench") {
        println!("{name} benchmark: skipped here; run it with `cargo bench --bench {name}`");
        return None;
    }
    let args = positional();
    let n_posts = args.first().and_then(|a| a.parse().ok()).unwrap_or(default_posts);
    let data = std::path::PathBuf::from(
        args.get(1)
            .cloned()
            .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data").into()),
    );
    if !data.exists() {
        eprintln!("skipped: {} is absent", data.display());
        return None;
    }
    Some((n_posts, data))
}

/// Options that take a value (`--llm-ms 1500`); every other `--x` is a flag (cargo's `--bench`).
const VALUED: &[&str] = &["--llm-ms", "--token-ms", "--page-ms"];

/// The arguments that are neither options nor their values.
fn positional() -> Vec<String> {
    let all: Vec<String> = std::env::args().skip(1).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < all.len() {
        if VALUED.contains(&all[i].as_str()) {
            i += 2;
            continue;
        }
        if !all[i].starts_with("--") {
            out.push(all[i].clone());
        }
        i += 1;
    }
    out
}

/// The value of `--name VALUE` (one of [`VALUED`]), or `default`; a value that is not a number
/// stops the bench with the option's name.
pub fn option_ms(name: &str, default: u64) -> u64 {
    assert!(VALUED.contains(&name), "{name} is not a known option");
    let all: Vec<String> = std::env::args().collect();
    match all.iter().position(|a| a == name) {
        Some(i) => all
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} takes a whole number of milliseconds, e.g. {name} {default}")),
        None => default,
    }
}

/// What `scripts/setup-sandbox.sh` wrote (model and library paths).
pub fn sandbox() -> BTreeMap<String, String> {
    let cache =
        std::env::var("MUSEBOT_CACHE").unwrap_or_else(|_| format!("{}/.cache/musebot", std::env::var("HOME").unwrap()));
    std::fs::read_to_string(format!("{cache}/sandbox.env"))
        .expect("run scripts/setup-sandbox.sh first")
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect()
}

/// The first `n` unique texts of the Muse paper's 120 posts.
pub fn posts(data: &Path, n: usize) -> Vec<String> {
    let mut posts: Vec<String> = Vec::new();
    for rec in csv::Reader::from_path(data.join("muse/posts.csv")).unwrap().records() {
        let text = rec.unwrap()[1].to_string();
        if !posts.contains(&text) {
            posts.push(text);
        }
    }
    posts.truncate(n);
    posts
}

/// The 91 real news pages: (path → HTML, their URLs under their real hosts, the hosts).
pub fn pages(data: &Path) -> (BTreeMap<String, String>, Vec<String>, Vec<String>) {
    let truth: Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("extraction/ground-truth.json")).unwrap()).unwrap();
    let (mut site, mut urls, mut hosts) = (BTreeMap::new(), Vec::new(), Vec::new());
    for (key, v) in truth.as_object().unwrap() {
        let u = url::Url::parse(v["url"].as_str().unwrap()).unwrap();
        site.insert(
            format!("/{key}"),
            std::fs::read_to_string(data.join(format!("extraction/html/{key}.html"))).unwrap(),
        );
        let host = u.host_str().unwrap().to_string();
        urls.push(format!("http://{host}/{key}"));
        if !hosts.contains(&host) {
            hosts.push(host);
        }
    }
    (site, urls, hosts)
}

/// Search results: ten of `urls` per query, picked by a hash of the query.
pub fn results_for(urls: &[String], query: &str) -> Vec<Value> {
    let h = query
        .bytes()
        .fold(7u64, |a, b| a.wrapping_mul(31).wrapping_add(b as u64)) as usize;
    (0..10)
        .map(|i| json!({"url": urls[(h + i * 7) % urls.len()], "title": "t", "content": "c"}))
        .collect()
}

/// Zero-latency LLM playing each step; quotes the first passage of every page it is shown.
pub fn answer(body: &Value) -> String {
    let system = body["messages"][0]["content"].as_str().unwrap_or("");
    let user = body["messages"][1]["content"].as_str().unwrap_or("");
    if system.contains("web search queries") {
        let words: Vec<&str> = block(user, "post").split_whitespace().filter(|w| w.len() > 4).collect();
        let q: Vec<String> = (0..3)
            .map(|i| words.iter().skip(i * 3).take(4).cloned().collect::<Vec<_>>().join(" "))
            .collect();
        return json!({ "queries": q }).to_string();
    }
    if system.contains("You check a reply") {
        return json!({"verdict": "supported", "reasons": "Every sentence is in the evidence.", "objections": []})
            .to_string();
    }
    if system.contains("Quote passages") {
        let quotes: Vec<String> = user
            .split("content:\n")
            .skip(1)
            .map(|content| content.split_whitespace().take(16).collect::<Vec<_>>().join(" "))
            .collect();
        return json!({"refute": quotes, "context": []}).to_string();
    }
    let urls = evidence_urls(user, 2);
    format!("This post is misleading: the sources say otherwise. {}", urls.join(" "))
}

/// The nearest-rank `q` percentile of `v` (sorted in place); `None` when there is nothing to
/// rank, e.g. a split whose queries were all left out.
pub fn try_percentile(v: &mut [f64], q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1])
}

/// [`try_percentile`] for the benches whose runs always time something: NaN (printed as such)
/// rather than a panic when nothing was timed.
pub fn percentile(v: &mut [f64], q: f64) -> f64 {
    try_percentile(v, q).unwrap_or(f64::NAN)
}

/// `p50 … ms p99 … ms` of `v`, or what could not be measured when `v` is empty.
pub fn p50_p99_ms(v: &[f64]) -> String {
    let mut v = v.to_vec();
    match (try_percentile(&mut v, 0.5), try_percentile(&mut v, 0.99)) {
        (Some(p50), Some(p99)) => format!("p50 {p50:.1} ms p99 {p99:.1} ms"),
        _ => "p50/p99 n/a (no queries scored)".into(),
    }
}

/// The English model as the sandbox installs it, at the shipped settings.
pub fn english(sandbox: &BTreeMap<String, String>) -> musebot::relevance::RelevanceConfig {
    musebot::relevance::RelevanceConfig {
        onnxruntime: sandbox["MUSEBOT_ORT_DYLIB"].clone(),
        model: sandbox["MUSEBOT_EMBED_MODEL"].clone(),
        tokenizer: sandbox["MUSEBOT_EMBED_TOKENIZER"].clone(),
        ..musebot::relevance::RelevanceConfig::default()
    }
}

/// The process's peak resident memory (`VmHWM`), in MB.
pub fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|k| k.parse::<f64>().ok()))
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// The CPU this bench ran on and the instruction sets that decide which SIMD paths run: the
/// scan's kernel (printed beside it) and ONNX Runtime's int8 kernels (MLAS picks AVX-512 VNNI,
/// AVX-VNNI or AVX2 by these flags), from `/proc/cpuinfo`.
pub fn cpu() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = info
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_string())
        .unwrap_or_else(|| "unknown CPU".into());
    let flags: Vec<&str> = info
        .lines()
        .find_map(|l| l.strip_prefix("flags"))
        .map(|l| l.split_whitespace().collect())
        .unwrap_or_default();
    let has = |f: &str| if flags.contains(&f) { "yes" } else { "no" };
    format!(
        "{model}; {} cores; avx2 {}, avx512f {}, avx512_vnni {}, avx_vnni {} (ONNX Runtime's int8 kernels follow these)",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        has("avx2"),
        has("avx512f"),
        has("avx512_vnni"),
        has("avx_vnni")
    )
}
