//! A report's finding for the moderators (`Cause::Report`): what the `Note` stage delivers,
//! item by item, each once — a direct message thread to the configured moderators on
//! Mastodon, events on the reported subject in the labeler's Ozone on Bluesky. Nothing here is
//! public: a report's finding goes only where the platform's moderators work.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// One thing delivered to the moderators. Closed: the platform maps each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "text")]
pub enum NoteItem {
    /// A direct message part addressed to the moderators (Mastodon); the text carries their
    /// mentions.
    Message(String),
    /// A comment on the subject (Ozone `#modEventComment`): the subject stays open.
    Comment(String),
    /// The subject acknowledged (Ozone `#modEventAcknowledge`): a matched fact-check decided it.
    Acknowledge(String),
    /// The subject escalated (Ozone `#modEventEscalate`): the bot could not verify it.
    Escalate(String),
}

impl NoteItem {
    pub fn as_str(&self) -> &'static str {
        match self {
            NoteItem::Message(_) => "message",
            NoteItem::Comment(_) => "comment",
            NoteItem::Acknowledge(_) => "acknowledge",
            NoteItem::Escalate(_) => "escalate",
        }
    }

    pub fn text(&self) -> &str {
        match self {
            NoteItem::Message(t) | NoteItem::Comment(t) | NoteItem::Acknowledge(t) | NoteItem::Escalate(t) => t,
        }
    }
}

/// The finding as the compose stage wrote it, and how far it is delivered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Note {
    pub items: Vec<NoteItem>,
    /// The platform's id of each item delivered so far, in order (an Ozone event's id; a
    /// direct message's status id, which the next part threads under). Saved after each.
    pub delivered: Vec<String>,
    /// When the last item was delivered.
    #[serde(default)]
    pub done_at: Option<DateTime<Utc>>,
}

impl Note {
    pub fn new(items: Vec<NoteItem>) -> Note {
        Note {
            items,
            delivered: Vec::new(),
            done_at: None,
        }
    }

    pub fn pending(&self) -> bool {
        self.delivered.len() < self.items.len()
    }
}

/// A report reason (`com.atproto.moderation.defs#reasonSpam`,
/// `tools.ozone.report.defs#reasonMisleadingOther`) in short: `spam`, `misleadingother`.
pub fn short_reason(reason: &str) -> String {
    let name = reason.rsplit('#').next().unwrap_or(reason);
    name.strip_prefix("reason").unwrap_or(name).to_lowercase()
}

/// Whether the bot may close a report of these reasons: every one asks whether the post
/// misleads (`misleading`, `misleadingOther`), what a fact-check judges. "Other" (its meaning
/// is in the reporter's comment, which the bot never reads) and the named kinds of misleading
/// (a scam, an impersonation, a bot, spam, elections) are a person's to judge.
pub fn judgeable(reasons: &[String]) -> bool {
    !reasons.is_empty() && reasons.iter().all(|r| r == "misleading" || r == "misleadingother")
}

#[cfg(test)]
mod reason_tests {
    use super::*;

    #[test]
    fn only_misleading_reports_are_the_bots_to_close() {
        let short = |r: &[&str]| r.iter().map(|x| short_reason(x)).collect::<Vec<_>>();
        assert!(judgeable(&short(&["com.atproto.moderation.defs#reasonMisleading"])));
        assert!(judgeable(&short(&[
            "tools.ozone.report.defs#reasonMisleadingOther",
            "com.atproto.moderation.defs#reasonMisleading"
        ])));
        // "Other" says what it is in a comment the bot never reads; a named kind of
        // misleading is not a claim to check.
        assert!(!judgeable(&short(&[
            "tools.ozone.report.defs#reasonMisleadingOther",
            "com.atproto.moderation.defs#reasonOther"
        ])));
        for kind in ["Scam", "Impersonation", "Bot", "Spam", "Elections"] {
            let reason = format!("tools.ozone.report.defs#reasonMisleading{kind}");
            assert!(!judgeable(&short(&[&reason])), "{reason}");
        }
        assert!(!judgeable(&short(&[
            "com.atproto.moderation.defs#reasonMisleading",
            "com.atproto.moderation.defs#reasonRude"
        ])));
        assert!(!judgeable(&short(&["com.atproto.moderation.defs#reasonSpam"])));
        assert!(!judgeable(&[]));
    }
}
