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
    let log = daemon.log_once("reply posted").await;
    assert!(log.contains("reply posted"), "{log}");
    let asked = log
        .lines()
        .filter(|l| l.contains("reply posted"))
        .any(|l| !l.contains("prompt_tokens=0 "));
    assert!(asked, "the model was asked and counted tokens: {log}");
    eprintln!("generated reply: {text}");
}

/// The real local model runs a 2-agent, 1-round debate on a draft to its end: round 0 and at
/// most one round, every turn with a verdict from the closed set (quality not asserted).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_local_llm_debates_a_draft_to_the_end() {
    use musebot::model::{Debate, DebateEnd};
    use musebot::pipeline::debate::{Case, Debater};
    let (_llm, base) = tokio::task::spawn_blocking(LlmServer::start).await.unwrap();
    let config = musebot::config::LlmConfig {
        base_url: base,
        max_tokens: 96,
        timeout_secs: 120,
        ..Default::default()
    };
    let client = musebot::llm::LlmClient::new(&config, None).unwrap();
    let prompts = musebot::prompts::Prompts::load(std::path::Path::new("")).unwrap();
    let debater = Debater {
        system: "verify.system.j2",
        llm: &client,
        prompts: &prompts,
        agents: 2,
        rounds: 1,
    };
    let case = Case {
        opening: "<post>The Great Wall of China is visible from the Moon.</post>\n<evidence>- Astronauts say the wall cannot be seen from the Moon with the naked eye. (source: https://www.nasa.gov/wall)</evidence>\n<draft>This post is false. Astronauts say the wall cannot be seen from the Moon. https://www.nasa.gov/wall</draft>".into(),
        images: Vec::new(),
    };
    let mut debate = Debate::default();
    debater.run(&case, &mut debate, &mut |_| {}).await.unwrap();
    assert!(
        matches!(
            debate.end,
            Some(DebateEnd::Agreed { .. } | DebateEnd::Contested { rounds: 1 })
        ),
        "{debate:?}"
    );
    assert!((2..=4).contains(&debate.turns.len()), "{debate:?}");
    eprintln!("debate: {:?}", debate.end);
}
