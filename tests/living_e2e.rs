//! Living replies end to end on mastodon-mock, with the real binary, the real
//! relevance model, a scripted LLM and a local web site under a fact-checker's name:
//!
//! - a claim nobody has checked yet is answered "could not verify"; the fact-check is
//!   published later (imported into the corpus while the daemon runs); the daemon matches it to
//!   the kept claim and posts one "Update: …" in its own thread, naming the check;
//! - `kill -9` and a restart after the update post nothing twice;
//! - the author deletes the checked post: every part of the bot's answer is deleted within the
//!   follower's interval, and `/metrics` counts it.
//!
//! Real time is used (the timers here are new reviews and the follower's 5 s interval); the
//! 1 h / 24 h timers are tested with a scripted clock in `src/worker/tests_living.rs`.

mod common;

use std::time::Duration;

use common::*;
use serde_json::Value;

const HOST: &str = LEMON_HOST;
const CHECK: &str = LEMON_CHECK;

/// The bot's statuses in the thread under `first` (its first part), oldest first.
fn thread_under(all: &[Value], first: &str) -> Vec<Value> {
    let mut ids = vec![first.to_string()];
    let mut out = Vec::new();
    for s in all {
        let id = s["id"].as_str().unwrap_or("").to_string();
        let parent = s["in_reply_to_id"].as_str().unwrap_or("");
        if id == first || ids.iter().any(|i| i == parent) {
            ids.push(id);
            out.push(s.clone());
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_published_later_updates_the_answer_once_and_a_deleted_post_takes_the_answer_with_it() {
    let sandbox = Sandbox::load();
    // The checker's page carries its own review of the claim: a corpus match decides only by
    // the live page's markup (its rating, claim and date).
    let site = lemon_water_site().await;
    // Web search finds nothing about the claim, today or later: only the check can settle it.
    let search = web::SearchServer::start(|_| Vec::new()).await;
    let llm = ScriptedLlm::start(Script::routed(lemon_water)).await;
    let mock = MockMastodon::start().await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let extra = format!(
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
[living]
follow_secs = 5
"#,
        search.base_url(),
        sandbox.get("MUSEBOT_ORT_DYLIB"),
        sandbox.get("MUSEBOT_EMBED_MODEL"),
        sandbox.get("MUSEBOT_EMBED_TOKENIZER"),
        sandbox.get("MUSEBOT_EMBED_MODEL_MULTI"),
        sandbox.get("MUSEBOT_EMBED_TOKENIZER_MULTI"),
        site.addr,
        site.addr,
    );
    let cfg = daemon_config(&dir.path().join("state"), &mock.base, &llm.base_url, port, &extra);
    let cfg_path = dir.path().join("bot-config.toml");
    std::fs::write(&cfg_path, &cfg).unwrap();

    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;
    let target = mock
        .post(
            ALICE_TOKEN,
            "A glass of hot water with lemon juice will cure you of COVID-19.",
            None,
        )
        .await;
    let target_id = target["id"].as_str().unwrap().to_string();
    mock.post(BOB_TOKEN, "@musebot is this true?", Some(&target_id)).await;
    let first = daemon
        .wait_for_replies(&mock, Duration::from_secs(120), |s| !s.is_empty())
        .await;
    let answer = thread_text(&first);
    assert!(answer.contains("could not verify"), "{answer}\n{}", daemon.log_text());
    let first_id = first[0]["id"].as_str().unwrap().to_string();
    let last_id = first.last().unwrap()["id"].as_str().unwrap().to_string();

    // The fact-check is published (imported while the daemon runs).
    import_reviews(&cfg_path, &lemon_water_review());

    let all = mock
        .wait_for_bot_statuses(Duration::from_secs(120), |s| {
            s.iter().any(|x| text_of(x).contains("Update:"))
        })
        .await;
    let thread = thread_under(&all, &first_id);
    let updates: Vec<&Value> = thread.iter().filter(|s| text_of(s).contains("Update:")).collect();
    assert_eq!(updates.len(), 1, "{thread:#?}");
    let update = text_of(updates[0]);
    assert_eq!(
        updates[0]["in_reply_to_id"].as_str(),
        Some(last_id.as_str()),
        "under the last part"
    );
    let whole: String = thread.iter().map(text_of).collect::<Vec<_>>().join("\n");
    assert!(update.starts_with("@bob Update: This post is false."), "{update}");
    assert!(
        whole.contains("Fact-checked: FactCheck.org rated it \"False\""),
        "{whole}"
    );
    assert!(whole.contains(&format!("http://{HOST}{CHECK}")), "{whole}");
    let metrics = daemon.http_get("/metrics").await;
    assert!(
        metrics.contains("musebot_living_total{outcome=\"update\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("musebot_living_total{outcome=\"recheck\"} 1"),
        "{metrics}"
    );

    // kill -9 and a restart: nothing is posted twice.
    let before = mock.bot_statuses().await.len();
    daemon.kill9();
    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;
    tokio::time::sleep(Duration::from_secs(12)).await;
    assert_eq!(mock.bot_statuses().await.len(), before, "{}", daemon.log_text());

    // Claim memory: someone else posts the same claim in other words; it is answered from the
    // kept answer's evidence — the check named again — without a single search.
    let searched = search.asked.lock().unwrap().len();
    let other = mock
        .post(
            ALICE_TOKEN,
            // Asserted in its own voice ("…, they say" would report it: see stance_e2e).
            "Drinking a glass of hot water with lemon will cure you of COVID-19.",
            None,
        )
        .await;
    let other_id = other["id"].as_str().unwrap().to_string();
    mock.post(BOB_TOKEN, "@musebot and this one?", Some(&other_id)).await;
    let all = mock
        .wait_for_bot_statuses(Duration::from_secs(120), |s| {
            s.iter()
                .any(|x| x["in_reply_to_id"].as_str() == Some(other_id.as_str()))
        })
        .await;
    let second: Vec<Value> = all
        .iter()
        .find(|x| x["in_reply_to_id"].as_str() == Some(other_id.as_str()))
        .map(|x| thread_under(&all, x["id"].as_str().unwrap()))
        .unwrap();
    let second = thread_text(&second);
    assert!(
        second.contains("This post is false. Fact-checked: FactCheck.org rated it \"False\""),
        "{second}\n{}",
        daemon.log_text()
    );
    assert_eq!(search.asked.lock().unwrap().len(), searched, "no search: {second}");
    let metrics = daemon.http_get("/metrics").await;
    assert!(
        metrics.contains("musebot_living_total{outcome=\"memory\"} 1"),
        "{metrics}"
    );

    // The author deletes the post: every part of the answer goes, updates included.
    mock.delete(ALICE_TOKEN, &target_id).await;
    let gone = mock
        .wait_for_bot_statuses(Duration::from_secs(30), |s| {
            !s.iter().any(|x| x["id"].as_str() == Some(first_id.as_str()))
        })
        .await;
    assert!(thread_under(&gone, &first_id).is_empty(), "{gone:#?}");
    assert!(!gone.iter().any(|s| text_of(s).contains("Update:")), "{gone:#?}");
    let metrics = daemon.http_get("/metrics").await;
    assert!(
        metrics.contains("musebot_living_total{outcome=\"deletion\"} 1"),
        "{metrics}"
    );
    let _ = daemon.terminate(Duration::from_secs(10));
}

/// `corrections = "edit"` on Mastodon: the asker's `recheck` under an answer that could not
/// verify, once the model knows better, edits the answer's first part in place (the server
/// keeps its history: `edited_at` set, the old text in `/history`) instead of posting under it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_corrections_by_edit_the_answer_itself_is_edited_and_its_history_kept() {
    let answer = std::sync::Arc::new(std::sync::Mutex::new(
        "This post cannot be verified. No report I know of says how fish sleep.".to_string(),
    ));
    let a = answer.clone();
    let llm = ScriptedLlm::start(Script::routed(move |_| a.lock().unwrap().clone())).await;
    let mock = MockMastodon::start().await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let cfg = daemon_config(
        &dir.path().join("state"),
        &mock.base,
        &llm.base_url,
        port,
        "[living]\ncorrections = \"edit\"\n",
    );
    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;
    let target = mock.post(ALICE_TOKEN, "Fish sleep upside down at night.", None).await;
    let target_id = target["id"].as_str().unwrap().to_string();
    mock.post(BOB_TOKEN, "@musebot is this true?", Some(&target_id)).await;
    let first = daemon
        .wait_for_replies(&mock, Duration::from_secs(60), |s| !s.is_empty())
        .await;
    assert_eq!(first.len(), 1, "{first:#?}");
    let first_id = first[0]["id"].as_str().unwrap().to_string();
    assert!(text_of(&first[0]).contains("could not"), "{}", text_of(&first[0]));

    *answer.lock().unwrap() = "This post is false: fish rest upright, hovering in place.".into();
    mock.post(BOB_TOKEN, "@musebot recheck", Some(&first_id)).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let edited = loop {
        let s = mock.get(BOB_TOKEN, &format!("/api/v1/statuses/{first_id}")).await;
        if text_of(&s).contains("Update:") || std::time::Instant::now() > deadline {
            break s;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let text = text_of(&edited);
    assert!(
        text.starts_with("@bob Update: This post is false"),
        "{text}\n{}",
        daemon.log_text()
    );
    assert!(!edited["edited_at"].is_null(), "{edited:#}");
    let history = mock
        .get(BOB_TOKEN, &format!("/api/v1/statuses/{first_id}/history"))
        .await;
    let old: String = history.as_array().unwrap().iter().map(text_of).collect();
    assert!(
        old.contains("could not"),
        "the first text is in the history: {history:#}"
    );
    // Nothing was posted under the answer: the public thread is the one edited part.
    let public: Vec<Value> = mock
        .bot_statuses()
        .await
        .into_iter()
        .filter(|s| s["visibility"] != "direct")
        .collect();
    assert_eq!(public.len(), 1, "{public:#?}");
    let metrics = daemon.metrics_once("musebot_living_total{outcome=\"update\"} 1").await;
    assert!(
        metrics.contains("musebot_living_total{outcome=\"update\"} 1"),
        "{metrics}"
    );
    let _ = daemon.terminate(Duration::from_secs(10));
}
