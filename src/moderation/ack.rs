//! The bot's own words for each command's acknowledgement (short, plain, no untrusted text
//! but the moderator's own tag and id, already normalised by the parser), in the asker's
//! language (`locales/<lang>.toml`, `ack_*` keys; see [`crate::words`]).

use minijinja::context;

use crate::model::{TagPolicy, TagWatch};
use crate::words::say;

/// `watch` past `moderation.max_watched_tags`.
pub fn too_many_tags(lang: &str, tag: &str, max: usize) -> String {
    say(lang, "ack_too_many_tags", context! { tag, max })
}

pub fn watch(lang: &str, tag: &str, new: bool, p: &TagPolicy) -> String {
    if new {
        let ctx =
            context! { tag, per_day => p.replies_per_day, window => p.author_window_hours, max_age => p.max_age_hours };
        say(lang, "ack_watch_new", ctx)
    } else {
        say(lang, "ack_watch_same", context! { tag })
    }
}

pub fn unwatch(lang: &str, tag: &str, was: bool) -> String {
    say(
        lang,
        if was { "ack_unwatch" } else { "ack_unwatch_none" },
        context! { tag },
    )
}

pub fn pause(lang: &str, changed: bool) -> String {
    say(lang, if changed { "ack_pause" } else { "ack_pause_same" }, ())
}

pub fn resume(lang: &str, changed: bool) -> String {
    say(lang, if changed { "ack_resume" } else { "ack_resume_same" }, ())
}

/// `show_ids`: list the oldest held drafts' ids (only where the acknowledgement is private: on
/// Bluesky it is a public reply, and the ids name the posts under review).
pub fn status(
    lang: &str,
    watches: &[TagWatch],
    held: &[String],
    paused: bool,
    opted_out: usize,
    show_ids: bool,
    reports: Option<ReportsStatus>,
) -> String {
    let tags: Vec<String> = watches.iter().map(|w| format!("#{}", w.tag)).collect();
    let mut text = say(
        lang,
        "ack_status",
        context! { paused, tags => tags.join(" "), opted_out, held => held.len() },
    );
    // The oldest few, so a moderator can approve or reject them by id.
    if show_ids {
        for id in held.iter().take(5) {
            text.push_str(&format!("\n- {id}"));
        }
    } else if !held.is_empty() {
        text.push(' ');
        text.push_str(&say(lang, "ack_status_ids_elsewhere", ()));
    }
    // Only in a private acknowledgement: counts of reported posts are the moderators' business.
    if let (true, Some(r)) = (show_ids, reports) {
        text.push('\n');
        text.push_str(&say(
            lang,
            "ack_status_reports",
            context! { on => r.on, open => r.open, pending => r.pending },
        ));
    }
    text
}

/// What `status` says of reports: followed or not, reported posts being checked, findings
/// not yet delivered.
#[derive(Debug, Clone, Copy)]
pub struct ReportsStatus {
    pub on: bool,
    pub open: usize,
    pub pending: usize,
}

/// `reports on|off`: what the bot does with reports now.
pub fn reports(lang: &str, on: bool) -> String {
    say(lang, if on { "ack_reports_on" } else { "ack_reports_off" }, ())
}

pub fn stop(lang: &str) -> String {
    say(lang, "ack_stop", ())
}

pub fn start(lang: &str) -> String {
    say(lang, "ack_start", ())
}

pub fn check(lang: &str, url: &str) -> String {
    say(lang, "ack_check", context! { url })
}

/// `check <url>` found no post there: why, in the bot's own words only (the platform's
/// error text is logged, never posted — on Bluesky the acknowledgement is public).
pub fn not_found(lang: &str, url: &str, gone: bool) -> String {
    let why = say(lang, if gone { "why_post_gone" } else { "why_post_unreadable" }, ());
    say(lang, "ack_not_found", context! { url, why })
}

pub fn usage(lang: &str, verb: &str) -> String {
    let how = match verb {
        "watch" | "unwatch" => say(lang, "ack_usage_tag", context! { verb }),
        "approve" | "reject" => say(lang, "ack_usage_draft", context! { verb }),
        "reports" => say(lang, "ack_usage_alone", context! { verb => "reports on | reports off" }),
        other => say(lang, "ack_usage_alone", context! { verb => other }),
    };
    say(lang, "ack_usage", context! { how })
}

pub fn no_such_draft(lang: &str, id: &str) -> String {
    say(lang, "ack_no_such_draft", context! { id })
}

pub fn already_decided(lang: &str, id: &str) -> String {
    say(lang, "ack_already_decided", context! { id })
}

pub fn approved(lang: &str, id: &str) -> String {
    say(lang, "ack_approved", context! { id })
}

pub fn rejected(lang: &str, id: &str) -> String {
    say(lang, "ack_rejected", context! { id })
}

/// `recheck`: set, or why the answer can be updated no more (`gone`: deleted).
pub fn recheck(lang: &str, closed: Option<bool>) -> String {
    match closed {
        None => say(lang, "ack_recheck", ()),
        Some(gone) => {
            let why = say(lang, if gone { "why_gone" } else { "why_max_updates" }, ());
            say(lang, "ack_recheck_closed", context! { why })
        }
    }
}

/// `recheck` or `withdraw` where the bot has no answer.
pub fn no_answer_here(lang: &str) -> String {
    say(lang, "ack_no_answer_here", ())
}

pub fn withdrawn(lang: &str, parts: usize) -> String {
    say(lang, "ack_withdrawn", context! { parts })
}

/// Where a watched tag's verdicts go (labeler mode), after the watch's own acknowledgement.
pub fn channel(lang: &str, channel: crate::model::Channel) -> String {
    let key = match channel {
        crate::model::Channel::Label => "ack_channel_label",
        crate::model::Channel::Reply => "ack_channel_reply",
        crate::model::Channel::Both => "ack_channel_both",
    };
    say(lang, key, ())
}

/// `label`: the post carries the bot's label now (its value, as declared).
pub fn labelled(lang: &str, value: crate::model::LabelValue) -> String {
    let name = say(lang, &format!("{}_name", value.key()), ());
    say(lang, "ack_labelled", context! { value => name })
}

/// `unlabel`: negated (`true`), or there was no label of the bot's.
pub fn unlabelled(lang: &str, was: bool) -> String {
    say(lang, if was { "ack_unlabelled" } else { "ack_no_label" }, ())
}

/// `label` on an answer whose verdict has no label ("could not verify").
pub fn label_none(lang: &str) -> String {
    say(lang, "ack_label_none", ())
}

/// `label`/`unlabel` where labels are off (Mastodon, or the labeler not enabled).
pub fn labels_off(lang: &str) -> String {
    say(lang, "ack_labels_off", ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acknowledgements_speak_the_askers_language() {
        assert_eq!(
            pause("en", true),
            "Paused: hashtag auto-replies stop until `resume`; mentions are still answered."
        );
        assert!(pause("de", true).starts_with("Pausiert"));
        assert_eq!(
            usage("en", "watch"),
            "I did not understand that command. Write it alone after my handle: watch #tag (one tag)."
        );
        assert!(
            usage("ja", "approve").contains("approve <下書きID>"),
            "{}",
            usage("ja", "approve")
        );
        let p = TagPolicy::default();
        assert!(watch("es", "vote", true, &p).starts_with("Sigo #vote"));
        assert!(status("nl", &[], &["a".into()], true, 1, false, None).ends_with("Hun id's staan op de beheerpagina."));
    }
}
