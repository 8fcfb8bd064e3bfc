//! What the bot says about a post is true of the post, end to end on mastodon-mock with the
//! real binary, the real embedding models (the multilingual one reads the stance), a scripted
//! LLM and a local site under a fact-checker's name whose page reviews "Drinking hot lemon
//! water cures COVID-19" as False (imported into the corpus before the daemon starts):
//!
//! - a post asserting the claim is told "This post is false." with the check named;
//! - a post debunking it is told it agrees with the fact-checkers, a question that it asks, a
//!   report that it reports — none of them is called false;
//! - an assertion full of cue words ("LOL", "don't", "lies") is never told it agrees, an
//!   assertion with a video link (`watch?v=…`) is never told it asks, and a true post matched
//!   to a check of its negation ("The MMR vaccine is not safe for children", False) is never
//!   told "This post is false." — each gets its own sentence or the neutral one;
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
    // Two checks: the lemon water claim, and a negated false claim whose true opposite a
    // user may post.
    let mmr = "/2025/06/mmr-safety/";
    let mmr_claim = "The MMR vaccine is not safe for children";
    let site = web::Site::start(BTreeMap::from([
        lemon_water_page(),
        check_page(
            mmr,
            mmr_claim,
            "False",
            "The MMR vaccine is safe",
            "Decades of studies of millions of children show the MMR vaccine is safe and effective. ",
        ),
    ]))
    .await;
    let search = web::SearchServer::start(|_| Vec::new()).await;
    let llm = ScriptedLlm::start(Script::routed(common::lemon_water)).await;
    // Seven answers, each polled for: more reads than the default window allows.
    let mock = MockMastodon::start_with_ratelimit(5_000).await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let extra = format!(
        "[search]\nbackends = [{{ kind = \"searxng\", base_url = \"{}\" }}]\n{}[fetch]\ntest_allow_addrs = [\"{}\"]\ntest_resolve = [\"{LEMON_HOST}={}\"]\n[living]\nfollow_secs = 5\n[limits]\nchecks_per_requester_per_hour = 20\n",
        search.base_url(),
        relevance_toml(&sandbox),
        site.addr,
        site.addr,
    );
    let cfg = daemon_config(&dir.path().join("state"), &mock.base, &llm.base_url, port, &extra);
    let cfg_path = dir.path().join("bot-config.toml");
    std::fs::write(&cfg_path, &cfg).unwrap();
    let dump = dir.path().join("reviews.jsonl");
    std::fs::write(
        &dump,
        lemon_water_review() + &review_line(mmr, mmr_claim, "False", "The MMR vaccine is safe"),
    )
    .unwrap();
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
            "Sorry, but hot lemon water does not cure COVID-19. That viral claim is a myth.",
        ),
        ("asks", "Is it true that drinking hot lemon water cures COVID-19?"),
        (
            "mentions",
            "A viral post claims that drinking hot lemon water cures COVID-19.",
        ),
        (
            "cues",
            "LOL they don't want you to know: drinking hot lemon water cures COVID-19!!! Big pharma lies",
        ),
        (
            "link",
            "Drinking hot lemon water cures COVID-19, watch https://www.youtube.com/watch?v=dQw4w9WgXcQ",
        ),
        (
            "true",
            "The MMR vaccine is safe for children. Decades of data, millions of kids: get them vaccinated.",
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
    for stance in ["denies", "asks", "mentions", "true"] {
        let said = &answers[stance].1;
        assert!(!said.contains("This post is false"), "{stance}: {said}");
        assert!(
            said.contains("FactCheck.org rated it \"False\""),
            "{stance}: the check named: {said}"
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
        answers["mentions"].1.starts_with("@bob This post reports a claim"),
        "{}",
        answers["mentions"].1
    );
    // Cue words never make an assertion a denial; a link's query is no question; a true post
    // is never false for a check of its negation. Each gets its sentence or the neutral one.
    for stance in ["denies", "asks", "mentions"] {
        let said = &answers[stance].1;
        assert!(
            said.contains("Drinking hot lemon water cures COVID-19"),
            "{stance}: the claim named: {said}"
        );
    }
    let neutral = "@bob A claim this post touches on has been fact-checked";
    let cues = &answers["cues"].1;
    assert!(!cues.contains("agrees") && !cues.contains("asks about"), "{cues}");
    assert!(
        cues.starts_with("@bob This post is false.") || cues.starts_with(neutral),
        "{cues}"
    );
    let link = &answers["link"].1;
    assert!(!link.contains("asks about") && !link.contains("agrees"), "{link}");
    let truth = &answers["true"].1;
    assert!(!truth.contains("This post is false"), "{truth}");
    assert!(
        truth.contains("The MMR vaccine is not safe for children"),
        "the check named: {truth}"
    );

    // The asserting post is edited into a denial: the follower's re-check decides the stance
    // again, and the thread is told the post now agrees with the fact-checkers.
    mock.edit(
        ALICE_TOKEN,
        asserting_id,
        "Sorry, but hot lemon water does not cure COVID-19. That viral claim is a myth.",
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
