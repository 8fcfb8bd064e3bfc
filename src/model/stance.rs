//! A post's stance toward the claim of the fact-check it matched: what the post says about
//! the claim, decided once per answer (the `stance` room's `decide`) and read by every path that
//! turns a fact-check into a statement about the post — the reply's wording, labels, the
//! moderators' findings and the review queue, re-checks. Only a post that *asserts* the
//! claim carries the fact-check's verdict as its own.

use serde::{Deserialize, Serialize};

/// What a post says about a claim. Closed: the composer words each one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stance {
    /// It says the claim is so, in its own voice: the only stance a verdict or label is about.
    Asserts,
    /// It says the claim is false (debunks, corrects, mocks it).
    Denies,
    /// It asks whether the claim is true.
    Asks,
    /// It reports that the claim circulates without making it its own.
    Mentions,
    /// None of the above could be told apart with confidence: the bot talks about the claim.
    Unclear,
}

impl Stance {
    pub const ALL: [Stance; 5] = [
        Stance::Asserts,
        Stance::Denies,
        Stance::Asks,
        Stance::Mentions,
        Stance::Unclear,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Stance::Asserts => "asserts",
            Stance::Denies => "denies",
            Stance::Asks => "asks",
            Stance::Mentions => "mentions",
            Stance::Unclear => "unclear",
        }
    }

    /// The key of the stance's name in `locales/<lang>.toml` (moderators read it).
    pub fn name_key(self) -> &'static str {
        match self {
            Stance::Asserts => "stance_name_asserts",
            Stance::Denies => "stance_name_denies",
            Stance::Asks => "stance_name_asks",
            Stance::Mentions => "stance_name_mentions",
            Stance::Unclear => "stance_name_unclear",
        }
    }
}

/// Who decided a stance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StanceBy {
    /// The shipped stance model (word rules, cue features and the multilingual embeddings).
    Model,
    /// The word rules alone (no multilingual model configured): never `Asserts`.
    Rules,
}

/// A post's stance toward one claim, with the model's score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PostStance {
    pub stance: Stance,
    /// The model's probability that the post asserts the claim (0 when the rules decided).
    pub score: f32,
    /// The claim it is toward (the deciding review's claim as its page states it).
    pub claim: String,
    pub by: StanceBy,
    /// The LLM's reading, where it gave a second opinion (`verify.stance`; `Unclear`: it named
    /// no stance): a sentence beyond the neutral one needed both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub second_opinion: Option<Stance>,
}

impl PostStance {
    /// An asserting stance toward `claim` (tests: a post whose verdict the checks decide).
    #[cfg(test)]
    pub fn asserting(claim: &str) -> PostStance {
        PostStance {
            stance: Stance::Asserts,
            score: 1.0,
            claim: claim.into(),
            by: StanceBy::Model,
            second_opinion: None,
        }
    }

    /// Whether a verdict about the claim is a verdict about this post.
    pub fn asserts(&self) -> bool {
        self.stance == Stance::Asserts
    }
}
