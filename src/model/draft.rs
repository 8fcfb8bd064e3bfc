//! The pipeline's answer before it is posted: [`Draft`] (the text, the only URLs it may carry,
//! its verdict) and [`Outcome`] (how a job ends). Read by the job record and by the verify
//! stage's record alike, so it sits apart from both.

use serde::{Deserialize, Serialize};

/// How a job ends. Closed: each new case must be handled by the composer and the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A reply that says what is (in)accurate and why.
    Reply,
    /// The requester is over quota: one polite notice.
    QuotaNotice,
    /// The post was already answered: point to the earlier reply.
    AlreadyAnswered,
    /// The post makes no checkable claim (the query generator said "none").
    NothingToCheck,
    /// No credible evidence either way: an honest "could not verify" with an accuracy nudge.
    Insufficient,
    /// The post is not public: a direct message to the requester says why it is not checked.
    NotPublic,
    /// A command was carried out (or refused): a direct message to whoever gave it says so.
    Acknowledged,
    /// The day's LLM budget is spent: one polite notice per requester and day.
    BudgetNotice,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Reply => "reply",
            Outcome::QuotaNotice => "quota_notice",
            Outcome::AlreadyAnswered => "already_answered",
            Outcome::NothingToCheck => "nothing_to_check",
            Outcome::Insufficient => "insufficient",
            Outcome::NotPublic => "not_public",
            Outcome::Acknowledged => "acknowledged",
            Outcome::BudgetNotice => "budget_notice",
        }
    }
}

/// The reply text chosen by the pipeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Draft {
    pub outcome: Outcome,
    pub text: String,
    /// The only URLs the reply may contain (the evidence's; empty without retrieval).
    pub urls: Vec<String>,
    /// The verdict a reply states (`None` for notices and the honest fallbacks).
    #[serde(default)]
    pub verdict: Option<super::verdict::Verdict>,
    /// The post's stance toward the claim of the fact-checks the reply names (`None`: no
    /// fact-check named; the verdict, if any, is the model's reading of the post itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stance: Option<super::stance::PostStance>,
}
