//! Intake: turns a platform's mention into a persisted job (exactly once per notification id),
//! applies the skip rules (own posts, bots, `#nobot`) and the per-requester quota, then hands
//! the job id to the workers through a bounded queue. A full queue drops nothing: the job is
//! already in the store and the dispatcher's sweep picks it up.

use std::num::NonZeroU32;
use std::sync::Arc;

use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use tokio::sync::mpsc;

use crate::job::{job_id, Draft, Job, Mention, Outcome, Post, SkipReason, Status};
use crate::metrics::SharedMetrics;
use crate::prompts::{PromptError, Prompts};
use crate::store::{Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum IntakeError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
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

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    pub fn metrics(&self) -> &SharedMetrics {
        &self.inner.metrics
    }

    /// Records a mention (and moves `cursor`) durably, then queues it. Idempotent.
    pub async fn accept(&self, mention: Mention, cursor: Option<(&str, &str)>) -> Result<(), IntakeError> {
        let inner = &self.inner;
        let id = job_id(mention.platform, &mention.notification_id);
        if inner.store.job(&id)?.is_some() {
            if let Some((name, value)) = cursor {
                inner.store.advance_cursor(name, value)?;
            }
            return Ok(());
        }
        let platform = mention.platform.as_str();
        let mut job = Job::new(mention);
        self.triage(&mut job)?;
        if !inner.store.enqueue(&job, cursor)? {
            return Ok(());
        }
        inner.metrics.mention(platform);
        let span = tracing::info_span!("mention", job = %job.id, platform, requester = %job.mention.requester);
        let _guard = span.enter();
        match &job.status {
            Status::Pending => {
                tracing::info!("mention queued");
                if inner.queue.try_send(job.id.clone()).is_err() {
                    tracing::warn!("worker queue full; the job waits in the store for the next sweep");
                }
            }
            Status::Skipped(reason) => {
                tracing::info!(reason = reason.as_str(), "mention skipped");
                inner.metrics.job_finished(reason.as_str());
            }
            Status::Done | Status::Failed(_) => {}
        }
        Ok(())
    }

    /// Applies the skip rules and the quota to a new job.
    fn triage(&self, job: &mut Job) -> Result<(), IntakeError> {
        let inner = &self.inner;
        let m = &job.mention;
        let allowed_bot = inner.allowed_bots.iter().any(|a| a.eq_ignore_ascii_case(&m.requester));
        let skip = if m.requester_is_self {
            Some(SkipReason::OwnPost)
        } else if m.requester_is_bot && !allowed_bot {
            Some(SkipReason::RequesterIsBot)
        } else if m.requester_nobot {
            Some(SkipReason::NoBot)
        } else {
            None
        };
        if let Some(reason) = skip {
            job.status = Status::Skipped(reason);
            return Ok(());
        }
        let key = format!("{}:{}", m.platform.as_str(), m.requester.to_ascii_lowercase());
        if inner.quota.check_key(&key).is_ok() {
            inner.store.bump(&format!("checks:{key}"))?;
            return Ok(());
        }
        let window = chrono::Utc::now().format("%Y%m%d%H");
        if inner.store.set_once(&format!("notice:{key}:{window}"))? {
            let text = inner
                .prompts
                .render("notice_quota.j2", minijinja::context! { per_hour => inner.per_hour })?;
            job.target = Some(mention_as_post(m));
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

/// The mention itself as the post a notice replies to.
pub fn mention_as_post(m: &Mention) -> Post {
    Post {
        id: m.status_id.clone(),
        url: None,
        author: m.requester.clone(),
        author_display_name: m.requester.clone(),
        author_is_bot: m.requester_is_bot,
        author_nobot: m.requester_nobot,
        text: m.text.clone(),
        created_at: m.created_at,
        visibility: m.visibility,
        language: None,
    }
}
