//! The web on loopback: a [`Site`] serving pages by path (the daemon reaches it under real
//! publishers' host names through `fetch.test_resolve`), and a SearXNG-format
//! [`SearchServer`] whose results a closure computes from the query. Needs only external
//! crates (no `super::`), so `benches/pipeline.rs` includes this same file with `#[path]`.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::extract::{Path as AxPath, Query};
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use serde_json::{json, Value};

/// Serves `router` on a free loopback port until the test's runtime ends.
pub async fn serve(router: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    addr
}

/// Pages by path (`/world/report` → HTML, or `REDIRECT <url>` → a 302 there); anything else
/// is a 404; every request a 503 while `down` is set.
pub struct Site {
    pub addr: SocketAddr,
    pub down: Arc<AtomicBool>,
}

impl Site {
    pub async fn start(pages: BTreeMap<String, String>) -> Site {
        Self::start_slow(pages, std::time::Duration::ZERO).await
    }

    /// A site whose every answer takes `delay` (a realistic page load for benchmarks).
    pub async fn start_slow(pages: BTreeMap<String, String>, delay: std::time::Duration) -> Site {
        let pages = Arc::new(pages);
        let down = Arc::new(AtomicBool::new(false));
        let flag = down.clone();
        let router = axum::Router::new().route(
            "/{*path}",
            get(move |AxPath(path): AxPath<String>| {
                let (pages, flag) = (pages.clone(), flag.clone());
                async move {
                    tokio::time::sleep(delay).await;
                    if flag.load(Ordering::SeqCst) {
                        return (axum::http::StatusCode::SERVICE_UNAVAILABLE, "down").into_response();
                    }
                    match pages.get(&format!("/{path}")) {
                        // A page whose body is `REDIRECT <url>` answers 302 to that URL.
                        Some(html) if html.starts_with("REDIRECT ") => (
                            axum::http::StatusCode::FOUND,
                            [("location", html["REDIRECT ".len()..].to_string())],
                        )
                            .into_response(),
                        Some(html) => Html(html.clone()).into_response(),
                        None => (axum::http::StatusCode::NOT_FOUND, "no").into_response(),
                    }
                }
            }),
        );
        Site {
            addr: serve(router).await,
            down,
        }
    }

    /// `fetch.test_resolve` entries that send each host to this site.
    pub fn resolve_entries(&self, hosts: &[&str]) -> Vec<String> {
        hosts.iter().map(|h| format!("{h}={}", self.addr)).collect()
    }
}

/// Computes the results (`{url, title, content}`) for a query.
pub type Results = Arc<dyn Fn(&str) -> Vec<Value> + Send + Sync>;

/// A SearXNG JSON API (`GET /search?q=…&format=json`); a 503 while `down` is set.
pub struct SearchServer {
    pub addr: SocketAddr,
    pub down: Arc<AtomicBool>,
    /// Every request's parameters, in order.
    pub asked: Arc<std::sync::Mutex<Vec<BTreeMap<String, String>>>>,
}

impl SearchServer {
    pub async fn start(results: impl Fn(&str) -> Vec<Value> + Send + Sync + 'static) -> SearchServer {
        let results: Results = Arc::new(results);
        let down = Arc::new(AtomicBool::new(false));
        let flag = down.clone();
        let asked: Arc<std::sync::Mutex<Vec<BTreeMap<String, String>>>> = Arc::default();
        let log = asked.clone();
        let router = axum::Router::new().route(
            "/search",
            get(move |Query(q): Query<BTreeMap<String, String>>| {
                let (results, flag) = (results.clone(), flag.clone());
                log.lock().unwrap().push(q.clone());
                async move {
                    if flag.load(Ordering::SeqCst) {
                        return (axum::http::StatusCode::SERVICE_UNAVAILABLE, "down").into_response();
                    }
                    assert_eq!(
                        q.get("format").map(String::as_str),
                        Some("json"),
                        "SearXNG is asked for JSON"
                    );
                    let query = q.get("q").cloned().unwrap_or_default();
                    axum::Json(json!({"query": query, "results": results(&query)})).into_response()
                }
            }),
        );
        SearchServer {
            addr: serve(router).await,
            down,
            asked,
        }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// Pathological pages, each as (path, HTML): deep nesting of several tag kinds (tables,
/// `<div>`s, lists, unclosed inline tags, `<div/>` that HTML does not self-close), 10 MB of
/// text, 100,000 paragraphs, and binary junk. Each must cost only itself.
pub fn hostile_pages() -> Vec<(String, String)> {
    let body = "<p>The moon landing samples were studied by geologists in many labs. </p>".repeat(20);
    let page = |inner: String| {
        format!("<html><head><title>x</title></head><body><article>{body}{inner}</article></body></html>")
    };
    let mut junk = String::with_capacity(600_000);
    let mut x: u32 = 12345;
    for _ in 0..600_000 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        junk.push(char::from_u32((x >> 16) % 0x800).unwrap_or('?'));
    }
    vec![
        (
            "/hostile/tables".into(),
            page(format!(
                "{}x{}",
                "<table><tr><td>".repeat(20_000),
                "</td></tr></table>".repeat(20_000)
            )),
        ),
        (
            "/hostile/divs".into(),
            page(format!("{}x{}", "<div>".repeat(50_000), "</div>".repeat(50_000))),
        ),
        ("/hostile/lists".into(), page("<ul><li>".repeat(30_000))),
        (
            "/hostile/unclosed".into(),
            page(format!("{}text", "<b><i><u>".repeat(20_000))),
        ),
        ("/hostile/selfclosing".into(), page("<div/>".repeat(40_000))),
        (
            "/hostile/ten-mb".into(),
            page(format!("<p>{}</p>", "word ".repeat(2_000_000))),
        ),
        (
            "/hostile/paragraphs".into(),
            page(
                (0..100_000)
                    .map(|i| format!("<p>paragraph {i} about the moon</p>"))
                    .collect(),
            ),
        ),
        ("/hostile/junk".into(), junk),
    ]
}

/// The first `n` words of a text.
pub fn first_words(text: &str, n: usize) -> String {
    text.split_whitespace().take(n).collect::<Vec<_>>().join(" ")
}

/// The shared data's real news pages (../shared/data/extraction) of these publishers:
/// (host, path, html, articleBody), sorted.
pub fn real_pages(data: &std::path::Path, hosts: &[&str]) -> Vec<(String, String, String, String)> {
    let truth: Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("extraction/ground-truth.json")).unwrap()).unwrap();
    let mut out = Vec::new();
    for (key, v) in truth.as_object().unwrap() {
        let url = url::Url::parse(v["url"].as_str().unwrap()).unwrap();
        let host = url.host_str().unwrap().to_string();
        if hosts.contains(&host.as_str()) {
            let html = std::fs::read_to_string(data.join(format!("extraction/html/{key}.html"))).unwrap();
            out.push((
                host,
                url.path().to_string(),
                html,
                v["articleBody"].as_str().unwrap().to_string(),
            ));
        }
    }
    out.sort();
    out
}
