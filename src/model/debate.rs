//! A debate (MAD-Sherlock, seed 004): agents' turns, round by round, and how it ended. Used
//! to verify drafts (`verification`) and to judge whether a post uses its image in context
//! (`retrieval::ImageContext`). Imports nothing: both records build on it.

use serde::{Deserialize, Serialize};

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
