//! Mention → first reply part, Bluesky beside Mastodon (`cargo bench --bench platforms [N]`):
//! one `musebot` daemon serving an account on mastodon-mock and one on the reference Bluesky
//! network (`@atproto/dev-env`: PDS + AppView on loopback), the scripted LLM answering at once
//! (baseline pipeline: the platforms' share, not the model's). Each round posts a mention on
//! both at the same moment and times until the bot's first part is readable — on the mock's
//! REST API and on the PDS (`listRecords`), polled every 20 ms. The shipped defaults first
//! (Mastodon: streaming; Bluesky: notifications polled every 5 s), then Bluesky polled every
//! second, printed as a changed setting. Rounds start after a random pause (seeded), so a
//! mention lands at a random point of the poll cycle.
//!
//! Arguments: [N] rounds per run (default 10).

use std::time::{Duration, Instant};

use serde_json::json;

#[path = "../tests/common/mod.rs"]
mod harness;

use harness::bluesky::{bluesky_config, Network};
use harness::{free_port, Daemon, MockMastodon, Script, ScriptedLlm, ALICE_TOKEN, BOB_TOKEN};

fn percentile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let i = ((v.len() as f64 - 1.0) * q).round() as usize;
    v[i]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("platforms benchmark: skipped here; run it with `cargo bench --bench platforms`");
        return;
    }
    let rounds: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .and_then(|a| a.parse().ok())
        .unwrap_or(10);
    let Some(net) = Network::shared() else {
        eprintln!("skipped: run scripts/setup-bluesky.sh first");
        return;
    };
    println!("mention → first reply part, {rounds} rounds, scripted LLM answering at once (baseline pipeline)");
    println!("| run | setting changed | Mastodon p50 / p99 | Bluesky p50 / p99 |");
    println!("|---|---|---|---|");
    for (name, poll) in [("shipped defaults", None), ("Bluesky polled every second", Some(1))] {
        let (m, b) = run(net, rounds, poll).await;
        let changed = poll.map_or("none".to_string(), |p| format!("`bluesky.poll_secs = {p}` (default 5)"));
        println!(
            "| {name} | {changed} | {:.0} / {:.0} ms | {:.0} / {:.0} ms |",
            m.0, m.1, b.0, b.1
        );
    }
}

/// One daemon, `rounds` mentions on each platform: (p50, p99) in ms for Mastodon and Bluesky.
async fn run(net: &'static Network, rounds: usize, poll: Option<u64>) -> ((f64, f64), (f64, f64)) {
    let mock = MockMastodon::start().await;
    let llm = ScriptedLlm::start(Script::reply("This post is false.")).await;
    let bot = net.account("musebot").await;
    let alice = net.account("alice").await;
    let bob = net.account("bob").await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let extra = "[limits]\nchecks_per_requester_per_hour = 10000\n";
    let mut cfg = bluesky_config(
        &dir.path().join("state"),
        &net.pds,
        &bot,
        &dir.path().join("app-password"),
        &llm.base_url,
        port,
        Some(&mock.base),
        extra,
    );
    // The harness polls every second; the shipped default is 5 s.
    cfg = cfg.replace(
        "poll_secs = 1\n",
        &poll.map_or(String::new(), |p| format!("poll_secs = {p}\n")),
    );
    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;
    while !daemon.log_text().contains("starting from now") {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (mut on_mastodon, mut on_bluesky) = (Vec::new(), Vec::new());
    // A random pause before each round, so mentions land at random points of the poll cycle
    // (back-to-back rounds would each wait a whole cycle).
    let cycle = poll.unwrap_or(5) * 1000;
    let mut rng = fastrand::Rng::with_seed(7);
    for round in 0..rounds {
        tokio::time::sleep(Duration::from_millis(rng.u64(0..cycle))).await;
        let claim = format!("Bananas are blue, round {round}");
        let target = mock.post(ALICE_TOKEN, &claim, None).await;
        let post = alice.post(&claim, None, json!([]), None).await;
        let start = Instant::now();
        let (mastodon, bluesky) = tokio::join!(
            async {
                mock.post(BOB_TOKEN, "@musebot true?", Some(target["id"].as_str().unwrap()))
                    .await;
                let started = Instant::now();
                loop {
                    let s = mock.bot_statuses().await;
                    if s.iter().any(|p| p["in_reply_to_id"] == target["id"]) {
                        return started.elapsed();
                    }
                    assert!(start.elapsed() < Duration::from_secs(60), "no Mastodon reply");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
            async {
                let ask = bob.mention(&bot, "true?", &post, &post).await;
                let started = Instant::now();
                loop {
                    let r = alice.records_of(&bot.did).await;
                    if r.iter().any(|p| p["value"]["reply"]["parent"]["uri"] == json!(ask.uri)) {
                        return started.elapsed();
                    }
                    assert!(start.elapsed() < Duration::from_secs(60), "no Bluesky reply");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        );
        on_mastodon.push(mastodon.as_secs_f64() * 1000.0);
        on_bluesky.push(bluesky.as_secs_f64() * 1000.0);
    }
    daemon.kill9();
    (
        (percentile(&mut on_mastodon, 0.5), percentile(&mut on_mastodon, 0.99)),
        (percentile(&mut on_bluesky, 0.5), percentile(&mut on_bluesky, 0.99)),
    )
}
