//! Intake: turns a source's [`Event`] into a persisted job (exactly once per event id), applies
//! the skip rules (own posts, bots, `#nobot`) and the per-requester quota, then hands the job
//! id to the workers through a bounded queue. A full queue drops nothing: the job is already in
//! the store and the dispatcher's sweep picks it up. Intake is the only mover of cursors:
//! sources report how far they read in each event and never touch the store.

use std::num::NonZeroU32;
use std::sync::Arc;

use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use tokio::sync::mpsc;

use crate::metrics::SharedMetrics;
use crate::model::{Draft, Job, Outcome, Post, SkipReason, Status, Trigger};
use crate::prompts::{PromptError, Prompts};
use crate::store::{Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum IntakeError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
}

/// What a source reports: a trigger (or none, for an event that is not one, such as another
/// kind of notification) and the cursor position the source has read through, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub trigger: Option<Trigger>,
    pub cursor: Option<CursorMove>,
}

/// "Everything up to `value` of cursor `name` has been seen."
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorMove {
    pub name: String,
    pub value: String,
}

#[derive(Clone)]
pub struct Intake {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    metrics: SharedMetrics,
    prompts: Arc<Prompts>,
    queue: mpsc::Sender<String>,
    quota: DefaultKeyedRateLimiter<String>,
    per_hour: u32,
    allowed_bots: Vec<String>,
}

impl Intake {
    pub fn new(
        store: Store,
        metrics: SharedMetrics,
        prompts: Arc<Prompts>,
        queue: mpsc::Sender<String>,
        per_hour: u32,
        allowed_bots: Vec<String>,
    ) -> Intake {
        let n = NonZeroU32::new(per_hour.max(1)).expect("max(1)");
        Intake {
            inner: Arc::new(Inner {
                store,
                metrics,
                prompts,
                queue,
                quota: RateLimiter::keyed(Quota::per_hour(n)),
                per_hour,
                allowed_bots,
            }),
        }
    }

    pub fn metrics(&self) -> &SharedMetrics {
        &self.inner.metrics
    }

    /// Where a source's cursor stands (`None` before the first start).
    pub fn cursor(&self, name: &str) -> Result<Option<String>, IntakeError> {
        Ok(self.inner.store.cursor(name)?)
    }

    /// Sets a source's first cursor (the newest event at the very first start) durably.
    pub fn start_cursor(&self, name: &str, value: &str) -> Result<(), IntakeError> {
        self.inner.store.advance_cursor(name, value)?;
        self.inner.store.flush()?;
        Ok(())
    }

    /// Records an event's trigger as a job (and moves the cursor) durably, then queues it.
    /// Idempotent: a re-delivered event finds its job. An event without a trigger only moves
    /// the cursor.
    pub async fn accept(&self, event: Event) -> Result<(), IntakeError> {
        let inner = &self.inner;
        let cursor = event.cursor.as_ref().map(|c| (c.name.as_str(), c.value.as_str()));
        let Some(trigger) = event.trigger else {
            if let Some((name, value)) = cursor {
                inner.store.advance_cursor(name, value)?;
            }
            return Ok(());
        };
        let id = trigger.job_id();
        if inner.store.job(&id)?.is_some() {
            if let Some((name, value)) = cursor {
                inner.store.advance_cursor(name, value)?;
            }
            return Ok(());
        }
        let platform = trigger.platform.as_str();
        let cause = trigger.cause.as_str();
        let mut job = Job::new(trigger);
        self.triage(&mut job)?;
        if !inner.store.enqueue(&job, cursor)? {
            return Ok(());
        }
        inner.metrics.mention(platform);
        let requester = job.trigger.requester().map_or("", |a| a.handle.as_str());
        let span = tracing::info_span!("trigger", job = %job.id, platform, cause, requester);
        let _guard = span.enter();
        match &job.status {
            Status::Pending => {
                tracing::info!("trigger queued");
                if inner.queue.try_send(job.id.clone()).is_err() {
                    tracing::warn!("worker queue full; the job waits in the store for the next sweep");
                }
            }
            Status::Skipped(reason) => {
                tracing::info!(reason = reason.as_str(), "trigger skipped");
                inner.metrics.job_finished(reason.as_str());
            }
            Status::Done | Status::Failed(_) => {}
        }
        Ok(())
    }

    /// Applies the skip rules and the quota to a new job.
    fn triage(&self, job: &mut Job) -> Result<(), IntakeError> {
        let inner = &self.inner;
        let t = &job.trigger;
        let author = &t.author;
        let allowed_bot = inner
            .allowed_bots
            .iter()
            .any(|a| a.eq_ignore_ascii_case(&author.handle));
        let skip = if author.is_self {
            Some(SkipReason::OwnPost)
        } else if author.is_bot && !allowed_bot {
            Some(SkipReason::RequesterIsBot)
        } else if author.nobot {
            Some(SkipReason::NoBot)
        } else {
            None
        };
        if let Some(reason) = skip {
            job.status = Status::Skipped(reason);
            return Ok(());
        }
        // The quota is per requester; a trigger nobody asked for (a hashtag hit) has none.
        let Some(requester) = t.requester() else {
            return Ok(());
        };
        let key = format!("{}:{}", t.platform.as_str(), requester.handle.to_ascii_lowercase());
        if inner.quota.check_key(&key).is_ok() {
            inner.store.bump(&format!("checks:{key}"))?;
            return Ok(());
        }
        let window = chrono::Utc::now().format("%Y%m%d%H");
        if inner.store.set_once(&format!("notice:{key}:{window}"))? {
            let text = inner
                .prompts
                .render("notice_quota.j2", minijinja::context! { per_hour => inner.per_hour })?;
            job.target = Some(trigger_as_post(t));
            job.draft = Some(Draft {
                outcome: Outcome::QuotaNotice,
                text,
                urls: Vec::new(),
            });
        } else {
            job.status = Status::Skipped(SkipReason::OverQuotaSilenced);
        }
        Ok(())
    }
}

/// The trigger's own post, as the post a notice replies to.
pub fn trigger_as_post(t: &Trigger) -> Post {
    Post {
        author_is_bot: t.author.is_bot,
        author_nobot: t.author.nobot,
        ..Post::text_only(&t.status_id, &t.author.handle, &t.text, t.created_at, t.visibility)
    }
}
