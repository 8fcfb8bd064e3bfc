//! A running bot's state backed up, restored on a new state folder and run again, on a real
//! `mastodon-mock` (scripted LLM, baseline pipeline): `musebot state backup` while the daemon
//! holds the store, `state verify`, `state restore` into a folder that holds none (and refused
//! into one that does); the restored daemon reads the mentions that came while it moved,
//! answers nobody twice, and checks no post of anyone who said `stop`.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::*;
use serde_json::Value;

const REPLY: &str = "This post is false: the Moon is rock, as every sample returned shows.";

fn musebot(args: &[&str], config: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_musebot"))
        .args(args)
        .arg("--config")
        .arg(config)
        .output()
        .expect("run musebot")
}

fn replies_to<'a>(all: &'a [Value], status: &Value) -> Vec<&'a Value> {
    all.iter().filter(|s| s["in_reply_to_id"] == status["id"]).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_the_bot_runs_restores_on_a_new_folder_with_nothing_lost() {
    let mock = MockMastodon::start_with_ratelimit(5000).await;
    let llm = ScriptedLlm::start(Script::reply(REPLY)).await;
    let dir = tempfile::tempdir().unwrap();
    let (old_host, new_host) = (dir.path().join("old"), dir.path().join("new"));
    std::fs::create_dir_all(&old_host).unwrap();
    std::fs::create_dir_all(&new_host).unwrap();
    let port = free_port();
    let cfg = daemon_config(&old_host.join("state"), &mock.base, &llm.base_url, port, "");
    let mut daemon = Daemon::start(&old_host, &cfg, port);
    daemon.wait_connected().await;

    // bob asks about alice's post and is answered; alice says stop (her posts are not checked).
    let claim = mock.post(ALICE_TOKEN, "The Moon is made of cheese.", None).await;
    let ask = mock
        .post(BOB_TOKEN, "@musebot is this true?", Some(claim["id"].as_str().unwrap()))
        .await;
    wait_bot(&daemon, &mock, |s| !replies_to(s, &claim).is_empty()).await;
    let _ = ask;
    let stop = mock.post(ALICE_TOKEN, "@musebot stop", None).await;
    wait_bot(&daemon, &mock, |s| !replies_to(s, &stop).is_empty()).await;

    // Backed up while the daemon runs: it writes the file for the command.
    let backup = dir.path().join("musebot.backup");
    let out = musebot(
        &["state", "backup", backup.to_str().unwrap()],
        &old_host.join("bot-config.toml"),
    );
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}\n{}", daemon.log_text());
    assert!(said.contains("asking it for a backup"), "{said}");
    let verify = Command::new(env!("CARGO_BIN_EXE_musebot"))
        .args(["state", "verify"])
        .arg(&backup)
        .output()
        .unwrap();
    assert!(verify.status.success(), "{verify:?}");
    assert!(
        String::from_utf8_lossy(&verify.stdout).starts_with("ok: store schema 1"),
        "{verify:?}"
    );
    daemon.terminate(Duration::from_secs(20));

    // Never over a store.
    let out = musebot(
        &["state", "restore", backup.to_str().unwrap()],
        &old_host.join("bot-config.toml"),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("a store is already there"),
        "{out:?}"
    );

    // While the bot moves, bob asks again: the restored cursor finds it (a fresh store would
    // pass over everything from before its first start).
    let claim2 = mock.post(BOB_TOKEN, "Sharks do not get cancer.", None).await;
    mock.post(BOB_TOKEN, "@musebot and this?", Some(claim2["id"].as_str().unwrap()))
        .await;

    // The new host: restored, then run.
    let port = free_port();
    let cfg = daemon_config(&new_host.join("state"), &mock.base, &llm.base_url, port, "");
    let new_cfg = new_host.join("bot-config.toml");
    std::fs::write(&new_cfg, &cfg).unwrap();
    let out = musebot(&["state", "restore", backup.to_str().unwrap()], &new_cfg);
    assert!(out.status.success(), "{out:?}");
    let mut daemon = Daemon::start(&new_host, &cfg, port);
    daemon.wait_connected().await;
    wait_bot(&daemon, &mock, |s| !replies_to(s, &claim2).is_empty()).await;

    // alice said stop on the old host: bob's ask about her post is not answered; bob's first
    // question is not answered again.
    let claim3 = mock.post(ALICE_TOKEN, "Garlic cures the flu.", None).await;
    mock.post(
        BOB_TOKEN,
        "@musebot is this true?",
        Some(claim3["id"].as_str().unwrap()),
    )
    .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !daemon.log_text().contains("reason=\"opted_out\"") {
        assert!(
            std::time::Instant::now() < deadline,
            "alice's ask not skipped:\n{}",
            daemon.log_text()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let all = mock.bot_statuses_all().await;
    assert!(
        replies_to(&all, &claim3).is_empty(),
        "an opted-out account re-engaged: {all:#?}"
    );
    let first: Vec<_> = replies_to(&all, &claim)
        .into_iter()
        .filter(|s| text_of(s).contains("Moon"))
        .collect();
    assert_eq!(first.len(), 1, "bob's first question answered twice: {all:#?}");
}
