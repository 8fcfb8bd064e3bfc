//! Moderators and users on a real `mastodon-mock` (scripted LLM, baseline pipeline): a
//! moderator's `watch #tag` makes the bot answer new posts on the tag (one per author per
//! window), a non-moderator's command does nothing, `pause` stops auto-replies but not
//! mentions, `stop`/`start` opt a user out and back in, and `check <URL>` answers a post.
//! Every command is acknowledged by a direct message to whoever gave it.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

const REPLY: &str = "This post is misleading: the official count shows every ballot was counted once.";

/// alice moderates; watched tags are read every second.
const MODERATION: &str = "\n[moderation]\nmastodon_moderators = [\"alice\"]\nhashtag_poll_secs = 1\n";

async fn start() -> (MockMastodon, ScriptedLlm, Daemon, tempfile::TempDir) {
    let mock = MockMastodon::start().await;
    let llm = ScriptedLlm::start(Script::reply(REPLY)).await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let cfg = daemon_config(&dir.path().join("state"), &mock.base, &llm.base_url, port, MODERATION);
    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;
    (mock, llm, daemon, dir)
}

/// Waits until the daemon's log holds `needle` `times` times.
async fn wait_log(daemon: &Daemon, needle: &str, times: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while daemon.log_text().matches(needle).count() < times {
        assert!(
            Instant::now() < deadline,
            "no `{needle}` ×{times} in the log:\n{}",
            daemon.log_text()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn replies_to<'a>(all: &'a [Value], status: &Value) -> Vec<&'a Value> {
    all.iter().filter(|s| s["in_reply_to_id"] == status["id"]).collect()
}

fn has_text(all: &[Value], needle: &str) -> bool {
    all.iter().any(|s| text_of(s).contains(needle))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moderator_watches_a_tag_and_its_policy_holds() {
    let (mock, _llm, daemon, _dir) = start().await;

    // A non-moderator's command is ignored (and logged), not acknowledged.
    mock.post(BOB_TOKEN, "@musebot watch #other", None).await;
    wait_log(&daemon, "reason=\"not_moderator\"", 1).await;

    // The moderator's is carried out and acknowledged privately.
    let watch = mock.post(ALICE_TOKEN, "@musebot watch #Election", None).await;
    let all = wait_bot(&daemon, &mock, |s| has_text(s, "Watching #election")).await;
    let ack = replies_to(&all, &watch);
    assert_eq!(ack.len(), 1, "{all:#?}");
    assert_eq!(ack[0]["visibility"], "direct");
    assert!(text_of(ack[0]).starts_with("@alice "), "{}", text_of(ack[0]));

    // A garbled command gets how to write it, not a fact-check.
    mock.post(ALICE_TOKEN, "@musebot watch #vote #poll", None).await;
    wait_bot(&daemon, &mock, |s| has_text(s, "I did not understand that command")).await;

    // A new post on the tag gets one reply, addressed to nobody (nobody asked).
    let first = mock
        .post(BOB_TOKEN, "Ballots in Springfield were counted twice! #election", None)
        .await;
    let all = wait_bot(&daemon, &mock, |s| !replies_to(s, &first).is_empty()).await;
    let reply = replies_to(&all, &first)[0].clone();
    assert!(text_of(&reply).contains("counted once"), "{}", text_of(&reply));
    assert!(!text_of(&reply).starts_with('@'), "{}", text_of(&reply));
    assert_ne!(reply["visibility"], "direct");

    // The same author again inside the window: nothing. A tag nobody watches: nothing.
    let second = mock
        .post(BOB_TOKEN, "And the machines were rigged too #election", None)
        .await;
    let other = mock.post(ALICE_TOKEN, "Polls open on Tuesday #other", None).await;
    wait_log(&daemon, "already answered this author", 1).await;

    // Paused: auto-replies stop, mentions go on.
    mock.post(ALICE_TOKEN, "@musebot pause", None).await;
    wait_bot(&daemon, &mock, |s| has_text(s, "Paused")).await;
    let third = mock
        .post(ALICE_TOKEN, "Polls close at noon, not at eight #election", None)
        .await;
    let claim = mock.post(ALICE_TOKEN, "The Moon is made of cheese.", None).await;
    mock.post(BOB_TOKEN, "@musebot is this true?", Some(claim["id"].as_str().unwrap()))
        .await;
    wait_bot(&daemon, &mock, |s| !replies_to(s, &claim).is_empty()).await;
    wait_log(&daemon, "auto-replies are paused", 1).await;

    mock.post(ALICE_TOKEN, "@musebot status", None).await;
    let all = wait_bot(&daemon, &mock, |s| has_text(s, "Status:")).await;
    let status = all.iter().find(|s| text_of(s).contains("Status:")).unwrap();
    assert!(
        text_of(status).contains("auto-replies paused") && text_of(status).contains("#election"),
        "{}",
        text_of(status)
    );
    for (what, post) in [
        ("second by the same author", &second),
        ("unwatched tag", &other),
        ("paused", &third),
    ] {
        assert!(replies_to(&all, post).is_empty(), "{what}: {all:#?}");
    }
    assert!(
        !has_text(&all, "#other"),
        "the non-moderator's watch was not acknowledged: {all:#?}"
    );
    // The trigger of every job is counted by cause.
    let metrics = daemon.http_get("/metrics").await;
    // The second hit by the same author is refused by intake before it is stored when the
    // first was already admitted (then it is no job: 2), or by the resolve stage when it came
    // in first (3).
    assert!(
        metrics.contains("musebot_triggers_total{platform=\"mastodon\",cause=\"hashtag\"} 2")
            || metrics.contains("musebot_triggers_total{platform=\"mastodon\",cause=\"hashtag\"} 3"),
        "{metrics}"
    );
    for line in [
        "musebot_triggers_total{platform=\"mastodon\",cause=\"command\"} 5",
        "musebot_triggers_total{platform=\"mastodon\",cause=\"mention\"} 1",
    ] {
        assert!(metrics.contains(line), "{line}\n{metrics}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_opts_a_user_out_until_start() {
    let (mock, _llm, daemon, _dir) = start().await;
    mock.post(ALICE_TOKEN, "@musebot watch #vaccine", None).await;
    wait_bot(&daemon, &mock, |s| has_text(s, "Watching #vaccine")).await;

    let stop = mock.post(BOB_TOKEN, "@musebot stop", None).await;
    let all = wait_bot(&daemon, &mock, |s| !replies_to(s, &stop).is_empty()).await;
    assert!(text_of(replies_to(&all, &stop)[0]).contains("will not check your posts"));

    // bob's mentions, bob's posts on a watched tag, and others' asks about bob's posts: nothing.
    let claim = mock.post(ALICE_TOKEN, "Garlic cures the flu.", None).await;
    mock.post(BOB_TOKEN, "@musebot is this true?", Some(claim["id"].as_str().unwrap()))
        .await;
    let tagged = mock.post(BOB_TOKEN, "Vaccines contain microchips #vaccine", None).await;
    mock.post(
        ALICE_TOKEN,
        "@musebot is this true?",
        Some(tagged["id"].as_str().unwrap()),
    )
    .await;
    wait_log(&daemon, "reason=\"opted_out\"", 3).await;

    let start = mock.post(BOB_TOKEN, "@musebot start", None).await;
    wait_bot(&daemon, &mock, |s| !replies_to(s, &start).is_empty()).await;
    let again = mock.post(ALICE_TOKEN, "Sharks do not get cancer.", None).await;
    mock.post(BOB_TOKEN, "@musebot is this true?", Some(again["id"].as_str().unwrap()))
        .await;
    let all = wait_bot(&daemon, &mock, |s| !replies_to(s, &again).is_empty()).await;
    assert!(replies_to(&all, &claim).is_empty(), "{all:#?}");
    assert!(replies_to(&all, &tagged).is_empty(), "{all:#?}");
    assert!(text_of(replies_to(&all, &again)[0]).starts_with("@bob "));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moderator_check_answers_the_post_at_a_url() {
    let (mock, _llm, daemon, _dir) = start().await;
    let target = mock
        .post(BOB_TOKEN, "Drinking sea water cures dehydration.", None)
        .await;
    // The status's address on the bot's own server (mastodon-mock's search does not resolve
    // URLs; a real server's does, and `search_status` then keeps only the status at that URL).
    let url = format!("{}/@bob/{}", mock.base, target["id"].as_str().unwrap());
    // Not a moderator: an ordinary request, about the asking post itself (it is top-level),
    // answered to its author — not a moderator's flag of the linked post.
    let ask = mock.post(BOB_TOKEN, &format!("@musebot check {url}"), None).await;
    let all = wait_bot(&daemon, &mock, |s| !replies_to(s, &ask).is_empty()).await;
    assert!(text_of(replies_to(&all, &ask)[0]).starts_with("@bob "), "{all:#?}");
    assert!(replies_to(&all, &target).is_empty(), "{all:#?}");
    let command = mock.post(ALICE_TOKEN, &format!("@musebot check {url}"), None).await;
    let all = wait_bot(&daemon, &mock, |s| !replies_to(s, &target).is_empty()).await;
    let ack = replies_to(&all, &command);
    assert_eq!(ack.len(), 1, "{all:#?}");
    assert!(text_of(ack[0]).contains("Checking"), "{}", text_of(ack[0]));
    let reply = replies_to(&all, &target);
    assert_eq!(reply.len(), 1, "{all:#?}");
    assert!(text_of(reply[0]).contains("counted once"));
    assert!(!text_of(reply[0]).starts_with('@'), "a flag addresses nobody");
    // A URL that leads nowhere is answered with why.
    let missing = mock
        .post(
            ALICE_TOKEN,
            &format!("@musebot check {}/@bob/999999999", mock.base),
            None,
        )
        .await;
    let all = wait_bot(&daemon, &mock, |s| !replies_to(s, &missing).is_empty()).await;
    let said = text_of(replies_to(&all, &missing)[0]);
    assert!(said.contains("Could not find a post"), "{all:#?}");
    // Why, in the bot's own words: no platform error text.
    assert!(said.contains("deleted, hidden or not visible to me"), "{said}");
    // (The mock's address is left out: its random port may hold "404".)
    let words = said.replace(&mock.base, "");
    assert!(
        !words.contains("404") && !words.contains("HTTP") && !words.contains("get_status"),
        "{said}"
    );
}

/// The review queue: replies to hashtag hits and mentions wait for a moderator. `approve` posts
/// the draft exactly once — even when the daemon is killed (`kill -9`) between the approval and
/// the post — `reject` drops it, and a draft nobody decides expires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_drafts_wait_for_a_moderator() {
    let mock = MockMastodon::start().await;
    let llm = ScriptedLlm::start(Script::reply(REPLY)).await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let extra = "\n[moderation]\nmastodon_moderators = [\"alice\"]\nhashtag_poll_secs = 1\nreview = [\"hashtag\", \"mention\"]\nreview_expiry_secs = 10\n";
    let cfg = daemon_config(&dir.path().join("state"), &mock.base, &llm.base_url, port, extra);
    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;
    mock.post(ALICE_TOKEN, "@musebot watch #flood", None).await;
    wait_bot(&daemon, &mock, |s| has_text(s, "Watching #flood")).await;

    // Held: nothing posted, and `status` lists it by id.
    let first = mock.post(BOB_TOKEN, "The dam broke last night #flood", None).await;
    wait_log(&daemon, "draft held for a moderator's review", 1).await;
    let id = format!("mastodon:tag:{}", first["id"].as_str().unwrap());
    mock.post(ALICE_TOKEN, "@musebot status", None).await;
    let all = wait_bot(&daemon, &mock, |s| has_text(s, "Status:")).await;
    assert!(
        has_text(&all, &id) && has_text(&all, "Drafts waiting for review: 1"),
        "{all:#?}"
    );
    assert!(replies_to(&all, &first).is_empty(), "held, not posted: {all:#?}");

    // Approved, then killed before the held draft's next look: the restart posts it once.
    mock.post(ALICE_TOKEN, &format!("@musebot approve {id}"), None).await;
    wait_bot(&daemon, &mock, |s| has_text(s, "Approved")).await;
    daemon.kill9();
    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;
    wait_bot(&daemon, &mock, |s| !replies_to(s, &first).is_empty()).await;

    // Rejected: dropped with the note.
    let second = mock.post(ALICE_TOKEN, "The river rose ten metres #flood", None).await;
    wait_log(&daemon, "draft held for a moderator's review", 1).await;
    let second_id = format!("mastodon:tag:{}", second["id"].as_str().unwrap());
    mock.post(ALICE_TOKEN, &format!("@musebot reject {second_id}"), None)
        .await;
    wait_bot(&daemon, &mock, |s| has_text(s, "Rejected")).await;
    wait_log(&daemon, "reason=\"rejected\"", 1).await;

    // Nobody decides: the draft expires.
    let claim = mock.post(ALICE_TOKEN, "Rain is caused by cloud seeding.", None).await;
    mock.post(BOB_TOKEN, "@musebot is this true?", Some(claim["id"].as_str().unwrap()))
        .await;
    wait_log(&daemon, "draft held for a moderator's review", 2).await;
    let deadline = Instant::now() + Duration::from_secs(40);
    while !daemon.log_text().contains("reason=\"review_expired\"") {
        assert!(Instant::now() < deadline, "{}", daemon.log_text());
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    tokio::time::sleep(Duration::from_secs(2)).await;
    let all = mock.bot_statuses_all().await;
    assert_eq!(
        replies_to(&all, &first).len(),
        1,
        "approved: posted exactly once: {all:#?}"
    );
    assert!(replies_to(&all, &second).is_empty(), "rejected: {all:#?}");
    assert!(replies_to(&all, &claim).is_empty(), "expired: {all:#?}");
}

/// The daily budget: the scripted LLM reports 42 + 17 tokens a call, one call a (baseline)
/// reply. With 70 tokens a day and hashtag replies stopping at half of it, the first mention
/// stops hashtag auto-replies, the second still goes through, the third gets the one "out of
/// budget" notice and the fourth silence; `/metrics` and `/healthz` show the spend.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tiny_budget_stops_hashtag_replies_before_mentions() {
    let mock = MockMastodon::start().await;
    let llm = ScriptedLlm::start(Script::reply(REPLY)).await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let extra = format!("{MODERATION}\n[budget]\ndaily_tokens = 70\nhashtag_share = 0.5\n");
    let cfg = daemon_config(&dir.path().join("state"), &mock.base, &llm.base_url, port, &extra);
    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;
    let health: Value = serde_json::from_str(&daemon.http_get("/healthz").await).unwrap();
    assert_eq!(health["budget"]["state"], "open", "shown from the start: {health}");
    assert_eq!(health["budget"]["tokens_today"], 0, "{health}");
    mock.post(ALICE_TOKEN, "@musebot watch #budget", None).await;
    wait_bot(&daemon, &mock, |s| has_text(s, "Watching #budget")).await;

    let ask = |claim: &'static str, token: &'static str| {
        let mock = &mock;
        async move {
            let target = mock.post(ALICE_TOKEN, claim, None).await;
            let mention = mock
                .post(token, "@musebot is this true?", Some(target["id"].as_str().unwrap()))
                .await;
            (target, mention)
        }
    };
    let (first, _) = ask("Bananas are radioactive enough to hurt you.", BOB_TOKEN).await;
    wait_bot(&daemon, &mock, |s| !replies_to(s, &first).is_empty()).await;
    // 59 of 70 tokens: hashtag replies have stopped.
    let tagged = mock
        .post(BOB_TOKEN, "Eating carrots gives night vision #budget", None)
        .await;
    wait_log(&daemon, "hashtag auto-replies stopped", 1).await;
    let (second, _) = ask("Goldfish have a three-second memory.", ALICE_TOKEN).await;
    wait_bot(&daemon, &mock, |s| !replies_to(s, &second).is_empty()).await;
    // Spent: one notice to the requester, then silence.
    let (_, third) = ask("Lightning never strikes twice.", BOB_TOKEN).await;
    let all = wait_bot(&daemon, &mock, |s| !replies_to(s, &third).is_empty()).await;
    assert!(
        text_of(replies_to(&all, &third)[0]).contains("used up today's checking budget"),
        "{all:#?}"
    );
    let (fourth, fourth_mention) = ask("Bulls hate the colour red.", BOB_TOKEN).await;
    wait_log(&daemon, "the requester was told", 1).await;

    let all = mock.bot_statuses_all().await;
    assert!(replies_to(&all, &tagged).is_empty(), "{all:#?}");
    assert!(replies_to(&all, &fourth).is_empty() && replies_to(&all, &fourth_mention).is_empty());
    assert_eq!(
        all.iter()
            .filter(|s| text_of(s).contains("used up today's checking budget"))
            .count(),
        1,
        "one notice: {all:#?}"
    );
    let metrics = daemon.http_get("/metrics").await;
    assert!(metrics.contains("musebot_budget_tokens_today 118"), "{metrics}");
    let health: Value = serde_json::from_str(&daemon.http_get("/healthz").await).unwrap();
    assert_eq!(health["budget"]["state"], "spent", "{health}");
}

/// Live: with the timeline catch-up an hour away, only the tag's stream can bring a post in
/// time; `unwatch` closes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_tag_is_followed_live_by_its_stream() {
    let mock = MockMastodon::start().await;
    let llm = ScriptedLlm::start(Script::reply(REPLY)).await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let extra = "\n[moderation]\nmastodon_moderators = [\"alice\"]\nhashtag_poll_secs = 3600\n";
    let cfg = daemon_config(&dir.path().join("state"), &mock.base, &llm.base_url, port, extra);
    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;
    mock.post(ALICE_TOKEN, "@musebot watch #live", None).await;
    wait_bot(&daemon, &mock, |s| has_text(s, "Watching #live")).await;
    wait_log(&daemon, "hashtag stream connected", 1).await;

    let post = mock
        .post(BOB_TOKEN, "The bridge collapsed this morning #live", None)
        .await;
    let all = wait_bot(&daemon, &mock, |s| !replies_to(s, &post).is_empty()).await;
    assert_eq!(replies_to(&all, &post).len(), 1);

    mock.post(ALICE_TOKEN, "@musebot unwatch #live", None).await;
    wait_bot(&daemon, &mock, |s| has_text(s, "No longer watching #live")).await;
    wait_log(&daemon, "hashtag stream stopped", 1).await;
    let after = mock
        .post(ALICE_TOKEN, "The bridge was rebuilt overnight #live", None)
        .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(replies_to(&mock.bot_statuses_all().await, &after).is_empty());
}
