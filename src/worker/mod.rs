//! Workers: the one stage machine. A worker runs a job's remaining stages — resolve, draft,
//! verify, compose, note (only a reported post's finding for the moderators, [`report`]),
//! review (only a held draft), label (only in labeler mode, [`label`]) and post — in order on
//! the job's own platform, persisting each output before the next (so a restart resumes at the
//! first missing one). A re-check of a kept answer (`Cause::Recheck`, [`recheck`]) and a
//! reported post (`Cause::Report`) run the same stages; a finished answer is kept for its
//! re-checks (`crate::living`). The daemon feeds it through
//! [`dispatch`]; `musebot check` runs the same loop on a platform that never posts.

mod dispatch;
mod draft;
mod label;
mod post;
mod recheck;
mod report;
mod resolve;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_labels;
#[cfg(test)]
mod tests_lang;
#[cfg(test)]
mod tests_living;
#[cfg(test)]
mod tests_quota;
#[cfg(test)]
mod tests_reports;
#[cfg(test)]
mod tests_status_lang;
#[cfg(test)]
mod tests_trust;
mod watch;

pub use dispatch::{dispatch, SWEEP_EVERY};

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use tracing::Instrument;

use crate::compose;
use crate::config::{LimitsConfig, PrivacyConfig, ReplyConfig};
use crate::metrics::SharedMetrics;
use crate::model::{Job, Outcome, Plan, Post, SkipReason, Stage, StageRecord, Status, Usage, Visibility};
use crate::pipeline::Pipeline;
use crate::platform::{Platform, PlatformError, Platforms};
use crate::prompts::Prompts;
use crate::store::{Store, StoreError};

/// Transient failures a job survives before it fails for good.
pub const MAX_ATTEMPTS: u32 = 8;

/// Why a stage did not finish.
#[derive(Debug, thiserror::Error)]
enum StageError {
    #[error("{0}")]
    Transient(String),
    #[error("{0}")]
    Fatal(String),
    /// A limit that lasts: wait until then, spending no attempt.
    #[error("{message}")]
    Parked {
        until: chrono::DateTime<chrono::Utc>,
        message: String,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// How often a held draft looks for a moderator's decision.
const REVIEW_LOOK_SECS: i64 = 3;

/// What a stage did, when it did not simply fill its output.
enum StageOutcome {
    Next(Usage),
    Skip(SkipReason),
    /// Nothing to do until `until` (a draft waiting for a moderator).
    Wait(chrono::DateTime<chrono::Utc>),
}

pub struct Worker {
    pub store: Store,
    /// Moderators' commands, opt-outs, blocklists, hashtag policies.
    pub moderation: crate::moderation::Moderation,
    /// One per kind; each job runs on the platform of its trigger.
    pub platforms: Platforms,
    pub pipeline: Pipeline,
    pub prompts: Arc<Prompts>,
    pub metrics: SharedMetrics,
    pub reply: ReplyConfig,
    pub limits: LimitsConfig,
    pub privacy: PrivacyConfig,
    /// `[living]`: what is kept of an answer, its updates, how corrections are made.
    pub living: crate::config::LivingConfig,
    /// `[bluesky.labeler]`: which verdicts become labels.
    pub labeler: crate::config::LabelerConfig,
    /// `watch.auto_label`: a watched post's label is put at once (true) or held for a
    /// moderator's `approve` (false).
    pub watch_auto_label: bool,
    /// `watch.label_ratings`: the verdicts a watched post is taken up for.
    pub watch_label_verdicts: Vec<crate::model::Verdict>,
    /// First wait after a transient failure (doubles with each attempt).
    pub retry_base: Duration,
}

impl Worker {
    /// Runs the job's remaining stages. Errors are recorded in the job, not returned.
    pub async fn run(&self, id: &str) {
        let job = match self.store.job(id) {
            Ok(Some(job)) => job,
            Ok(None) => return,
            Err(e) => {
                self.metrics.error("store");
                tracing::error!(error = %e, job = id, "cannot load job");
                return;
            }
        };
        let Some(platform) = self.platforms.get(job.trigger.platform) else {
            tracing::warn!(
                job = id,
                platform = job.trigger.platform.as_str(),
                "no such platform configured; the job waits"
            );
            return;
        };
        let requester = job.trigger.requester().map_or("", |a| a.handle.as_str()).to_string();
        let span = tracing::info_span!("job", job = %job.id, platform = job.trigger.platform.as_str(), cause = job.trigger.cause.as_str(), requester = %requester);
        let run = Run { worker: self, platform };
        if let Err(e) = run.stages(job).instrument(span.clone()).await {
            self.metrics.error("store");
            span.in_scope(|| tracing::error!(error = %e, "job stopped: state store failed"));
        }
    }
}

/// One job's run: the worker and the platform of the job's trigger.
struct Run<'a> {
    worker: &'a Worker,
    platform: &'a Platform,
}

impl Run<'_> {
    async fn stages(&self, mut job: Job) -> Result<(), StoreError> {
        if job.retry_at.is_some_and(|t| t > chrono::Utc::now()) {
            return Ok(());
        }
        if job.status == Status::Pending && job.next_stage().is_none() {
            // A crash after the last part was saved, before the job was: finish it.
            tracing::info!("every part was posted before a stop; finishing the job");
            self.record_reply(&job)?;
            if recheck::of(&job).is_some() {
                if let Err(e) = self.record_update(&job).await {
                    tracing::warn!(error = %e, "the update could not be recorded; the next run records it");
                    return Ok(());
                }
            }
            job.status = Status::Done;
            job.updated_at = chrono::Utc::now();
            self.worker.store.save(&job)?;
            self.keep(&job);
            return Ok(());
        }
        while let Some(stage) = job.next_stage() {
            let started = Instant::now();
            // A panic in a stage (a bug met by some input) costs an attempt, like a transient
            // error: the job is saved with its backoff and released, never left in flight.
            let before = job.clone();
            let (result, spent) = crate::llm::metered(
                std::panic::AssertUnwindSafe(
                    self.stage(&mut job, stage)
                        .instrument(tracing::info_span!("stage", stage = stage.as_str())),
                )
                .catch_unwind(),
            )
            .await;
            let result = result.unwrap_or_else(|panic| {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".into());
                self.worker.metrics.error("panic");
                tracing::error!(stage = stage.as_str(), panic = %what, "stage panicked; the job will be retried");
                // What the stage left half-done is not trusted: the job goes on from what was
                // saved last (its checkpoints included), plus this attempt.
                job = match self.worker.store.job(&before.id) {
                    Ok(Some(saved)) => saved,
                    _ => before.clone(),
                };
                Err(StageError::Transient(format!(
                    "stage {} panicked: {what}",
                    stage.as_str()
                )))
            });
            let seconds = started.elapsed().as_secs_f64();
            self.worker.metrics.stage(stage.as_str(), seconds);
            job.updated_at = chrono::Utc::now();
            // Every LLM answer is spent, whether the stage then succeeded, failed or panicked.
            let usage = spent.usage;
            self.spend(stage, usage);
            match result {
                Ok(StageOutcome::Next(reported)) => {
                    // Calls outside the stage's task escape the meter; what the stage reports
                    // beyond it is spent too.
                    let missed = Usage {
                        prompt_tokens: reported.prompt_tokens.saturating_sub(usage.prompt_tokens),
                        completion_tokens: reported.completion_tokens.saturating_sub(usage.completion_tokens),
                    };
                    self.spend(stage, missed);
                    let usage = Usage {
                        prompt_tokens: usage.prompt_tokens + missed.prompt_tokens,
                        completion_tokens: usage.completion_tokens + missed.completion_tokens,
                    };
                    job.trace.push(StageRecord {
                        stage,
                        millis: (seconds * 1000.0) as u64,
                        prompt_tokens: usage.prompt_tokens,
                        completion_tokens: usage.completion_tokens,
                        llm_calls: spent.calls,
                        llm_in_sequence: spent.in_sequence,
                    });
                    job.retry_at = None;
                    job.last_error = None;
                    if job.next_stage().is_none() {
                        job.status = Status::Done;
                    }
                    self.worker.store.save(&job)?;
                    if job.status == Status::Done {
                        self.keep(&job);
                        let outcome = job.draft.as_ref().map_or("reply", |d| d.outcome.as_str());
                        self.worker.metrics.job_finished(outcome);
                        let tokens = job.tokens();
                        tracing::info!(
                            outcome,
                            parts = job.posted.len(),
                            prompt_tokens = tokens.prompt_tokens,
                            completion_tokens = tokens.completion_tokens,
                            "reply posted"
                        );
                    }
                }
                Ok(StageOutcome::Wait(until)) => {
                    job.retry_at = Some(until);
                    self.worker.store.save(&job)?;
                    return Ok(());
                }
                Ok(StageOutcome::Skip(reason)) => {
                    tracing::info!(reason = reason.as_str(), why = ?reason, "job skipped");
                    self.worker.metrics.job_finished(reason.as_str());
                    job.status = Status::Skipped(reason);
                    self.worker.store.save(&job)?;
                }
                Err(StageError::Store(e)) => return Err(e),
                Err(StageError::Parked { until, message }) => {
                    tracing::warn!(error = %message, until = %until, "rate limited; the job is parked until then");
                    self.worker.metrics.error("rate_limited");
                    job.retry_at = Some(until);
                    job.last_error = Some(message);
                    self.worker.store.save(&job)?;
                    return Ok(());
                }
                Err(StageError::Transient(e)) => {
                    job.attempts += 1;
                    job.last_error = Some(e.clone());
                    self.worker.metrics.error(stage.as_str());
                    if job.attempts >= MAX_ATTEMPTS {
                        tracing::error!(error = %e, attempts = job.attempts, "job failed after repeated transient errors");
                        self.worker.metrics.job_finished("failed");
                        job.status = Status::Failed(e);
                    } else {
                        let wait = self.worker.retry_base * (1u32 << job.attempts.min(8));
                        tracing::warn!(error = %e, attempts = job.attempts, retry_in_s = wait.as_secs(), "stage failed; will retry");
                        job.retry_at = Some(chrono::Utc::now() + chrono::Duration::from_std(wait).unwrap_or_default());
                    }
                    self.worker.store.save(&job)?;
                    return Ok(());
                }
                Err(StageError::Fatal(e)) => {
                    tracing::error!(error = %e, "job failed");
                    self.worker.metrics.error(stage.as_str());
                    self.worker.metrics.job_finished("failed");
                    job.status = Status::Failed(e);
                    self.worker.store.save(&job)?;
                }
            }
        }
        Ok(())
    }

    /// A finished answer is kept for re-checking (`living::keep`); a failure costs the
    /// answer's later life, never the answer (logged).
    fn keep(&self, job: &Job) {
        if let Err(e) = crate::living::keep(&self.worker.store, &self.worker.living, job, chrono::Utc::now()) {
            tracing::warn!(error = %e, "the answer could not be kept for re-checking");
        }
    }

    /// Adds a stage's LLM tokens to the day's budget and the metrics.
    fn spend(&self, stage: Stage, usage: Usage) {
        if usage == Usage::default() {
            return;
        }
        let budget = &self.worker.moderation.budget;
        match budget.record(usage) {
            Ok(spend) => self.worker.metrics.set_budget(
                spend.prompt_tokens + spend.completion_tokens,
                spend.cost,
                budget.used(),
                budget.state().as_str(),
            ),
            Err(e) => tracing::warn!(error = %e, "the day's spend could not be recorded"),
        }
        self.worker
            .metrics
            .tokens(stage.as_str(), usage.prompt_tokens, usage.completion_tokens);
    }

    async fn stage(&self, job: &mut Job, stage: Stage) -> Result<StageOutcome, StageError> {
        match stage {
            Stage::Resolve => self.resolve(job).await,
            Stage::Draft => self.draft(job).await,
            Stage::Verify => self.verify(job).await,
            Stage::Compose if recheck::of(job).is_some() => self.compose_recheck(job),
            Stage::Compose if report::is_report(job) => self.compose_report(job),
            Stage::Compose => self.compose(job),
            Stage::Note => self.note(job).await,
            Stage::Review => self.review(job),
            Stage::Label => self.label(job).await,
            Stage::Post => self.post(job).await,
        }
    }

    fn compose(&self, job: &mut Job) -> Result<StageOutcome, StageError> {
        // A hashtag hit is answered only with a verdict (after verification, which may have
        // withdrawn it): nobody asked, so no notice — nor fact-checks named as disagreeing, or
        // quoted with no verdict of the bot's — and its tag's and author's slots are freed.
        let outcome = job.draft.as_ref().map(|d| d.outcome);
        let verdict = job.draft.as_ref().and_then(|d| d.verdict);
        if watch::is_watch(job) && (outcome != Some(Outcome::Reply) || verdict.is_none()) {
            // A watched post: a published check's verdict, or nothing at all.
            let what = outcome.map_or("nothing", Outcome::as_str);
            return Ok(StageOutcome::Skip(SkipReason::Policy(format!(
                "no fact-check decides it ({what})"
            ))));
        }
        if let Some(v) = verdict.filter(|v| watch::is_watch(job) && !self.worker.watch_label_verdicts.contains(v)) {
            return Ok(StageOutcome::Skip(SkipReason::Policy(format!(
                "the watch takes up no {} verdict (watch.label_ratings)",
                v.as_str()
            ))));
        }
        if is_hit(job) && (outcome != Some(Outcome::Reply) || verdict.is_none()) {
            let author = job.target.as_ref().map(Post::author_key).unwrap_or_default();
            self.worker.moderation.release_hit(&job.trigger, &job.id, &author)?;
            let what = outcome.map_or("nothing", Outcome::as_str);
            return Ok(StageOutcome::Skip(SkipReason::Policy(format!(
                "nothing to post about it ({what})"
            ))));
        }
        let mut parts = self.thread(job, self.platform.limits());
        // Labeler mode: the verdict as a label, and the reply unless the trigger's channel
        // says label only.
        let tag = match &job.trigger.cause {
            crate::model::Cause::HashtagHit { tag } => self
                .worker
                .moderation
                .store
                .watches(job.trigger.platform)
                .into_iter()
                .find(|w| &w.tag == tag)
                .and_then(|w| w.channel),
            _ => None,
        };
        let decision = crate::labeler::decide(&self.worker.labeler, job, self.platform.has_labels(), tag);
        if !decision.reply {
            if decision.label.is_none() {
                if is_hit(job) {
                    let author = job.target.as_ref().map(Post::author_key).unwrap_or_default();
                    self.worker.moderation.release_hit(&job.trigger, &job.id, &author)?;
                }
                return Ok(StageOutcome::Skip(SkipReason::Policy(
                    "labels only, and no label for this verdict".into(),
                )));
            }
            parts.clear();
        }
        job.label = decision.label;
        let target = job.target.as_ref().expect("compose runs after resolve");
        let visibility = self.visibility(job);
        job.plan = Some(Plan {
            reply_to: self.platform.reply_anchor(&job.trigger, target),
            visibility,
            parts,
            as_written: false,
            shrink: 0,
            edit: false,
        });
        // Held: what the pipeline wrote (a verdict, or the honest "could not verify"), not the
        // resolve stage's notices.
        let drafted = matches!(outcome, Some(Outcome::Reply | Outcome::Insufficient));
        // A watched post is a moderator's call where no label can be put (Mastodon), and its
        // label is one unless `watch.auto_label` lets it go at once.
        let held = self.worker.moderation.needs_review(&job.trigger.cause)
            || (watch::is_watch(job)
                && match job.label {
                    Some(_) => !self.worker.watch_auto_label,
                    None => !job.plan.as_ref().is_some_and(|p| p.parts.is_empty()),
                });
        if drafted && held {
            tracing::info!(job = %job.id, "draft held for a moderator's review");
            job.review = Some(crate::model::Review {
                since: chrono::Utc::now(),
                decision: None,
            });
        }
        Ok(StageOutcome::Next(Usage::default()))
    }

    /// A held draft: a moderator's decision (read from the store, where it is written once)
    /// lets it be posted or drops it; without one it waits, up to `review_expiry_secs`.
    fn review(&self, job: &mut Job) -> Result<StageOutcome, StageError> {
        let now = chrono::Utc::now();
        match self.worker.store.decision(&job.id) {
            Some(d @ crate::model::ReviewDecision::Approved { .. }) => {
                tracing::info!(decision = ?d, "draft approved; posting");
                if let Some(r) = job.review.as_mut() {
                    r.decision = Some(d);
                }
                Ok(StageOutcome::Next(Usage::default()))
            }
            Some(crate::model::ReviewDecision::Rejected { note, .. }) => {
                Ok(StageOutcome::Skip(SkipReason::Rejected(note)))
            }
            None => {
                let since = job.review.as_ref().map_or(now, |r| r.since);
                let expiry = self.worker.moderation.config.review_expiry_secs;
                if now - since > chrono::Duration::seconds(expiry as i64) {
                    Ok(StageOutcome::Skip(SkipReason::ReviewExpired))
                } else {
                    Ok(StageOutcome::Wait(now + chrono::Duration::seconds(REVIEW_LOOK_SECS)))
                }
            }
        }
    }

    /// Who may read the reply: never wider than the post asked about or the mention itself;
    /// about a post that is not public, only a direct message to the requester.
    fn visibility(&self, job: &Job) -> Visibility {
        let target = job.target.as_ref().expect("compose runs after resolve");
        let private_notice = job
            .draft
            .as_ref()
            .is_some_and(|d| matches!(d.outcome, Outcome::NotPublic | Outcome::Acknowledged));
        let quote_private = target.quote.as_ref().is_some_and(|q| !q.visibility.is_public());
        let widest = self
            .worker
            .reply
            .visibility
            .max(target.visibility)
            .max(job.trigger.visibility);
        // A followers-only reply reaches the bot's followers, not the asker's: whatever is
        // not public or unlisted is a direct message to the requester.
        if private_notice || !target.visibility.is_public() || quote_private || !widest.is_public() {
            Visibility::Direct
        } else {
            widest
        }
    }

    /// The draft as thread parts under `limits`: rules enforced (no mention in the body), the
    /// requester's handle first, the only mention
    /// (no handle when nobody asked: a hashtag hit, a moderator's flag). In a reply only the
    /// mentioned can read (private, direct), every part carries the handle: a part without it
    /// would be visible to nobody.
    fn thread(&self, job: &Job, limits: compose::TextLimits) -> Vec<String> {
        let draft = job.draft.as_ref().expect("compose runs after draft");
        let lead = match job.trigger.requester() {
            Some(r) => format!("{} ", self.platform.handle(&r.handle)),
            None => String::new(),
        };
        if self.visibility(job).is_public() || lead.is_empty() {
            return compose::compose(draft, &lead, limits, &self.worker.reply);
        }
        let inner = compose::TextLimits {
            max_chars: limits.max_chars.saturating_sub(compose::weighted_len(&lead, limits)),
            ..limits
        };
        compose::compose(draft, "", inner, &self.worker.reply)
            .into_iter()
            .map(|part| format!("{lead}{part}"))
            .collect()
    }
}

/// Whether nobody asked: the job answers a post on a watched hashtag.
pub(crate) fn is_hit(job: &Job) -> bool {
    matches!(job.trigger.cause, crate::model::Cause::HashtagHit { .. })
}

pub(crate) use report::{charge_report_window, is_report};

/// The checked post's id: what reply records are kept under (the thread may hang elsewhere).
fn target_id(job: &Job) -> String {
    job.target.as_ref().map(|t| t.id.clone()).unwrap_or_default()
}

/// The language of the words in every status a job posts or edits — reply, update, notice,
/// acknowledgement, direct message: its target's (a notice's and an acknowledgement's target
/// carries the asker's language), where the bot has words in it, else English. The one place
/// a posted status's Mastodon `language` / Bluesky `langs` comes from.
pub(crate) fn words_language(job: &Job) -> &'static str {
    crate::words::language(job.target.as_ref().and_then(|t| t.language.as_deref()))
}

/// What a failed read of the target means for the job: gone → not answered; a lasting limit →
/// parked; the rest transient or fatal (the resolve stage of answers and of re-checks).
fn unresolved(e: PlatformError) -> Result<StageOutcome, StageError> {
    match e {
        PlatformError::Gone(e) => Ok(StageOutcome::Skip(SkipReason::TargetUnavailable(e))),
        PlatformError::Transient(e) => Err(StageError::Transient(e)),
        PlatformError::Fatal(e) | PlatformError::TooLong(e) => Err(StageError::Fatal(e)),
        PlatformError::RateLimited { until, message } => Err(StageError::Parked { until, message }),
    }
}
