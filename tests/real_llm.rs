//! A real local LLM end to end: xllamacpp serving SmolLM2-135M (a GGUF shipped in a PyPI
//! package, installed by `scripts/setup-sandbox.sh`) writes the reply the daemon posts on
//! mastodon-mock. Quality is not asserted; that the text is generated, not scripted, is.

mod common;

use std::time::Duration;

use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_local_llm_writes_the_posted_reply() {
    let (_llm, base) = tokio::task::spawn_blocking(LlmServer::start).await.unwrap();
    let mock = MockMastodon::start().await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let cfg = daemon_config(&dir.path().join("state"), &mock.base, &base, port, "")
        .replace("timeout_secs = 60\n", "timeout_secs = 120\nmax_tokens = 96\n");
    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;

    let target = mock
        .post(
            ALICE_TOKEN,
            "The Great Wall of China is visible from the Moon with the naked eye.",
            None,
        )
        .await;
    mock.post(
        BOB_TOKEN,
        "@musebot is this true?",
        Some(target["id"].as_str().unwrap()),
    )
    .await;
    let posted = mock
        .wait_for_bot_statuses(Duration::from_secs(240), |s| !s.is_empty())
        .await;
    let text = text_of(&posted[0]);
    assert_eq!(posted[0]["in_reply_to_id"], target["id"]);
    let body = text
        .strip_prefix("@bob ")
        .unwrap_or_else(|| panic!("reply must address the requester: {text}"));
    assert!(
        body.split_whitespace().count() >= 3,
        "a generated reply has words: {text}"
    );
    assert!(!body.contains("http"), "no URLs without evidence: {text}");
    let log = daemon.log_text();
    assert!(log.contains("reply posted"), "{log}");
    eprintln!("generated reply: {text}");
}
