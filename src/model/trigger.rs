//! What caused a job: a mention of the bot, a post on a watched hashtag, a moderator's
//! flag, or a command. Every source (mention stream, hashtag watch, Bluesky notifications) describes its
//! events as a [`Trigger`], which is all intake needs to know.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::command::Command;
use super::post::{account_key, PlatformKind, Visibility};

/// Why the bot is looking at a post. Closed: traces and metrics name each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Cause {
    /// Someone tagged the bot: they are the requester, and the reply addresses them.
    Mention,
    /// A post on a hashtag that moderators enabled auto-replies for: nobody asked.
    HashtagHit { tag: String },
    /// A moderator (or the operator's `musebot check`) asked about a post.
    ModeratorFlag { moderator: String },
    /// A mention that gives the bot a command (a moderator's, or anyone's `stop`/`start`):
    /// answered with an acknowledgement, never a check.
    Command { command: Command },
    /// A post people reported to the platform's moderators (a Mastodon admin report, a report
    /// in the bot's labeler's Ozone queue): nobody public asked. The finding goes to the
    /// moderators; `report` is the platform's id of the first report that named the post (the
    /// link in the moderators' note), never shown publicly. The trigger's `author` is the
    /// reporter, kept only as a key for bounds; the report's comment is never kept.
    Report {
        report: String,
        /// The reports' reasons as Ozone gives them, short (`misleading`, `spam`, `rude`,
        /// `other`…): the bot closes a report only when every reason is one it can judge.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        reasons: Vec<String>,
    },
    /// A post the network watch saw repeat a published fact-check's claim, asserting it
    /// (`watch`): nobody asked. `review` is the matched review's URL; the job labels the post
    /// (Bluesky) or holds the finding for the moderators (Mastodon), never replies by itself.
    Watch { review: String },
    /// A re-check of an answered post (`living`): the trigger copies the answered one's
    /// (target, author, language); `of` is the answering job, `n` the timer's number, `asked`
    /// whether that answer had a requester (it is addressed again, and nobody else).
    Recheck {
        of: String,
        n: u32,
        why: RecheckWhy,
        asked: bool,
    },
}

impl Cause {
    pub fn as_str(&self) -> &'static str {
        match self {
            Cause::Mention => "mention",
            Cause::HashtagHit { .. } => "hashtag",
            Cause::ModeratorFlag { .. } => "moderator",
            Cause::Command { .. } => "command",
            Cause::Report { .. } => "report",
            Cause::Watch { .. } => "watch",
            Cause::Recheck { .. } => "recheck",
        }
    }
}

/// An account as a trigger describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    /// `user` or `user@domain` (Mastodon), a handle (Bluesky): what the bot writes to address
    /// the account, never what it knows the account by (see [`Account::key`]).
    pub handle: String,
    pub is_bot: bool,
    /// The bot's own account.
    pub is_self: bool,
    /// The profile text carries the `#nobot` opt-out.
    pub nobot: bool,
    /// The account's stable id apart from its name (a handle or an `acct` can be changed and
    /// then taken by someone else): the DID on Bluesky, the account's id on the bot's server on
    /// Mastodon (the notification's `account.id`). `None` in records of older builds.
    #[serde(default)]
    pub id: Option<String>,
}

impl Account {
    /// What rights and memory of this person are keyed by: the stable id (the DID on Bluesky,
    /// the account id on Mastodon); the lower-cased handle where a record has none.
    pub fn key(&self) -> String {
        account_key(&self.handle, self.id.as_deref())
    }

    /// Whether two accounts are the same person: by their ids where both carry one, else (a
    /// record of an older build) by the handle, as it was keyed then.
    pub fn same_account(&self, other: &Account) -> bool {
        let id = |a: &Account| a.id.clone().filter(|i| !i.is_empty());
        match (id(self), id(other)) {
            (Some(a), Some(b)) => a == b,
            _ => account_key(&self.handle, None) == account_key(&other.handle, None),
        }
    }
}

/// Why a re-check runs. Closed: traces and metrics name each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "why", content = "detail")]
pub enum RecheckWhy {
    /// A "could not verify" reply's timer (`living.recheck_after`).
    Scheduled,
    /// A review the reply did not name matches its claim (the review's URL).
    Review(String),
    /// The checked post was edited.
    Edited,
    /// The asker or a moderator asked (`recheck`): their account key.
    Asked(String),
}

impl RecheckWhy {
    pub fn as_str(&self) -> &'static str {
        match self {
            RecheckWhy::Scheduled => "scheduled",
            RecheckWhy::Review(_) => "review",
            RecheckWhy::Edited => "edited",
            RecheckWhy::Asked(_) => "asked",
        }
    }
}

/// One event a source saw, before any further request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trigger {
    pub platform: PlatformKind,
    pub cause: Cause,
    /// The source's id of the event (a mention's notification id, a tagged post's id, a
    /// command's id): the job id derives from it, so a re-delivered event is one job.
    pub event_id: String,
    /// The post that carried the event (the mention, the tagged post, the command).
    pub status_id: String,
    /// The post that one replies to, when it is a reply.
    pub in_reply_to_id: Option<String>,
    /// The post that one quotes, when the quote is accepted (Mastodon 4.5+): it is checked
    /// instead of the parent.
    #[serde(default)]
    pub quote_of: Option<String>,
    /// The bot's handle stands in the text itself, not only in the leading run of mentions
    /// that clients pre-fill in a reply. (Records from before this field: assumed true.)
    #[serde(default = "yes")]
    pub asked_in_text: bool,
    /// Who wrote the event's post.
    pub author: Account,
    pub visibility: Visibility,
    pub created_at: DateTime<Utc>,
    /// The event post's own text (plain), checked when a mention is top-level.
    pub text: String,
    /// The language its author tagged the event's post with (Mastodon's `language`, Bluesky's
    /// first `langs`), where given: the bot answers the asker in it.
    #[serde(default)]
    pub language: Option<String>,
}

fn yes() -> bool {
    true
}

impl Trigger {
    /// The post this trigger asks about: the quoted post, else the parent, else its own post.
    pub fn target_id(&self) -> &str {
        self.quote_of
            .as_deref()
            .or(self.in_reply_to_id.as_deref())
            .unwrap_or(&self.status_id)
    }

    /// A reply whose only mention of the bot may have been inherited from the parent (the
    /// handle is only in the leading run): whether it is a request depends on the parent.
    pub fn may_be_inherited(&self) -> bool {
        self.cause == Cause::Mention && self.quote_of.is_none() && self.in_reply_to_id.is_some() && !self.asked_in_text
    }

    /// Who asked, and is addressed by the reply: the author of a mention; nobody for a
    /// hashtag hit or a moderator's flag (the reply then mentions no one).
    pub fn requester(&self) -> Option<&Account> {
        match self.cause {
            Cause::Mention | Cause::Command { .. } => Some(&self.author),
            Cause::Recheck { asked: true, .. } => Some(&self.author),
            Cause::HashtagHit { .. }
            | Cause::ModeratorFlag { .. }
            | Cause::Report { .. }
            | Cause::Watch { .. }
            | Cause::Recheck { .. } => None,
        }
    }

    /// The job id: stable, so a re-delivered event maps to the same job. Mentions keep the
    /// `platform:notification` form of the first stores.
    pub fn job_id(&self) -> String {
        let p = self.platform.as_str();
        match &self.cause {
            Cause::Recheck { of, n, .. } => format!("{p}:recheck:{of}:{n}"),
            Cause::Mention => format!("{p}:{}", self.event_id),
            Cause::HashtagHit { .. } => format!("{p}:tag:{}", self.event_id),
            Cause::ModeratorFlag { .. } => format!("{p}:mod:{}", self.event_id),
            Cause::Command { .. } => format!("{p}:cmd:{}", self.event_id),
            Cause::Report { .. } => report_job_id(self.platform, &self.event_id),
            Cause::Watch { .. } => watch_job_id(self.platform, &self.event_id),
        }
    }
}

/// The job id of a watched post: one job per post, whatever it matched and however often the
/// stream delivers it (a restart never labels it twice).
pub fn watch_job_id(platform: PlatformKind, post: &str) -> String {
    format!("{}:watch:{post}", platform.as_str())
}

/// Whether `id` is a watched post's job id on `platform`.
pub fn is_watch_job_id(platform: PlatformKind, id: &str) -> bool {
    id.strip_prefix(platform.as_str())
        .is_some_and(|rest| rest.starts_with(":watch:"))
}

/// The job id of a reported post: however many reports name it, one job.
pub fn report_job_id(platform: PlatformKind, post: &str) -> String {
    format!("{}:report:{post}", platform.as_str())
}

#[cfg(test)]
impl Trigger {
    /// A public top-level mention by `alice` with event id `id`, for tests.
    pub fn test_mention(id: &str) -> Trigger {
        Trigger {
            language: None,
            platform: PlatformKind::Mastodon,
            cause: Cause::Mention,
            event_id: id.into(),
            status_id: format!("m{id}"),
            in_reply_to_id: None,
            quote_of: None,
            asked_in_text: true,
            author: Account {
                handle: "alice".into(),
                is_bot: false,
                is_self: false,
                nobot: false,
                id: None,
            },
            visibility: Visibility::Public,
            created_at: Utc::now(),
            text: String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watched_posts_job_id_is_known_by_its_platform_and_room() {
        let id = watch_job_id(PlatformKind::Bluesky, "at://did:plc:x/app.bsky.feed.post/3k");
        assert!(is_watch_job_id(PlatformKind::Bluesky, &id));
        assert!(!is_watch_job_id(PlatformKind::Mastodon, &id));
        assert!(!is_watch_job_id(PlatformKind::Mastodon, "mastodon:42"));
        assert!(!is_watch_job_id(PlatformKind::Mastodon, "mastodon:tag:watch:1"));
        assert!(is_watch_job_id(
            PlatformKind::Mastodon,
            &watch_job_id(PlatformKind::Mastodon, "42")
        ));
    }
}
