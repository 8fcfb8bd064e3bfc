//! Workers: run a job's remaining stages in order, persisting each output before the next
//! (so a restart resumes at the first missing one), and the dispatcher that feeds them from
//! the bounded queue plus a periodic sweep of the store, at most `max_jobs_in_flight` at once.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::compose;
use crate::config::ReplyConfig;
use crate::job::{Draft, Job, Outcome, Plan, SkipReason, Stage, StageRecord, Status};
use crate::metrics::SharedMetrics;
use crate::pipeline::{Pipeline, Usage};
use crate::platform::{Platform, PlatformError};
use crate::prompts::Prompts;
use crate::store::{ReplyRecord, Store, StoreError};

/// Transient failures a job survives before it fails for good.
pub const MAX_ATTEMPTS: u32 = 8;
/// How often the dispatcher re-reads unfinished jobs from the store.
pub const SWEEP_EVERY: Duration = Duration::from_secs(2);

/// Why a stage did not finish.
#[derive(Debug, thiserror::Error)]
enum StageError {
    #[error("{0}")]
    Transient(String),
    #[error("{0}")]
    Fatal(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a stage did, when it did not simply fill its output.
enum StageOutcome {
    Next(Usage),
    Skip(SkipReason),
}

pub struct Worker {
    pub store: Store,
    pub platform: Platform,
    pub pipeline: Pipeline,
    pub prompts: Arc<Prompts>,
    pub metrics: SharedMetrics,
    pub reply: ReplyConfig,
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
        let span = tracing::info_span!("job", job = %job.id, platform = job.mention.platform.as_str(), requester = %job.mention.requester);
        if let Err(e) = self.run_stages(job).instrument(span.clone()).await {
            self.metrics.error("store");
            span.in_scope(|| tracing::error!(error = %e, "job stopped: state store failed"));
        }
    }

    async fn run_stages(&self, mut job: Job) -> Result<(), StoreError> {
        if job.retry_at.is_some_and(|t| t > chrono::Utc::now()) {
            return Ok(());
        }
        while let Some(stage) = job.next_stage() {
            let started = Instant::now();
            let result = self
                .stage(&mut job, stage)
                .instrument(tracing::info_span!("stage", stage = stage.as_str()))
                .await;
            let seconds = started.elapsed().as_secs_f64();
            self.metrics.stage(stage.as_str(), seconds);
            job.updated_at = chrono::Utc::now();
            match result {
                Ok(StageOutcome::Next(usage)) => {
                    self.metrics.tokens(usage.prompt_tokens, usage.completion_tokens);
                    job.trace.push(StageRecord {
                        stage,
                        millis: (seconds * 1000.0) as u64,
                        prompt_tokens: usage.prompt_tokens,
                        completion_tokens: usage.completion_tokens,
                    });
                    job.retry_at = None;
                    if job.next_stage().is_none() {
                        job.status = Status::Done;
                    }
                    self.store.save(&job)?;
                    if job.status == Status::Done {
                        let outcome = job.draft.as_ref().map_or("reply", |d| d.outcome.as_str());
                        self.metrics.job_finished(outcome);
                        let (p, c) = job.tokens();
                        tracing::info!(
                            outcome,
                            parts = job.posted.len(),
                            prompt_tokens = p,
                            completion_tokens = c,
                            "reply posted"
                        );
                    }
                }
                Ok(StageOutcome::Skip(reason)) => {
                    tracing::info!(reason = reason.as_str(), "job skipped");
                    self.metrics.job_finished(reason.as_str());
                    job.status = Status::Skipped(reason);
                    self.store.save(&job)?;
                }
                Err(StageError::Store(e)) => return Err(e),
                Err(StageError::Transient(e)) => {
                    job.attempts += 1;
                    self.metrics.error(stage.as_str());
                    if job.attempts >= MAX_ATTEMPTS {
                        tracing::error!(error = %e, attempts = job.attempts, "job failed after repeated transient errors");
                        self.metrics.job_finished("failed");
                        job.status = Status::Failed(e);
                    } else {
                        let wait = Duration::from_secs(5u64 << job.attempts.min(8));
                        tracing::warn!(error = %e, attempts = job.attempts, retry_in_s = wait.as_secs(), "stage failed; will retry");
                        job.retry_at = Some(chrono::Utc::now() + chrono::Duration::from_std(wait).unwrap_or_default());
                    }
                    self.store.save(&job)?;
                    return Ok(());
                }
                Err(StageError::Fatal(e)) => {
                    tracing::error!(error = %e, "job failed");
                    self.metrics.error(stage.as_str());
                    self.metrics.job_finished("failed");
                    job.status = Status::Failed(e);
                    self.store.save(&job)?;
                }
            }
        }
        Ok(())
    }

    async fn stage(&self, job: &mut Job, stage: Stage) -> Result<StageOutcome, StageError> {
        match stage {
            Stage::Resolve => self.resolve(job).await,
            Stage::Draft => self.draft(job).await,
            Stage::Compose => self.compose(job),
            Stage::Post => self.post(job).await,
        }
    }

    async fn resolve(&self, job: &mut Job) -> Result<StageOutcome, StageError> {
        let target = match self.platform.resolve(&job.mention).await {
            Ok(t) => t,
            Err(PlatformError::Gone(e)) => return Ok(StageOutcome::Skip(SkipReason::TargetUnavailable(e))),
            Err(PlatformError::Transient(e)) => return Err(StageError::Transient(e)),
            Err(PlatformError::Fatal(e) | PlatformError::TooLong(e)) => return Err(StageError::Fatal(e)),
        };
        if self.platform.is_self(&target.author) {
            return Ok(StageOutcome::Skip(SkipReason::TargetIsOwnPost));
        }
        if target.author_nobot {
            return Ok(StageOutcome::Skip(SkipReason::NoBot));
        }
        if let Some(earlier) = self.store.reply_for(&target_key(job, &target.id))? {
            let url = earlier.first_url.unwrap_or_default();
            let text = self
                .prompts
                .render("notice_already_answered.j2", minijinja::context! { url => url.clone() })
                .map_err(|e| StageError::Fatal(e.to_string()))?;
            job.draft = Some(Draft {
                outcome: Outcome::AlreadyAnswered,
                text,
                urls: vec![url],
            });
            // The notice answers the requester's own mention, not the target again.
            job.target = Some(crate::intake::mention_as_post(&job.mention));
            return Ok(StageOutcome::Next(Usage::default()));
        }
        tracing::info!(target = %target.id, author = %target.author, "target resolved");
        job.target = Some(target);
        Ok(StageOutcome::Next(Usage::default()))
    }

    async fn draft(&self, job: &mut Job) -> Result<StageOutcome, StageError> {
        let target = job.target.clone().expect("draft runs after resolve");
        let mut retrieval = job.retrieval.clone().unwrap_or_default();
        // Each finished retrieval step is saved with the job, so a restart skips it.
        let (store, mut snapshot) = (self.store.clone(), job.clone());
        let mut checkpoint = move |r: &crate::pipeline::muse::Retrieval| {
            snapshot.retrieval = Some(r.clone());
            if let Err(e) = store.save(&snapshot) {
                tracing::warn!(error = %e, "checkpoint failed; the step may be repeated after a crash");
            }
        };
        let result = self.pipeline.draft(&target, &mut retrieval, &mut checkpoint).await;
        if self.pipeline.muse.is_some() {
            job.retrieval = Some(retrieval);
        }
        match result {
            Ok((draft, usage)) => {
                job.draft = Some(draft);
                Ok(StageOutcome::Next(usage))
            }
            Err(e) => {
                self.metrics.error(e.kind());
                if e.is_transient() {
                    Err(StageError::Transient(e.to_string()))
                } else {
                    Err(StageError::Fatal(e.to_string()))
                }
            }
        }
    }

    fn compose(&self, job: &mut Job) -> Result<StageOutcome, StageError> {
        let parts = self.thread(job, self.platform.limits());
        let target = job.target.as_ref().expect("compose runs after resolve");
        // Never wider than the post asked about or the mention itself.
        let visibility = self.reply.visibility.max(target.visibility).max(job.mention.visibility);
        job.plan = Some(Plan {
            reply_to: target.id.clone(),
            visibility,
            parts,
            as_written: false,
        });
        Ok(StageOutcome::Next(Usage::default()))
    }

    /// The draft as thread parts under `limits`: rules enforced, the requester's handle first.
    fn thread(&self, job: &Job, limits: compose::TextLimits) -> Vec<String> {
        let target = job.target.as_ref().expect("compose runs after resolve");
        let draft = job.draft.as_ref().expect("compose runs after draft");
        let requester = job.mention.requester.clone();
        let lead = format!("{} ", self.platform.handle(&requester));
        let allowed = vec![requester, target.author.clone()];
        compose::compose(draft, &lead, &allowed, limits, &self.reply)
    }

    /// The server refused part `i` as too long: split again counting text as written (once).
    /// Before anything is posted the whole thread is re-split; later, the unposted rest
    /// (unnumbered, within what is left of `reply.max_parts`).
    fn resplit(&self, job: &mut Job, i: usize, error: String) -> Result<(), StageError> {
        let plan = job.plan.as_mut().expect("post runs after compose");
        if plan.as_written {
            return Err(StageError::Fatal(error));
        }
        tracing::warn!(
            error,
            part = i,
            "the server counts length differently; re-splitting with URLs as written"
        );
        let limits = self.platform.limits().as_written();
        plan.as_written = true;
        if i == 0 {
            let parts = self.thread(job, limits);
            job.plan.as_mut().expect("plan").parts = parts;
        } else {
            let rest = compose::resplit_rest(&plan.parts[i..], limits, self.reply.max_parts.saturating_sub(i));
            plan.parts.splice(i.., rest);
        }
        // Saved before the next post: the new parts get their own Idempotency-Keys.
        self.store.save(job)?;
        Ok(())
    }

    async fn post(&self, job: &mut Job) -> Result<StageOutcome, StageError> {
        let mut first_url = None;
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
            let key = format!("musebot-{}-{}{}", job.id, i, if plan.as_written { "w" } else { "" });
            match self.platform.post(part, &reply_to, plan.visibility, &key).await {
                Ok((id, url)) => {
                    if i == 0 {
                        first_url = url;
                    }
                    job.posted.push(id);
                    // Persist each part before the next: a crash re-sends at most this one,
                    // and its Idempotency-Key makes the server return the same post.
                    self.store.save(job)?;
                }
                Err(PlatformError::Transient(e)) => return Err(StageError::Transient(e)),
                Err(PlatformError::Gone(e)) => return Ok(StageOutcome::Skip(SkipReason::TargetUnavailable(e))),
                Err(PlatformError::TooLong(e)) => self.resplit(job, i, e)?,
                Err(PlatformError::Fatal(e)) => return Err(StageError::Fatal(e)),
            }
        }
        let plan = job.plan.clone().expect("post runs after compose");
        if job.draft.as_ref().is_some_and(|d| d.outcome == Outcome::Reply) {
            let record = ReplyRecord {
                job_id: job.id.clone(),
                reply_ids: job.posted.clone(),
                first_url,
            };
            self.store.record_reply(&target_key(job, &plan.reply_to), &record)?;
        }
        Ok(StageOutcome::Next(Usage::default()))
    }
}

fn target_key(job: &Job, target_id: &str) -> String {
    format!("{}:{}", job.mention.platform.as_str(), target_id)
}

/// Feeds workers from the queue and the store; on shutdown stops taking jobs, gives in-flight
/// ones `grace` to finish, then aborts them (their last finished stage is saved).
pub async fn dispatch(
    worker: Arc<Worker>,
    mut queue: mpsc::Receiver<String>,
    max_in_flight: usize,
    grace: Duration,
    shutdown: CancellationToken,
) {
    let permits = Arc::new(Semaphore::new(max_in_flight));
    let in_flight: Arc<Mutex<HashSet<String>>> = Arc::default();
    let mut tasks = JoinSet::new();
    let mut sweep = tokio::time::interval(SWEEP_EVERY);
    loop {
        let ids: Vec<String> = tokio::select! {
            _ = shutdown.cancelled() => break,
            id = queue.recv() => match id { Some(id) => vec![id], None => break },
            _ = sweep.tick() => match worker.store.pending_jobs() {
                Ok(jobs) => {
                    let now = chrono::Utc::now();
                    jobs.into_iter().filter(|j| j.retry_at.is_none_or(|t| t <= now)).map(|j| j.id).collect()
                }
                Err(e) => {
                    tracing::error!(error = %e, "cannot read pending jobs");
                    Vec::new()
                }
            },
        };
        while tasks.try_join_next().is_some() {}
        for id in ids {
            if !in_flight.lock().expect("in-flight lock").insert(id.clone()) {
                continue;
            }
            let permit = tokio::select! {
                _ = shutdown.cancelled() => {
                    in_flight.lock().expect("in-flight lock").remove(&id);
                    break;
                }
                p = permits.clone().acquire_owned() => p.expect("semaphore never closed"),
            };
            let worker = worker.clone();
            let in_flight = in_flight.clone();
            tasks.spawn(async move {
                worker.run(&id).await;
                in_flight.lock().expect("in-flight lock").remove(&id);
                drop(permit);
            });
        }
    }
    let running = tasks.len();
    if running > 0 {
        tracing::info!(
            running,
            grace_s = grace.as_secs(),
            "shutting down: letting in-flight jobs finish"
        );
        let drained = tokio::time::timeout(grace, async { while tasks.join_next().await.is_some() {} }).await;
        if drained.is_err() {
            tracing::warn!(
                left = tasks.len(),
                "grace period over: checkpointed jobs resume at next start"
            );
            tasks.abort_all();
            while tasks.join_next().await.is_some() {}
        }
    }
}
