//! `[moderation.reports]`: the posts people flag to moderators — Mastodon's admin reports,
//! the reports sent to the bot's Bluesky labeler (its Ozone queue) — as a trigger of their own,
//! and where each finding goes: to moderators privately (`note`, the default), or beside that
//! a held reply, a public reply, a label, or both.

use serde::{Deserialize, Serialize};

/// Where a report's finding goes besides the moderators' note. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportChannel {
    /// Only the moderators hear of it (a direct message on Mastodon, a comment in Ozone).
    Note,
    /// The note, and a reply drafted for a moderator's `approve` (with a verdict only).
    Review,
    /// The note, and a public reply under the reported post (with a verdict only).
    Reply,
    /// The note, and the verdict as the labeler's label (Bluesky).
    Label,
    /// The note, a public reply and the label.
    Both,
}

impl ReportChannel {
    pub fn as_str(self) -> &'static str {
        match self {
            ReportChannel::Note => "note",
            ReportChannel::Review => "review",
            ReportChannel::Reply => "reply",
            ReportChannel::Label => "label",
            ReportChannel::Both => "both",
        }
    }

    /// The labeler channel a public verdict takes; `None`: nothing public.
    pub fn public(self) -> Option<crate::model::Channel> {
        use crate::model::Channel;
        match self {
            ReportChannel::Note => None,
            ReportChannel::Review | ReportChannel::Reply => Some(Channel::Reply),
            ReportChannel::Label => Some(Channel::Label),
            ReportChannel::Both => Some(Channel::Both),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReportsConfig {
    /// Follow reports: Mastodon's open admin reports (the bot's account needs a role with
    /// "Manage Reports" and a token with `admin:read:reports`), and on Bluesky the open
    /// reports in the bot's labeler's Ozone queue (`[bluesky.labeler] enabled`).
    pub enabled: bool,
    /// Where a finding goes besides the moderators' note: "note", "review", "reply",
    /// "label" or "both". Public channels post only a verdict.
    pub channel: ReportChannel,
    /// Seconds between two reads of the report queue (a notification or the webhook wakes the
    /// Mastodon reader at once).
    pub poll_secs: u64,
    /// Reports older than this many hours when first read are not checked (a first start
    /// does not check the whole backlog).
    pub max_age_hours: u64,
    /// Bluesky: acknowledge the subject in Ozone when a matched fact-check decided the verdict
    /// and every report on it, read again just before, says the post misleads (none later).
    pub acknowledge: bool,
    /// Bluesky: escalate the subject in Ozone when the bot could not verify the post.
    pub escalate: bool,
    /// Where Mastodon's `report.created` webhook is received (`host:port`); empty: none.
    /// Put it behind the reverse proxy Mastodon can reach.
    pub webhook_listen: String,
    /// Environment variable holding the webhook's secret (Mastodon shows it when the webhook
    /// is created).
    pub webhook_secret_env: String,
    /// File holding the webhook's secret (wins over `webhook_secret_env` when set).
    pub webhook_secret_file: String,
}

impl Default for ReportsConfig {
    fn default() -> Self {
        ReportsConfig {
            enabled: false,
            channel: ReportChannel::Note,
            poll_secs: 60,
            max_age_hours: 24,
            acknowledge: true,
            escalate: true,
            webhook_listen: String::new(),
            webhook_secret_env: "MUSEBOT_REPORTS_WEBHOOK_SECRET".into(),
            webhook_secret_file: String::new(),
        }
    }
}
