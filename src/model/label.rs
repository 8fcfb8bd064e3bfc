//! Labels (Bluesky labeler mode): the closed set of values a verdict becomes, and the label
//! one job emits. A label's value is chosen from the closed set by the bot's verdict and its
//! words come from `locales/` (the declaration), so nothing a post or a page says can name a
//! label.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::verdict::Verdict;

/// Where a verdict goes (labeler mode): a reply, a label, or both — per trigger in
/// `[bluesky.labeler]`, per watched tag by a moderator's `watch #tag label`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    Reply,
    Label,
    Both,
}

impl Channel {
    pub fn labels(self) -> bool {
        matches!(self, Channel::Label | Channel::Both)
    }

    pub fn replies(self) -> bool {
        matches!(self, Channel::Reply | Channel::Both)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Reply => "reply",
            Channel::Label => "label",
            Channel::Both => "both",
        }
    }

    pub fn parse(word: &str) -> Option<Channel> {
        match word.to_lowercase().as_str() {
            "reply" | "replies" => Some(Channel::Reply),
            "label" | "labels" => Some(Channel::Label),
            "both" => Some(Channel::Both),
            _ => None,
        }
    }
}

/// One label value the bot's labeler declares. Closed: the declaration, the locale keys and
/// the mapping from verdicts name each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LabelValue {
    #[serde(rename = "fc-false")]
    False,
    #[serde(rename = "fc-misleading")]
    Misleading,
    #[serde(rename = "fc-missing-context")]
    MissingContext,
    #[serde(rename = "fc-accurate")]
    Accurate,
}

impl LabelValue {
    pub const ALL: [LabelValue; 4] = [
        LabelValue::False,
        LabelValue::Misleading,
        LabelValue::MissingContext,
        LabelValue::Accurate,
    ];

    /// The label's `val` (≤ 128 bytes, lowercase ASCII and `-`: a custom value).
    pub fn as_str(self) -> &'static str {
        match self {
            LabelValue::False => "fc-false",
            LabelValue::Misleading => "fc-misleading",
            LabelValue::MissingContext => "fc-missing-context",
            LabelValue::Accurate => "fc-accurate",
        }
    }

    /// The value `val` names, if it is one of the bot's.
    pub fn parse(val: &str) -> Option<LabelValue> {
        LabelValue::ALL.into_iter().find(|v| v.as_str() == val)
    }

    /// The value a verdict becomes. "Unverifiable" has none: a label that says "could not
    /// tell" would follow the post everywhere and inform nobody.
    pub fn of(verdict: Verdict) -> Option<LabelValue> {
        match verdict {
            Verdict::Inaccurate => Some(LabelValue::False),
            Verdict::Misleading => Some(LabelValue::Misleading),
            Verdict::MissingContext => Some(LabelValue::MissingContext),
            Verdict::Accurate => Some(LabelValue::Accurate),
            Verdict::Unverifiable => None,
        }
    }

    /// The stem of its keys in `locales/` (`<stem>_name`, `<stem>_description`).
    pub fn key(self) -> &'static str {
        match self {
            LabelValue::False => "label_false",
            LabelValue::Misleading => "label_misleading",
            LabelValue::MissingContext => "label_missing_context",
            LabelValue::Accurate => "label_accurate",
        }
    }
}

/// The label event one job emits on its checked post: values created and negated together
/// (a changed verdict negates the old value in the event that creates the new one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobLabel {
    /// The checked post's at-URI and the CID it was read at.
    pub uri: String,
    pub cid: String,
    pub create: Vec<LabelValue>,
    pub negate: Vec<LabelValue>,
    /// When the created values expire (`[bluesky.labeler] expiry_days`); `None`: never.
    #[serde(default)]
    pub expires: Option<DateTime<Utc>>,
    /// Saved before the call: a job resumed with this set and no `sent_at` asks the labeler
    /// what it holds before emitting again.
    #[serde(default)]
    pub asked_at: Option<DateTime<Utc>>,
    /// Saved once the labeler confirmed the event (or already held its labels).
    #[serde(default)]
    pub sent_at: Option<DateTime<Utc>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_decided_verdict_has_one_value_and_values_round_trip() {
        let mut seen = Vec::new();
        for v in Verdict::ALL {
            match (v, LabelValue::of(v)) {
                (Verdict::Unverifiable, None) => {}
                (_, Some(l)) => {
                    assert!(!seen.contains(&l), "{l:?} twice");
                    seen.push(l);
                }
                (v, None) => panic!("{v:?} has no label"),
            }
        }
        assert_eq!(seen.len(), LabelValue::ALL.len());
        for l in LabelValue::ALL {
            assert_eq!(LabelValue::parse(l.as_str()), Some(l));
            assert_eq!(serde_json::to_string(&l).unwrap(), format!("\"{}\"", l.as_str()));
            assert!(l.as_str().bytes().all(|b| b.is_ascii_lowercase() || b == b'-'));
        }
        assert_eq!(LabelValue::parse("!hide"), None);
    }
}
