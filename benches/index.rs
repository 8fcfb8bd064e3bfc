//! The keyless evidence index (`cargo bench --bench index [ITEMS] [DATA_DIR]`), on the
//! project's real data: ITEMS (default 10,000) items made of the 91 real news articles of
//! `data/extraction` (each copy told apart by a token), added and committed in batches of 20 as
//! the refresher does (one commit per feed of `index.items_per_feed` = 20 items); then the
//! index's size on disk, the peak memory, and the time of 500 real claims
//! (`data/claims/averitec_dev_claims.json`) searched as queries. Then a feed refresh on
//! loopback: a feed of 20 items whose pages are the real HTML pages, read once in full
//! (fetch + extraction + indexing per item, through the page guard) beside the same feed read
//! again, answered 304 — the conditional GET each later refresh costs. Shipped defaults except
//! `fetch.test_allow_addrs`/`test_resolve` (printed), which let the guard reach the loopback
//! feed server.

#[path = "../tests/common/web.rs"]
mod web;

use std::time::Instant;

use musebot::index::refresh::Refresher;
use musebot::index::{IndexConfig, Item};

fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("index benchmark: skipped here; run it with `cargo bench --bench index`");
        return;
    }
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let data = std::path::PathBuf::from(
        args.get(1)
            .cloned()
            .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data").into()),
    );
    let truth: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("extraction/ground-truth.json")).unwrap()).unwrap();
    let articles: Vec<(String, String)> = truth
        .as_object()
        .unwrap()
        .iter()
        .map(|(stem, v)| (stem.clone(), v["articleBody"].as_str().unwrap_or("").to_string()))
        .filter(|(_, body)| body.split_whitespace().count() > 50)
        .collect();
    let claims: Vec<String> = serde_json::from_str::<Vec<serde_json::Value>>(
        &std::fs::read_to_string(data.join("claims/averitec_dev_claims.json")).unwrap(),
    )
    .unwrap()
    .iter()
    .filter_map(|c| c["claim"].as_str().map(String::from))
    .collect();
    let config = IndexConfig {
        max_items: n.max(IndexConfig::default().max_items),
        ..IndexConfig::default()
    };
    let batch = config.items_per_feed;
    println!(
        "settings: shipped [index] defaults (items_per_feed = {batch}, one commit per batch; max_items = {}: the default, or ITEMS when larger)",
        config.max_items
    );

    // 1. ITEMS items, committed in feed-sized batches.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("index");
    let fetch = musebot::fetch::FetchConfig::default();
    let mut refresher = Refresher::open(&config, &dir, &fetch, None).unwrap();
    let started = Instant::now();
    let mut commit_ms = Vec::new();
    for i in 0..n {
        let (stem, body) = &articles[i % articles.len()];
        let text = format!("{body} copy{i}");
        let url = format!("https://news.example/{stem}/{i}");
        let title = body.split_whitespace().take(10).collect::<Vec<_>>().join(" ");
        refresher
            .add(&Item {
                url: &url,
                link: &url,
                title: &title,
                text: &text,
                claims: Vec::new(),
                published: None,
                feed: "https://news.example/feed",
            })
            .unwrap();
        if (i + 1) % batch == 0 || i + 1 == n {
            let t = Instant::now();
            refresher.commit().unwrap();
            commit_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    let add_secs = started.elapsed().as_secs_f64();
    let index = refresher.index();
    assert_eq!(index.len() as usize, n);
    commit_ms.sort_by(f64::total_cmp);
    println!(
        "index: {n} items added in {add_secs:.1} s ({:.2} ms per item, commits included); commit p50 {:.1} ms, p95 {:.1} ms ({} commits)",
        add_secs * 1000.0 / n as f64,
        pct(&commit_ms, 0.5),
        pct(&commit_ms, 0.95),
        commit_ms.len()
    );
    println!(
        "index: {:.1} MB on disk for {n} items ({:.1} KB per item; text {:.1} MB as read); peak memory of this process {:.0} MB",
        dir_bytes(&dir) as f64 / 1e6,
        dir_bytes(&dir) as f64 / 1e3 / n as f64,
        (0..n).map(|i| articles[i % articles.len()].1.len()).sum::<usize>() as f64 / 1e6,
        peak_rss_mb()
    );
    let mut ms = Vec::new();
    let mut found = 0;
    for claim in &claims {
        let t = Instant::now();
        let hits = index.search(claim, None, 10).unwrap();
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
        found += hits.len();
    }
    ms.sort_by(f64::total_cmp);
    println!(
        "query: {} real claims as queries, top 10 each: p50 {:.2} ms, p95 {:.2} ms, max {:.2} ms ({:.1} hits on average)",
        claims.len(),
        pct(&ms, 0.5),
        pct(&ms, 0.95),
        ms[ms.len() - 1],
        found as f64 / claims.len() as f64
    );
    drop(refresher);

    // 2. A feed refresh on loopback: full read, then the 304.
    let pages: Vec<(String, String)> = articles
        .iter()
        .take(batch)
        .map(|(stem, _)| {
            let html = std::fs::read_to_string(data.join(format!("extraction/html/{stem}.html"))).unwrap();
            (format!("/a/{stem}"), html)
        })
        .collect();
    let items: String = pages
        .iter()
        .map(|(path, _)| format!("<item><title>{path}</title><link>http://feed.example{path}</link></item>"))
        .collect();
    let feed = format!("<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>f</title>{items}</channel></rss>");
    let etag = "\"bench\"";
    let mut router = axum::Router::new().route(
        "/feed",
        axum::routing::get(move |headers: axum::http::HeaderMap| {
            let feed = feed.clone();
            async move {
                use axum::response::IntoResponse;
                if headers.get("if-none-match").and_then(|v| v.to_str().ok()) == Some(etag) {
                    return axum::http::StatusCode::NOT_MODIFIED.into_response();
                }
                ([("content-type", "application/rss+xml"), ("etag", etag)], feed).into_response()
            }
        }),
    );
    for (path, html) in pages {
        router = router.route(
            &path,
            axum::routing::get(move || async move { axum::response::Html(html) }),
        );
    }
    let addr = web::serve(router).await;
    let fetch = musebot::fetch::FetchConfig {
        test_allow_addrs: vec![addr.to_string()],
        test_resolve: vec![format!("feed.example={addr}")],
        ..Default::default()
    };
    println!("settings: fetch.test_allow_addrs = [\"{addr}\"], fetch.test_resolve = [\"feed.example={addr}\"] (the loopback feed server)");
    let config = IndexConfig {
        feeds: vec!["http://feed.example/feed".into()],
        ..IndexConfig::default()
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut refresher = Refresher::open(&config, &tmp.path().join("index"), &fetch, None).unwrap();
    let t = Instant::now();
    let first = refresher.refresh().await;
    let full = t.elapsed().as_secs_f64() * 1000.0;
    let t = Instant::now();
    let again = refresher.refresh().await;
    let cond = t.elapsed().as_secs_f64() * 1000.0;
    println!(
        "refresh: a feed of {batch} real pages read in full in {full:.0} ms ({:.1} ms per item: fetch, extraction, indexing; {} added) | the same feed again, 304: {cond:.1} ms ({})",
        full / batch as f64,
        first.feeds[0].added,
        again.feeds[0].outcome.as_str()
    );
}
