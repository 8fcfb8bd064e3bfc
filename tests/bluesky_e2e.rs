//! Bluesky end to end on the reference AT Protocol network (`@atproto/dev-env`: PLC, PDS and
//! AppView on loopback) with a scripted LLM: threaded replies with facets, the "only when
//! asked" rule, one answer per post, malformed records, session reuse, and one daemon serving
//! Mastodon and Bluesky at once.

mod common;

use std::time::Duration;

use common::bluesky::{bluesky_config, carries, served, Network, SlowPds, User};
use common::*;
use serde_json::{json, Value};
use unicode_segmentation::UnicodeSegmentation;

/// A 1×1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49,
    0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0, 0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d,
    0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// A reply long enough to need two or three Bluesky posts (300 graphemes each).
const LONG_REPLY: &str = "This post is false. The Moon is made of rock: the Apollo missions brought back 382 kilograms of it, \
and every sample studied since shows basalt, breccia and anorthosite, the same minerals found in volcanic rock on Earth. \
No sample has ever contained anything like cheese, and the Moon's density (3.34 grams per cubic centimetre) rules out a \
body made of anything so light. Seismometers left on the surface recorded moonquakes that travel through solid rock. \
Scientists agree on this, and no reputable source has ever claimed otherwise.";

struct Bot {
    daemon: Daemon,
    llm: ScriptedLlm,
    user: User,
    _dir: tempfile::TempDir,
}

/// A bot account and a daemon serving it (baseline pipeline, scripted LLM answering `reply`),
/// its first notifications poll done.
async fn start_bot(net: &'static Network, reply: &str, mastodon: Option<&str>) -> Bot {
    let bot = start_bot_at(net, &net.pds, Script::reply(reply), mastodon, "").await;
    wait_for_log(&bot.daemon, "bluesky notifications: starting from now").await;
    bot
}

/// A bot account and a daemon serving it through `service` (the PDS, or a proxy before it),
/// connected; `extra` goes into its `[bluesky]` section.
async fn start_bot_at(
    net: &'static Network,
    service: &str,
    script: Script,
    mastodon: Option<&str>,
    extra: &str,
) -> Bot {
    let user = net.account("musebot").await;
    start_bot_as(net, service, user, script, mastodon, extra).await
}

/// A daemon serving the account `user` (see [`start_bot_at`]).
async fn start_bot_as(
    net: &'static Network,
    service: &str,
    user: User,
    script: Script,
    mastodon: Option<&str>,
    extra: &str,
) -> Bot {
    let _ = net;
    let llm = ScriptedLlm::start(script).await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let cfg = bluesky_config(
        &dir.path().join("state"),
        service,
        &user,
        &dir.path().join("app-password"),
        &llm.base_url,
        port,
        mastodon,
        extra,
    );
    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;
    Bot {
        daemon,
        llm,
        user,
        _dir: dir,
    }
}

/// A bot whose one Bluesky moderator is `moderator` (a handle), answering every fish claim
/// with the same verdict, its first notifications poll done.
async fn start_moderated_bot(net: &'static Network, moderator: &str) -> Bot {
    let extra = format!("\n[moderation]\nbluesky_moderators = [\"{moderator}\"]\n");
    let bot = start_bot_at(
        net,
        &net.pds,
        Script::reply("This post is false: fish do not sleep upside down."),
        None,
        &extra,
    )
    .await;
    wait_for_log(&bot.daemon, "bluesky notifications: starting from now").await;
    bot
}

async fn wait_for_log(daemon: &Daemon, needle: &str) {
    let log = daemon.log_once(needle).await;
    assert!(log.contains(needle), "`{needle}` never logged:\n{log}");
}

/// The replies in a thread view, depth first, as (uri, record, parent uri).
fn replies_in(thread: &Value, out: &mut Vec<(String, Value, String)>) {
    let parent = thread["post"]["uri"].as_str().unwrap_or_default().to_string();
    for r in thread["replies"].as_array().into_iter().flatten() {
        out.push((
            r["post"]["uri"].as_str().unwrap_or_default().to_string(),
            r["post"]["record"].clone(),
            parent.clone(),
        ));
        replies_in(r, out);
    }
}

/// The text a facet spans.
fn spanned<'a>(record: &'a Value, facet: &Value) -> &'a str {
    let text = record["text"].as_str().unwrap();
    let (s, e) = (
        facet["index"]["byteStart"].as_u64().unwrap() as usize,
        facet["index"]["byteEnd"].as_u64().unwrap() as usize,
    );
    &text[s..e]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mention_gets_a_thread_under_it_with_facets_and_nobody_else_does() {
    let Some(net) = Network::shared() else { return };
    let bot = start_bot(net, LONG_REPLY, None).await;
    let alice = net.account("alice").await;
    let bob = net.account("bob").await;

    // Alice's post: a link (facet) and an image with alt text.
    let text = "The Moon is made of cheese, see example.com/moon";
    let link_start = text.find("example.com").unwrap();
    let facets = json!([{
        "index": {"byteStart": link_start, "byteEnd": text.len()},
        "features": [{"$type": "app.bsky.richtext.facet#link", "uri": "https://example.com/moon-cheese-report"}],
    }]);
    let blob = alice.upload(PNG.to_vec(), "image/png").await;
    let embed = json!({"$type": "app.bsky.embed.images", "images": [{"image": blob, "alt": "A wedge of cheese shaped like the Moon"}]});
    let post = alice.post(text, None, facets, Some(embed)).await;
    let ask = bob.mention(&bot.user, "is this true?", &post, &post).await;

    let parts = bob.wait_for_records(&bot.user.did, 2, Duration::from_secs(60)).await;
    assert!(
        parts.len() >= 2,
        "a long reply is a thread: {parts:#?}\n{}",
        bot.daemon.log_text()
    );
    // The pipeline read the post's full link and the image's alt text.
    let prompt = serde_json::to_string(&*bot.llm.requests.lock().unwrap()).unwrap();
    assert!(prompt.contains("https://example.com/moon-cheese-report"), "{prompt}");
    assert!(prompt.contains("A wedge of cheese shaped like the Moon"), "{prompt}");

    // The thread as the AppView shows it: part 1 under Bob's mention, each next part under
    // the one before, all rooted at Alice's post.
    let n = parts.len();
    let thread = bob
        .thread_when(&ask.uri, Duration::from_secs(30), |t| {
            let mut r = Vec::new();
            replies_in(&t["thread"], &mut r);
            r.len() >= n
        })
        .await;
    let mut chain = Vec::new();
    replies_in(&thread["thread"], &mut chain);
    assert_eq!(chain.len(), n, "{thread:#}");
    let mut parent = ask.uri.clone();
    for (uri, record, shown_parent) in &chain {
        assert_eq!(*shown_parent, parent, "parts chain in order");
        assert_eq!(record["reply"]["parent"]["uri"], json!(parent));
        assert_eq!(record["reply"]["root"]["uri"], json!(post.uri));
        assert_eq!(record["langs"], json!(["en"]));
        let graphemes = record["text"].as_str().unwrap().graphemes(true).count();
        assert!(graphemes <= 300, "{graphemes} graphemes: {record}");
        parent = uri.clone();
    }
    // The requester's mention facet, as the AppView returns it, spans "@handle" exactly.
    let first = &chain[0].1;
    let mention = first["facets"]
        .as_array()
        .and_then(|f| {
            f.iter()
                .find(|x| x["features"][0]["$type"] == "app.bsky.richtext.facet#mention")
        })
        .unwrap_or_else(|| panic!("no mention facet: {first}"));
    assert_eq!(mention["features"][0]["did"], json!(bob.did));
    assert_eq!(spanned(first, mention), format!("@{}", bob.handle));
    let all: String = chain
        .iter()
        .map(|c| c.1["text"].as_str().unwrap())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(all.contains("Apollo"), "{all}");

    // A third user replying under the bot's reply, without naming it: nothing.
    let dave = net.account("dave").await;
    let last = common::bluesky::Ref {
        uri: chain[n - 1].0.clone(),
        cid: bob.get("app.bsky.feed.getPosts", &[("uris", &chain[n - 1].0)]).await["posts"][0]["cid"]
            .as_str()
            .unwrap()
            .to_string(),
    };
    dave.post("Wow, thanks for checking!", Some((&post, &last)), json!([]), None)
        .await;
    // Carol asks about the same post: she gets a pointer to the first answer, as a link facet.
    let carol = net.account("carol").await;
    carol.mention(&bot.user, "and this?", &post, &post).await;
    let after = bob
        .wait_for_records(&bot.user.did, n + 1, Duration::from_secs(30))
        .await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    let after_all = bob.records_of(&bot.user.did).await;
    assert_eq!(after_all.len(), n + 1, "one pointer, nothing for Dave: {after_all:#?}");
    // The pointer's facets as the AppView returns them.
    let pointer_uri = after[n]["uri"].as_str().unwrap().to_string();
    bob.wait_indexed(&pointer_uri).await;
    let viewed = bob.get("app.bsky.feed.getPosts", &[("uris", &pointer_uri)]).await;
    let pointer = &viewed["posts"][0]["record"];
    let link = pointer["facets"]
        .as_array()
        .and_then(|f| {
            f.iter()
                .find(|x| x["features"][0]["$type"] == "app.bsky.richtext.facet#link")
        })
        .unwrap_or_else(|| panic!("the pointer links the first answer: {pointer}"));
    let uri = link["features"][0]["uri"].as_str().unwrap();
    assert_eq!(spanned(pointer, link), uri);
    let rkey = chain[0].0.rsplit('/').next().unwrap();
    assert!(
        uri.starts_with("https://bsky.app/profile/") && uri.ends_with(rkey),
        "{uri}"
    );

    // The profile carries the bot self-label.
    let profile = bob
        .get(
            "com.atproto.repo.getRecord",
            &[
                ("repo", &bot.user.did),
                ("collection", "app.bsky.actor.profile"),
                ("rkey", "self"),
            ],
        )
        .await;
    assert_eq!(profile["value"]["labels"]["values"][0]["val"], "bot", "{profile}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_records_are_skipped_with_a_reason_and_the_daemon_keeps_serving() {
    let Some(net) = Network::shared() else { return };
    let bot = start_bot(net, "This post is false.", None).await;
    let alice = net.account("alice").await;
    let bob = net.account("bob").await;
    let post = alice.post("The Moon is made of cheese", None, json!([]), None).await;
    let handle = format!("@{}", bot.user.handle);
    let mention_facet = |end: usize| {
        json!([{"index": {"byteStart": 0, "byteEnd": end},
                "features": [{"$type": "app.bsky.richtext.facet#mention", "did": bot.user.did}]}])
    };
    let reply = json!({"root": {"uri": post.uri, "cid": post.cid}, "parent": {"uri": post.uri, "cid": post.cid}});
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    // (record, the reason logged if the AppView delivers it). The reference AppView validates
    // records before it indexes them: it drops the last two (no notification at all), and
    // delivers the first, which the daemon must refuse itself.
    let bad = [
        // A facet past the end of the text.
        (
            json!({"$type": "app.bsky.feed.post", "text": format!("{handle} x"), "createdAt": now, "reply": reply,
               "facets": [{"index": {"byteStart": 0, "byteEnd": 900}, "features": [{"$type": "app.bsky.richtext.facet#mention", "did": bot.user.did}]}]}),
            "outside the text",
        ),
        // No createdAt.
        (
            json!({"$type": "app.bsky.feed.post", "text": format!("{handle} y"), "reply": reply, "facets": mention_facet(handle.len())}),
            "missing field `createdAt`",
        ),
        // Ten times the allowed text.
        (
            json!({"$type": "app.bsky.feed.post", "text": format!("{handle} {}", "z".repeat(3000)), "createdAt": now, "reply": reply, "facets": mention_facet(handle.len())}),
            "graphemes",
        ),
    ];
    let mut written = Vec::new();
    for (record, reason) in bad {
        written.push((bob.create(record, false).await, reason));
    }
    // An embed of a type this build does not know: the embed is ignored, the post answered.
    let odd = json!({"$type": "app.bsky.feed.post", "text": format!("{handle} is this true?"), "createdAt": now, "reply": reply,
                     "facets": mention_facet(handle.len()), "embed": {"$type": "app.example.embed.hologram", "frames": 3}});
    bob.create(odd, false).await;

    let posted = bob.wait_for_records(&bot.user.did, 1, Duration::from_secs(60)).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let log = bot.daemon.log_text();
    assert_eq!(bob.records_of(&bot.user.did).await.len(), 1, "{posted:#?}\n{log}");
    let delivered = bot
        .user
        .get("app.bsky.notification.listNotifications", &[("limit", "100")])
        .await;
    let delivered = delivered.to_string();
    let mut refused = 0;
    for (r, reason) in &written {
        if delivered.contains(&r.uri) {
            let line = log
                .lines()
                .find(|l| l.contains("bluesky notification skipped") && l.contains(&r.uri))
                .unwrap_or_else(|| panic!("{} was delivered but not skipped:\n{log}", r.uri));
            assert!(line.contains(reason), "`{reason}` is the logged reason: {line}");
            refused += 1;
        }
    }
    assert!(
        refused >= 1,
        "the AppView delivered none of the malformed records: {delivered}"
    );
    assert!(!log.contains("panicked"), "{log}");
    // Still serving: a well-formed mention afterwards is answered.
    bob.mention(&bot.user, "and now?", &post, &post).await;
    bob.wait_for_records(&bot.user.did, 2, Duration::from_secs(30)).await;
    assert_eq!(bob.records_of(&bot.user.did).await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_refreshes_the_stored_session_instead_of_logging_in() {
    let Some(net) = Network::shared() else { return };
    let mut bot = start_bot(net, "This post is false.", None).await;
    assert!(bot.daemon.log_text().contains("session=\"created\"") || bot.daemon.log_text().contains("session=created"));
    let cfg_dir = bot._dir.path().to_path_buf();
    let port = bot.daemon.health_port;
    bot.daemon.kill9();
    let cfg = std::fs::read_to_string(cfg_dir.join("bot-config.toml")).unwrap();
    let mut again = Daemon::start(&cfg_dir, &cfg, port);
    again.wait_connected().await;
    wait_for_log(&again, "bluesky ready").await;
    let log = again.log_text();
    assert!(
        log.contains("session=\"refreshed\"") || log.contains("session=refreshed"),
        "{log}"
    );
    // And it still answers.
    let alice = net.account("alice").await;
    let post = alice.post("Bananas are blue", None, json!([]), None).await;
    alice.mention(&bot.user, "true?", &post, &post).await;
    let posted = alice.wait_for_records(&bot.user.did, 1, Duration::from_secs(40)).await;
    assert_eq!(posted.len(), 1, "{}", again.log_text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_daemon_answers_on_mastodon_and_on_bluesky() {
    let Some(net) = Network::shared() else { return };
    let mock = MockMastodon::start().await;
    let bot = start_bot(net, "This post is false.", Some(&mock.base)).await;
    let health = bot.daemon.http_get("/healthz").await;
    assert!(health.contains("mastodon") && health.contains("bluesky"), "{health}");

    let alice = net.account("alice").await;
    let post = alice.post("Bananas are blue", None, json!([]), None).await;
    alice.mention(&bot.user, "true?", &post, &post).await;
    let target = mock.post(ALICE_TOKEN, "Bananas are blue", None).await;
    mock.post(BOB_TOKEN, "@musebot true?", Some(target["id"].as_str().unwrap()))
        .await;

    let on_bluesky = alice.wait_for_records(&bot.user.did, 1, Duration::from_secs(40)).await;
    let on_mastodon = mock
        .wait_for_bot_statuses(Duration::from_secs(40), |s| !s.is_empty())
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(on_bluesky.len(), 1);
    assert_eq!(mock.bot_statuses().await.len(), 1);
    assert_eq!(on_mastodon[0]["in_reply_to_id"], target["id"]);
    let metrics = bot.daemon.http_get("/metrics").await;
    assert!(metrics.contains("platform=\"bluesky\""), "{metrics}");
}

/// The same part written twice — a retry after a lost answer, or a repeat after a crash, with
/// a new `createdAt` — is one record: the deterministic key plus create-if-absent finds the
/// first one (the PDS answers `InvalidSwap`, the record is read back).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_part_written_twice_is_one_record() {
    use musebot::platform::bluesky::Bluesky;
    use musebot::platform::Part;
    let Some(net) = Network::shared() else { return };
    let me = net.account("musebot").await;
    let alice = net.account("alice").await;
    let post = alice.post("The Moon is made of cheese", None, json!([]), None).await;
    me.wait_indexed(&post.uri).await;
    let config = musebot::config::BlueskyConfig {
        enabled: true,
        service: net.pds.clone(),
        identifier: me.handle.clone(),
        ..Default::default()
    };
    let (bluesky, _) = Bluesky::connect(&config, musebot::secret::Secret::new(me.app_password.clone()), None)
        .await
        .unwrap();
    let created = chrono::Utc::now();
    let part = |text| Part {
        text,
        reply_to: &post.uri,
        visibility: musebot::model::Visibility::Public,
        key: "musebot-bluesky:test-0",
        created,
        seq: 0,
        lang: "en",
        mention: None,
    };
    let (first, url) = bluesky.post(&part("This post is false.")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (again, _) = bluesky.post(&part("This post is false.")).await.unwrap();
    let (edited, _) = bluesky.post(&part("This post is false!")).await.unwrap();
    assert_eq!(first, again);
    assert_eq!(
        first, edited,
        "a different text for the same part still finds the first record"
    );
    assert!(url.unwrap().starts_with("https://bsky.app/profile/"));
    let records = alice.records_of(&me.did).await;
    assert_eq!(records.len(), 1, "{records:#?}");
    assert_eq!(records[0]["value"]["text"], "This post is false.");
    assert_eq!(records[0]["value"]["reply"]["root"]["uri"], json!(post.uri));
}

/// An author whose profile text says `#nobot` is not checked, even when someone else asks; the
/// daemon reads the profile (a post view carries none) and says why in its log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_by_a_nobot_author_is_not_checked() {
    let Some(net) = Network::shared() else { return };
    let bot = start_bot(net, "This post is false.", None).await;
    let alice = net.account("alice").await;
    let bob = net.account("bob").await;
    let profile = json!({"$type": "app.bsky.actor.profile", "description": "Writer. No bots please #NoBot"});
    let put = alice
        .call(
            "com.atproto.repo.putRecord",
            json!({"repo": alice.did, "collection": "app.bsky.actor.profile", "rkey": "self", "record": profile}),
        )
        .await;
    assert!(put["uri"].is_string(), "{put}");
    let post = alice.post("The Moon is made of cheese", None, json!([]), None).await;
    // Wait until the AppView shows the profile text, then ask.
    for _ in 0..50 {
        let p = bob.get("app.bsky.actor.getProfile", &[("actor", &alice.did)]).await;
        if p["description"].as_str().is_some_and(|d| d.contains("#NoBot")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    bob.mention(&bot.user, "is this true?", &post, &post).await;
    wait_for_log(&bot.daemon, "job skipped reason=\"nobot\"").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        bob.records_of(&bot.user.did).await.is_empty(),
        "{}",
        bot.daemon.log_text()
    );
    assert_eq!(bot.llm.calls.load(std::sync::atomic::Ordering::SeqCst), 0);
}

/// `musebot check` reads a Bluesky post by its bsky.app link and by its at:// URI (through the
/// bot's account), and posts nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_reads_a_bsky_app_link_and_an_at_uri() {
    let Some(net) = Network::shared() else { return };
    let bot = net.account("musebot").await;
    let alice = net.account("alice").await;
    let post = alice
        .post("Bananas are blue, says a study", None, json!([]), None)
        .await;
    // As another account: the PDS shows a user her own new records before the AppView has them.
    bot.wait_indexed(&post.uri).await;
    let llm = ScriptedLlm::start(Script::reply("This post is false. Bananas are yellow.")).await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = bluesky_config(
        &dir.path().join("state"),
        &net.pds,
        &bot,
        &dir.path().join("app-password"),
        &llm.base_url,
        free_port(),
        None,
        "",
    );
    let cfg_path = dir.path().join("bot-config.toml");
    std::fs::write(&cfg_path, cfg).unwrap();
    let rkey = post.uri.rsplit('/').next().unwrap();
    for reference in [
        format!("https://bsky.app/profile/{}/post/{rkey}", alice.handle),
        post.uri.clone(),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_musebot"))
            .args(["check", "--config"])
            .arg(&cfg_path)
            .arg(&reference)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{reference}: {stdout}\n{stderr}");
        assert!(stdout.contains("Bananas are blue, says a study"), "{stdout}");
        assert!(stdout.contains(&alice.handle), "{stdout}");
    }
    assert!(alice.records_of(&bot.did).await.is_empty(), "check posts nothing");
}

/// Bluesky's 429 on a write (`ratelimit-reset` two seconds ahead) is waited out and retried:
/// the reply is posted once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_write_is_retried_after_its_reset() {
    let Some(net) = Network::shared() else { return };
    let proxy = SlowPds::start(&net.pds, Duration::ZERO).await;
    proxy.refuse_puts.store(2, std::sync::atomic::Ordering::SeqCst);
    let bot = start_bot_at(net, &proxy.base, Script::reply("This post is false."), None, "").await;
    let (daemon, user) = (&bot.daemon, &bot.user);
    wait_for_log(daemon, "starting from now").await;
    // The bot label written at start-up met those refusals (and waited them out): refuse the
    // reply's first two writes too.
    proxy.refuse_puts.store(2, std::sync::atomic::Ordering::SeqCst);
    let alice = net.account("alice").await;
    let post = alice.post("Bananas are blue", None, json!([]), None).await;
    alice.mention(user, "true?", &post, &post).await;
    alice.wait_for_records(&user.did, 1, Duration::from_secs(40)).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let log = daemon.log_text();
    assert_eq!(proxy.refuse_puts.load(std::sync::atomic::Ordering::SeqCst), 0, "{log}");
    assert_eq!(alice.records_of(&user.did).await.len(), 1, "{log}");
    assert!(log.contains("RateLimitExceeded") && log.contains("retrying"), "{log}");
}

/// `bluesky.mode = "firehose"` on a PDS without an AppView (`TestNetworkNoAppView`): the mention
/// is read from the repository firehose, the post from its repo, and the reply threads under
/// the mention; after a `kill -9` the daemon resumes from its firehose cursor — the first
/// mention is not answered again, a new one is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn firehose_mode_answers_a_mention_without_an_appview() {
    let Some(net) = Network::shared_no_appview() else {
        return;
    };
    assert!(net.appview.is_none());
    let script = Script::reply("This post is false.");
    let Bot {
        mut daemon,
        llm,
        user,
        _dir: dir,
    } = start_bot_at(net, &net.pds, script, None, "mode = \"firehose\"\n").await;
    let (cfg, port) = (
        std::fs::read_to_string(dir.path().join("bot-config.toml")).unwrap(),
        daemon.health_port,
    );
    wait_for_log(&daemon, "bluesky firehose connected").await;
    let alice = net.account("alice").await;
    let bob = net.account("bob").await;
    let post = alice
        .post(
            "The Moon is made of cheese https://example.com/moon",
            None,
            json!([]),
            None,
        )
        .await;
    let ask = bob.mention(&user, "is this true?", &post, &post).await;
    let posted = bob.wait_for_records(&user.did, 1, Duration::from_secs(40)).await;
    assert_eq!(posted.len(), 1, "{}", daemon.log_text());
    let reply = &posted[0]["value"];
    assert_eq!(reply["reply"]["parent"]["uri"], json!(ask.uri));
    assert_eq!(reply["reply"]["root"]["uri"], json!(post.uri));
    assert_eq!(reply["facets"][0]["features"][0]["did"], json!(bob.did), "{reply}");
    let prompt = serde_json::to_string(&*llm.requests.lock().unwrap()).unwrap();
    assert!(prompt.contains("The Moon is made of cheese"), "{prompt}");

    daemon.kill9();
    let mut daemon = Daemon::start(dir.path(), &cfg, port);
    daemon.wait_connected().await;
    wait_for_log(&daemon, "bluesky firehose connected").await;
    let second = bob.mention(&user, "and now?", &post, &post).await;
    let posted = bob.wait_for_records(&user.did, 2, Duration::from_secs(40)).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let all = bob.records_of(&user.did).await;
    assert_eq!(
        all.len(),
        2,
        "the first mention is not answered again: {all:#?}\n{}",
        daemon.log_text()
    );
    assert_eq!(posted[1]["value"]["reply"]["parent"]["uri"], json!(second.uri));
    assert!(!daemon.log_text().contains("cursor=live"), "{}", daemon.log_text());
}

/// Moderators and opt-outs on Bluesky: a moderator's `status` is acknowledged (a reply under
/// the command: Bluesky posts have no direct visibility), a non-moderator's `pause` is ignored,
/// `stop` keeps the bot away from its author's requests until `start`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moderators_command_and_users_opt_out_on_bluesky() {
    let Some(net) = Network::shared() else { return };
    let alice = net.account("alice").await;
    let bot = start_moderated_bot(net, &alice.handle).await;
    let bob = net.account("bob").await;
    let carol = net.account("carol").await;
    // A top-level post that mentions the bot.
    let command = |who: &'static User, words: &'static str| {
        let handle = bot.user.handle.clone();
        let did = bot.user.did.clone();
        async move {
            let text = format!("@{handle} {words}");
            let facets = json!([{
                "index": {"byteStart": 0, "byteEnd": 1 + handle.len()},
                "features": [{"$type": "app.bsky.richtext.facet#mention", "did": did}],
            }]);
            who.post(&text, None, facets, None).await
        }
    };
    let alice: &'static User = Box::leak(Box::new(alice));
    let bob: &'static User = Box::leak(Box::new(bob));
    let replies_to = |records: &[Value], uri: &str| -> Vec<String> {
        records
            .iter()
            .filter(|r| r["value"]["reply"]["parent"]["uri"] == json!(uri))
            .map(|r| r["value"]["text"].as_str().unwrap_or_default().to_string())
            .collect()
    };

    let status = command(alice, "status").await;
    command(bob, "pause").await;
    wait_for_log(&bot.daemon, "reason=\"not_moderator\"").await;
    let records = bob.wait_for_records(&bot.user.did, 1, Duration::from_secs(60)).await;
    let ack = replies_to(&records, &status.uri);
    assert_eq!(ack.len(), 1, "{records:#?}\n{}", bot.daemon.log_text());
    assert!(ack[0].contains("Status: running"), "{}", ack[0]);

    let stop = command(bob, "stop").await;
    let records = bob.wait_for_records(&bot.user.did, 2, Duration::from_secs(60)).await;
    assert!(replies_to(&records, &stop.uri)[0].contains("will not check your posts"));
    let claim = carol.post("Fish sleep upside down.", None, json!([]), None).await;
    bob.mention(&bot.user, "is this true?", &claim, &claim).await;
    wait_for_log(&bot.daemon, "reason=\"opted_out\"").await;

    let start = command(bob, "start").await;
    bob.wait_for_records(&bot.user.did, 3, Duration::from_secs(60)).await;
    let again = bob.mention(&bot.user, "and now?", &claim, &claim).await;
    let records = bob.wait_for_records(&bot.user.did, 4, Duration::from_secs(60)).await;
    assert!(
        replies_to(&records, &start.uri)[0].contains("Welcome back"),
        "{records:#?}"
    );
    let answer = replies_to(&records, &again.uri);
    assert_eq!(answer.len(), 1, "{records:#?}\n{}", bot.daemon.log_text());
    assert!(answer[0].contains("do not sleep upside down"), "{}", answer[0]);
    assert_eq!(
        records.len(),
        4,
        "nothing for the ignored pause or the opted-out ask: {records:#?}"
    );

    // A watched tag, found by the AppView's search: a new post carrying it (a tag facet, as
    // clients write it) gets one reply under it; the same author again inside the window, none.
    let watch = command(alice, "watch #fish").await;
    let records = bob.wait_for_records(&bot.user.did, 5, Duration::from_secs(60)).await;
    assert!(
        replies_to(&records, &watch.uri)[0].contains("Watching #fish"),
        "{records:#?}"
    );
    let text = "Goldfish forget everything in three seconds #fish";
    let at = text.find("#fish").unwrap();
    let facets = json!([{
        "index": {"byteStart": at, "byteEnd": text.len()},
        "features": [{"$type": "app.bsky.richtext.facet#tag", "tag": "fish"}],
    }]);
    let tagged = carol.post(text, None, facets, None).await;
    let records = bob.wait_for_records(&bot.user.did, 6, Duration::from_secs(60)).await;
    let answer = replies_to(&records, &tagged.uri);
    assert_eq!(answer.len(), 1, "{records:#?}\n{}", bot.daemon.log_text());
    assert!(
        !answer[0].starts_with('@'),
        "nobody asked, nobody is addressed: {}",
        answer[0]
    );
    carol
        .post("Sharks die if they stop swimming #fish", None, json!([]), None)
        .await;
    wait_for_log(&bot.daemon, "already answered this author").await;
    assert_eq!(bob.records_of(&bot.user.did).await.len(), 6);
}

/// Identity is the DID, never the handle, on the reference network
/// (`com.atproto.identity.updateHandle`): after the moderator changes handle and another
/// account registers the old one, that account's `watch #x` is refused and the real moderator
/// keeps its rights; a user who opted out stays out under a new handle; and the reply to the
/// new holder of a handle that once asked mentions the new holder's DID, not the old one's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rights_and_memory_follow_the_did_across_a_handle_takeover() {
    let Some(net) = Network::shared() else { return };
    let mut alice = net.account("alice").await;
    let old_handle = alice.handle.clone();
    let bot = start_moderated_bot(net, &old_handle).await;
    assert!(
        bot.daemon.log_text().contains(&alice.did),
        "the moderator's handle was resolved to a DID"
    );
    let mut bob = net.account("bob").await;
    let carol = net.account("carol").await;
    let (bot_handle, bot_did) = (bot.user.handle.clone(), bot.user.did.clone());
    let command = |words: &str| {
        let text = format!("@{bot_handle} {words}");
        let facets = json!([{
            "index": {"byteStart": 0, "byteEnd": 1 + bot_handle.len()},
            "features": [{"$type": "app.bsky.richtext.facet#mention", "did": bot_did}],
        }]);
        (text, facets)
    };
    let replies_to = |records: &[Value], uri: &str| -> Vec<Value> {
        records
            .iter()
            .filter(|r| r["value"]["reply"]["parent"]["uri"] == json!(uri))
            .map(|r| r["value"].clone())
            .collect()
    };
    let claim = carol.post("Fish sleep upside down.", None, json!([]), None).await;

    // Alice asks once under her first handle (a bot that remembered handle → DID for the
    // process's life would keep pointing this handle at her).
    let asked = alice.mention(&bot.user, "is this true?", &claim, &claim).await;
    let records = carol.wait_for_records(&bot.user.did, 1, Duration::from_secs(60)).await;
    assert_eq!(replies_to(&records, &asked.uri).len(), 1, "{records:#?}");
    // Bob opts out.
    let (t, f) = command("stop");
    let stop = bob.post(&t, None, f, None).await;
    let records = carol.wait_for_records(&bot.user.did, 2, Duration::from_secs(60)).await;
    assert_eq!(replies_to(&records, &stop.uri).len(), 1, "{records:#?}");

    // Alice and Bob change handles; Mallory registers Alice's old one.
    alice.update_handle(&Network::fresh_handle("al2")).await;
    bob.update_handle(&Network::fresh_handle("bo2")).await;
    let mallory = net.account_with_handle(&old_handle).await;
    assert_ne!(mallory.did, alice.did);

    let (t, f) = command("watch #takeover");
    mallory.post(&t, None, f, None).await;
    wait_for_log(&bot.daemon, "reason=\"not_moderator\"").await;
    let (t, f) = command("status");
    let status = alice.post(&t, None, f, None).await;
    let records = carol.wait_for_records(&bot.user.did, 3, Duration::from_secs(60)).await;
    let ack = replies_to(&records, &status.uri);
    assert_eq!(
        ack.len(),
        1,
        "the renamed moderator keeps her rights: {records:#?}\n{}",
        bot.daemon.log_text()
    );
    assert!(
        ack[0]["text"].as_str().unwrap().contains("Watching: no tags"),
        "mallory's watch was not carried out: {}",
        ack[0]
    );

    // Renamed Bob is still opted out.
    bob.mention(&bot.user, "and this?", &claim, &claim).await;
    wait_for_log(&bot.daemon, "reason=\"opted_out\"").await;

    // Mallory asks: the reply's mention facet is Mallory's DID.
    let other = carol.post("Goldfish remember nothing.", None, json!([]), None).await;
    let ask = mallory.mention(&bot.user, "true?", &other, &other).await;
    let records = carol.wait_for_records(&bot.user.did, 4, Duration::from_secs(60)).await;
    let reply = replies_to(&records, &ask.uri);
    assert_eq!(reply.len(), 1, "{records:#?}\n{}", bot.daemon.log_text());
    let mentions: Vec<&Value> = reply[0]["facets"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|x| x["features"][0]["$type"] == "app.bsky.richtext.facet#mention")
        .collect();
    assert_eq!(mentions.len(), 1, "{}", reply[0]);
    assert_eq!(mentions[0]["features"][0]["did"], json!(mallory.did), "{}", reply[0]);
    assert_eq!(
        records.len(),
        4,
        "nothing for mallory's watch or bob's ask: {records:#?}"
    );
}

/// A Japanese post on the reference network is answered in Japanese: the bot's own verdict
/// sentence, `langs: ["ja"]` on every part, and a long reply split into parts of at most 300
/// graphemes, each but the last ending at a clause or sentence mark.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_japanese_post_is_answered_in_japanese_in_parts_that_fit() {
    let Some(net) = Network::shared() else { return };
    let explanation =
        "月面を歩いた宇宙飛行士たちは、月から肉眼で人工の建造物を見分けることはできないと繰り返し述べている。"
            .repeat(6);
    let reply = json!({"verdict": "inaccurate", "explanation": explanation}).to_string();
    let bot = start_bot(net, &reply, None).await;
    let alice = net.account("alice").await;
    let bob = net.account("bob").await;
    let post = alice
        .post(
            "万里の長城は月から肉眼で見える唯一の人工建造物だと宇宙飛行士が確認した。",
            None,
            json!([]),
            None,
        )
        .await;
    bob.mention(&bot.user, "本当？", &post, &post).await;
    let parts = bob.wait_for_records(&bot.user.did, 2, Duration::from_secs(60)).await;
    assert!(parts.len() >= 2, "{parts:#?}\n{}", bot.daemon.log_text());
    let texts: Vec<String> = parts
        .iter()
        .map(|r| {
            r["value"]["text"]
                .as_str()
                .unwrap_or_else(|| r["text"].as_str().unwrap())
                .to_string()
        })
        .collect();
    assert!(
        texts[0].starts_with(&format!("@{} この投稿は誤りです。", bob.handle)),
        "{texts:#?}"
    );
    for (i, (record, text)) in parts.iter().zip(&texts).enumerate() {
        let record = if record["value"].is_object() {
            &record["value"]
        } else {
            record
        };
        assert_eq!(record["langs"], json!(["ja"]), "{record}");
        assert!(text.graphemes(true).count() <= 300, "{text}");
        if i + 1 < texts.len() {
            let body = text.rsplit_once(" (").map_or(text.as_str(), |(t, _)| t);
            assert!(body.ends_with(['。', '、']), "part {i} ends at a mark: {text}");
        }
    }
    let asked = bot.llm.requests.lock().unwrap().clone();
    let system = asked[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(system.contains("written in Japanese"), "{system}");
}

/// German and Spanish posts on the reference network: the reply opens with the bot's own
/// verdict sentence in the post's language, the model was asked for that language, and the
/// record carries `langs` of the reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn german_and_spanish_posts_are_answered_in_their_language() {
    let Some(net) = Network::shared() else { return };
    let script = Script::routed(|body: &Value| {
        let system = body["messages"][0]["content"]
            .as_str()
            .unwrap_or("")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let explanation = if system.contains("written in German") {
            "Astronauten sagen, die Mauer sei vom Mond aus nicht zu sehen."
        } else if system.contains("written in Spanish") {
            "Los astronautas dicen que la muralla no se ve desde la Luna."
        } else {
            "Astronauts say the wall cannot be seen from the Moon."
        };
        json!({"verdict": "inaccurate", "explanation": explanation}).to_string()
    });
    let bot = start_bot_at(net, &net.pds, script, None, "").await;
    wait_for_log(&bot.daemon, "bluesky notifications: starting from now").await;
    let alice = net.account("alice").await;
    let bob = net.account("bob").await;
    // The German post carries the helper's `langs: ["en"]` (as a client set to English tags
    // everything): its text plainly reads German. The Spanish one is tagged `es`.
    let cases = [
        (
            "de",
            None,
            "Die Chinesische Mauer ist das einzige Bauwerk, das man vom Mond aus mit bloßem Auge sehen kann.",
            "Dieser Beitrag ist falsch. Astronauten sagen",
        ),
        (
            "es",
            Some("es"),
            "La Gran Muralla China es la única construcción humana que se puede ver a simple vista desde la Luna.",
            "Esta publicación es falsa. Los astronautas dicen",
        ),
    ];
    for (n, (lang, tag, claim, opening)) in cases.into_iter().enumerate() {
        let post = match tag {
            None => alice.post(claim, None, json!([]), None).await,
            Some(tag) => {
                let record = json!({
                    "$type": "app.bsky.feed.post",
                    "text": claim,
                    "createdAt": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                    "langs": [tag],
                });
                alice.create(record, true).await
            }
        };
        bob.mention(&bot.user, "?", &post, &post).await;
        let records = bob
            .wait_for_records(&bot.user.did, n + 1, Duration::from_secs(60))
            .await;
        let record = &records.last().unwrap()["value"];
        let text = record["text"].as_str().unwrap();
        assert!(
            text.starts_with(&format!("@{} {opening}", bob.handle)),
            "{lang}: {text}\n{}",
            bot.daemon.log_text()
        );
        assert_eq!(record["langs"], json!([lang]), "{record}");
    }
}

/// Living replies on the reference network: an answer that could not verify is
/// re-checked when the asker says `recheck` under it, and the new verdict is one "Update: …"
/// post under the bot's last part (Bluesky has no edit); when the author deletes the checked
/// post, every record of the answer — the update included — is deleted from the bot's repo,
/// and the acknowledgement, which answered the asker, stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recheck_posts_one_update_and_a_deleted_post_takes_every_part_of_the_answer() {
    let Some(net) = Network::shared() else { return };
    let answer = std::sync::Arc::new(std::sync::Mutex::new(
        "This post cannot be verified. No report I know of says how fish sleep.".to_string(),
    ));
    let a = answer.clone();
    let bot = start_bot_at(
        net,
        &net.pds,
        Script::routed(move |_| a.lock().unwrap().clone()),
        None,
        "\n[living]\nfollow_secs = 5\n",
    )
    .await;
    wait_for_log(&bot.daemon, "bluesky notifications: starting from now").await;
    let alice = net.account("alice").await;
    let bob = net.account("bob").await;
    let post = alice
        .post("Fish sleep upside down at night.", None, json!([]), None)
        .await;
    let ask = bob.mention(&bot.user, "is this true?", &post, &post).await;
    let first = bob.wait_for_records(&bot.user.did, 1, Duration::from_secs(60)).await;
    assert_eq!(first.len(), 1, "{first:#?}\n{}", bot.daemon.log_text());
    assert!(
        first[0]["value"]["text"].as_str().unwrap().contains("could not"),
        "{first:#?}"
    );
    let answer_ref = common::bluesky::Ref {
        uri: first[0]["uri"].as_str().unwrap().to_string(),
        cid: first[0]["cid"].as_str().unwrap().to_string(),
    };

    // The facts arrive; the asker asks again under the answer.
    *answer.lock().unwrap() = "This post is false: fish rest upright, hovering in place.".into();
    bob.wait_indexed(&answer_ref.uri).await;
    bob.mention(&bot.user, "recheck", &post, &answer_ref).await;
    let records = bob.wait_for_records(&bot.user.did, 3, Duration::from_secs(90)).await;
    let texts: Vec<&str> = records.iter().map(|r| r["value"]["text"].as_str().unwrap()).collect();
    let update = records
        .iter()
        .find(|r| r["value"]["text"].as_str().unwrap().contains("Update:"))
        .unwrap_or_else(|| panic!("no update: {texts:#?}\n{}", bot.daemon.log_text()));
    assert!(
        update["value"]["text"]
            .as_str()
            .unwrap()
            .starts_with(&format!("@{} Update: This post is false.", bob.handle)),
        "{update}"
    );
    assert_eq!(
        update["value"]["reply"]["parent"]["uri"],
        json!(answer_ref.uri),
        "under the last part"
    );
    assert_eq!(update["value"]["reply"]["root"]["uri"], json!(post.uri));
    assert!(texts.iter().any(|t| t.contains("Checking this again")), "{texts:#?}");
    let _ = ask;

    // The author deletes the post: the answer and its update go, the acknowledgement stays.
    let rkey = post.uri.rsplit('/').next().unwrap();
    alice
        .call(
            "com.atproto.repo.deleteRecord",
            json!({"repo": alice.did, "collection": "app.bsky.feed.post", "rkey": rkey}),
        )
        .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let left = loop {
        let left = bob.records_of(&bot.user.did).await;
        if left.len() == 1 || std::time::Instant::now() > deadline {
            break left;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_eq!(left.len(), 1, "{left:#?}\n{}", bot.daemon.log_text());
    assert!(
        left[0]["value"]["text"]
            .as_str()
            .unwrap()
            .contains("Checking this again"),
        "{left:#?}"
    );
}

/// The label `val` from `src` on a post view, if the view carries it (not negated: the AppView
/// drops negated labels).
/// Whether a label served by the labeler verifies against the `#atproto_label` key in its
/// DID document on the PLC: the signature is ECDSA secp256k1 over SHA-256 of the label's
/// DAG-CBOR without `sig` (`ver`, `src`, `uri`, `cid`, `val`, `neg` when true, `cts`, `exp`).
async fn signature_verifies(plc: &str, label: &Value) -> bool {
    use ipld_core::ipld::Ipld;
    use k256::ecdsa::signature::Verifier;
    let src = label["src"].as_str().unwrap();
    let doc: Value = reqwest::get(format!("{plc}/{src}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let method = doc["verificationMethod"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"].as_str().is_some_and(|id| id.ends_with("#atproto_label")))
        .unwrap_or_else(|| panic!("no #atproto_label key: {doc}"));
    let (_, mut key) = multibase::decode(method["publicKeyMultibase"].as_str().unwrap()).unwrap();
    if method["type"] == json!("Multikey") {
        assert_eq!(&key[..2], [0xe7, 0x01], "a secp256k1 multikey");
        key.drain(..2);
    }
    let key = k256::ecdsa::VerifyingKey::from_sec1_bytes(&key).unwrap();
    let mut unsigned = std::collections::BTreeMap::new();
    unsigned.insert(
        "ver".to_string(),
        Ipld::Integer(label["ver"].as_i64().unwrap_or(1).into()),
    );
    for field in ["src", "uri", "cid", "val", "cts", "exp"] {
        if let Some(v) = label[field].as_str() {
            unsigned.insert(field.to_string(), Ipld::String(v.to_string()));
        }
    }
    if label["neg"] == json!(true) {
        unsigned.insert("neg".to_string(), Ipld::Bool(true));
    }
    let bytes = serde_ipld_dagcbor::to_vec(&Ipld::Map(unsigned)).unwrap();
    use base64::Engine;
    let sig = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(label["sig"]["$bytes"].as_str().unwrap().trim_end_matches('='))
        .unwrap();
    let sig = k256::ecdsa::Signature::from_slice(&sig).unwrap();
    key.verify(&bytes, &sig).is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verdict_becomes_a_signed_label_only_subscribers_see_and_a_withdrawal_negates_it() {
    let Some(net) = Network::shared() else { return };
    let labeler = net.labeler.as_ref().expect("the full network runs a labeler");
    let moderator = net.account("mod").await;
    let pages = free_port();
    let pages_url = format!("http://127.0.0.1:{pages}/labels");
    let extra = format!(
        "plc_directory = \"{}\"\n\n[bluesky.labeler]\nenabled = true\nmentions = \"both\"\nmin_confidence = \"drafted\"\nevidence_listen = \"127.0.0.1:{pages}\"\nevidence_url = \"{pages_url}\"\n\n[moderation]\nbluesky_moderators = [\"{}\"]\n",
        net.plc, moderator.handle
    );
    let user = net.labeler_user().await;
    let bot = start_bot_as(
        net,
        &net.pds,
        user,
        Script::reply("This post is false: fish do not sleep upside down."),
        None,
        &extra,
    )
    .await;
    wait_for_log(&bot.daemon, "bluesky notifications: starting from now").await;

    // `musebot labeler setup`: the declaration written once, the DID document's entries read.
    let setup = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_musebot"))
            .args(["labeler", "setup", "--config"])
            .arg(bot._dir.path().join("bot-config.toml"))
            .output()
            .unwrap()
    };
    let first = setup();
    let out = String::from_utf8_lossy(&first.stdout).to_string();
    assert!(
        first.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(out.contains("declaration: written"), "{out}");
    assert!(out.contains(&format!("#atproto_labeler is {}", labeler.ozone)), "{out}");
    assert!(out.contains("#atproto_label key is"), "{out}");
    let again = String::from_utf8_lossy(&setup().stdout).to_string();
    assert!(again.contains("declaration: unchanged"), "{again}");
    // The AppView indexes the declaration from the firehose a moment after the write: ask
    // until it has (a fixed read raced the indexer in CI and saw `{"views":[]}`).
    let services = net.labeler_services(&labeler.did).await;
    let defs = &services["views"][0]["policies"]["labelValueDefinitions"];
    assert_eq!(defs.as_array().map(Vec::len), Some(4), "{services}");
    assert!(
        defs[0]["locales"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["lang"] == json!("ja")),
        "{defs}"
    );
    assert!(
        defs[0]["locales"][0]["description"]
            .as_str()
            .unwrap()
            .contains(&pages_url),
        "each description names the evidence pages: {defs}"
    );

    // A mention: the reply, and the label on the checked post.
    let alice = net.account("alice").await;
    let bob = net.account("bob").await;
    let post = alice
        .post("Fish sleep upside down at night.", None, json!([]), None)
        .await;
    bob.mention(&bot.user, "is this true?", &post, &post).await;
    let replies = bob.wait_for_records(&bot.user.did, 1, Duration::from_secs(60)).await;
    assert!(
        replies[0]["value"]["text"].as_str().unwrap().contains("false"),
        "{replies:#?}"
    );
    net.wait_until_seen(&post.uri, &labeler.did, "fc-false", true).await;

    // Subscribers see it; a reader who does not subscribe sees none of the bot's labels.
    let unsubscribed = net.posts_seen_with(&[&post.uri], None).await;
    assert!(
        !carries(&unsubscribed[0], &labeler.did, "fc-false"),
        "{unsubscribed:#?}"
    );
    let other = net
        .posts_seen_with(&[&post.uri], Some("did:plc:aaaaaaaaaaaaaaaaaaaaaaaa"))
        .await;
    assert!(!carries(&other[0], &labeler.did, "fc-false"), "{other:#?}");

    // Signed by the key the bot's DID document names; one label, on the post's CID.
    let labels = served(&labeler.ozone, &post.uri, &labeler.did).await;
    assert_eq!(labels.len(), 1, "{labels:#?}");
    assert_eq!(labels[0]["cid"], json!(post.cid));
    assert!(signature_verifies(&net.plc, &labels[0]).await, "{:#}", labels[0]);
    let mut forged = labels[0].clone();
    forged["val"] = json!("fc-accurate");
    assert!(
        !signature_verifies(&net.plc, &forged).await,
        "a changed label must not verify"
    );

    // The public evidence page behind the label: by at:// URI or by the bsky.app link (the
    // author's handle); escaped, and nothing for a post the bot did not label.
    let page = |q: String| {
        let url = pages_url.clone();
        async move {
            let r = reqwest::Client::new()
                .get(url)
                .query(&[("post", q)])
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let csp = r
                .headers()
                .get("content-security-policy")
                .map(|v| v.to_str().unwrap().to_string());
            (status, csp, r.text().await.unwrap())
        }
    };
    let (status, csp, html) = page(post.uri.clone()).await;
    assert_eq!(status, 200, "{html}");
    assert!(csp.is_some_and(|c| c.contains("default-src 'none'")));
    assert!(
        html.contains("fc-false") && html.contains("This post is false."),
        "{html}"
    );
    let rkey = post.uri.rsplit('/').next().unwrap();
    let (status, _, by_link) = page(format!("https://bsky.app/profile/{}/post/{rkey}", alice.handle)).await;
    assert_eq!(status, 200, "{by_link}");
    assert!(by_link.contains("fc-false"));
    let (status, _, by_did) = page(format!("https://bsky.app/profile/{}/post/{rkey}", alice.did)).await;
    assert_eq!(status, 200, "{by_did}");
    // Another author's handle with the labelled post's record key names a post that author
    // never wrote: no page; nor for a handle that does not resolve.
    for other in [bob.handle.as_str(), "nobody.test"] {
        let (status, _, html) = page(format!("https://bsky.app/profile/{other}/post/{rkey}")).await;
        assert_eq!(status, 404, "{other}: {html}");
        assert!(!html.contains("fc-false"), "{other}: {html}");
    }
    let (status, _, none) = page(format!("at://{}/app.bsky.feed.post/3zzzzzzzzzzzz<script>", alice.did)).await;
    assert_eq!(status, 404);
    assert!(!none.contains("<script>") && none.contains("&lt;script&gt;"), "{none}");

    // The moderator withdraws the answer: the reply goes and the label is negated.
    let answer = common::bluesky::Ref {
        uri: replies[0]["uri"].as_str().unwrap().to_string(),
        cid: replies[0]["cid"].as_str().unwrap().to_string(),
    };
    moderator.wait_indexed(&answer.uri).await;
    moderator.mention(&bot.user, "withdraw: test", &post, &answer).await;
    net.wait_until_seen(&post.uri, &labeler.did, "fc-false", false).await;
    let labels = served(&labeler.ozone, &post.uri, &labeler.did).await;
    assert!(labels.iter().all(|l| l["neg"] == json!(true)), "{labels:#?}");
    for l in &labels {
        assert!(
            signature_verifies(&net.plc, l).await,
            "the negation is signed too: {l:#}"
        );
    }
    // The answer is closed just after the negation goes out.
    let mut status = 0;
    for _ in 0..100 {
        status = page(post.uri.clone()).await.0;
        if status == 404 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, 404, "no page for a withdrawn label");

    // `kill -9` between the verdict and the label, while the labeler's Ozone is down: once both
    // are back, the label is emitted once, the reply follows it, and the negation above
    // survived both restarts.
    net.ozone("ozone-stop").await;
    let second = alice
        .post("Goldfish only remember the last three seconds.", None, json!([]), None)
        .await;
    // The bot's posts under `second` (the withdrawal's acknowledgement may still be landing).
    let under_second = |records: Vec<Value>| {
        records
            .into_iter()
            .filter(|r| r["value"]["reply"]["root"]["uri"] == json!(second.uri))
            .count()
    };
    bob.mention(&bot.user, "is this true?", &second, &second).await;
    wait_for_log(&bot.daemon, "for emitEvent: UpstreamFailure").await;
    let mut bot = bot;
    let (dir, port) = (bot._dir.path().to_path_buf(), bot.daemon.health_port);
    bot.daemon.kill9();
    assert_eq!(
        under_second(bob.records_of(&bot.user.did).await),
        0,
        "no reply before its label (mentions = both: the label first)"
    );
    net.ozone("ozone-start").await;
    let cfg = std::fs::read_to_string(dir.join("bot-config.toml")).unwrap();
    let mut again = Daemon::start(&dir, &cfg, port);
    again.wait_connected().await;
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    while under_second(bob.records_of(&bot.user.did).await) == 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert_eq!(
        under_second(bob.records_of(&bot.user.did).await),
        1,
        "one reply once the label is out:\n{}",
        again.log_text()
    );
    net.wait_until_seen(&second.uri, &labeler.did, "fc-false", true).await;
    let labels = served(&labeler.ozone, &second.uri, &labeler.did).await;
    assert_eq!(labels.len(), 1, "emitted once: {labels:#?}\n{}", again.log_text());
    assert!(labels[0]["neg"] != json!(true), "{labels:#?}");
    let first = served(&labeler.ozone, &post.uri, &labeler.did).await;
    assert!(
        !first.is_empty() && first.iter().all(|l| l["neg"] == json!(true)),
        "the negation survived the restarts: {first:#?}"
    );
    assert!(!carries(
        &net.posts_seen_with(&[&post.uri], Some(&labeler.did)).await[0],
        &labeler.did,
        "fc-false"
    ));
}
