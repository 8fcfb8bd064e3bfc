//! What the bot says about a post is true of the post, end to end on mastodon-mock with the
//! real binary, the real embedding models (the multilingual one reads the stance), a scripted
//! LLM and a local site under a fact-checker's name whose page reviews "Drinking hot lemon
//! water cures COVID-19" as False (imported into the corpus before the daemon starts):
//!
//! - a post asserting the claim is told "This post is false." with the check named;
//! - a post debunking it is told it agrees with the fact-checkers, a question and a report
//!   hear about the claim and its rating — none of them is called false;
//! - the asserting post edited into a denial gets an update saying the post agrees with the
//!   fact-checkers (the follower's re-check decides the stance again).

mod common;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use common::*;

fn musebot(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_musebot")).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The bot's thread under `target` (its text), once it has at least one part.
async fn answer_to(mock: &MockMastodon, target: &str) -> String {
    let all = mock
        .wait_for_bot_statuses(Duration::from_secs(120), |s| {
            s.iter().any(|x| x["in_reply_to_id"].as_str() == Some(target))
        })
        .await;
    let first = all
        .iter()
        .find(|x| x["in_reply_to_id"].as_str() == Some(target))
        .unwrap();
    text_of(first)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_verdict_is_said_only_of_a_post_that_asserts_the_claim() {
    let sandbox = Sandbox::load();
    let site = lemon_water_site().await;
    let search = web::SearchServer::start(|_| Vec::new()).await;
    let llm = ScriptedLlm::start(Script::routed(common::lemon_water)).await;
    let mock = MockMastodon::start().await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let extra = format!(
        "[search]\nbackends = [{{ kind = \"searxng\", base_url = \"{}\" }}]\n{}[fetch]\ntest_allow_addrs = [\"{}\"]\ntest_resolve = [\"{LEMON_HOST}={}\"]\n[living]\nfollow_secs = 5\n",
        search.base_url(),
        relevance_toml(&sandbox),
        site.addr,
        site.addr,
    );
    let cfg = daemon_config(&dir.path().join("state"), &mock.base, &llm.base_url, port, &extra);
    let cfg_path = dir.path().join("bot-config.toml");
    std::fs::write(&cfg_path, &cfg).unwrap();
    let dump = dir.path().join("reviews.jsonl");
    std::fs::write(&dump, lemon_water_review()).unwrap();
    let (code, out, err) = musebot(&[
        "index",
        "import",
        dump.to_str().unwrap(),
        "--config",
        cfg_path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}\n{err}");

    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;
    let posts = [
        (
            "asserts",
            "Drinking hot lemon water cures COVID-19. My grandmother swears by it, share this!",
        ),
        (
            "denies",
            "It is a myth that drinking hot lemon water cures COVID-19. There is no evidence for it at all.",
        ),
        ("asks", "Is it true that drinking hot lemon water cures COVID-19?"),
        (
            "mentions",
            "A viral post claims that drinking hot lemon water cures COVID-19.",
        ),
    ];
    let mut answers = BTreeMap::new();
    for (stance, text) in posts {
        let target = mock.post(ALICE_TOKEN, text, None).await;
        let id = target["id"].as_str().unwrap().to_string();
        mock.post(BOB_TOKEN, "@musebot is this true?", Some(&id)).await;
        let answer = answer_to(&mock, &id).await;
        answers.insert(stance, (id, answer));
    }
    let log = daemon.log_text();
    let (asserting_id, asserts) = &answers["asserts"];
    assert!(
        asserts.starts_with("@bob This post is false. Fact-checked: FactCheck.org rated it \"False\""),
        "{asserts}\n{log}"
    );
    for stance in ["denies", "asks", "mentions"] {
        let said = &answers[stance].1;
        assert!(!said.contains("This post is false"), "{stance}: {said}");
        assert!(
            said.contains("FactCheck.org rated it \"False\""),
            "{stance}: the check named: {said}"
        );
        assert!(
            said.contains("Drinking hot lemon water cures COVID-19"),
            "{stance}: the claim named: {said}"
        );
    }
    assert!(
        answers["denies"]
            .1
            .starts_with("@bob This post agrees with the fact-checkers"),
        "{}",
        answers["denies"].1
    );
    assert!(
        answers["asks"].1.starts_with("@bob This post asks about a claim"),
        "{}",
        answers["asks"].1
    );
    assert!(
        !answers["mentions"].1.contains("This post agrees"),
        "a report is not told it agrees: {}",
        answers["mentions"].1
    );

    // The asserting post is edited into a denial: the follower's re-check decides the stance
    // again, and the thread is told the post now agrees with the fact-checkers.
    mock.edit(
        ALICE_TOKEN,
        asserting_id,
        "Update: drinking hot lemon water does NOT cure COVID-19, that was a myth. Sorry for sharing it.",
    )
    .await;
    let all = mock
        .wait_for_bot_statuses(Duration::from_secs(120), |s| {
            s.iter().any(|x| text_of(x).contains("Update: This post agrees"))
        })
        .await;
    let update: Vec<String> = all.iter().map(text_of).filter(|t| t.contains("Update:")).collect();
    assert_eq!(update.len(), 1, "{update:?}\n{}", daemon.log_text());
    assert!(!update[0].contains("This post is false"), "{}", update[0]);
    let _ = daemon.terminate(Duration::from_secs(10));
}
