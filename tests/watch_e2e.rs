//! The network watch end to end, with the real binary, the real relevance model, a local web
//! site under a fact-checker's name carrying one ClaimReview (imported into the corpus with
//! `musebot index import` before the daemon starts) and a scripted LLM that must never be asked:
//!
//! - mastodon-mock's local public timeline (`public:local` streaming): a post asserting the
//!   checked claim goes to the moderators' review queue (`status` lists it), a post refuting it
//!   and a post about something else do not, and nothing is posted by itself;
//! - the reference Bluesky network's firehose (its PDS's `com.atproto.sync.subscribeRepos`): at
//!   the shipped settings a post repeating the claim is held until a moderator's `approve`,
//!   then carries the labeler's label, seen by a subscriber; with `watch.auto_label = true`
//!   (after a restart, which takes nothing up twice) a repeat is labelled at once; a post
//!   refuting it and a post with nothing to match get none; never a reply.
//!
//! - a watched post whose review's live page reviews another claim than the corpus holds for it
//!   (a poisoned import): the watch takes the post up, its job reads the page against the
//!   corpus's claim and decides nothing — no draft, no label.
//!
//! Jetstream's format is tested on fixtures in the real wire format
//! (`src/platform/bluesky/jetstream.rs`, `tests/fixtures/jetstream/`): no local Jetstream exists.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use serde_json::json;

const HOST: &str = "www.factcheck.org";
const CHECK: &str = "/2025/05/lemon-water/";
const CLAIM: &str = "Drinking hot lemon water cures COVID-19";
const ASSERTS: &str = "A glass of hot lemon water cures COVID-19. Drink it every morning.";
const REFUTES: &str = "No, hot lemon water does not cure COVID-19. That is a myth.";
const ASSERTS_AGAIN: &str = "Drinking hot lemon water cures COVID-19. Tell everyone you know.";
const UNRELATED: &str = "Lovely sunny weather in Lisbon today, off to the beach with the kids and the dog.";

/// The fact-checker's page (its own ClaimReview: a match decides by the live page's markup).
async fn checker_site() -> web::Site {
    let markup = json!({"@context": "https://schema.org", "@type": "ClaimReview",
        "url": format!("http://{HOST}{CHECK}"),
        "claimReviewed": CLAIM,
        "datePublished": "2025-05-01",
        "author": {"@type": "Organization", "name": "FactCheck.org"},
        "reviewRating": {"@type": "Rating", "alternateName": "False"}});
    let words =
        "Doctors and health agencies say there is no evidence that lemon water prevents or cures any viral infection. ";
    let page = format!(
        "<html lang=\"en\"><head><title>Lemon water does not cure COVID-19</title><script type=\"application/ld+json\">{markup}</script></head><body><article><h1>Lemon water does not cure COVID-19</h1><p>{}</p></article></body></html>",
        words.repeat(8)
    );
    web::Site::start(BTreeMap::from([(CHECK.to_string(), page)])).await
}

/// The `[search]`, `[relevance]`, `[fetch]` and `[watch]` sections of a watching bot.
fn watch_extra(sandbox: &Sandbox, search: &web::SearchServer, site: &web::Site, watch: &str) -> String {
    format!(
        r#"
[search]
backends = [{{ kind = "searxng", base_url = "{}" }}]
[relevance]
onnxruntime = "{}"
model = "{}"
tokenizer = "{}"
multilingual_model = "{}"
multilingual_tokenizer = "{}"
[fetch]
test_allow_addrs = ["{}"]
test_resolve = ["{HOST}={}"]
[watch]
enabled = true
linger_ms = 50
{watch}
"#,
        search.base_url(),
        sandbox.get("MUSEBOT_ORT_DYLIB"),
        sandbox.get("MUSEBOT_EMBED_MODEL"),
        sandbox.get("MUSEBOT_EMBED_TOKENIZER"),
        sandbox.get("MUSEBOT_EMBED_MODEL_MULTI"),
        sandbox.get("MUSEBOT_EMBED_TOKENIZER_MULTI"),
        site.addr,
        site.addr,
    )
}

/// Imports the checker's review into the corpus of the bot configured at `cfg`.
fn import_review(cfg: &std::path::Path) {
    let review = json!({"@context": "https://schema.org", "@type": "ClaimReview",
        "url": format!("http://{HOST}{CHECK}"),
        "name": "Lemon water does not cure COVID-19",
        "claimReviewed": CLAIM,
        "datePublished": "2025-05-01",
        "reviewRating": {"@type": "Rating", "alternateName": "False"}});
    import_reviews(cfg, &format!("{review}\n"));
}

async fn wait_log(daemon: &Daemon, needle: &str, n: usize) {
    for _ in 0..600 {
        if daemon.log_text().matches(needle).count() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("`{needle}` not logged {n} times:\n{}", daemon.log_text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_post_repeating_a_checked_claim_goes_to_the_moderators_and_nothing_is_posted() {
    let sandbox = Sandbox::load();
    let site = checker_site().await;
    let search = web::SearchServer::start(|_| Vec::new()).await;
    let llm = ScriptedLlm::start(Script::reply("never asked")).await;
    let mut mock = MockMastodon::start().await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let extra = format!(
        // The stance's second opinion on: a watched post's answer still calls no LLM.
        "{}\n[moderation]\nmastodon_moderators = [\"alice\"]\n[verify]\nstance = true\n",
        watch_extra(&sandbox, &search, &site, "bluesky = \"off\"\nmastodon = true")
    );
    let cfg = daemon_config(&dir.path().join("state"), &mock.base, &llm.base_url, port, &extra);
    let cfg_path = dir.path().join("bot-config.toml");
    std::fs::write(&cfg_path, &cfg).unwrap();
    import_review(&cfg_path);
    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;
    wait_log(&daemon, "the network watch is on", 1).await;
    wait_log(&daemon, "local timeline stream connected", 1).await;

    let unrelated = mock.post(BOB_TOKEN, UNRELATED, None).await;
    let refutes = mock.post(BOB_TOKEN, REFUTES, None).await;
    let asserts = mock.post(BOB_TOKEN, ASSERTS, None).await;
    wait_log(&daemon, "draft held for a moderator's review", 1).await;
    let held = format!("mastodon:watch:{}", asserts["id"].as_str().unwrap());
    mock.post(ALICE_TOKEN, "@musebot status", None).await;
    let all = mock
        .wait_for_bot_statuses(Duration::from_secs(60), |s| {
            s.iter().any(|x| text_of(x).contains("Status:"))
        })
        .await;
    let status: String = all.iter().map(text_of).filter(|t| t.contains("Status:")).collect();
    assert!(
        status.contains(&held) && status.contains("Drafts waiting for review: 1"),
        "{status}\n{}",
        daemon.log_text()
    );
    for other in [&unrelated, &refutes] {
        assert!(!status.contains(other["id"].as_str().unwrap()), "{status}");
    }
    // Nothing posted by itself: the bot's only status is its answer to the moderator.
    assert!(all.iter().all(|s| s["visibility"] == "direct"), "{all:#?}");
    assert_eq!(llm.calls.load(std::sync::atomic::Ordering::SeqCst), 0, "no LLM call");
    let metrics = daemon.http_get("/metrics").await;
    for (event, n) in [("taken", 1), ("not_asserted", 1)] {
        assert!(
            metrics.contains(&format!(
                "musebot_watch_posts_total{{platform=\"mastodon\",event=\"{event}\"}} {n}"
            )),
            "{event}: {metrics}\n{}",
            daemon.log_text()
        );
    }
    // The watch's stream is a connection of its own in /healthz, with when it last heard.
    assert!(
        metrics.contains("musebot_stream_last_event_timestamp_seconds{stream=\"watch:mastodon:public\"}"),
        "{metrics}"
    );
    let health: serde_json::Value = serde_json::from_str(&daemon.http_get("/healthz").await).unwrap();
    assert_eq!(health["platforms"]["watch:mastodon:public"], "connected", "{health}");
    assert!(health["last_event"]["watch:mastodon:public"].is_string(), "{health}");
    assert!(health["last_event"]["mastodon"].is_string(), "{health}");
    // The stream gone (the server down): /healthz says so, 503.
    mock.stop();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let health: serde_json::Value = serde_json::from_str(&daemon.http_get("/healthz").await).unwrap();
        if health["platforms"]["watch:mastodon:public"] != "connected" {
            assert_eq!(health["status"], "degraded", "{health}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "a stopped stream still looks connected: {health}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let _ = daemon.terminate(Duration::from_secs(10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_on_the_firehose_repeating_a_checked_claim_is_labelled_on_approval_or_at_once_and_a_refutation_never() {
    use common::bluesky::{bluesky_config, carries, Network};
    let Some(net) = Network::shared() else { return };
    let labeler = net.labeler.as_ref().expect("the full network runs a labeler");
    let moderator = net.account("mod").await;
    let sandbox = Sandbox::load();
    let site = checker_site().await;
    let search = web::SearchServer::start(|_| Vec::new()).await;
    let llm = ScriptedLlm::start(Script::reply("never asked")).await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let pages = free_port();
    let extra = format!(
        "plc_directory = \"{}\"\n\n[bluesky.labeler]\nenabled = true\nevidence_listen = \"127.0.0.1:{pages}\"\nevidence_url = \"http://127.0.0.1:{pages}/labels\"\n{}\n[moderation]\nbluesky_moderators = [\"{}\"]\n",
        net.plc,
        watch_extra(&sandbox, &search, &site, "bluesky = \"relay\"\nmastodon = false"),
        moderator.handle
    );
    let user = net.labeler_user().await;
    let cfg = bluesky_config(
        &dir.path().join("state"),
        &net.pds,
        &user,
        &dir.path().join("app-password"),
        &llm.base_url,
        port,
        None,
        &extra,
    );
    let cfg_path = dir.path().join("bot-config.toml");
    std::fs::write(&cfg_path, &cfg).unwrap();
    import_review(&cfg_path);
    // The labeler's declaration, so the AppView hydrates its labels for subscribers.
    let (code, out, err) = musebot(&["labeler", "setup", "--config", cfg_path.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}\n{err}");
    net.labeler_services(&labeler.did).await;
    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;
    wait_log(&daemon, "the network watch is on", 1).await;
    wait_log(&daemon, "network stream connected", 1).await;

    // The shipped default: the match is held for a moderator, and nothing is labelled yet.
    let alice = net.account("alice").await;
    let unrelated = alice.post(UNRELATED, None, json!([]), None).await;
    let refutes = alice.post(REFUTES, None, json!([]), None).await;
    let asserts = alice.post(ASSERTS, None, json!([]), None).await;
    wait_log(&daemon, "draft held for a moderator's review", 1).await;
    let seen = net.posts_seen_with(&[&asserts.uri], Some(&labeler.did)).await;
    assert!(!carries(&seen[0], &labeler.did, "fc-false"), "{seen:#?}");
    assert!(!daemon.log_text().contains("label emitted"), "held, not labelled");
    // The moderator approves it: the label goes on the post.
    let text = format!("@{} approve bluesky:watch:{}", user.handle, asserts.uri);
    let facets = json!([{
        "index": {"byteStart": 0, "byteEnd": 1 + user.handle.len()},
        "features": [{"$type": "app.bsky.richtext.facet#mention", "did": user.did}],
    }]);
    moderator.post(&text, None, facets, None).await;
    wait_log(&daemon, "label emitted", 1).await;
    net.wait_until_seen(&asserts.uri, &labeler.did, "fc-false", true).await;
    // The others were decided in the same batches or before: none carries a label.
    let views = net
        .posts_seen_with(&[&unrelated.uri, &refutes.uri], Some(&labeler.did))
        .await;
    assert_eq!(views.len(), 2, "{views:#?}");
    for view in &views {
        assert!(!carries(view, &labeler.did, "fc-false"), "{view:#}");
    }
    let metrics = daemon.http_get("/metrics").await;
    for event in ["taken", "not_asserted"] {
        assert!(
            metrics.contains(&format!(
                "musebot_watch_posts_total{{platform=\"bluesky\",event=\"{event}\"}} 1"
            )),
            "{event}: {metrics}"
        );
    }
    let _ = daemon.terminate(Duration::from_secs(10));

    // `watch.auto_label = true` and a restart: a new repeat is labelled at once, and the first
    // post is not taken up again (the stream resumes from its cursor, the job is the post's).
    let cfg = cfg.replace("mastodon = false\n", "mastodon = false\nauto_label = true\n");
    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;
    wait_log(&daemon, "network stream connected", 1).await;
    let carol = net.account("carol").await;
    let again = carol.post(ASSERTS_AGAIN, None, json!([]), None).await;
    wait_log(&daemon, "label emitted", 1).await;
    net.wait_until_seen(&again.uri, &labeler.did, "fc-false", true).await;
    let log = daemon.log_text();
    assert_eq!(
        log.matches("a watched post asserts a checked claim").count(),
        1,
        "{log}"
    );
    // Never a reply to a watched post, and never a question to the LLM: the corpus and the
    // live page decide (the bot's only posts answer the moderator's command).
    for r in user.records_of(&user.did).await {
        let parent = r["value"]["reply"]["parent"]["uri"].as_str().unwrap_or("");
        for post in [&unrelated, &refutes, &asserts, &again] {
            assert_ne!(parent, post.uri, "{r:#}");
        }
    }
    assert_eq!(llm.calls.load(std::sync::atomic::Ordering::SeqCst), 0, "no LLM call");
    let _ = daemon.terminate(Duration::from_secs(10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_review_whose_page_reviews_another_claim_decides_nothing() {
    const POISONED: &str = "/2025/05/garlic-soup/";
    let sandbox = Sandbox::load();
    // The page reviews another claim than the one the import says it reviews.
    let markup = json!({"@context": "https://schema.org", "@type": "ClaimReview",
        "url": format!("http://{HOST}{POISONED}"),
        "claimReviewed": "Garlic soup keeps the flu away all winter",
        "datePublished": "2025-05-01",
        "author": {"@type": "Organization", "name": "FactCheck.org"},
        "reviewRating": {"@type": "Rating", "alternateName": "False"}});
    let page = format!(
        "<html lang=\"en\"><head><title>Garlic soup and the flu</title><script type=\"application/ld+json\">{markup}</script></head><body><article><h1>Garlic soup and the flu</h1><p>{}</p></article></body></html>",
        "Doctors say there is no evidence that garlic soup prevents the flu. ".repeat(8)
    );
    let site = web::Site::start(BTreeMap::from([(POISONED.to_string(), page)])).await;
    let search = web::SearchServer::start(|_| Vec::new()).await;
    let llm = ScriptedLlm::start(Script::reply("never asked")).await;
    let mock = MockMastodon::start().await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let extra = format!(
        "{}\n[moderation]\nmastodon_moderators = [\"alice\"]\n",
        watch_extra(&sandbox, &search, &site, "bluesky = \"off\"\nmastodon = true")
    );
    let cfg = daemon_config(&dir.path().join("state"), &mock.base, &llm.base_url, port, &extra);
    let cfg_path = dir.path().join("bot-config.toml");
    std::fs::write(&cfg_path, &cfg).unwrap();
    let review = json!({"@context": "https://schema.org", "@type": "ClaimReview",
        "url": format!("http://{HOST}{POISONED}"),
        "name": "Lemon water does not cure COVID-19",
        "claimReviewed": CLAIM,
        "datePublished": "2025-05-01",
        "reviewRating": {"@type": "Rating", "alternateName": "False"}});
    import_reviews(&cfg_path, &format!("{review}\n"));
    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;
    wait_log(&daemon, "local timeline stream connected", 1).await;
    mock.post(BOB_TOKEN, ASSERTS, None).await;
    wait_log(&daemon, "a watched post asserts a checked claim", 1).await;
    wait_log(&daemon, "a matched review read on its page", 1).await;
    let log = daemon.log_text();
    let read = log
        .lines()
        .find(|l| l.contains("a matched review read on its page"))
        .unwrap();
    assert!(
        read.contains("decides=false") && read.contains("reviews another claim"),
        "{read}\n{log}"
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        !daemon.log_text().contains("draft held for a moderator's review"),
        "{}",
        daemon.log_text()
    );
    assert_eq!(llm.calls.load(std::sync::atomic::Ordering::SeqCst), 0, "no LLM call");
    let _ = daemon.terminate(Duration::from_secs(10));
}
