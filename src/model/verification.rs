//! Draft verification by debate (MAD-Sherlock, seed 004): the persisted transcript. Every turn
//! of every debate is stored as it is made, so a crash resumes the debate at the turn it lost;
//! the outcome is a closed set.

use serde::{Deserialize, Serialize};

use super::debate::Debate;
use super::draft::Draft;

/// What verification decided. Closed: the trace and the metrics name each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verified {
    /// Verification is off for this draft (by config, a notice, no evidence to check against).
    NotNeeded,
    /// The agents upheld the draft: posted as drafted.
    Upheld,
    /// Objections survived; the revised draft was upheld and replaces it.
    Revised,
    /// The revision was contested too: the honest insufficient-evidence reply replaces it.
    Withdrawn,
}

impl Verified {
    pub fn as_str(self) -> &'static str {
        match self {
            Verified::NotNeeded => "not_needed",
            Verified::Upheld => "upheld",
            Verified::Revised => "revised",
            Verified::Withdrawn => "withdrawn",
        }
    }
}

/// The verify stage's persisted record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    /// The debate on the draft as first written.
    pub first: Debate,
    /// The draft revised with the surviving objections (one revision at most).
    pub revision: Option<Draft>,
    /// The debate on the revision.
    pub second: Option<Debate>,
    pub outcome: Option<Verified>,
}
