//! The label stage (labeler mode): the label compose decided on (`labeler::decide`,
//! or a re-check's change) emitted on the checked post through the platform — Bluesky's
//! labeler, Ozone. The last looks come first, as before a first part (paused, opted out,
//! blocked, the post gone, a re-check's answer closed). The intent (`asked_at`) is saved
//! before the call; a job resumed with an intent and no confirmation asks the labeler what
//! it serves on the post and emits only when the event is not in force yet, so `kill -9`
//! between the call and its record labels once. A re-check's event goes out only while it is
//! current: the answer open, its author not opted out, and the kept label still the value
//! the event negates — else nothing is emitted (and what a resumed call may have created is
//! negated again). A label held for a moderator goes out only on the post's version that was
//! judged (its CID, read again at approval).

use super::{Run, StageError, StageOutcome};
use crate::model::{Job, JobLabel, LabelValue, SkipReason, Usage};
use crate::platform::PlatformError;

impl Run<'_> {
    pub(super) async fn label(&self, job: &mut Job) -> Result<StageOutcome, StageError> {
        let mut label = job.label.clone().expect("the label stage runs with a label");
        if super::recheck::of(job).is_some() {
            // A re-check's event was decided on the kept label of its compose stage; a review,
            // a stop or a moderator may have come since. It goes out only on what is current.
            if let Some(reason) = self.label_stale(job, &label)? {
                if label.asked_at.is_some() {
                    self.undo_created(job, &label).await?;
                }
                tracing::info!(why = ?reason, "the re-check's label is no longer current; not emitted");
                return Ok(StageOutcome::Skip(reason));
            }
        }
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
            // A label held for a moderator (watch, report, review) may go out hours after the
            // post was judged: only on the very version judged (its CID), else not at all.
            if job.review.is_some() && !label.cid.is_empty() {
                match self.platform.cid_of(&label.uri).await {
                    Ok(cid) if cid != label.cid => {
                        tracing::info!(uri = %label.uri, "the post changed while its label was held; not emitted");
                        return Ok(StageOutcome::Skip(SkipReason::Policy(
                            "the post changed since it was judged".into(),
                        )));
                    }
                    Ok(_) => {}
                    Err(PlatformError::Gone(e)) => return Ok(StageOutcome::Skip(SkipReason::TargetUnavailable(e))),
                    Err(e) => return Err(platform_error(e)),
                }
            }
        } else {
            // Resumed after the call may have reached the labeler: what does it serve?
            let on = self.platform.labels_on(&label.uri).await.map_err(platform_error)?;
            let done = label.create.iter().all(|v| on.contains(v)) && label.negate.iter().all(|v| !on.contains(v));
            if done {
                tracing::info!(uri = %label.uri, "the label was emitted before a stop; not emitted again");
                label.sent_at = Some(chrono::Utc::now());
                job.label = Some(label);
                self.record_or_undo(job).await?;
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
        self.record_or_undo(job).await?;
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

    /// The label recorded in the kept answer — or, when it closed meanwhile (a withdrawal
    /// racing the call), the values just created negated again.
    async fn record_or_undo(&self, job: &Job) -> Result<(), StageError> {
        if let Some(of) = super::recheck::of(job) {
            // Looked at again soon: an edit right after the label is met within a round.
            self.worker.store.mark_fresh(of, chrono::Utc::now())?;
        }
        if !self.record_label(job)? {
            if let Some(label) = job.label.as_ref() {
                tracing::info!(uri = %label.uri, "the answer closed while its label was emitted; negated again");
                self.undo_created(job, label).await?;
            }
        }
        Ok(())
    }

    /// Why a re-check's label event is no longer the one to send, if it is not: the answer
    /// withdrawn, deleted or hidden, its author opted out or blocked, or the kept label no
    /// longer the value the event negates (a moderator's `label`/`unlabel`, another re-check).
    fn label_stale(&self, job: &Job, label: &JobLabel) -> Result<Option<SkipReason>, StageError> {
        if let Some(reason) = self.no_longer_wanted(job) {
            return Ok(Some(reason));
        }
        let Some(of) = super::recheck::of(job) else {
            return Ok(None);
        };
        let Some(kept) = self.worker.store.kept(of)? else {
            return Ok(Some(SkipReason::Unchanged("the answer is no longer kept".into())));
        };
        if kept.gone.is_some() || kept.hidden.is_some() {
            return Ok(Some(SkipReason::Unchanged("the answer is closed".into())));
        }
        let current = kept.label.as_ref().map(|(v, _)| *v);
        let negates_current = current.is_some_and(|v| label.negate.contains(&v));
        let created_already = current.is_some_and(|v| label.create.contains(&v));
        if !negates_current && !created_already {
            return Ok(Some(SkipReason::Unchanged(
                "the answer's label changed since this re-check was composed".into(),
            )));
        }
        Ok(None)
    }

    /// A resumed re-check whose event may have reached the labeler before it went stale: the
    /// values it created are negated again, except the one the kept answer now carries
    /// (negating is harmless; a label left on a withdrawn answer is not).
    async fn undo_created(&self, job: &Job, label: &JobLabel) -> Result<(), StageError> {
        let current = super::recheck::of(job)
            .map(|of| self.worker.store.kept(of))
            .transpose()?
            .flatten()
            .filter(|k| k.gone.is_none())
            .and_then(|k| k.label.map(|(v, _)| v));
        let negate: Vec<LabelValue> = label.create.iter().copied().filter(|v| Some(*v) != current).collect();
        if negate.is_empty() {
            return Ok(());
        }
        let undo = JobLabel {
            create: Vec::new(),
            negate,
            asked_at: None,
            sent_at: None,
            ..label.clone()
        };
        self.platform.emit_label(&undo).await.map_err(platform_error)?;
        Ok(())
    }

    /// A re-check's label change, recorded in the kept answer it re-checks; `false` when the
    /// answer closed meanwhile and could not take it (the first
    /// answer's label is recorded when the answer is kept).
    fn record_label(&self, job: &Job) -> Result<bool, StageError> {
        let (Some(of), Some(label)) = (super::recheck::of(job), job.label.as_ref()) else {
            return Ok(true);
        };
        let now = label.create.first().map(|v| (*v, label.cid.clone()));
        let kept = self.worker.store.update_kept(of, |k| {
            // A withdrawn or deleted answer keeps no label (`Kept::hold_closed`).
            k.label = now.clone();
        })?;
        // Withdrawn (or deleted) between the last look and the call: the record keeps no label,
        // so the values just created must not stay on the post either.
        Ok(kept.is_some_and(|(k, ())| k.gone.is_none() && k.label == now))
    }
}

fn platform_error(e: PlatformError) -> StageError {
    match e {
        PlatformError::RateLimited { until, message } => StageError::Parked { until, message },
        PlatformError::Fatal(e) => StageError::Fatal(e),
        other => StageError::Transient(other.to_string()),
    }
}
