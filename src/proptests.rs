//! Property tests for every parser of outside input (issue: trust boundaries): generated
//! status HTML, Bluesky notifications and records, firehose CAR blocks and varints, commands,
//! rate-limit headers, config text and model-written replies — each must come back as a value
//! or a reasoned refusal, never a panic, and the composer's rules must hold on whatever it is
//! given. `MUSEBOT_PROPTEST_CASES` sets the cases per property (2,000 by default, what CI
//! runs); `scripts/proptest-long.sh` runs them longer.

use proptest::prelude::*;
use proptest::test_runner::Config as RunnerConfig;

fn config() -> RunnerConfig {
    let cases = std::env::var("MUSEBOT_PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(2_000);
    RunnerConfig {
        cases,
        failure_persistence: None,
        ..RunnerConfig::default()
    }
}

/// Text built from the pieces parsers trip on: markup, entities, mentions, URLs, schemes,
/// odd Unicode (combining marks, RTL, zero-width, full-width at-signs, surrogates' neighbours).
fn hostile_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("<".to_string()),
        Just(">".to_string()),
        Just("</".to_string()),
        Just("<a href=\"".to_string()),
        Just("\" class=\"u-url mention\">".to_string()),
        Just("</a>".to_string()),
        Just("<span class=\"h-card\">".to_string()),
        Just("<p>".to_string()),
        Just("<br>".to_string()),
        Just("&amp;".to_string()),
        Just("&#x1F600;".to_string()),
        Just("&#99999999;".to_string()),
        Just("&".to_string()),
        Just("@".to_string()),
        Just("＠".to_string()),
        Just("x²".to_string()),
        Just("①".to_string()),
        Just("Ⓐ".to_string()),
        Just("@alice@example.social".to_string()),
        Just("#nobot".to_string()),
        Just("https://".to_string()),
        Just("http://evil.example/@x/1".to_string()),
        Just("gemini://x".to_string()),
        Just("www.".to_string()),
        Just("magnet:?xt=1".to_string()),
        Just(" ".to_string()),
        Just("\n".to_string()),
        Just("\u{200B}".to_string()),
        Just("\u{202E}".to_string()),
        Just("e\u{301}".to_string()),
        Just("日本語".to_string()),
        Just("👍🏽".to_string()),
        "[a-z0-9._-]{0,12}",
        any::<char>().prop_map(String::from),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|p| p.concat())
}

/// JSON of any shape, a few levels deep, with the field names the parsers look for.
fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::{json, Value};
    let key = prop_oneof![
        Just("uri"),
        Just("cid"),
        Just("author"),
        Just("did"),
        Just("handle"),
        Just("record"),
        Just("reason"),
        Just("indexedAt"),
        Just("text"),
        Just("createdAt"),
        Just("facets"),
        Just("index"),
        Just("byteStart"),
        Just("byteEnd"),
        Just("features"),
        Just("$type"),
        Just("reply"),
        Just("parent"),
        Just("root"),
        Just("embed"),
        Just("langs"),
        Just("labels"),
        Just("x"),
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        hostile_text().prop_map(Value::from),
        Just(json!("app.bsky.feed.post")),
        Just(json!("app.bsky.richtext.facet#mention")),
        Just(json!("did:plc:abc")),
        Just(json!("2026-12-01T10:00:00Z")),
    ];
    leaf.prop_recursive(4, 64, 8, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((key.clone(), inner), 0..8)
                .prop_map(|kv| { Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()) }),
        ]
    })
}

/// A notification-shaped object with generated fields in the places the parser reads.
fn notification() -> impl Strategy<Value = serde_json::Value> {
    (hostile_text(), json_value(), json_value(), any::<i64>(), any::<i64>()).prop_map(
        |(text, facet_extra, embed, s, e)| {
            serde_json::json!({
                "uri": "at://did:plc:abc/app.bsky.feed.post/3k", "cid": "bafy",
                "author": {"did": "did:plc:abc", "handle": "a.test"},
                "reason": "mention", "isRead": false, "indexedAt": "2026-12-01T10:00:00Z",
                "record": {"$type": "app.bsky.feed.post", "text": text, "createdAt": "2026-12-01T10:00:00Z",
                           "facets": [{"index": {"byteStart": s, "byteEnd": e},
                                       "features": [{"$type": "app.bsky.richtext.facet#mention", "did": "did:plc:b"}]},
                                      facet_extra],
                           "embed": embed},
            })
        },
    )
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn status_html_never_panics(html in hostile_text()) {
        use crate::platform::mastodon::text;
        let plain = text::html_to_text(&html);
        let _ = text::links(&html);
        let _ = text::mentions(&html);
        let _ = text::has_nobot(&html);
        let _ = text::strip_leading_mentions(&plain);
    }

    #[test]
    fn commands_never_panic(text in hostile_text()) {
        let _ = crate::model::Command::parse(&text);
        let _ = crate::model::attempted_command(&text);
        let _ = crate::model::normalise_tag(&text);
    }

    #[test]
    fn rate_limit_headers_never_panic_and_stay_clamped(v in prop_oneof![
        "[0-9]{0,40}", "-?[0-9]{0,25}", "[+-]?[0-9]{1,6}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})",
        "[A-Z][a-z]{2}, [0-9]{1,2} [A-Z][a-z]{2} [0-9]{1,6} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT", hostile_text(),
    ]) {
        let now = chrono::Utc::now();
        for wait in [crate::retry::parse_retry_after(&v, now), crate::retry::parse_reset(&v, now)].into_iter().flatten() {
            prop_assert!(wait <= crate::retry::MAX_HINT);
            let _ = now + chrono::Duration::from_std(wait).unwrap();
        }
    }

    #[test]
    fn bluesky_notifications_never_panic(n in notification(), any_json in json_value()) {
        let bot = crate::platform::bluesky::records::BotId { did: "did:plc:bot".into(), handle: "bot.test".into() };
        let _ = crate::platform::bluesky::records::trigger_of(&n, &bot);
        let _ = crate::platform::bluesky::records::trigger_of(&any_json, &bot);
        let _ = crate::platform::bluesky::records::post_record(&any_json);
        if let Some(record) = n.get("record") {
            let _ = crate::platform::bluesky::records::post_record(record);
        }
    }

    #[test]
    fn car_blocks_and_varints_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = crate::platform::bluesky::firehose::car_blocks(&bytes);
        let mut at = 0;
        while at < bytes.len() {
            let before = at;
            if crate::platform::bluesky::firehose::varint(&bytes, &mut at).is_err() || at == before {
                break;
            }
        }
    }

    /// Firehose frames: any bytes, and well-formed frames whose commit carries
    /// random ops, blocks and cut-offs, decode to a frame or an error, never a panic.
    #[test]
    fn firehose_frames_never_panic(
        noise in proptest::collection::vec(any::<u8>(), 0..1024),
        blocks in proptest::collection::vec(any::<u8>(), 0..512),
        path in "(app\\.bsky\\.feed\\.post/[a-z0-9]{0,13}|[a-z./]{0,20})",
        action in "(create|update|delete|[a-z]{0,6})",
        cut in 0usize..2048,
        t in "(#commit|#identity|#account|#info|[#a-z]{0,8})",
    ) {
        use ipld_core::ipld::Ipld;
        use crate::platform::bluesky::firehose::decode;
        let _ = decode(&noise, "did:plc:bot");
        let mut header = std::collections::BTreeMap::new();
        header.insert("op".to_string(), Ipld::Integer(1));
        header.insert("t".to_string(), Ipld::String(t));
        let mut op = std::collections::BTreeMap::new();
        op.insert("action".to_string(), Ipld::String(action));
        op.insert("path".to_string(), Ipld::String(path));
        op.insert("cid".to_string(), Ipld::Null);
        let mut commit = std::collections::BTreeMap::new();
        commit.insert("seq".to_string(), Ipld::Integer(7));
        commit.insert("repo".to_string(), Ipld::String("did:plc:alice".into()));
        commit.insert("ops".to_string(), Ipld::List(vec![Ipld::Map(op)]));
        commit.insert("blocks".to_string(), Ipld::Bytes(blocks));
        let mut frame = serde_ipld_dagcbor::to_vec(&Ipld::Map(header)).unwrap();
        frame.extend(serde_ipld_dagcbor::to_vec(&Ipld::Map(commit)).unwrap());
        let _ = decode(&frame, "did:plc:bot");
        frame.truncate(cut.min(frame.len()));
        let _ = decode(&frame, "did:plc:bot");
        // And the frame with the noise spliced into its middle.
        let mid = frame.len() / 2;
        frame.splice(mid..mid, noise);
        let _ = decode(&frame, "did:plc:bot");
    }

    #[test]
    fn config_text_never_panics(text in prop_oneof![
        hostile_text(),
        "\\[[a-z_.]{1,12}\\]\n[a-z_]{1,16} = (\"[^\"\\n]{0,20}\"|-?[0-9]{1,25}|true|\\[\\]|\\{\\})\n",
    ]) {
        if let Ok(c) = crate::config::Config::parse(&text) {
            let _ = c.validate();
        }
    }

    /// Whatever the model writes, the posted body mentions nobody and links nothing but the
    /// evidence.
    #[test]
    fn composed_replies_mention_nobody_and_link_only_evidence(text in hostile_text()) {
        // The second evidence URL carries a mention Mastodon would find.
        let evidence = "https://news.example/b-@victim@evil.example";
        let allowed: std::collections::HashSet<String> =
            ["https://news.example/a".to_string(), evidence.to_string()].into();
        let out = crate::compose::enforce_rules(&format!("{text} {evidence}"), &allowed);
        let chars: Vec<char> = out.chars().collect();
        for w in chars.windows(2) {
            prop_assert!(
                !(matches!(w[0], '@' | '＠' | '﹫') && (w[1].is_alphanumeric() || w[1] == '_')),
                "a mention survived: {out:?}"
            );
        }
        let lower = out.to_lowercase();
        prop_assert!(!lower.contains("http://evil"), "a foreign URL survived: {out:?}");
        // A scheme or a bare `www.` host where a word starts (what linkifiers link).
        for (link, target) in [("gemini:/", "/"), ("magnet:?", "x"), ("www.", "")] {
            for (i, _) in lower.match_indices(link) {
                let starts_word = lower[..i].chars().next_back().is_none_or(|c| !c.is_ascii_alphanumeric());
                let rest = &lower[i + link.len()..];
                let follows = rest.chars().next().is_some_and(|c| c.is_alphanumeric() || target.contains(c));
                prop_assert!(!(starts_word && follows), "{link} survived: {out:?}");
            }
        }
        let limits = crate::compose::TextLimits { max_chars: 80, chars_per_url: 23 };
        for part in crate::compose::split_thread("@bob ", &out, limits, true, 5) {
            prop_assert!(crate::compose::weighted_len(&part, limits) <= 80, "{part:?}");
        }
    }
}
