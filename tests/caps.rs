//! Every body from outside is capped: a peer on loopback that never stops sending (the LLM
//! endpoint, a search API, Mastodon) costs the configured cap, and the call fails with an
//! error that says so, instead of exhausting memory.

use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::routing::{get, post};
use musebot::config::{LlmConfig, MastodonConfig};
use musebot::llm::{ChatMessage, LlmClient};
use musebot::platform::mastodon::client::MastodonClient;
use musebot::search::{BackendConfig, BackendKind, SearchConfig, Searcher};

/// A body that never ends, as fast as the socket takes it (a JSON-looking prefix first).
fn endless() -> Body {
    let head = futures_util::stream::once(async { Ok::<_, std::io::Error>(Bytes::from_static(b"{\"choices\":[\"")) });
    let tail = futures_util::stream::repeat_with(|| Ok(Bytes::from(vec![b'x'; 64 * 1024])));
    Body::from_stream(futures_util::StreamExt::chain(head, tail))
}

async fn endless_server() -> String {
    let app = axum::Router::new()
        .route("/v1/chat/completions", post(|| async { endless() }))
        .route("/search", get(|| async { endless() }))
        .route("/api/v1/statuses/{id}", get(|| async { endless() }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

const CAP: usize = 1_000_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_llm_answer_is_cut_at_the_cap() {
    let base = endless_server().await;
    let config = LlmConfig {
        base_url: format!("{base}/v1"),
        max_retries: 0,
        max_response_bytes: CAP,
        ..LlmConfig::default()
    };
    let llm = LlmClient::new(&config, None).unwrap();
    let started = Instant::now();
    let e = llm.chat(&[ChatMessage::user("hi")]).await.unwrap_err();
    assert!(e.to_string().contains("larger than 1000000 bytes"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_search_answer_is_cut_at_the_cap() {
    let base = endless_server().await;
    let config = SearchConfig {
        backends: vec![BackendConfig {
            kind: BackendKind::Searxng,
            base_url: base,
            api_key_env: String::new(),
            api_key_file: String::new(),
            cx: String::new(),
        }],
        max_retries: 0,
        max_response_bytes: CAP,
        ..SearchConfig::default()
    };
    let searcher = Searcher::new(&config, None).unwrap();
    let e = searcher.search("moon", None, None).await.unwrap_err();
    assert!(e.to_string().contains("larger than 1000000 bytes"), "{e}");
    assert_eq!(e.kind(), "decode");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_mastodon_answer_is_cut_at_the_cap() {
    let base = endless_server().await;
    let config = MastodonConfig {
        base_url: base,
        max_retries: 0,
        max_response_bytes: CAP,
        ..MastodonConfig::default()
    };
    let client = MastodonClient::new(&config, musebot::secret::Secret::new("t")).unwrap();
    let e = client.status("1").await.unwrap_err();
    assert!(e.to_string().contains("larger than 1000000 bytes"), "{e}");
}
