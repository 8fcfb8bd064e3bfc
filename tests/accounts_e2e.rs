//! One daemon, several accounts, on the real `mastodon-mock`: the default account (`musebot`)
//! and a named one (`es`, the server's `muse_es`) answer their own mentions only, each in its
//! own thread; a moderator of one has no rights on the other; a claim one account answered is
//! answered from claim memory by the other (no search); an account whose server is down stalls
//! nobody; `kill -9` mid-answer and a restart leave each mention answered once by each account
//! asked; `/healthz` and `/metrics` show each account.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

const HOST: &str = "www.factcheck.org";
const CHECK: &str = "/2025/05/lemon-water/";

/// Every status of the account `token` posted, oldest first (read with alice's token).
async fn statuses_of(mock: &MockMastodon, token: &str) -> Vec<Value> {
    let id = mock.account_id(token).await;
    let page = mock
        .get(ALICE_TOKEN, &format!("/api/v1/accounts/{id}/statuses?limit=40"))
        .await;
    let mut all = page.as_array().unwrap().clone();
    all.reverse();
    all
}

fn replies_to<'a>(all: &'a [Value], id: &str) -> Vec<&'a Value> {
    all.iter()
        .filter(|s| s["in_reply_to_id"].as_str() == Some(id))
        .collect()
}

/// Waits until `pred` holds for the statuses of `token`, or panics with the daemon's log.
async fn wait_statuses(
    mock: &MockMastodon,
    daemon: &Daemon,
    token: &str,
    pred: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let s = statuses_of(mock, token).await;
        if pred(&s) {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "timed out; statuses of {token}: {s:#?}\ndaemon log:\n{}",
            daemon.log_text()
        );
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
}

/// Waits until `/healthz` shows both served accounts connected (the third one is down, so the
/// whole is degraded) and returns it.
async fn wait_accounts_connected(daemon: &Daemon) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let body = reqwest::get(format!("http://127.0.0.1:{}/healthz", daemon.health_port)).await;
        if let Ok(r) = body {
            let v: Value = r.json().await.unwrap_or_default();
            if v["platforms"]["mastodon"] == "connected" && v["platforms"]["mastodon@es"] == "connected" {
                return v;
            }
        }
        assert!(Instant::now() < deadline, "never connected:\n{}", daemon.log_text());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_accounts_answer_their_own_mentions_share_memory_and_stay_apart() {
    let sandbox = Sandbox::load();
    let words =
        "Doctors and health agencies say there is no evidence that lemon water prevents or cures any viral infection. ";
    let page = format!(
        "<html lang=\"en\"><head><title>Lemon water does not cure COVID-19</title></head><body><article><h1>Lemon water does not cure COVID-19</h1><p>{}</p></article></body></html>",
        words.repeat(8)
    );
    let site = web::Site::start(BTreeMap::from([(CHECK.to_string(), page)])).await;
    let search = web::SearchServer::start(|_| {
        vec![json!({"url": format!("http://{HOST}{CHECK}"), "title": "Lemon water does not cure COVID-19", "content": "no evidence"})]
    })
    .await;
    let mut script = Script::routed(lemon_water);
    // Slow enough that a kill -9 lands mid-answer.
    script.delay = Duration::from_millis(400);
    let llm = ScriptedLlm::start(script).await;
    let mock = MockMastodon::start().await;
    let dir = tempfile::tempdir().unwrap();
    let es_token = dir.path().join("es-token");
    std::fs::write(&es_token, ES_BOT_TOKEN).unwrap();
    // Each named account reads a secret of its own (`config check` refuses a shared one).
    let down_token = dir.path().join("down-token");
    std::fs::write(&down_token, ES_BOT_TOKEN).unwrap();
    let nobody_listens = free_port();
    let port = free_port();
    let extra = format!(
        r#"
[search]
backends = [{{ kind = "searxng", base_url = "{search}" }}]
[relevance]
onnxruntime = "{ort}"
model = "{model}"
tokenizer = "{tokenizer}"
multilingual_model = "{multi}"
multilingual_tokenizer = "{multi_tokenizer}"
[fetch]
test_allow_addrs = ["{site}"]
test_resolve = ["{HOST}={site}"]
[moderation]
mastodon_moderators = ["alice"]

[[accounts]]
name = "es"
[accounts.mastodon]
base_url = "{mock}"
access_token_file = "{es_token}"
reconnect_max_secs = 2
[accounts.moderation]
mastodon_moderators = ["bob"]

[[accounts]]
name = "down"
[accounts.mastodon]
base_url = "http://127.0.0.1:{nobody_listens}"
access_token_file = "{down_token}"
reconnect_max_secs = 2
"#,
        search = search.base_url(),
        ort = sandbox.get("MUSEBOT_ORT_DYLIB"),
        model = sandbox.get("MUSEBOT_EMBED_MODEL"),
        tokenizer = sandbox.get("MUSEBOT_EMBED_TOKENIZER"),
        site = site.addr,
        mock = mock.base,
        es_token = es_token.display(),
        down_token = down_token.display(),
        multi = sandbox.get("MUSEBOT_EMBED_MODEL_MULTI"),
        multi_tokenizer = sandbox.get("MUSEBOT_EMBED_TOKENIZER_MULTI"),
    );
    let cfg = daemon_config(&dir.path().join("state"), &mock.base, &llm.base_url, port, &extra);
    let daemon = Daemon::start(dir.path(), &cfg, port);
    let health = wait_accounts_connected(&daemon).await;
    // The account whose server is down is shown, and degrades the whole, stalling nobody.
    assert_eq!(health["status"], "degraded", "{health}");
    assert_ne!(health["platforms"]["mastodon@down"], "connected", "{health}");

    // A mention of the default account is answered by it alone.
    let claim = mock
        .post(
            ALICE_TOKEN,
            "A glass of hot water with lemon juice will cure you of COVID-19.",
            None,
        )
        .await;
    let claim_id = claim["id"].as_str().unwrap().to_string();
    let ask = mock.post(BOB_TOKEN, "@musebot is this true?", Some(&claim_id)).await;
    assert!(ask["id"].is_string());
    let en = wait_statuses(&mock, &daemon, BOT_TOKEN, |s| !replies_to(s, &claim_id).is_empty()).await;
    let first = text_of(replies_to(&en, &claim_id)[0]);
    assert!(first.starts_with("@bob This post is false."), "{first}");
    assert!(first.contains(&format!("http://{HOST}{CHECK}")), "{first}");
    let searched = search.asked.lock().unwrap().len();
    assert!(searched > 0);

    // The same claim in other words, asked of the other account: answered by it, in its own
    // thread, from the first account's kept answer — not a single search more.
    let other = mock
        .post(
            ALICE_TOKEN,
            "Drinking a glass of hot water with lemon will cure you of COVID-19, they say.",
            None,
        )
        .await;
    let other_id = other["id"].as_str().unwrap().to_string();
    let ask_es = mock.post(BOB_TOKEN, "@muse_es y esto?", Some(&other_id)).await;
    assert!(ask_es["id"].is_string());
    let es = wait_statuses(&mock, &daemon, ES_BOT_TOKEN, |s| !replies_to(s, &other_id).is_empty()).await;
    let second = text_of(replies_to(&es, &other_id)[0]);
    assert!(second.starts_with("@bob "), "{second}");
    assert!(second.contains(&format!("http://{HOST}{CHECK}")), "{second}");
    assert_eq!(
        search.asked.lock().unwrap().len(),
        searched,
        "answered from memory: {second}"
    );
    // Each account answered only what was asked of it.
    let en = statuses_of(&mock, BOT_TOKEN).await;
    assert!(replies_to(&en, &other_id).is_empty(), "{en:#?}");
    assert!(replies_to(&es, &claim_id).is_empty(), "{es:#?}");
    let metrics = daemon.metrics_once("account=\"es\"").await;
    assert!(
        metrics.lines().any(|l| l.starts_with("musebot_living_total")
            && l.contains("account=\"es\"")
            && l.contains("outcome=\"memory\"")),
        "{metrics}"
    );
    assert!(
        metrics.contains("musebot_mentions_received_total{platform=\"mastodon\"} 1"),
        "the default account's own count: {metrics}"
    );

    // A moderator of the default account has no rights on the other, and the other way round.
    mock.post(ALICE_TOKEN, "@muse_es pause", None).await;
    mock.post(BOB_TOKEN, "@musebot pause", None).await;
    let log = daemon.log_once("a command from someone who is not a moderator").await;
    let refused: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("a command from someone who is not a moderator"))
        .collect();
    assert!(
        refused.iter().any(|l| l.contains("account=es") && l.contains("alice")),
        "{log}"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while !daemon.log_text().lines().any(|l| {
        l.contains("a command from someone who is not a moderator")
            && l.contains("account=default")
            && l.contains("bob")
    }) {
        assert!(Instant::now() < deadline, "{}", daemon.log_text());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        !daemon.log_text().contains("auto-replies are paused"),
        "{}",
        daemon.log_text()
    );

    // One post asks both accounts; the daemon is killed mid-answer and started again: each
    // account answers it once, in its own reply.
    let queued = |log: &str, account: &str| {
        log.lines()
            .filter(|l| l.contains("trigger queued") && l.contains(&format!("account={account}")))
            .count()
    };
    let before = daemon.log_text();
    let (en_before, es_before) = (queued(&before, "default"), queued(&before, "es"));
    let third = mock
        .post(ALICE_TOKEN, "Hot lemon water cures COVID-19 in one night.", None)
        .await;
    let third_id = third["id"].as_str().unwrap().to_string();
    let both = mock
        .post(BOB_TOKEN, "@musebot @muse_es check this?", Some(&third_id))
        .await;
    assert!(both["id"].is_string());
    let mut daemon = daemon;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let log = daemon.log_text();
        if queued(&log, "default") > en_before && queued(&log, "es") > es_before {
            break;
        }
        assert!(Instant::now() < deadline, "never queued:\n{log}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    daemon.kill9();
    let daemon = Daemon::start(dir.path(), &cfg, port);
    wait_accounts_connected(&daemon).await;
    wait_statuses(&mock, &daemon, BOT_TOKEN, |s| !replies_to(s, &third_id).is_empty()).await;
    wait_statuses(&mock, &daemon, ES_BOT_TOKEN, |s| !replies_to(s, &third_id).is_empty()).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    for token in [BOT_TOKEN, ES_BOT_TOKEN] {
        let all = statuses_of(&mock, token).await;
        let answers = replies_to(&all, &third_id);
        assert_eq!(answers.len(), 1, "{token}: {all:#?}\n{}", daemon.log_text());
        let text = text_of(answers[0]);
        assert!(text.starts_with("@bob "), "only the asker is mentioned: {text}");
        assert!(!text.contains("@muse_es") && !text.contains("@musebot"), "{text}");
    }
    let mut daemon = daemon;
    let _ = daemon.terminate(Duration::from_secs(10));
}

/// Two Bluesky accounts in one daemon on the reference network (PLC, PDS, AppView): each
/// answers the mentions of itself only; a moderator of the default account is refused by the
/// other; a `stop` sent to one holds for both (a DID is one person on the whole network).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_bluesky_accounts_answer_apart_and_share_opt_outs() {
    let Some(net) = common::bluesky::Network::shared() else {
        return;
    };
    let en = net.account("musebot").await;
    let es = net.account("musebot-es").await;
    let alice = net.account("alice").await;
    let bob = net.account("bob").await;
    let carol = net.account("carol").await;
    let llm = ScriptedLlm::start(Script::reply("This post is false: fish do not sleep upside down.")).await;
    let dir = tempfile::tempdir().unwrap();
    let es_password = dir.path().join("es-password");
    std::fs::write(&es_password, &es.app_password).unwrap();
    let port = free_port();
    let extra = format!(
        r#"
[moderation]
bluesky_moderators = ["{alice}"]

[[accounts]]
name = "es"
[accounts.bluesky]
enabled = true
service = "{pds}"
identifier = "{es}"
app_password_file = "{password}"
poll_secs = 1
reconnect_max_secs = 2
max_retries = 6
"#,
        alice = alice.handle,
        pds = net.pds,
        es = es.handle,
        password = es_password.display(),
    );
    let cfg = common::bluesky::bluesky_config(
        &dir.path().join("state"),
        &net.pds,
        &en,
        &dir.path().join("app-password"),
        &llm.base_url,
        port,
        None,
        &extra,
    );
    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;
    let started = "bluesky notifications: starting from now";
    let deadline = Instant::now() + Duration::from_secs(60);
    while daemon.log_text().matches(started).count() < 2 {
        assert!(Instant::now() < deadline, "{}", daemon.log_text());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let health: Value = serde_json::from_str(&daemon.http_get("/healthz").await).unwrap();
    assert_eq!(health["platforms"]["bluesky"], "connected", "{health}");
    assert_eq!(health["platforms"]["bluesky@es"], "connected", "{health}");
    let parent_is = |records: &[Value], uri: &str| {
        records
            .iter()
            .filter(|r| r["value"]["reply"]["parent"]["uri"] == json!(uri))
            .count()
    };

    // Each account answers the mention of itself, and only that one.
    let claim = carol.post("Fish sleep upside down.", None, json!([]), None).await;
    let to_es = bob.mention(&es, "is this true?", &claim, &claim).await;
    let es_records = bob.wait_for_records(&es.did, 1, Duration::from_secs(60)).await;
    assert_eq!(parent_is(&es_records, &to_es.uri), 1, "{es_records:#?}");
    let to_en = bob.mention(&en, "and you?", &claim, &claim).await;
    let en_records = bob.wait_for_records(&en.did, 1, Duration::from_secs(60)).await;
    assert_eq!(parent_is(&en_records, &to_en.uri), 1, "{en_records:#?}");
    assert_eq!(parent_is(&en_records, &to_es.uri), 0, "{en_records:#?}");
    let es_records = bob.records_of(&es.did).await;
    assert_eq!(parent_is(&es_records, &to_en.uri), 0, "{es_records:#?}");

    // The default account's moderator has no rights on the other account.
    let text = format!("@{} pause", es.handle);
    let facets = json!([{
        "index": {"byteStart": 0, "byteEnd": 1 + es.handle.len()},
        "features": [{"$type": "app.bsky.richtext.facet#mention", "did": es.did}],
    }]);
    alice.post(&text, None, facets, None).await;
    let log = daemon.log_once("reason=\"not_moderator\"").await;
    assert!(
        log.lines()
            .any(|l| l.contains("reason=\"not_moderator\"") && l.contains("account=es")),
        "{log}"
    );

    // Bob's `stop` to the default account holds at the other one too.
    let text = format!("@{} stop", en.handle);
    let facets = json!([{
        "index": {"byteStart": 0, "byteEnd": 1 + en.handle.len()},
        "features": [{"$type": "app.bsky.richtext.facet#mention", "did": en.did}],
    }]);
    bob.post(&text, None, facets, None).await;
    bob.wait_for_records(&en.did, 2, Duration::from_secs(60)).await;
    bob.mention(&es, "and now?", &claim, &claim).await;
    let log = daemon.log_once("reason=\"opted_out\"").await;
    assert!(
        log.lines()
            .any(|l| l.contains("reason=\"opted_out\"") && l.contains("account=es")),
        "{log}"
    );
    assert_eq!(
        bob.records_of(&es.did).await.len(),
        1,
        "nothing more from the other account"
    );
    let _ = daemon.terminate(Duration::from_secs(10));
}
