//! Draft verification by debate (MAD-Sherlock, seed 004): the persisted transcript. Every turn
//! of every debate is stored as it is made, so a crash resumes the debate at the turn it lost;
//! the outcome is a closed set.

use serde::{Deserialize, Serialize};

use super::job::Draft;

/// An agent's verdict on a draft: is every factual sentence supported by the evidence, and
/// does the verdict follow from it?
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Support {
    Supported,
    Unsupported,
}

impl Support {
    pub fn as_str(self) -> &'static str {
        match self {
            Support::Supported => "supported",
            Support::Unsupported => "unsupported",
        }
    }
}

/// One agent's answer in one round (round 0: its independent opinion).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    pub agent: usize,
    pub round: usize,
    pub support: Support,
    pub reasons: String,
    /// The draft's sentences the agent finds unsupported, with why.
    pub objections: Vec<String>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// How a debate ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum DebateEnd {
    /// Every agent's latest turn gave this verdict.
    Agreed { support: Support, round: usize },
    /// The agents still disagreed after the last round: the objections stand.
    Contested { rounds: usize },
}

/// One debate: its turns in order, and its end once reached.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Debate {
    pub turns: Vec<Turn>,
    pub end: Option<DebateEnd>,
}

impl Debate {
    /// Whether the debate upheld the draft.
    pub fn upheld(&self) -> bool {
        matches!(
            self.end,
            Some(DebateEnd::Agreed {
                support: Support::Supported,
                ..
            })
        )
    }

    /// The objections of the agents whose latest turn rejects the draft.
    pub fn objections(&self, agents: usize) -> Vec<String> {
        let mut out = Vec::new();
        for agent in 0..agents {
            if let Some(t) = self.turns.iter().rev().find(|t| t.agent == agent) {
                if t.support == Support::Unsupported {
                    out.extend(t.objections.iter().cloned());
                    if t.objections.is_empty() && !t.reasons.is_empty() {
                        out.push(t.reasons.clone());
                    }
                }
            }
        }
        out
    }
}

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
