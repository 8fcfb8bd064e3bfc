//! Validation of the platforms' sections: `[mastodon]`, `[bluesky]`, `[bluesky.labeler]` and
//! `[watch]`
//! (each problem as `key: problem — fix`, like the rest of `validate.rs`).

use super::super::Config;
use super::{check_url, Problems};

/// `[mastodon]`.
pub(super) fn mastodon(c: &Config, p: &mut Problems) {
    let m = &c.mastodon;
    if !m.enabled {
        if !c.bluesky.enabled && c.accounts.is_empty() {
            p.bad(
                "mastodon.enabled",
                "is false and no other platform is enabled".into(),
                "set mastodon.enabled = true, or bluesky.enabled = true with a [bluesky] section, or add an [[accounts]] entry",
            );
        }
    } else {
        if m.base_url.is_empty() {
            p.bad(
                "mastodon.base_url",
                "is empty".into(),
                "set it to your instance, e.g. https://mastodon.social",
            );
        } else {
            check_url(
                p,
                "mastodon.base_url",
                &m.base_url,
                "set it to your instance, e.g. https://mastodon.social",
            );
        }
        if m.access_token_env.is_empty() && m.access_token_file.is_empty() {
            p.bad(
                "mastodon.access_token_env",
                "and mastodon.access_token_file are both empty".into(),
                "name the environment variable or file that holds the bot's token",
            );
        }
        if m.requests_per_5min == 0 || m.requests_per_5min > 1500 {
            p.bad(
                "mastodon.requests_per_5min",
                format!("is {}", m.requests_per_5min),
                "use a number from 1 to 1500 (Mastodon allows 300)",
            );
        }
        if m.posts_per_3h == 0 || m.posts_per_3h > 280 {
            p.bad(
                "mastodon.posts_per_3h",
                format!("is {}", m.posts_per_3h),
                "use a number from 1 to 280 (Mastodon allows 300 posts per 3 hours, the burst takes 20)",
            );
        }
        if m.reconnect_max_secs == 0 {
            p.bad(
                "mastodon.reconnect_max_secs",
                "is 0".into(),
                "use a positive number, e.g. 60",
            );
        }
        if m.timeout_secs == 0 {
            p.bad("mastodon.timeout_secs", "is 0".into(), "use a positive number, e.g. 30");
        }
    }
}

/// `[bluesky]`.
pub(super) fn bluesky(c: &Config, p: &mut Problems) {
    let b = &c.bluesky;
    labeler(c, p);
    if !b.enabled {
        return;
    }
    check_url(
        p,
        "bluesky.service",
        &b.service,
        "set it to the account's PDS, e.g. https://bsky.social",
    );
    if b.identifier.trim().is_empty() {
        p.bad(
            "bluesky.identifier",
            "is empty".into(),
            "set it to the bot's handle, e.g. factcheck.bsky.social",
        );
    } else if b.identifier.starts_with('@') {
        p.bad(
            "bluesky.identifier",
            format!("`{}` starts with @", b.identifier),
            "write the handle without the @, e.g. factcheck.bsky.social",
        );
    }
    if b.app_password_env.is_empty() && b.app_password_file.is_empty() {
        p.bad(
            "bluesky.app_password_env",
            "and bluesky.app_password_file are both empty".into(),
            "name the environment variable or file that holds the bot's app password",
        );
    }
    check_url(
        p,
        "bluesky.plc_directory",
        &b.plc_directory,
        "set it to the PLC directory, https://plc.directory unless the network runs its own",
    );
    if b.poll_secs == 0 || b.poll_secs > 600 {
        p.bad(
            "bluesky.poll_secs",
            format!("is {}", b.poll_secs),
            "use 1 to 600 seconds (5 is the default)",
        );
    }
    if b.requests_per_5min == 0 || b.requests_per_5min > 3000 {
        p.bad(
            "bluesky.requests_per_5min",
            format!("is {}", b.requests_per_5min),
            "use a number from 1 to 3000 (Bluesky allows 3000 per IP)",
        );
    }
    if b.write_points_per_hour < 3 || b.write_points_per_hour > 5000 {
        p.bad(
            "bluesky.write_points_per_hour",
            format!("is {}", b.write_points_per_hour),
            "use 3 to 5000 (Bluesky allows 5000; a post costs 3)",
        );
    }
    if b.write_points_per_day < 3 || b.write_points_per_day > 35000 {
        p.bad(
            "bluesky.write_points_per_day",
            format!("is {}", b.write_points_per_day),
            "use 3 to 35000 (Bluesky allows 35000; a post costs 3)",
        );
    }
    if b.reconnect_max_secs == 0 {
        p.bad(
            "bluesky.reconnect_max_secs",
            "is 0".into(),
            "use a positive number, e.g. 60",
        );
    }
    if b.timeout_secs == 0 {
        p.bad("bluesky.timeout_secs", "is 0".into(), "use a positive number, e.g. 30");
    }
}

/// `[bluesky.labeler]`.
fn labeler(c: &Config, p: &mut Problems) {
    let l = &c.bluesky.labeler;
    if !l.enabled {
        return;
    }
    if !c.bluesky.enabled {
        p.bad(
            "bluesky.labeler.enabled",
            "is true but bluesky.enabled is false".into(),
            "enable [bluesky] (labels are a Bluesky feature; Mastodon has none) or set bluesky.labeler.enabled = false",
        );
    }
    if !l.evidence_url.is_empty() {
        check_url(
            p,
            "bluesky.labeler.evidence_url",
            &l.evidence_url,
            "set it to the public URL of the evidence pages, e.g. https://factcheck.example.org/labels, or \"\"",
        );
    }
    if !l.evidence_listen.is_empty() && l.evidence_listen.parse::<std::net::SocketAddr>().is_err() {
        p.bad(
            "bluesky.labeler.evidence_listen",
            format!("`{}` is not host:port", l.evidence_listen),
            "write an address and port, e.g. 127.0.0.1:8091 (behind your TLS proxy), or \"\" for none",
        );
    }
    if l.expiry_days > 3650 {
        p.bad(
            "bluesky.labeler.expiry_days",
            format!("is {}", l.expiry_days),
            "use 0 (never) to 3650 days",
        );
    }
}

/// `[watch]`: what it reads, and label caps under Bluesky's own limits.
pub(super) fn watch(c: &Config, p: &mut Problems) {
    let w = &c.watch;
    if !w.enabled {
        return;
    }
    if !c.claims.enabled {
        p.bad(
            "watch.enabled",
            "is true while claims.enabled is false".into(),
            "the watch matches posts against the fact-check corpus: set claims.enabled = true (and import fact-checks), or watch.enabled = false",
        );
    }
    let bluesky = c.bluesky.enabled && w.bluesky != super::super::BlueskyStream::Off;
    if bluesky && !c.bluesky.labeler.enabled {
        p.bad(
            "watch.bluesky",
            format!("is \"{}\" while bluesky.labeler.enabled is false", w.bluesky.as_str()),
            "the watch only labels on Bluesky (never replies): enable [bluesky.labeler], or set watch.bluesky = \"off\"",
        );
    }
    if !bluesky && !(c.mastodon.enabled && w.mastodon) {
        p.bad(
            "watch.enabled",
            "is true with nothing to watch".into(),
            "watch Bluesky (watch.bluesky = \"jetstream\" or \"relay\" with [bluesky]) or Mastodon (watch.mastodon = true with [mastodon])",
        );
    }
    if bluesky && w.bluesky == super::super::BlueskyStream::Jetstream {
        check_ws(
            p,
            "watch.jetstream_url",
            &w.jetstream_url,
            "give Jetstream's endpoint, e.g. wss://jetstream2.us-east.bsky.network/subscribe",
        );
    }
    if bluesky && w.bluesky == super::super::BlueskyStream::Relay && !w.relay_url.is_empty() {
        check_ws(
            p,
            "watch.relay_url",
            &w.relay_url,
            "give a relay, e.g. wss://bsky.network, or \"\" for the account's own PDS",
        );
    }
    // Held labels and drafts wait for a moderator: someone must be able to approve them.
    let approvers = !c.moderation.mastodon_moderators.is_empty()
        || !c.moderation.bluesky_moderators.is_empty()
        || !c.admin.listen.is_empty();
    if !w.auto_label && !approvers {
        p.bad(
            "watch.auto_label",
            "is false (what the watch finds waits for a moderator) while this account has no moderator and no admin page".into(),
            "name the account's moderators ([moderation] mastodon_moderators or bluesky_moderators) or give it an admin page ([admin] listen), or set watch.auto_label = true",
        );
    }
    if w.languages.is_empty() {
        p.bad(
            "watch.languages",
            "is empty".into(),
            "name the languages watched, e.g. [\"en\"]",
        );
    }
    if !(0.0..=0.3).contains(&w.same_claim_margin) {
        p.bad(
            "watch.same_claim_margin",
            format!("is {}", w.same_claim_margin),
            "add 0.0 to 0.3 to claims.same_claim for unasked labels (0.02 is the default)",
        );
    }
    for r in &w.label_ratings {
        if !crate::config::watch::LABEL_RATINGS
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case(r))
        {
            p.bad(
                "watch.label_ratings",
                format!("names {r:?}"),
                "name rating classes: \"false\", \"misleading\", \"missing_context\" or \"true\"",
            );
        }
    }
    if w.batch == 0 || w.batch > 1024 {
        p.bad(
            "watch.batch",
            format!("is {}", w.batch),
            "match 1 to 1024 posts together (64 is the default)",
        );
    }
    let caps = [
        (
            "watch.labels_per_second",
            w.labels_per_second,
            5,
            "Bluesky allows a labeler 5 labels a second",
        ),
        (
            "watch.labels_per_hour",
            w.labels_per_hour,
            5_000,
            "Bluesky allows a labeler 5,000 labels an hour",
        ),
        (
            "watch.labels_per_day",
            w.labels_per_day,
            50_000,
            "Bluesky allows a labeler 50,000 labels a day",
        ),
    ];
    for (key, value, most, why) in caps {
        if value == 0 || value > most {
            p.bad(
                key,
                format!("is {value}"),
                &format!("set 1 to {most} ({why}; stay below it)"),
            );
        }
    }
    if w.per_author_per_day == 0 {
        p.bad(
            "watch.per_author_per_day",
            "is 0".into(),
            "take up 1 or more matches of an author a day (3 is the default)",
        );
    }
}

/// A `ws://` or `wss://` URL.
fn check_ws(p: &mut Problems, key: &str, value: &str, fix: &str) {
    match url::Url::parse(value) {
        Ok(u) if u.scheme() == "ws" || u.scheme() == "wss" => {}
        Ok(u) => p.bad(key, format!("scheme `{}` is not ws or wss", u.scheme()), fix),
        Err(e) => p.bad(key, format!("`{value}` is not a URL ({e})"), fix),
    }
}
