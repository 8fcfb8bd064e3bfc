//! A real local LLM end to end: xllamacpp serving SmolLM2-135M (a GGUF shipped in a PyPI
//! package, installed by `scripts/setup-sandbox.sh`) answers, and the daemon posts a threaded
//! reply on mastodon-mock. Quality is not asserted (a 135M model may need the verdict retry, or
//! end in the honest fallback); that the model was asked, and the composer's rules, are.

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

    let (target, posted) = mock
        .ask_about(
            "The Great Wall of China is visible from the Moon with the naked eye.",
            Duration::from_secs(240),
        )
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
    let asked = log
        .lines()
        .filter(|l| l.contains("reply posted"))
        .any(|l| !l.contains("prompt_tokens=0 "));
    assert!(asked, "the model was asked and counted tokens: {log}");
    eprintln!("generated reply: {text}");
}
