//! The verdict of a reply: a closed set the LLM chooses from (as structured output), worded by
//! the bot itself. Free text in a post, a page or the model's explanation can never choose
//! how the bot states its verdict.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Accurate,
    Inaccurate,
    Misleading,
    MissingContext,
    Unverifiable,
}

impl Verdict {
    pub const ALL: [Verdict; 5] = [
        Verdict::Accurate,
        Verdict::Inaccurate,
        Verdict::Misleading,
        Verdict::MissingContext,
        Verdict::Unverifiable,
    ];

    /// The word the LLM answers with (its JSON schema's enum).
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Accurate => "accurate",
            Verdict::Inaccurate => "inaccurate",
            Verdict::Misleading => "misleading",
            Verdict::MissingContext => "missing_context",
            Verdict::Unverifiable => "unverifiable",
        }
    }

    /// The bot's own sentence for the verdict: the only way a reply states one.
    /// The key of the bot's sentence for the verdict in `locales/<lang>.toml`.
    pub fn key(self) -> &'static str {
        match self {
            Verdict::Accurate => "verdict_accurate",
            Verdict::Inaccurate => "verdict_inaccurate",
            Verdict::Misleading => "verdict_misleading",
            Verdict::MissingContext => "verdict_missing_context",
            Verdict::Unverifiable => "verdict_unverifiable",
        }
    }
}
