//! `musebot extract`: shows exactly what the bot reads from a page — the pipeline's own fetch
//! (same SSRF guard and caps) and extraction, plus the keep/drop decision it would take before
//! relevance. A directory of `.html` files with `--json` gives the article-extraction
//! benchmark's output format, `{stem: {"articleBody", "title", "date"}}`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde_json::json;

use crate::extract::{self, Decision, Page};
use crate::fetch::{FetchConfig, Fetcher};

/// What to extract.
#[derive(Debug, Clone)]
pub struct ExtractArgs {
    pub target: String,
    pub json: bool,
    pub url_for_file: Option<String>,
    /// For a directory: a JSON file `{stem: {"url": …}}` (e.g. the benchmark's ground truth).
    pub urls_from: Option<PathBuf>,
    pub before: Option<DateTime<Utc>>,
    /// For a directory: print extraction time per page (in-process, extraction only) to stderr.
    pub timings: bool,
}

/// Why `extract` failed, for the exit code and the message.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    #[error("refused: {0}")]
    Refused(String),
    #[error("{0}")]
    Input(String),
}

pub async fn run(args: &ExtractArgs, fetch: &FetchConfig) -> Result<String, InspectError> {
    let target = args.target.as_str();
    if target.starts_with("http://") || target.starts_with("https://") || target.contains("://") {
        let fetcher = Fetcher::new(fetch).map_err(InspectError::Input)?;
        let fetched = fetcher
            .fetch(target)
            .await
            .map_err(|e| InspectError::Refused(format!("{target}: {e} (decision: dropped, {})", e.reason())))?;
        let page = read(target, fetched.html, Some(fetched.url.to_string()))?;
        return Ok(render_one(&page, &extract::decide(&page, args.before), args.json));
    }
    let path = Path::new(target);
    if path.is_dir() {
        return run_dir(path, args);
    }
    let bytes = std::fs::read(path).map_err(|e| InspectError::Input(format!("{target}: cannot read: {e}")))?;
    let html = crate::fetch::decode(&bytes, "");
    let page = read(target, html, args.url_for_file.clone())?;
    Ok(render_one(&page, &extract::decide(&page, args.before), args.json))
}

/// The pipeline's own bounded extraction; a page it drops is an error that says why.
fn read(target: &str, html: String, url: Option<String>) -> Result<Page, InspectError> {
    extract::extract_bounded(html, url, extract::EXTRACT_BUDGET)
        .map_err(|e| InspectError::Refused(format!("{target}: {e} (decision: dropped, unreadable)")))
}

fn run_dir(dir: &Path, args: &ExtractArgs) -> Result<String, InspectError> {
    let urls: BTreeMap<String, String> = match &args.urls_from {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| InspectError::Input(format!("{}: {e}", p.display())))?;
            let v: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| InspectError::Input(format!("{}: {e}", p.display())))?;
            v.as_object()
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| v["url"].as_str().map(|u| (k.clone(), u.to_string())))
                        .collect()
                })
                .unwrap_or_default()
        }
        None => BTreeMap::new(),
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| InspectError::Input(format!("{}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "html" || x == "htm"))
        .collect();
    files.sort();
    let mut out = serde_json::Map::new();
    let mut lines = Vec::new();
    let mut times = Vec::with_capacity(files.len());
    for file in &files {
        let stem = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let bytes = match std::fs::read(file) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(file = %file.display(), error = %e, "skipped unreadable file");
                continue;
            }
        };
        let html = crate::fetch::decode(&bytes, "");
        let url = urls.get(&stem).map(String::as_str).or(args.url_for_file.as_deref());
        let started = Instant::now();
        let page = match extract::extract_bounded(html, url.map(str::to_string), extract::EXTRACT_BUDGET) {
            Ok(page) => page,
            Err(e) => {
                tracing::warn!(file = %file.display(), error = %e, "page unreadable; skipped");
                lines.push(format!("{stem}\t0 words\tunreadable: {e}\t"));
                continue;
            }
        };
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        let decision = extract::decide(&page, args.before);
        out.insert(
            stem.clone(),
            json!({"articleBody": page.text, "title": page.title, "date": page.date.map(|d| d.to_rfc3339())}),
        );
        lines.push(format!(
            "{stem}\t{} words\t{}\t{}",
            page.word_count,
            decision.reason(),
            page.title.as_deref().unwrap_or("")
        ));
    }
    if args.timings && !times.is_empty() {
        eprintln!("{}", timing_line(&mut times));
    }
    Ok(if args.json {
        serde_json::to_string_pretty(&out).expect("JSON")
    } else {
        lines.join("\n")
    })
}

/// `pages N  mean … p50 … p99 … total …` (milliseconds; nearest-rank percentiles).
pub fn timing_line(times: &mut [f64]) -> String {
    times.sort_by(f64::total_cmp);
    let n = times.len();
    let pct = |q: f64| times[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
    let total: f64 = times.iter().sum();
    format!(
        "pages {n}  mean {:.2} ms  p50 {:.2} ms  p99 {:.2} ms  total {:.3} s",
        total / n as f64,
        pct(0.5),
        pct(0.99),
        total / 1000.0
    )
}

fn render_one(page: &Page, decision: &Decision, json: bool) -> String {
    if json {
        let v = json!({
            "url": page.url, "title": page.title, "date": page.date.map(|d| d.to_rfc3339()),
            "language": page.language, "image": page.image, "word_count": page.word_count,
            "decision": decision.reason(), "detail": decision, "text": page.text,
        });
        return serde_json::to_string_pretty(&v).expect("JSON");
    }
    let or_none = |v: Option<String>| v.unwrap_or_else(|| "(none)".into());
    let decision_text = match decision {
        Decision::Keep => "kept (goes on to relevance scoring)".to_string(),
        Decision::TooShort { words, min } => format!("dropped: too short ({words} < {min} words)"),
        Decision::TooNew { published, before } => {
            format!(
                "dropped: too new (published {} ≥ cut-off {})",
                published.to_rfc3339(),
                before.to_rfc3339()
            )
        }
    };
    format!(
        "url:        {}\ntitle:      {}\npublished:  {}\nlanguage:   {}\nmain image: {}\nwords:      {}\ndecision:   {}\n\n{}\n",
        or_none(page.url.clone()),
        or_none(page.title.clone()),
        or_none(page.date.map(|d| d.to_rfc3339())),
        or_none(page.language.clone()),
        or_none(page.image.clone()),
        page.word_count,
        decision_text,
        page.text
    )
}
