//! What moderators and users set, persisted: watched hashtags with their policy, opt-outs,
//! and the day's LLM spend the budget counts.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::post::PlatformKind;

/// How a watched hashtag's posts are answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TagPolicy {
    /// Replies a day on this tag, at most (UTC days).
    pub replies_per_day: u32,
    /// At most one reply per author in this many hours (fixed windows).
    pub author_window_hours: u32,
    /// Posts older than this many hours when read are not answered.
    pub max_age_hours: u32,
}

impl Default for TagPolicy {
    fn default() -> Self {
        TagPolicy {
            replies_per_day: 20,
            author_window_hours: 24,
            max_age_hours: 6,
        }
    }
}

/// A hashtag a moderator asked the bot to follow on one platform.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TagWatch {
    pub platform: PlatformKind,
    /// Normalised: lower case, no `#`.
    pub tag: String,
    pub policy: TagPolicy,
    /// Who asked, and when: posts from before this moment are not answered.
    pub by: String,
    pub since: DateTime<Utc>,
    /// Where its posts' verdicts go in labeler mode (`watch #tag label`); `None`: as
    /// `[bluesky.labeler] hashtags` says.
    #[serde(default)]
    pub channel: Option<super::label::Channel>,
}

/// A user who asked the bot to leave them alone (`stop`), until they say `start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OptOut {
    pub platform: PlatformKind,
    /// Lower-case handle.
    pub handle: String,
    pub since: DateTime<Utc>,
}

/// The LLM spend of one UTC day (the budget's counter).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spend {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost: f64,
}
