//! Crash safety on Bluesky, on the reference PDS + AppView: `kill -9` at random moments while
//! mentions are in flight (short replies and threads of 3+ parts, every `putRecord` held
//! 200 ms by a proxy so kills land between parts too), then one kill placed right after part 1
//! of a thread. After a final restart every mention is answered exactly once — counted on the
//! bot's records on the PDS — every thread is complete and chained, nothing is doubled.

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::bluesky::{bluesky_config, Network, SlowPds};
use common::*;
use serde_json::{json, Value};

/// The bot's records on the PDS as parent uri → children uris.
fn children_of(records: &[Value]) -> HashMap<String, Vec<String>> {
    let mut children: HashMap<String, Vec<String>> = HashMap::new();
    for r in records {
        children
            .entry(r["value"]["reply"]["parent"]["uri"].as_str().unwrap_or("").to_string())
            .or_default()
            .push(r["uri"].as_str().unwrap().to_string());
    }
    children
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_dash_nine_at_random_moments_loses_and_doubles_nothing_on_bluesky() {
    const RUNS: usize = 20;
    let Some(net) = Network::shared() else { return };
    let bot = net.account("musebot").await;
    let alice = net.account("alice").await;
    let bob = net.account("bob").await;
    let long = format!(
        "This post is false. {}",
        (0..150).map(|i| format!("reason{i}")).collect::<Vec<_>>().join(" ")
    );
    let mut script = Script::routed(move |body: &Value| {
        let user = body["messages"][1]["content"].as_str().unwrap_or("");
        if user.contains("LONG") {
            long.clone()
        } else {
            "This post is false.".to_string()
        }
    });
    script.delay = Duration::from_millis(150);
    let llm = ScriptedLlm::start(script).await;
    let slow = SlowPds::start(&net.pds, Duration::from_millis(200)).await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let extra = "[limits]\nchecks_per_requester_per_hour = 10000\n";
    let cfg = bluesky_config(
        &dir.path().join("state"),
        &slow.base,
        &bot,
        &dir.path().join("app-password"),
        &llm.base_url,
        port,
        None,
        extra,
    );
    let seed = std::env::var("MUSEBOT_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    eprintln!("crash test seed: {seed} (rerun with MUSEBOT_CRASH_SEED={seed})");
    let mut rng = fastrand::Rng::with_seed(seed);
    // (the mention each job answers under, whether its reply is long)
    let mut asks: Vec<(String, bool)> = Vec::new();
    let mut first = true;
    for run in 0..RUNS {
        let mut daemon = Daemon::start(dir.path(), &cfg, port);
        daemon.wait_connected().await;
        if first {
            // The source starts from "now": mentions before its first poll are history.
            while !daemon.log_text().contains("starting from now") {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            first = false;
        }
        let is_long = run % 2 == 1;
        let claim = format!("Claim {run}{}", if is_long { " LONG" } else { "" });
        let post = alice.post(&claim, None, json!([]), None).await;
        let ask = bob.mention(&bot, &format!("is this true? {run}"), &post, &post).await;
        asks.push((ask.uri, is_long));
        tokio::time::sleep(Duration::from_millis(rng.u64(0..2500))).await;
        daemon.kill9();
    }

    // One kill exactly between two parts: as soon as part 1 of a thread is on the PDS.
    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;
    let post = alice.post("Claim between-parts LONG", None, json!([]), None).await;
    let ask = bob.mention(&bot, "is this true? between", &post, &post).await;
    let deadline = Instant::now() + Duration::from_secs(90);
    let part1 = loop {
        let records = alice.records_of(&bot.did).await;
        if let Some(p) = children_of(&records).get(&ask.uri) {
            break p[0].clone();
        }
        assert!(Instant::now() < deadline, "part 1 never came:\n{}", daemon.log_text());
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    daemon.kill9();
    let records = alice.records_of(&bot.did).await;
    let part2_done = children_of(&records).contains_key(&part1);
    eprintln!("killed after part 1 (part 2 already on the PDS: {part2_done})");
    asks.push((ask.uri, true));

    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;
    let expected_min = asks.iter().map(|(_, l)| if *l { 3 } else { 1 }).sum::<usize>();
    let deadline = Instant::now() + Duration::from_secs(240);
    let complete = |records: &[Value]| {
        let children = children_of(records);
        asks.iter().all(|(ask, long)| {
            let mut parts = 0;
            let mut at = ask.clone();
            while let Some(next) = children.get(&at) {
                parts += 1;
                at = next[0].clone();
            }
            parts >= if *long { 3 } else { 1 }
        })
    };
    let mut records = alice.records_of(&bot.did).await;
    while !(records.len() >= expected_min && complete(&records)) {
        assert!(
            Instant::now() < deadline,
            "not every mention answered (seed {seed}): {} records\n{}",
            records.len(),
            daemon.log_text()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        records = alice.records_of(&bot.did).await;
    }
    tokio::time::sleep(Duration::from_secs(4)).await;
    let records = alice.records_of(&bot.did).await;
    let children = children_of(&records);
    for (parent, kids) in &children {
        assert_eq!(kids.len(), 1, "{parent} has {} bot replies (seed {seed})", kids.len());
    }
    let mut total = 0;
    for (ask, is_long) in &asks {
        let mut parts = 0;
        let mut at = ask.clone();
        while let Some(next) = children.get(&at) {
            parts += 1;
            at = next[0].clone();
        }
        if *is_long {
            assert!(parts >= 3, "{ask}: a thread of {parts} part(s) (seed {seed})");
        } else {
            assert_eq!(parts, 1, "{ask} (seed {seed})");
        }
        total += parts;
    }
    assert_eq!(records.len(), total, "no stray records (seed {seed})");
    eprintln!("{} mentions, {} records, all answered once", asks.len(), total);
    drop(daemon);
}
