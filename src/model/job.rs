//! A job: one trigger (a mention, a hashtag hit, a moderator's flag) being answered. Its stage
//! outputs are persisted one by one; the next stage to run is derived from which outputs
//! exist, so a restart resumes at the first missing one and never repeats finished LLM work.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::draft::Draft;
use super::post::{Post, Visibility};
use super::retrieval::Retrieval;
use super::trigger::Trigger;
use super::usage::Usage;

/// The record format this build writes. Records of an older format are upgraded on read
/// ([`super::decode_job`]); a newer one is refused with a message that says so.
pub const SCHEMA: u32 = 2;

/// Why a job ends without a post.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    OwnPost,
    /// Someone asked about one of the bot's own replies.
    TargetIsOwnPost,
    RequesterIsBot,
    NoBot,
    OverQuotaSilenced,
    TargetUnavailable(String),
    /// The bot's handle was only inherited from a parent that already mentions the bot (a
    /// client pre-filled it): nobody asked.
    NotAsked,
    /// A moderator's command from someone who is not a moderator (ignored, logged).
    NotModerator,
    /// The operator blocked the account or its server.
    Blocked,
    /// The author said "stop".
    OptedOut,
    /// A moderator rejected the held draft (the note says why).
    Rejected(String),
    /// The held draft waited longer than `moderation.review_expiry_secs`.
    ReviewExpired,
    /// A watched hashtag's policy declined the post (paused, a reply, too old, the tag's or
    /// the author's cap, nothing checkable…): why.
    Policy(String),
    /// A re-check reached what the thread already says (or the thread is closed to updates:
    /// withdrawn, gone, `max_updates` reached): nothing is posted. Why.
    Unchanged(String),
}

impl SkipReason {
    pub fn as_str(&self) -> &'static str {
        match self {
            SkipReason::OwnPost => "own_post",
            SkipReason::TargetIsOwnPost => "target_is_own_post",
            SkipReason::RequesterIsBot => "requester_is_bot",
            SkipReason::NoBot => "nobot",
            SkipReason::OverQuotaSilenced => "over_quota_silenced",
            SkipReason::TargetUnavailable(_) => "target_unavailable",
            SkipReason::NotAsked => "not_asked",
            SkipReason::NotModerator => "not_moderator",
            SkipReason::Blocked => "blocked",
            SkipReason::OptedOut => "opted_out",
            SkipReason::Policy(_) => "policy",
            SkipReason::Rejected(_) => "rejected",
            SkipReason::ReviewExpired => "review_expired",
            SkipReason::Unchanged(_) => "unchanged",
        }
    }
}

/// The reply split into thread parts, ready to post.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub reply_to: String,
    pub visibility: Visibility,
    pub parts: Vec<String>,
    /// The parts were re-split counting text as written, after the server refused one as too long.
    #[serde(default)]
    pub as_written: bool,
    /// Times the parts were split again shorter after the server refused them counted as
    /// written (a server that counts code points: a ZWJ emoji sequence is one grapheme, up to
    /// ten code points): each halves the limit.
    #[serde(default)]
    pub shrink: u8,
    /// A correction made by editing `reply_to` (the bot's own first part) with `parts[0]`
    /// instead of posting under it (`living.corrections = "edit"`, Mastodon).
    #[serde(default)]
    pub edit: bool,
}

/// Where a job stands overall.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    /// Every part confirmed posted.
    Done,
    Skipped(SkipReason),
    Failed(String),
}

/// One finished stage, for the trace and the metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageRecord {
    pub stage: Stage,
    pub millis: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// LLM calls answered in the stage, and how many of them ran one after another.
    #[serde(default)]
    pub llm_calls: u32,
    #[serde(default)]
    pub llm_in_sequence: u32,
}

/// The stages in order. The next one is derived by [`Job::next_stage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Resolve,
    Draft,
    /// A debate checks the draft against its evidence (may revise or withdraw it).
    Verify,
    Compose,
    /// A report's finding delivered to the moderators (`Cause::Report` only).
    Note,
    /// The draft waits for a moderator's approval (only when its trigger's kind is reviewed).
    Review,
    /// The verdict as a label on the checked post (Bluesky labeler mode, by policy).
    Label,
    Post,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Resolve => "resolve",
            Stage::Draft => "draft",
            Stage::Verify => "verify",
            Stage::Compose => "compose",
            Stage::Note => "note",
            Stage::Review => "review",
            Stage::Label => "label",
            Stage::Post => "post",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// The record format ([`SCHEMA`] when written by this build).
    pub schema: u32,
    pub id: String,
    pub trigger: Trigger,
    pub status: Status,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Failed attempts so far (transient errors); the job fails for good past a bound.
    pub attempts: u32,
    /// Not before this time (set after a transient failure).
    pub retry_at: Option<DateTime<Utc>>,
    /// The last transient failure, until a stage succeeds again.
    #[serde(default)]
    pub last_error: Option<String>,
    pub target: Option<Post>,
    pub draft: Option<Draft>,
    pub plan: Option<Plan>,
    /// The retrieval pipeline's step outputs (queries, links, pages, evidence).
    #[serde(default)]
    pub retrieval: Option<Retrieval>,
    /// The verify stage's debates and outcome (absent before it ran, and in older records).
    #[serde(default)]
    pub verification: Option<super::verification::Verification>,
    /// Set when the draft is held for a moderator (`moderation.review`).
    #[serde(default)]
    pub review: Option<super::review::Review>,
    /// The label compose decided on (Bluesky labeler mode), until and after it is emitted.
    #[serde(default)]
    pub label: Option<super::label::JobLabel>,
    /// A report's finding for the moderators, until and after it is delivered.
    #[serde(default)]
    pub note: Option<super::report::Note>,
    /// Ids of the parts confirmed posted, in order.
    pub posted: Vec<String>,
    /// The public URL of the first part, once posted (kept for the "already answered" pointer
    /// even when the thread finishes in a later run).
    #[serde(default)]
    pub first_url: Option<String>,
    pub trace: Vec<StageRecord>,
}

impl Job {
    pub fn new(trigger: Trigger) -> Job {
        let now = Utc::now();
        Job {
            schema: SCHEMA,
            id: trigger.job_id(),
            trigger,
            status: Status::Pending,
            created_at: now,
            updated_at: now,
            attempts: 0,
            retry_at: None,
            last_error: None,
            target: None,
            draft: None,
            plan: None,
            retrieval: None,
            verification: None,
            review: None,
            label: None,
            note: None,
            posted: Vec::new(),
            first_url: None,
            trace: Vec::new(),
        }
    }

    /// Whether a report of the same post by another account takes over this report job: the
    /// job ended on its reporter alone (blocked, opted out, over its window) before the post
    /// was read, so whoever reported first cannot keep a post from ever being checked. (A
    /// post whose author opted out or is blocked is skipped for another reason, `Policy`.) A report by the same
    /// reporter (a re-read) takes over nothing.
    pub fn reopened_by(&self, report: &Trigger) -> bool {
        let reporter_bound = matches!(
            self.status,
            Status::Skipped(SkipReason::Blocked | SkipReason::OptedOut | SkipReason::OverQuotaSilenced)
        );
        // Never a job that read the post or drafted: a draft a moderator approved must not
        // come back as another draft under the same approval.
        let unread = self.target.is_none() && self.draft.is_none() && self.review.is_none();
        matches!(self.trigger.cause, super::trigger::Cause::Report { .. })
            && matches!(report.cause, super::trigger::Cause::Report { .. })
            && reporter_bound
            && unread
            && !self.trigger.author.same_account(&report.author)
    }

    /// The first stage whose output is missing, or `None` when nothing is left to do (the job
    /// is finished, or every part of its reply is posted).
    pub fn next_stage(&self) -> Option<Stage> {
        if self.status != Status::Pending {
            return None;
        }
        let verified = self.verification.as_ref().is_some_and(|v| v.outcome.is_some());
        match (&self.target, &self.draft, &self.plan) {
            (None, _, _) => Some(Stage::Resolve),
            (Some(_), None, _) => Some(Stage::Draft),
            (Some(_), Some(_), None) if !verified => Some(Stage::Verify),
            (Some(_), Some(_), None) => Some(Stage::Compose),
            // The moderators hear of a report first, before any public step (held or not).
            (Some(_), Some(_), Some(_)) if self.note.as_ref().is_some_and(|n| n.pending()) => Some(Stage::Note),
            (Some(_), Some(_), Some(_)) if self.review.as_ref().is_some_and(|r| r.decision.is_none()) => {
                Some(Stage::Review)
            }
            (Some(_), Some(_), Some(_)) if self.label.as_ref().is_some_and(|l| l.sent_at.is_none()) => {
                Some(Stage::Label)
            }
            (Some(_), Some(_), Some(plan)) if self.posted.len() < plan.parts.len() => Some(Stage::Post),
            (Some(_), Some(_), Some(_)) => None,
        }
    }

    /// Tokens of every finished stage.
    pub fn tokens(&self) -> Usage {
        self.trace.iter().fold(Usage::default(), |u, r| Usage {
            prompt_tokens: u.prompt_tokens + r.prompt_tokens,
            completion_tokens: u.completion_tokens + r.completion_tokens,
        })
    }

    /// The key under which the reply to this job's target is recorded (`platform:post id`).
    pub fn target_key(&self, target_id: &str) -> String {
        format!("{}:{}", self.trigger.platform.as_str(), target_id)
    }
}

/// A reply thread already posted for a target post (`platform:post id` → this), so a second
/// request gets a pointer to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplyRecord {
    pub job_id: String,
    pub reply_ids: Vec<String>,
    pub first_url: Option<String>,
    /// When it was posted (records from before this field: unknown, pruned as old).
    #[serde(default)]
    pub at: Option<DateTime<Utc>>,
}
