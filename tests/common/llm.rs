//! A scripted OpenAI-compatible LLM server on loopback: fixed or computed answers, scripted
//! failures and delays, every request recorded. Needs only external crates (no `super::`), so
//! `benches/pipeline.rs` and `src/worker/tests.rs` include this same file with `#[path]`.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

/// Computes a scripted answer from the request body (for multi-step pipelines).
pub type Router = Arc<dyn Fn(&Value) -> String + Send + Sync>;

/// What the scripted LLM answers.
#[derive(Clone)]
pub struct Script {
    /// When set, answers are computed from the request instead of `reply`.
    pub router: Option<Router>,
    /// The reply text (may echo the post: `{post}` is replaced by the user message).
    pub reply: String,
    /// Answer this many first requests with this HTTP status.
    pub fail_first: usize,
    pub fail_status: u16,
    pub delay: Duration,
    /// Added per word of the answer (a realistic generation speed for benchmarks).
    pub per_word: Duration,
}

impl Script {
    pub fn reply(text: &str) -> Script {
        Script {
            router: None,
            reply: text.into(),
            fail_first: 0,
            fail_status: 500,
            delay: Duration::ZERO,
            per_word: Duration::ZERO,
        }
    }

    pub fn routed(router: impl Fn(&Value) -> String + Send + Sync + 'static) -> Script {
        Script {
            router: Some(Arc::new(router)),
            ..Script::reply("")
        }
    }
}

/// A scripted OpenAI-compatible server on loopback.
pub struct ScriptedLlm {
    pub base_url: String,
    pub calls: Arc<AtomicUsize>,
    pub requests: Arc<Mutex<Vec<Value>>>,
    /// (start, end) of every answered request, for how many calls ran one after another.
    pub spans: Arc<Mutex<Vec<(std::time::Instant, std::time::Instant)>>>,
    _task: tokio::task::JoinHandle<()>,
}

impl ScriptedLlm {
    pub async fn start(script: Script) -> ScriptedLlm {
        use axum::routing::post;
        let calls = Arc::new(AtomicUsize::new(0));
        let requests: Arc<Mutex<Vec<Value>>> = Arc::default();
        let spans: Arc<Mutex<Vec<(std::time::Instant, std::time::Instant)>>> = Arc::default();
        let (c, r, sp) = (calls.clone(), requests.clone(), spans.clone());
        let app = axum::Router::new().route(
            "/v1/chat/completions",
            post(move |axum::Json(body): axum::Json<Value>| {
                let (c, r, script, spans) = (c.clone(), r.clone(), script.clone(), sp.clone());
                async move {
                    let started = std::time::Instant::now();
                    let n = c.fetch_add(1, Ordering::SeqCst);
                    r.lock().unwrap().push(body.clone());
                    tokio::time::sleep(script.delay).await;
                    if n < script.fail_first {
                        let code = axum::http::StatusCode::from_u16(script.fail_status).unwrap();
                        return (code, [("retry-after", "0")], axum::Json(json!({"error": {"message": "scripted failure"}})));
                    }
                    let user = body["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or("").to_string();
                    let content = match &script.router {
                        Some(route) => route(&body),
                        None => script.reply.replace("{post}", &user),
                    };
                    // A routed answer `!status 500` is that HTTP status (a call that fails
                    // after earlier ones were answered).
                    if let Some(code) = content.strip_prefix("!status ").and_then(|c| c.trim().parse::<u16>().ok()) {
                        let code = axum::http::StatusCode::from_u16(code).unwrap();
                        return (code, [("retry-after", "0")], axum::Json(json!({"error": {"message": "scripted failure"}})));
                    }
                    let words = content.split_whitespace().count() as u32;
                    tokio::time::sleep(script.per_word * words).await;
                    spans.lock().unwrap().push((started, std::time::Instant::now()));
                    (
                        axum::http::StatusCode::OK,
                        [("retry-after", "0")],
                        axum::Json(json!({
                            "id": "chatcmpl-test", "object": "chat.completion",
                            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                            "usage": {"prompt_tokens": 42, "completion_tokens": 17, "total_tokens": 59}
                        })),
                    )
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        ScriptedLlm {
            base_url: format!("http://{addr}/v1"),
            calls,
            requests,
            spans,
            _task: task,
        }
    }

    /// How many of the calls so far ran one after another (the longest chain of calls each
    /// starting after the previous one ended), then forgets them.
    pub fn sequential_calls(&self) -> usize {
        let mut spans = std::mem::take(&mut *self.spans.lock().unwrap());
        spans.sort_by_key(|s| s.0);
        let (mut chain, mut end): (usize, Option<std::time::Instant>) = (0, None);
        for (start, stop) in spans {
            match end {
                Some(e) if start < e => end = Some(e.min(stop)),
                _ => {
                    chain += 1;
                    end = Some(stop);
                }
            }
        }
        chain
    }
}

/// The content of a `<tag>` block in a prompt ("" when absent).
pub fn block<'a>(text: &'a str, tag: &str) -> &'a str {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    match (text.find(&open), text.rfind(&close)) {
        (Some(a), Some(b)) if a < b => &text[a + open.len()..b],
        _ => "",
    }
}

/// The first `n` source URLs listed in a prompt's `<evidence>` block.
pub fn evidence_urls(prompt: &str, n: usize) -> Vec<&str> {
    block(prompt, "evidence")
        .split_whitespace()
        .filter(|w| w.starts_with("http"))
        .map(|w| w.trim_end_matches([',', ')']))
        .take(n)
        .collect()
}

/// The passages (of 8 words or more) of the page an evidence prompt shows, in order.
pub fn page_passages(prompt: &str) -> Vec<&str> {
    let page = block(prompt, "page");
    let content = page.split("content:\n").nth(1).unwrap_or("");
    content
        .split("\n\n")
        .map(str::trim)
        .filter(|p| p.split_whitespace().count() >= 8)
        .collect()
}
