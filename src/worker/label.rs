//! The label stage (issue 31, labeler mode): the label compose decided on (`labeler::decide`,
//! or a re-check's change) emitted on the checked post through the platform — Bluesky's
//! labeler, Ozone. The last looks come first, as before a first part (paused, opted out,
//! blocked, the post gone, a re-check's answer closed). The intent (`asked_at`) is saved
//! before the call; a job resumed with an intent and no confirmation asks the labeler what
//! it serves on the post and emits only when the event is not in force yet, so `kill -9`
//! between the call and its record labels once.

use super::{Run, StageError, StageOutcome};
use crate::model::{Job, Usage};
use crate::platform::PlatformError;

impl Run<'_> {
    pub(super) async fn label(&self, job: &mut Job) -> Result<StageOutcome, StageError> {
        let mut label = job.label.clone().expect("the label stage runs with a label");
        if label.asked_at.is_none() {
            if let Some(reason) = self.no_longer_wanted(job) {
                return Ok(StageOutcome::Skip(reason));
            }
            if super::recheck::of(job).is_some() {
                if let Some(reason) = self.recheck_still_wanted(job)? {
                    return Ok(StageOutcome::Skip(reason));
                }
            }
            if let Some(reason) = self.target_gone(job).await? {
                return Ok(StageOutcome::Skip(reason));
            }
        } else {
            // Resumed after the call may have reached the labeler: what does it serve?
            let on = self.platform.labels_on(&label.uri).await.map_err(platform_error)?;
            let done = label.create.iter().all(|v| on.contains(v)) && label.negate.iter().all(|v| !on.contains(v));
            if done {
                tracing::info!(uri = %label.uri, "the label was emitted before a stop; not emitted again");
                label.sent_at = Some(chrono::Utc::now());
                job.label = Some(label);
                self.record_label(job)?;
                self.label_only_update(job).await?;
                return Ok(StageOutcome::Next(Usage::default()));
            }
        }
        if label.cid.is_empty() {
            label.cid = match self.platform.cid_of(&label.uri).await {
                Ok(cid) => cid,
                Err(PlatformError::Gone(e)) => {
                    return Ok(StageOutcome::Skip(crate::model::SkipReason::TargetUnavailable(e)))
                }
                Err(e) => return Err(platform_error(e)),
            };
        }
        label.asked_at = Some(chrono::Utc::now());
        job.label = Some(label.clone());
        self.worker.store.save(job)?;
        self.platform.emit_label(&label).await.map_err(platform_error)?;
        let values: Vec<&str> = label.create.iter().map(|v| v.as_str()).collect();
        let negated: Vec<&str> = label.negate.iter().map(|v| v.as_str()).collect();
        tracing::info!(uri = %label.uri, create = ?values, negate = ?negated, "label emitted");
        self.worker.metrics.living("label");
        label.sent_at = Some(chrono::Utc::now());
        job.label = Some(label);
        self.record_label(job)?;
        self.label_only_update(job).await?;
        Ok(StageOutcome::Next(Usage::default()))
    }

    /// A re-check of a label-only answer posts nothing: its update (the verdict now, the
    /// reviews named) is recorded here.
    async fn label_only_update(&self, job: &Job) -> Result<(), StageError> {
        if job.plan.as_ref().is_some_and(|p| p.parts.is_empty()) {
            self.record_update(job).await?;
        }
        Ok(())
    }

    /// A re-check's label change, recorded in the kept answer it re-checks (the first
    /// answer's label is recorded when the answer is kept).
    fn record_label(&self, job: &Job) -> Result<(), StageError> {
        let (Some(of), Some(label)) = (super::recheck::of(job), job.label.as_ref()) else {
            return Ok(());
        };
        let Some(mut kept) = self.worker.store.kept(of)? else {
            return Ok(());
        };
        kept.label = label.create.first().map(|v| (*v, label.cid.clone()));
        self.worker.store.save_kept(&kept)?;
        Ok(())
    }
}

fn platform_error(e: PlatformError) -> StageError {
    match e {
        PlatformError::RateLimited { until, message } => StageError::Parked { until, message },
        PlatformError::Fatal(e) => StageError::Fatal(e),
        other => StageError::Transient(other.to_string()),
    }
}
