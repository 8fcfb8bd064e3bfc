//! The review queue's records: a drafted reply held for a moderator (`Job::review`), and the
//! moderator's decision, stored apart from the job (the store's `moderation` tree) so that a
//! decision is written once and never overwritten by the worker re-saving the job.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A draft waiting for a moderator (set by the compose stage when the trigger's kind is in
/// `moderation.review`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Review {
    pub since: DateTime<Utc>,
    /// Copied from the store once taken: the post stage runs only after an approval.
    #[serde(default)]
    pub decision: Option<ReviewDecision>,
}

impl Review {
    /// Held from now, undecided.
    pub fn now() -> Review {
        Review {
            since: Utc::now(),
            decision: None,
        }
    }
}

/// Closed: approve → posted exactly once; reject → dropped with the note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "decision")]
pub enum ReviewDecision {
    Approved {
        by: String,
        at: DateTime<Utc>,
    },
    Rejected {
        by: String,
        at: DateTime<Utc>,
        note: String,
    },
}
