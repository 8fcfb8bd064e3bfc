//! The post stage: the thread is posted part by part (each part's id saved before the next,
//! a stable key per part), after the last looks before the first part — a pause, unwatch or
//! opt-out since the job was queued, an answer given meanwhile by another job, the target
//! deleted while the reply was drafted ([`crate::platform::Platform::recheck`]) — with a part
//! refused as too long re-split (as written, then shorter), and the reply recorded for its target. A re-check's
//! update is looked at once more (its answer still open, not posted already), posted — or made
//! as an edit — and recorded in the kept answer (`recheck.rs`).

use super::{is_hit, target_id, Run, StageError, StageOutcome};
use crate::compose;
use crate::model::{Job, Outcome, Plan, ReplyRecord, SkipReason, Usage};
use crate::platform::PlatformError;
use crate::store::StoreError;

/// The shortest limit a refused reply is split again to (characters a part).
pub const MIN_CHARS: usize = 40;

impl Run<'_> {
    /// The server refused part `i` as too long: split again counting text as written; refused
    /// again, split shorter — the limit halved each time, down to [`MIN_CHARS`] — so a refused
    /// length leads to a shorter reply, never to none (a server may count code points, and a
    /// ZWJ emoji sequence is one grapheme but many code points). Before anything is posted the
    /// whole thread is re-split; later, the unposted rest (unnumbered, within what is left of
    /// `reply.max_parts`).
    pub(super) fn resplit(&self, job: &mut Job, i: usize, error: String) -> Result<(), StageError> {
        let plan = job.plan.as_mut().expect("post runs after compose");
        let written = self.platform.limits().as_written();
        let limits = if plan.as_written {
            let max_chars = written.max_chars >> (plan.shrink + 1);
            if max_chars < MIN_CHARS {
                return Err(StageError::Fatal(error));
            }
            plan.shrink += 1;
            tracing::warn!(
                error,
                part = i,
                max_chars,
                "the server still refuses the length (it may count code points); re-splitting shorter"
            );
            compose::TextLimits { max_chars, ..written }
        } else {
            tracing::warn!(
                error,
                part = i,
                "the server counts length differently; re-splitting with URLs as written"
            );
            plan.as_written = true;
            written
        };
        if i == 0 {
            let parts = self.thread(job, limits);
            job.plan.as_mut().expect("plan").parts = parts;
        } else {
            let rest = compose::resplit_rest(&plan.parts[i..], limits, self.worker.reply.max_parts.saturating_sub(i));
            plan.parts.splice(i.., rest);
        }
        // Saved before the next post: the new parts get their own Idempotency-Keys.
        self.worker.store.save(job)?;
        Ok(())
    }

    pub(super) async fn post(&self, job: &mut Job) -> Result<StageOutcome, StageError> {
        if job.posted.is_empty() {
            // A pause, an unwatch or an opt-out since the job was queued (or held) wins.
            if let Some(reason) = self.no_longer_wanted(job) {
                return Ok(StageOutcome::Skip(reason));
            }
            if is_hit(job) || super::is_report(job) {
                if let Some(earlier) = self.worker.store.reply_for(&job.target_key(&target_id(job)))? {
                    if earlier.job_id != job.id {
                        return Ok(StageOutcome::Skip(SkipReason::Policy("already answered".into())));
                    }
                }
            }
            if super::recheck::of(job).is_some() {
                // A re-check: its answer still open, this update not posted yet.
                if let Some(reason) = self.recheck_still_wanted(job)? {
                    return Ok(StageOutcome::Skip(reason));
                }
            } else {
                self.point_to_an_answer_given_meanwhile(job)?;
            }
            if let Some(reason) = self.target_gone(job).await? {
                return Ok(StageOutcome::Skip(reason));
            }
        }
        if job.plan.as_ref().is_some_and(|p| p.edit) && job.posted.is_empty() {
            let outcome = self.post_edit(job).await?;
            if matches!(outcome, StageOutcome::Next(_)) {
                self.record_update(job).await?;
            }
            return Ok(outcome);
        }
        loop {
            let plan = job.plan.clone().expect("post runs after compose");
            let i = job.posted.len();
            let Some(part) = plan.parts.get(i) else { break };
            let reply_to = if i == 0 {
                plan.reply_to.clone()
            } else {
                job.posted[i - 1].clone()
            };
            // Re-split parts carry other text, so other keys than the refused originals.
            let key = match (plan.as_written, plan.shrink) {
                (false, _) => format!("musebot-{}-{i}", job.id),
                (true, 0) => format!("musebot-{}-{i}w", job.id),
                (true, n) => format!("musebot-{}-{i}w{n}", job.id),
            };
            let request = crate::platform::Part {
                text: part,
                reply_to: &reply_to,
                visibility: plan.visibility,
                key: &key,
                created: job.created_at,
                seq: 2 * i as u32 + u32::from(plan.as_written),
                lang: super::words_language(job),
                mention: job
                    .trigger
                    .requester()
                    .and_then(|r| r.id.as_deref().map(|id| (r.handle.as_str(), id))),
            };
            match self.platform.post(&request).await {
                Ok((id, url)) => {
                    if i == 0 {
                        job.first_url = url;
                    }
                    job.posted.push(id);
                    // Persist each part before the next: a crash re-sends at most this one,
                    // and its Idempotency-Key makes the server return the same post.
                    self.worker.store.save(job)?;
                    if i == 0 {
                        // Claimed at once: a job about the same post that reaches its first
                        // post later points to this reply instead of answering again.
                        self.record_reply(job)?;
                    }
                }
                Err(PlatformError::Transient(e)) => return Err(StageError::Transient(e)),
                Err(PlatformError::Gone(e)) => return Ok(StageOutcome::Skip(SkipReason::TargetUnavailable(e))),
                Err(PlatformError::TooLong(e)) => self.resplit(job, i, e)?,
                Err(PlatformError::Fatal(e)) => return Err(StageError::Fatal(e)),
                Err(PlatformError::RateLimited { until, message }) => {
                    return Err(StageError::Parked { until, message });
                }
            }
        }
        self.record_reply(job)?;
        self.record_update(job).await?;
        Ok(StageOutcome::Next(Usage::default()))
    }

    /// Deleted (or closed to the bot) since it was read: why, if so (the look before a job's
    /// first part or label). Commands answer the asker, whatever became of the post.
    pub(super) async fn target_gone(&self, job: &Job) -> Result<Option<SkipReason>, StageError> {
        if matches!(job.trigger.cause, crate::model::Cause::Command { .. }) {
            return Ok(None);
        }
        match self.platform.recheck(&job.trigger).await {
            Ok(()) => Ok(None),
            Err(PlatformError::Gone(e)) => {
                tracing::info!(why = %e, "the post is gone since it was read; nothing is posted");
                Ok(Some(SkipReason::TargetUnavailable(e)))
            }
            Err(PlatformError::RateLimited { until, message }) => Err(StageError::Parked { until, message }),
            Err(PlatformError::Transient(e)) => Err(StageError::Transient(e)),
            Err(e) => Err(StageError::Transient(e.to_string())),
        }
    }

    /// Why a job queued earlier should not go on now (paused, unwatched, opted out, blocked),
    /// if it should not. Commands always go on.
    pub(super) fn no_longer_wanted(&self, job: &Job) -> Option<SkipReason> {
        if matches!(job.trigger.cause, crate::model::Cause::Command { .. }) {
            return None;
        }
        let m = &self.worker.moderation;
        if let Some(reason) = m.triage(&job.trigger) {
            return Some(reason);
        }
        let target = job.target.as_ref()?;
        let (author, id, platform) = (&target.author, target.author_id.as_deref(), job.trigger.platform);
        if m.blocked_account(platform, author, id) {
            return Some(SkipReason::Blocked);
        }
        m.opted_out(platform, author, id).then_some(SkipReason::OptedOut)
    }

    /// Another job answered the same post while this one drafted (two mentions in flight):
    /// point to that answer instead of posting a second one.
    fn point_to_an_answer_given_meanwhile(&self, job: &mut Job) -> Result<(), StageError> {
        let is_reply = job.draft.as_ref().is_some_and(|d| d.outcome == Outcome::Reply);
        if job.plan.is_none() || !is_reply {
            return Ok(());
        }
        let Some(earlier) = self
            .worker
            .store
            .reply_for(&job.target_key(&target_id(job)))?
            .filter(|r| r.job_id != job.id)
        else {
            return Ok(());
        };
        tracing::info!(earlier = %earlier.job_id, "the post was answered meanwhile; pointing to that reply");
        let url = earlier.first_url.unwrap_or_default();
        let ctx = minijinja::context! { url => url.clone() };
        let about = job.target.as_ref().and_then(|t| t.language.clone());
        self.notice(
            job,
            Outcome::AlreadyAnswered,
            "notice_already_answered",
            ctx,
            vec![url],
            about.as_deref(),
        )?;
        let parts = self.thread(job, self.platform.limits());
        let target = job.target.as_ref().expect("post runs after resolve");
        job.plan = Some(Plan {
            reply_to: self.platform.reply_anchor(&job.trigger, target),
            visibility: self.visibility(job),
            parts,
            as_written: false,
            shrink: 0,
            edit: false,
        });
        self.worker.store.save(job)?;
        Ok(())
    }

    /// Records a posted public reply for its target, so a later ask about the target gets a
    /// pointer to it. Not for notices, and not for replies others cannot read. Idempotent.
    pub(super) fn record_reply(&self, job: &Job) -> Result<(), StoreError> {
        let Some(plan) = &job.plan else { return Ok(()) };
        // A label only (labeler mode): no thread to point to.
        if super::recheck::of(job).is_some() || job.posted.is_empty() {
            // An update: the first answer stays the one pointed to.
            return Ok(());
        }
        let is_reply = job.draft.as_ref().is_some_and(|d| d.outcome == Outcome::Reply);
        if is_reply && plan.visibility.is_public() {
            let record = ReplyRecord {
                job_id: job.id.clone(),
                reply_ids: job.posted.clone(),
                first_url: job.first_url.clone(),
                at: Some(chrono::Utc::now()),
            };
            self.worker
                .store
                .record_reply(&job.target_key(&target_id(job)), &record)?;
        }
        Ok(())
    }
}
