//! Watched posts (`Cause::Watch`) on the one stage machine: the network watch (`crate::watch`)
//! saw a post asserting a claim the fact-check corpus holds, and nobody asked. The resolve
//! stage reads the post and applies the rules of an unasked answer — public, not the bot's,
//! not a bot's, no `#nobot`, not opted out or blocked, not answered yet, and never a
//! fact-checker's own post (its handle's domain in the fact-checkers' table) —; the draft stage
//! reads only the corpus (each same-claim match on its live page, `known::draft_known`: no
//! search, no LLM call); the verdict is the published checks', so nothing is debated. Compose
//! then makes it a label on Bluesky (`min_confidence = "fact_check"` whatever the setting) and,
//! where no label can be put (Mastodon), a reply held for a moderator's `approve` — never an
//! automatic reply.

use super::{Run, StageError, StageOutcome};
use crate::model::{Job, SkipReason, Usage};

/// Whether the job answers a post the network watch saw.
pub(crate) fn is_watch(job: &Job) -> bool {
    matches!(job.trigger.cause, crate::model::Cause::Watch { .. })
}

/// Whether the job answers a watched post or re-checks such an answer (its `of` is a watch
/// job's id): either way only the corpus may decide it — no search, no LLM call, no debate.
pub(crate) fn answers_watch(job: &Job) -> bool {
    match &job.trigger.cause {
        crate::model::Cause::Watch { .. } => true,
        crate::model::Cause::Recheck { of, .. } => crate::model::is_watch_job_id(job.trigger.platform, of),
        _ => false,
    }
}

/// How long after it was posted a watched post may still be unreadable for indexing lag.
const INDEXING_LAG_SECS: i64 = 300;

fn young(job: &Job) -> bool {
    chrono::Utc::now() - job.trigger.created_at < chrono::Duration::seconds(INDEXING_LAG_SECS)
}

impl Run<'_> {
    /// The resolve stage for a watched post: readable and still wanted, else skipped with the
    /// reason, costing nothing more.
    pub(super) async fn resolve_watch(&self, job: &mut Job) -> Result<StageOutcome, StageError> {
        if let Some(reason) = self.worker.moderation.triage(&job.trigger) {
            return Ok(StageOutcome::Skip(reason));
        }
        let mut target = match self.platform.resolve(&job.trigger).await {
            Ok(t) => t,
            // The stream carries a post before the AppView has indexed it: a young post not
            // found yet is asked for again (with backoff), not given up.
            Err(crate::platform::PlatformError::Gone(e)) if young(job) => {
                return Err(StageError::Transient(format!("not readable yet: {e}")))
            }
            Err(crate::platform::PlatformError::Gone(e)) => {
                return Ok(StageOutcome::Skip(SkipReason::TargetUnavailable(e)))
            }
            Err(e) => return super::unresolved(e),
        };
        // Its stance was read on the words the stream carried — of a post longer than the watch
        // keeps, its first characters (`Seen::kept_text`): judged on those; changed since, it is
        // not judged.
        let read = crate::model::Seen::kept_text(&target.text);
        if read.trim() != job.trigger.text.trim() {
            return Ok(StageOutcome::Skip(SkipReason::Policy(
                "edited since it was seen".into(),
            )));
        }
        target.text = read;
        target.language = crate::lang::of(target.language.as_deref(), &target.text);
        if let Some(reason) = self.skip_reason(job, &target) {
            return Ok(StageOutcome::Skip(reason));
        }
        if target.author_is_bot {
            return Ok(StageOutcome::Skip(SkipReason::RequesterIsBot));
        }
        let quote_private = target.quote.as_ref().is_some_and(|q| !q.visibility.is_public());
        if !target.visibility.is_public() || quote_private {
            return Ok(StageOutcome::Skip(SkipReason::Policy("not public".into())));
        }
        if self.fact_checkers_own(&target.author) {
            tracing::info!(author = %target.author, "a fact-checker's own post is never labelled");
            return Ok(StageOutcome::Skip(SkipReason::Policy(
                "a fact-checker's own post".into(),
            )));
        }
        if self.worker.store.reply_for(&job.target_key(&target.id))?.is_some() {
            return Ok(StageOutcome::Skip(SkipReason::Policy("already answered".into())));
        }
        tracing::info!(target = %target.id, "watched post resolved");
        job.target = Some(target);
        Ok(StageOutcome::Next(Usage::default()))
    }

    /// Whether `author` (a Bluesky handle, which is a domain, or a Mastodon `user@domain`) is
    /// a fact-checker's own account: its domain is in the fact-checkers' table.
    fn fact_checkers_own(&self, author: &str) -> bool {
        let Some(muse) = self.worker.pipeline.muse.as_ref() else {
            return false;
        };
        let domain = author.rsplit('@').next().unwrap_or(author).trim_start_matches('@');
        !domain.is_empty() && muse.credibility.fact_checker(&format!("https://{domain}/")).is_some()
    }
}
