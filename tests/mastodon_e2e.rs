//! End to end on a real `mastodon-mock` with a scripted LLM: threading, splitting, skip rules,
//! quota, metrics.

mod common;

use std::time::Duration;

use common::*;

async fn setup(reply: &str, extra: &str) -> (MockMastodon, ScriptedLlm, Daemon, tempfile::TempDir) {
    setup_on(MockMastodon::start().await, reply, extra).await
}

async fn setup_on(
    mock: MockMastodon,
    reply: &str,
    extra: &str,
) -> (MockMastodon, ScriptedLlm, Daemon, tempfile::TempDir) {
    setup_scripted(mock, Script::reply(reply), extra).await
}

async fn setup_scripted(
    mock: MockMastodon,
    script: Script,
    extra: &str,
) -> (MockMastodon, ScriptedLlm, Daemon, tempfile::TempDir) {
    let llm = ScriptedLlm::start(script).await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let cfg = daemon_config(&dir.path().join("state"), &mock.base, &llm.base_url, port, extra);
    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;
    (mock, llm, daemon, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mention_under_a_status_gets_a_threaded_reply() {
    let reply = "This post is false: the Moon is made of rock, as samples from Apollo show.";
    let (mock, llm, daemon, _dir) = setup(reply, "").await;
    let target = mock
        .post(ALICE_TOKEN, "The Moon is made of cheese, scientists admit!", None)
        .await;
    let target_id = target["id"].as_str().unwrap();
    let mention = mock.post(BOB_TOKEN, "@musebot is this true?", Some(target_id)).await;

    let posted = mock
        .wait_for_bot_statuses(Duration::from_secs(30), |s| !s.is_empty())
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let posted_again = mock.bot_statuses().await;
    assert_eq!(posted_again.len(), 1, "exactly one reply: {posted_again:#?}");
    let r = &posted[0];
    assert_eq!(
        r["in_reply_to_id"].as_str(),
        Some(target_id),
        "reply must thread under the checked status"
    );
    assert_ne!(r["in_reply_to_id"], mention["id"]);
    assert_eq!(r["visibility"], "unlisted");
    // The bot words the verdict itself; the model's explanation follows.
    assert_eq!(
        text_of(r),
        "@bob This post is false. The Moon is made of rock, as samples from Apollo show."
    );

    // The LLM saw the target's text, inside the data block, not the mention's.
    let reqs = llm.requests.lock().unwrap().clone();
    assert_eq!(reqs.len(), 1);
    let user = reqs[0]["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.contains("<post>") && user.contains("The Moon is made of cheese"),
        "{user}"
    );
    assert!(!user.contains("is this true"), "{user}");

    let metrics = daemon.http_get("/metrics").await;
    assert!(
        metrics.contains("musebot_mentions_received_total{platform=\"mastodon\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("musebot_jobs_total{outcome=\"reply\"} 1"), "{metrics}");
    assert!(
        metrics.contains("musebot_llm_tokens_total{stage=\"draft\",kind=\"prompt\"} 42"),
        "{metrics}"
    );
    assert!(
        metrics.contains("musebot_stage_seconds_count{stage=\"draft\"} 1"),
        "{metrics}"
    );
    let health = daemon.http_get("/healthz").await;
    assert!(health.contains("\"mastodon\":\"connected\""), "{health}");
    assert!(!daemon.log_text().contains(BOT_TOKEN), "the token leaked into the log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_reply_becomes_ordered_parts_within_the_limit() {
    let words: Vec<String> = (0..260).map(|i| format!("fact{i}")).collect();
    let reply = format!("This post is misleading. {}", words.join(" "));
    let (mock, _llm, _daemon, _dir) = setup(&reply, "[reply]\nmax_parts = 10\n").await;
    let limit = mock.get(ALICE_TOKEN, "/api/v2/instance").await["configuration"]["statuses"]["max_characters"]
        .as_u64()
        .unwrap() as usize;
    let target = mock.post(ALICE_TOKEN, "A long claim", None).await;
    let target_id = target["id"].as_str().unwrap().to_string();
    mock.post(BOB_TOKEN, "@musebot check please", Some(&target_id)).await;

    let parts = mock
        .wait_for_bot_statuses(Duration::from_secs(30), |s| {
            s.len() >= 4 && s.iter().all(|p| text_of(p).contains('/'))
        })
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let parts_final = mock.bot_statuses().await;
    assert_eq!(parts.len(), parts_final.len());
    let n = parts.len();
    let mut previous = target_id.clone();
    let mut seen_words = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let text = text_of(p);
        let len = musebot::compose::weighted_len(
            &text,
            musebot::compose::TextLimits {
                max_chars: limit,
                chars_per_url: 23,
            },
        );
        assert!(len <= limit, "part {i} has {len} > {limit}: {text}");
        assert!(text.ends_with(&format!("({}/{n})", i + 1)), "part {i}: {text}");
        assert_eq!(
            p["in_reply_to_id"].as_str(),
            Some(previous.as_str()),
            "part {i} must reply to the previous one"
        );
        previous = p["id"].as_str().unwrap().to_string();
        // (The explanation's first letter is capitalised after the bot's verdict sentence.)
        seen_words.extend(
            text.to_lowercase()
                .split_whitespace()
                .filter(|w| w.starts_with("fact"))
                .map(str::to_string)
                .collect::<Vec<_>>(),
        );
    }
    assert!(text_of(&parts[0]).starts_with("@bob This post is misleading."));
    assert_eq!(seen_words, words, "words must arrive complete and in order");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bots_and_nobot_accounts_are_skipped_top_level_mentions_check_themselves() {
    let (mock, _llm, _daemon, _dir) = setup("This post is accurate.", "").await;
    let target = mock.post(ALICE_TOKEN, "Water boils at 100 C at sea level.", None).await;
    let tid = target["id"].as_str().unwrap();
    mock.post(ROBO_TOKEN, "@musebot bot asking", Some(tid)).await;
    mock.post(NOBOT_TOKEN, "@musebot opted-out account asking", Some(tid))
        .await;
    let own = mock.post(NOBOT_TOKEN, "A post by someone who opted out", None).await;
    mock.post(BOB_TOKEN, "@musebot check this", Some(own["id"].as_str().unwrap()))
        .await;
    let top = mock
        .post(ALICE_TOKEN, "@musebot Is the Great Wall visible from space?", None)
        .await;

    let posted = mock
        .wait_for_bot_statuses(Duration::from_secs(30), |s| !s.is_empty())
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let posted = if posted.len() == 1 {
        mock.bot_statuses().await
    } else {
        posted
    };
    assert_eq!(posted.len(), 1, "only the top-level mention is answered: {posted:#?}");
    assert_eq!(
        posted[0]["in_reply_to_id"], top["id"],
        "a top-level mention checks itself"
    );
    assert!(text_of(&posted[0]).starts_with("@alice "));
}

/// A model that restates the claim instead of checking it is asked once more, then the bot
/// posts its honest "could not check" reply: never the claim as its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_that_restates_the_claim_is_never_posted() {
    let claim = "The Great Wall of China is the only man-made structure visible from the Moon.";
    let (mock, llm, _daemon, _dir) = setup(claim, "").await;
    let (_, posted) = mock.ask_about(claim, Duration::from_secs(30)).await;
    let text = text_of(&posted[0]);
    assert!(text.starts_with("@bob I could not check this post reliably."), "{text}");
    assert!(!text.contains("only man-made structure"), "{text}");
    assert_eq!(
        llm.calls.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "one more try, then the fallback"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_quota_gets_one_notice_then_silence() {
    let (mock, llm, _daemon, _dir) =
        setup("This post is false.", "[limits]\nchecks_per_requester_per_hour = 2\n").await;
    let target = mock.post(ALICE_TOKEN, "Claim", None).await;
    let tid = target["id"].as_str().unwrap();
    let mut mentions = Vec::new();
    for i in 0..5 {
        // Different targets, so "already answered" does not kick in.
        let t = if i == 0 {
            tid.to_string()
        } else {
            mock.post(ALICE_TOKEN, &format!("Claim {i}"), None).await["id"]
                .as_str()
                .unwrap()
                .to_string()
        };
        mentions.push(mock.post(BOB_TOKEN, &format!("@musebot check {i}"), Some(&t)).await);
    }
    mock.wait_for_bot_statuses(Duration::from_secs(30), |s| s.len() >= 3)
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let posted = mock.bot_statuses().await;
    assert_eq!(posted.len(), 3, "2 replies + 1 notice: {posted:#?}");
    let notices: Vec<_> = posted
        .iter()
        .filter(|p| text_of(p).contains("limit of 2 checks per hour"))
        .collect();
    assert_eq!(notices.len(), 1);
    // Each of the three answers one mention, the notice the one that came third in the order
    // the jobs were charged (under load not always the third posted).
    let answered: std::collections::BTreeSet<String> = posted.iter().map(|p| p["in_reply_to_id"].to_string()).collect();
    assert_eq!(answered.len(), 3, "three mentions answered once each: {posted:#?}");
    assert!(
        mentions.iter().any(|m| m["id"] == notices[0]["in_reply_to_id"]),
        "the notice answers a mention"
    );
    assert_eq!(
        llm.calls.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "no LLM spend over quota"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_request_for_the_same_post_points_to_the_first_reply() {
    let (mock, llm, _daemon, _dir) = setup("This post is false.", "").await;
    let target = mock.post(ALICE_TOKEN, "Claim", None).await;
    let tid = target["id"].as_str().unwrap();
    mock.post(BOB_TOKEN, "@musebot check", Some(tid)).await;
    let first = mock
        .wait_for_bot_statuses(Duration::from_secs(30), |s| s.len() == 1)
        .await;
    let second = mock.post(ALICE_TOKEN, "@musebot what about this?", Some(tid)).await;
    let all = mock
        .wait_for_bot_statuses(Duration::from_secs(30), |s| s.len() == 2)
        .await;
    assert_eq!(all[1]["in_reply_to_id"], second["id"]);
    let url = first[0]["url"].as_str().unwrap();
    assert!(text_of(&all[1]).contains(url), "{}", text_of(&all[1]));
    assert_eq!(llm.calls.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_prints_the_reply_and_a_trace_and_posts_nothing() {
    let mock = MockMastodon::start().await;
    let llm = ScriptedLlm::start(Script::reply("This post is false: see @eve https://spam.example/x")).await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = daemon_config(&dir.path().join("state"), &mock.base, &llm.base_url, free_port(), "");
    let cfg_path = dir.path().join("c.toml");
    std::fs::write(&cfg_path, cfg).unwrap();
    let target = mock.post(ALICE_TOKEN, "Vaccines contain microchips.", None).await;
    let url = format!("{}/@alice/{}", mock.base, target["id"].as_str().unwrap());

    let run = |args: Vec<String>| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_musebot"))
            .args(&args)
            .env("MUSEBOT_TEST_MASTODON_TOKEN", BOT_TOKEN)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let cfg_arg = cfg_path.to_str().unwrap().to_string();
    let text = tokio::task::spawn_blocking({
        let (url, cfg_arg) = (url.clone(), cfg_arg.clone());
        move || run(vec!["check".into(), url, "--config".into(), cfg_arg])
    })
    .await
    .unwrap();
    assert!(text.contains("post by alice"), "{text}");
    assert!(text.contains("Vaccines contain microchips."), "{text}");
    assert!(
        text.contains("This post is false. See eve"),
        "mention defused, URL removed: {text}"
    );
    assert!(!text.contains("spam.example"), "{text}");
    assert!(text.contains("draft") && text.contains("prompt    42 tok"), "{text}");

    let json = tokio::task::spawn_blocking(move || {
        run(vec![
            "check".into(),
            "The Earth is flat.".into(),
            "--json".into(),
            "--config".into(),
            cfg_arg,
        ])
    })
    .await
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["outcome"], "reply");
    assert_eq!(v["post"]["text"], "The Earth is flat.");
    assert_eq!(v["parts"].as_array().unwrap().len(), 1);
    assert_eq!(v["trace"][1]["step"], "draft");
    assert!(mock.bot_statuses().await.is_empty(), "check must not post");
    assert_eq!(llm.calls.load(std::sync::atomic::Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_account_is_flagged_as_a_bot_at_start_and_logs_can_be_json() {
    let mock = MockMastodon::start_unflagged().await;
    assert_eq!(
        mock.get(BOT_TOKEN, "/api/v1/accounts/verify_credentials").await["bot"],
        false
    );
    let (mock, _llm, daemon, _dir) = setup_on(mock, "This post is false.", "[log]\nformat = \"json\"\n").await;
    assert_eq!(
        mock.get(BOT_TOKEN, "/api/v1/accounts/verify_credentials").await["bot"],
        true,
        "{}",
        daemon.log_text()
    );
    let log = daemon.log_text();
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(
        lines.iter().any(|v| v["message"] == "account flagged as a bot"),
        "{log}"
    );
    assert!(!log.contains(BOT_TOKEN));
}

/// Answer only when asked: once the bot has replied in a thread, clients pre-fill its handle
/// in every later reply (mastodon-mock renders mentions as plain text, as a client would
/// have typed them). Those replies, and replies to the bot's own reply, start no check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_that_only_inherit_the_bots_handle_start_no_check() {
    let (mock, llm, daemon, _dir) = setup("This post is false: the Moon is rock.", "").await;
    let target = mock.post(ALICE_TOKEN, "The Moon is made of cheese.", None).await;
    let tid = target["id"].as_str().unwrap();
    let ask = mock.post(BOB_TOKEN, "@musebot is this true?", Some(tid)).await;
    let first = daemon
        .wait_for_replies(&mock, Duration::from_secs(30), |s| !s.is_empty())
        .await;
    let bot_reply = first[0]["id"].as_str().unwrap().to_string();
    // A third user under bob's mention: the client pre-filled "@bob @musebot".
    mock.post(ALICE_TOKEN, "@bob @musebot thanks, good to know", ask["id"].as_str())
        .await;
    // Replies to the bot's own reply.
    mock.post(ALICE_TOKEN, "@musebot @bob wrong!", Some(&bot_reply)).await;
    mock.post(BOB_TOKEN, "@musebot thanks", Some(&bot_reply)).await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    let all = mock.bot_statuses_all().await;
    assert_eq!(all.len(), 1, "nobody asked again: {all:#?}\n{}", daemon.log_text());
    assert_eq!(llm.calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(daemon.log_text().contains("only inherited"), "{}", daemon.log_text());
    // Writing the handle into the text is a request (here about bob's mention post).
    mock.post(ALICE_TOKEN, "@bob can you explain this, @musebot?", ask["id"].as_str())
        .await;
    let after = daemon
        .wait_for_replies(&mock, Duration::from_secs(30), |s| s.len() >= 2)
        .await;
    assert_eq!(after[1]["in_reply_to_id"], ask["id"]);
}

/// A followers-only post asked about: no public reply, its text goes nowhere, and the
/// requester gets a short direct message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_followers_only_post_gets_a_direct_message_not_a_reply() {
    let (mock, llm, daemon, _dir) = setup("This post is false.", "").await;
    // The bot follows alice, so it can read her followers-only posts.
    let alice_id = mock.account_id(ALICE_TOKEN).await;
    mock.post_path(BOT_TOKEN, &format!("/api/v1/accounts/{alice_id}/follow"))
        .await;
    mock.post_path(BOB_TOKEN, &format!("/api/v1/accounts/{alice_id}/follow"))
        .await;
    let secret = "Only for my followers: the Moon is made of cheese.";
    let target = mock
        .post_form(ALICE_TOKEN, &[("status", secret), ("visibility", "private")])
        .await;
    mock.post(BOB_TOKEN, "@musebot is this true?", target["id"].as_str())
        .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let dm = loop {
        let all = mock.bot_statuses_all().await;
        if let Some(s) = all.first() {
            break s.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no message: {}",
            daemon.log_text()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(mock.bot_statuses_all().await.len(), 1);
    assert_eq!(dm["visibility"], "direct", "{dm:#?}");
    assert!(
        text_of(&dm).starts_with("@bob ") && text_of(&dm).contains("public posts"),
        "{dm:#?}"
    );
    assert!(mock.bot_statuses().await.is_empty(), "nothing others can read");
    assert_eq!(
        llm.calls.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the text went to no LLM"
    );
}

/// Mastodon 4.5 quote posts: a mention in a post that quotes another checks the quoted post.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mention_in_a_quote_post_checks_the_quoted_post() {
    let (mock, llm, daemon, _dir) = setup("This post is false: the Moon is rock.", "").await;
    let quoted = mock.post(ALICE_TOKEN, "The Moon is made of cheese.", None).await;
    let qid = quoted["id"].as_str().unwrap();
    let quote = mock
        .post_form(
            BOB_TOKEN,
            &[
                ("status", "@musebot is this true?"),
                ("visibility", "public"),
                ("quoted_status_id", qid),
            ],
        )
        .await;
    assert_eq!(quote["quote"]["state"], "accepted", "{quote:#?}");
    let posted = daemon
        .wait_for_replies(&mock, Duration::from_secs(30), |s| !s.is_empty())
        .await;
    assert_eq!(
        posted[0]["in_reply_to_id"].as_str(),
        Some(qid),
        "threads under the quoted post"
    );
    let reqs = llm.requests.lock().unwrap().clone();
    let user = reqs[0]["messages"][1]["content"].as_str().unwrap();
    assert!(user.contains("The Moon is made of cheese"), "{user}");
}

/// Mastodon's 300-posts-per-3-hours limit, as a real server answers it: 429 with
/// `X-RateLimit-Reset` an ISO 8601 time with microseconds (app/lib/rate_limiter.rb) and no
/// `Retry-After`. The job is parked until the reset, spending no attempt, and nothing is posted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_of_hours_parks_the_job_until_the_reset() {
    // The LLM takes 1 s, so the rule below is in place before the daemon posts (and after
    // the users' own posts).
    let mut script = Script::reply("This post is false.");
    script.delay = Duration::from_secs(1);
    let (mock, _llm, daemon, _dir) = setup_scripted(MockMastodon::start().await, script, "").await;
    let reset = (chrono::Utc::now() + chrono::Duration::hours(2))
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string();
    let target = mock.post(ALICE_TOKEN, "The Moon is made of cheese.", None).await;
    mock.post(BOB_TOKEN, "@musebot is this true?", target["id"].as_str())
        .await;
    mock.fault(serde_json::json!({"match": {"methods": ["POST"], "path": "/api/v1/statuses"},
        "effect": {"type": "ratelimit", "headers": {"X-RateLimit-Limit": "300", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset}},
        "count": 1}))
        .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !daemon.log_text().contains("the job is parked until then") {
        assert!(std::time::Instant::now() < deadline, "{}", daemon.log_text());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let log = daemon.log_text();
    assert!(mock.bot_statuses().await.is_empty(), "{log}");
    assert!(!log.contains("will retry"), "a rate limit spends no attempt: {log}");
    assert_eq!(log.matches("rate limited; the job is parked").count(), 1, "{log}");
}
