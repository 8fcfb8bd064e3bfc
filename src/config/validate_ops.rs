//! Validation of the operators' and moderators' sections: `[moderation]`, `[budget]`,
//! `[admin]`, `[living]`, `[eval]`, `[index]` (each problem as `key: problem — fix`, like the rest of `validate.rs`).

use super::super::Config;
use super::Problems;

/// `[admin]`: loopback only.
pub(super) fn admin(c: &Config, p: &mut Problems) {
    let a = &c.admin;
    if a.listen.is_empty() {
        return;
    }
    match a.listen.parse::<std::net::SocketAddr>() {
        Ok(addr) if addr.ip().is_loopback() => {}
        _ => p.bad(
            "admin.listen",
            format!("is `{}`", a.listen),
            "listen on a loopback address such as 127.0.0.1:8091 (reach it through an SSH tunnel), or \"\" for none",
        ),
    }
    if a.token_env.is_empty() && a.token_file.is_empty() {
        p.bad(
            "admin.token_env",
            "and admin.token_file are both empty".into(),
            "name the environment variable or file that holds the admin token",
        );
    }
    if a.recent_jobs == 0 || a.recent_jobs > 1000 {
        p.bad("admin.recent_jobs", format!("is {}", a.recent_jobs), "set 1 to 1000");
    }
}

/// `[eval]` and `[eval.judge]`.
pub(super) fn eval(c: &Config, p: &mut Problems) {
    let e = &c.eval;
    if e.jobs == 0 || e.jobs > 16 {
        p.bad(
            "eval.jobs",
            format!("is {}", e.jobs),
            "run 1 to 16 posts at once (2 is the default)",
        );
    }
    let j = &e.judge;
    if !j.base_url.is_empty() && url::Url::parse(&j.base_url).is_err() {
        p.bad(
            "eval.judge.base_url",
            format!("is `{}`", j.base_url),
            "give the API root, e.g. https://api.openai.com/v1, or \"\" for [llm] base_url",
        );
    }
    if j.max_tokens < 200 {
        p.bad(
            "eval.judge.max_tokens",
            format!("is {}", j.max_tokens),
            "allow 200 or more: a rating of every dimension is a few hundred tokens",
        );
    }
    if !(0.0..=2.0).contains(&j.temperature) {
        p.bad(
            "eval.judge.temperature",
            format!("is {}", j.temperature),
            "use 0 to 2 (0 is the default)",
        );
    }
}

/// `[moderation.reports]`.
fn reports(c: &Config, p: &mut Problems) {
    let r = &c.moderation.reports;
    if r.poll_secs < 5 || r.poll_secs > 86_400 {
        p.bad(
            "moderation.reports.poll_secs",
            format!("is {}", r.poll_secs),
            "read the report queue every 5 to 86400 seconds (60 is the default)",
        );
    }
    if r.max_age_hours == 0 || r.max_age_hours > 24 * 365 {
        p.bad(
            "moderation.reports.max_age_hours",
            format!("is {}", r.max_age_hours),
            "check reports up to 1 to 8760 hours old (24 is the default)",
        );
    }
    if !r.webhook_listen.is_empty() && r.webhook_listen.parse::<std::net::SocketAddr>().is_err() {
        p.bad(
            "moderation.reports.webhook_listen",
            format!("is `{}`", r.webhook_listen),
            "give host:port such as 127.0.0.1:8092 (behind the reverse proxy Mastodon reaches), or \"\" for none",
        );
    }
    if !r.webhook_listen.is_empty() && r.webhook_secret_env.is_empty() && r.webhook_secret_file.is_empty() {
        p.bad(
            "moderation.reports.webhook_secret_env",
            "and webhook_secret_file are both empty".into(),
            "name the environment variable or file holding the secret Mastodon showed for the webhook",
        );
    }
    if !r.webhook_listen.is_empty() && !c.mastodon.enabled {
        p.bad(
            "moderation.reports.webhook_listen",
            "is set without a Mastodon account".into(),
            "the webhook only wakes the Mastodon report reader: configure [mastodon] or set webhook_listen = \"\"",
        );
    } else if !r.webhook_listen.is_empty() && !r.enabled {
        p.bad(
            "moderation.reports.webhook_listen",
            "is set while moderation.reports.enabled is false".into(),
            "set enabled = true to follow reports, or webhook_listen = \"\"",
        );
    }
    if r.enabled && c.mastodon.enabled && c.moderation.mastodon_moderators.is_empty() {
        p.bad(
            "moderation.mastodon_moderators",
            "is empty while moderation.reports.enabled is true".into(),
            "name the moderators who receive each report's finding by direct message (e.g. [\"alice\"]), or turn reports off",
        );
    }
}

/// `[budget]`.
pub(super) fn budget(c: &Config, p: &mut Problems) {
    let b = &c.budget;
    if !(b.hashtag_share > 0.0 && b.hashtag_share <= 1.0) {
        p.bad(
            "budget.hashtag_share",
            format!("is {}", b.hashtag_share),
            "set a share above 0 and at most 1, e.g. 0.8 (hashtag replies stop at 80 % of the day's budget)",
        );
    }
    if !(b.report_share > 0.0 && b.report_share <= 1.0) {
        p.bad(
            "budget.report_share",
            format!("is {}", b.report_share),
            "set a share above 0 and at most 1, e.g. 0.8 (reported posts wait at 80 % of the day's budget)",
        );
    }
    if !(b.recheck_share > 0.0 && b.recheck_share <= b.report_share.min(1.0)) {
        p.bad(
            "budget.recheck_share",
            format!("is {} (budget.report_share is {})", b.recheck_share, b.report_share),
            "set a share above 0 and at most budget.report_share, e.g. 0.6 (re-checks wait at 60 % of the day's budget, before reported posts do)",
        );
    }
    if !(b.daily_cost >= 0.0 && b.daily_cost.is_finite()) {
        p.bad(
            "budget.daily_cost",
            format!("is {}", b.daily_cost),
            "set 0 (no cost limit) or a positive amount",
        );
    }
    if let Some((model, _)) = b.prices.iter().find(|(_, pr)| {
        !(pr.prompt >= 0.0 && pr.completion >= 0.0 && pr.prompt.is_finite() && pr.completion.is_finite())
    }) {
        p.bad(
            &format!("budget.prices.{model}"),
            "has a negative or non-finite price".into(),
            "give prices per million tokens as numbers ≥ 0, e.g. { prompt = 0.15, completion = 0.6 }",
        );
    }
    if b.daily_cost > 0.0 && !b.prices.contains_key(&c.llm.model) {
        p.bad(
            "budget.prices",
            format!("has no price for the model `{}`", c.llm.model),
            "add a price for [llm] model, or set budget.daily_cost = 0",
        );
    }
}

/// `[moderation]`.
pub(super) fn moderation(c: &Config, p: &mut Problems) {
    reports(c, p);
    let m = &c.moderation;
    if !(1..=3600).contains(&m.hashtag_poll_secs) {
        p.bad(
            "moderation.hashtag_poll_secs",
            format!("is {}", m.hashtag_poll_secs),
            "set 1 to 3600 seconds (20 keeps one watched tag at 15 reads a 5 minutes, of 300 allowed)",
        );
    }
    if !(1..=50).contains(&m.max_watched_tags) {
        p.bad(
            "moderation.max_watched_tags",
            format!("is {}", m.max_watched_tags),
            "set 1 to 50 (each watched tag costs a REST read every hashtag_poll_secs, out of the 300 requests a 5 minutes mentions and posting need too)",
        );
    }
    let t = &m.tag_policy;
    for (key, value, fix) in [
        (
            "moderation.tag_policy.replies_per_day",
            t.replies_per_day,
            "set 1 or more (0 would watch a tag and never answer)",
        ),
        (
            "moderation.tag_policy.author_window_hours",
            t.author_window_hours,
            "set 1 to 48 hours",
        ),
        (
            "moderation.tag_policy.max_age_hours",
            t.max_age_hours,
            "set 1 or more hours",
        ),
    ] {
        if value == 0 {
            p.bad(key, "is 0".into(), fix);
        }
    }
    if t.author_window_hours > 48 {
        p.bad(
            "moderation.tag_policy.author_window_hours",
            format!("is {}", t.author_window_hours),
            "set 1 to 48 hours (counters are kept two days)",
        );
    }
    for (key, list) in [
        ("moderation.mastodon_moderators", &m.mastodon_moderators),
        ("moderation.bluesky_moderators", &m.bluesky_moderators),
        ("moderation.blocked_accounts", &m.blocked_accounts),
    ] {
        if let Some(bad) = list
            .iter()
            .find(|h| h.trim().is_empty() || h.contains(char::is_whitespace))
        {
            p.bad(
                key,
                format!("holds `{bad}`"),
                "write each account as user, user@domain (Mastodon) or a handle (Bluesky), without spaces",
            );
        }
    }
    if let Some(bad) = m
        .review
        .iter()
        .find(|k| !["mention", "hashtag", "moderator"].contains(&k.as_str()))
    {
        p.bad(
            "moderation.review",
            format!("holds `{bad}`"),
            "list any of \"mention\", \"hashtag\", \"moderator\" (the triggers whose replies wait for approval)",
        );
    }
    if m.review_expiry_secs == 0 {
        p.bad(
            "moderation.review_expiry_secs",
            "is 0".into(),
            "give moderators time to decide, e.g. 86400 (a day)",
        );
    }
    for (key, list) in [
        ("moderation.blocked_instances", &m.blocked_instances),
        ("moderation.blocked_domains", &m.blocked_domains),
    ] {
        if let Some(bad) = list.iter().find(|d| d.trim().is_empty() || d.contains(['/', ':', ' '])) {
            p.bad(
                key,
                format!("holds `{bad}`"),
                "write bare domains such as example.com (no scheme, no path)",
            );
        }
    }
}

/// `[index]`: the feeds and the bounds of the evidence index.
/// `[claims]`.
pub(super) fn claims(c: &Config, p: &mut Problems) {
    let x = &c.claims;
    for (key, value) in [
        ("claims.same_claim", x.same_claim),
        ("claims.same_claim_multilingual", x.same_claim_multilingual),
    ] {
        if !(value > 0.0 && value <= 1.0) {
            p.bad(
                key,
                format!("is {value}"),
                "use a cosine in (0, 1]: the default is calibrated for the sandbox's models (cargo bench --bench claim_matching calibrates another)",
            );
        }
    }
    if x.candidates == 0 || x.candidates > 100 {
        p.bad(
            "claims.candidates",
            format!("is {}", x.candidates),
            "use 1 to 100 (5 is the default)",
        );
    }
    if x.max_reviews == 0 {
        p.bad(
            "claims.max_reviews",
            "is 0".into(),
            "use at least 1 (500000 is the default)",
        );
    }
}

pub(super) fn index(c: &Config, p: &mut Problems) {
    let x = &c.index;
    for (i, feed) in x.feeds.iter().enumerate() {
        if !url::Url::parse(feed).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some()) {
            p.bad(
                &format!("index.feeds[{i}]"),
                format!("`{feed}` is not an http(s) URL"),
                "write the feed's full address, e.g. \"https://www.factcheck.org/feed/\"",
            );
        }
    }
    if x.refresh_secs < 60 {
        p.bad(
            "index.refresh_secs",
            format!("is {}", x.refresh_secs),
            "use at least 60 seconds (1800 is the default; feeds change a few times a day)",
        );
    }
    if x.max_age_days > 36_500 {
        p.bad(
            "index.max_age_days",
            format!("is {}", x.max_age_days),
            "use at most 36500 days, or 0 for no age limit (730 is the default)",
        );
    }
    for (key, value, fix) in [
        (
            "index.items_per_feed",
            x.items_per_feed,
            "use at least 1 (20 is the default)",
        ),
        ("index.max_items", x.max_items, "use at least 1 (50000 is the default)"),
        (
            "index.max_feed_bytes",
            x.max_feed_bytes,
            "use at least 10000 (2000000 is the default)",
        ),
    ] {
        let floor = if key == "index.max_feed_bytes" { 10_000 } else { 1 };
        if value < floor {
            p.bad(key, format!("is {value}"), fix);
        }
    }
}

/// `[living]`.
pub(super) fn living(c: &Config, p: &mut Problems) {
    let l = &c.living;
    if !l.enabled {
        return;
    }
    if l.keep_days == 0 || l.keep_days > 90 {
        p.bad(
            "living.keep_days",
            format!("is {}", l.keep_days),
            "keep answered posts 1 to 90 days (7 is the default)",
        );
    } else if l.keep_days > c.daemon.keep_days {
        p.bad(
            "living.keep_days",
            format!(
                "is {}, longer than daemon.keep_days ({})",
                l.keep_days, c.daemon.keep_days
            ),
            "keep answered posts no longer than their jobs (claim memory reads the job)",
        );
    }
    for d in &l.recheck_after {
        match super::super::duration(d) {
            None => p.bad(
                "living.recheck_after",
                format!("has `{d}`"),
                "write each delay as a number and one unit: \"90s\", \"30m\", \"1h\", \"2d\"",
            ),
            Some(x) if x > l.keep() => p.bad(
                "living.recheck_after",
                format!("has `{d}`, after living.keep_days"),
                "re-check within the days a post is kept, or keep it longer",
            ),
            Some(_) => {}
        }
    }
    if super::super::duration(&l.recheck_cooldown).is_none() {
        p.bad(
            "living.recheck_cooldown",
            format!("is `{}`", l.recheck_cooldown),
            "write the cooldown as a number and one unit: \"90s\", \"30m\", \"1h\", \"2d\"",
        );
    }
    if l.max_idle_rechecks > 100 {
        p.bad(
            "living.max_idle_rechecks",
            format!("is {}", l.max_idle_rechecks),
            "allow 0 to 100 re-checks that find nothing new (3 is the default)",
        );
    }
    if l.recheck_after.len() > 10 {
        p.bad(
            "living.recheck_after",
            format!("has {} delays", l.recheck_after.len()),
            "set at most 10",
        );
    }
    if l.max_updates > 10 {
        p.bad(
            "living.max_updates",
            format!("is {}", l.max_updates),
            "allow 0 to 10 updates a thread (2 is the default)",
        );
    }
    if l.follow_secs < 5 || l.follow_secs > 86_400 {
        p.bad(
            "living.follow_secs",
            format!("is {}", l.follow_secs),
            "look at kept posts every 5 to 86400 seconds (60 is the default)",
        );
    }
    if l.follow_batch == 0 || l.follow_batch > 1000 {
        p.bad(
            "living.follow_batch",
            format!("is {}", l.follow_batch),
            "look at 1 to 1000 kept posts a round",
        );
    }
    if l.max_pending_rechecks == 0 || l.max_pending_rechecks > 100 {
        p.bad(
            "living.max_pending_rechecks",
            format!("is {}", l.max_pending_rechecks),
            "let 1 to 100 re-checks wait at once (2 is the default)",
        );
    }
    if l.rematch_batch == 0 || l.rematch_batch > 100_000 {
        p.bad(
            "living.rematch_batch",
            format!("is {}", l.rematch_batch),
            "match 1 to 100000 kept claims a round",
        );
    }
}
