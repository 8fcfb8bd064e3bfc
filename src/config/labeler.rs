//! `[bluesky.labeler]`: the Bluesky account as a labeler. Which triggers' verdicts
//! become labels, replies or both, how sure a verdict must be to label a post, and when labels
//! expire. Labels are served by Ozone beside the daemon (README: Deploy → Labeler).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LabelerConfig {
    /// The account is a labeler (`musebot labeler setup` declared it, Ozone serves its labels).
    pub enabled: bool,
    /// A mention's verdict: "reply" (a reply only), "label" (a label only), or "both".
    pub mentions: Channel,
    /// A watched hashtag's post.
    pub hashtags: Channel,
    /// A moderator's `check`.
    pub flags: Channel,
    /// How sure a verdict must be to become a label: "drafted" (any verdict), "verified" (the
    /// debate upheld it, or verification is off), "fact_check" (a published fact-check of the
    /// same claim decides it). Below it, the job only replies (unless its channel is "label":
    /// then nothing is posted).
    pub min_confidence: Confidence,
    /// Days after which a label expires (its `exp`); 0: labels do not expire.
    pub expiry_days: u32,
    /// Where the public evidence pages listen (`host:port`, behind the operator's TLS
    /// proxy); "" serves none.
    pub evidence_listen: String,
    /// The public URL of those pages (`https://…/labels`), named in every label's
    /// description; "" names none.
    pub evidence_url: String,
}

pub use crate::model::Channel;

/// How a verdict was reached, weakest first (ordered: `min_confidence` compares).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// The pipeline's verdict.
    Drafted,
    /// Upheld (or revised and upheld) by the verifying debate, or verification is off.
    Verified,
    /// A published fact-check of the same claim decides the reply (and the debate did not
    /// withdraw it).
    FactCheck,
}

impl Confidence {
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Drafted => "drafted",
            Confidence::Verified => "verified",
            Confidence::FactCheck => "fact_check",
        }
    }
}

impl Default for LabelerConfig {
    fn default() -> Self {
        LabelerConfig {
            enabled: false,
            mentions: Channel::Both,
            hashtags: Channel::Label,
            flags: Channel::Both,
            min_confidence: Confidence::Verified,
            expiry_days: 0,
            evidence_listen: String::new(),
            evidence_url: String::new(),
        }
    }
}
