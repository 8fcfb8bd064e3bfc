//! Labels: a verdict as a label on the checked post, for everyone who subscribes to
//! the bot's labeler on Bluesky, instead of or beside a reply (`[bluesky.labeler]`). This file
//! is the policy — which job's verdict becomes which label, and whether the job still replies;
//! [`declare`] is the labeler's declaration, [`setup`] the command that writes it, [`evidence`]
//! the public pages behind the labels. The label
//! itself is emitted by the worker's `Label` stage through Ozone
//! (`platform::bluesky::labels`).

pub mod declare;
pub mod evidence;
pub mod setup;

use crate::config::{Channel, Confidence, LabelerConfig};
use crate::model::{Cause, Job, JobLabel, LabelValue, Outcome, Verified};

/// What compose does with a job's verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The label to emit, if any.
    pub label: Option<JobLabel>,
    /// Whether the reply's parts are posted too.
    pub reply: bool,
}

/// The channel a job's trigger is routed by (commands and re-checks are not labelled here: a
/// re-check changes the label its answer put on, `worker/recheck.rs`).
fn channel(config: &LabelerConfig, cause: &Cause, tag: Option<Channel>) -> Channel {
    match cause {
        Cause::Mention => config.mentions,
        Cause::HashtagHit { .. } => tag.unwrap_or(config.hashtags),
        Cause::ModeratorFlag { .. } => config.flags,
        // A report's channel comes from `[moderation.reports] channel`.
        Cause::Report { .. } => tag.unwrap_or(Channel::Reply),
        // A watched post: a label, never an unasked reply.
        Cause::Watch { .. } => Channel::Label,
        Cause::Command { .. } | Cause::Recheck { .. } => Channel::Reply,
    }
}

/// How the job's verdict was reached: a deciding published fact-check of the same claim (not
/// withdrawn by the debate) > upheld by the debate (or verification off with evidence) > drafted.
pub fn confidence(job: &Job) -> Confidence {
    let outcome = job.verification.as_ref().and_then(|v| v.outcome);
    if outcome == Some(Verified::Withdrawn) {
        return Confidence::Drafted;
    }
    let decided = job.retrieval.as_ref().is_some_and(|r| !r.deciding_reviews().is_empty());
    let with_evidence = job.draft.as_ref().is_some_and(|d| !d.urls.is_empty());
    match outcome {
        _ if decided && with_evidence => Confidence::FactCheck,
        Some(Verified::Upheld | Verified::Revised) => Confidence::Verified,
        Some(Verified::NotNeeded) if with_evidence => Confidence::Verified,
        _ => Confidence::Drafted,
    }
}

/// The label value a composed job may carry: a reply with a verdict that has one, sure enough.
pub fn value(config: &LabelerConfig, job: &Job) -> Option<LabelValue> {
    let draft = job.draft.as_ref()?;
    if draft.outcome != Outcome::Reply {
        return None;
    }
    let value = LabelValue::of(draft.verdict?)?;
    // A watched post is labelled only on a published fact-check of its very claim, and so is
    // a re-check of its answer.
    let least = match &job.trigger.cause {
        Cause::Watch { .. } => Confidence::FactCheck,
        Cause::Recheck { of, .. } if crate::model::is_watch_job_id(job.trigger.platform, of) => Confidence::FactCheck,
        _ => config.min_confidence,
    };
    (confidence(job) >= least).then_some(value)
}

/// What a freshly composed answer does: its label (a platform with labels — Bluesky —, labeler enabled, the trigger's
/// channel labels, a value sure enough) and whether it still replies — always when its
/// channel replies; with the `label` channel only when no label can be put on and someone
/// asked (a mention is answered either way; a hashtag hit or a flag with no label posts nothing).
/// `tag`: the watched tag's own channel (`watch #tag label`), when a moderator set one.
pub fn decide(config: &LabelerConfig, job: &Job, has_labels: bool, tag: Option<Channel>) -> Decision {
    let reply_only = Decision {
        label: None,
        reply: true,
    };
    if !config.enabled || !has_labels {
        return reply_only;
    }
    let channel = channel(config, &job.trigger.cause, tag);
    if !channel.labels() {
        return reply_only;
    }
    let Some(target) = job.target.as_ref() else {
        return reply_only;
    };
    let label = value(config, job).map(|v| JobLabel {
        uri: target.id.clone(),
        // The version the resolve stage read and the verdict is about (else the label stage
        // reads the current one).
        cid: target.version.clone().unwrap_or_default(),
        create: vec![v],
        negate: Vec::new(),
        expires: expiry(config, chrono::Utc::now()),
        asked_at: None,
        sent_at: None,
    });
    let asked = matches!(job.trigger.cause, Cause::Mention);
    let reply = channel.replies() || (label.is_none() && asked);
    Decision { label, reply }
}

/// When a label created now expires.
pub fn expiry(config: &LabelerConfig, now: chrono::DateTime<chrono::Utc>) -> Option<chrono::DateTime<chrono::Utc>> {
    (config.expiry_days > 0).then(|| now + chrono::Duration::days(i64::from(config.expiry_days)))
}

#[cfg(test)]
mod tests;
