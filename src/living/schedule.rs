//! The scheduler: due re-check timers (sled, `due:` keys) become re-check jobs. A timer's job id
//! is derived from the timer (`platform:recheck:<job>:<n>`) and stored by compare-and-swap
//! before the timer is removed, so a `kill -9` between the two stores the job once and runs it
//! once. At most `living.max_pending_rechecks` re-checks wait at once: a backlog after downtime
//! drains at the workers' pace, behind fresh mentions (the dispatcher serves re-checks last).

use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;

use crate::config::LivingConfig;
use crate::metrics::SharedMetrics;
use crate::model::Cause;
use crate::store::{Store, StoreError};

/// How often due timers are looked for.
pub const EVERY: Duration = Duration::from_secs(2);

pub struct Scheduler {
    pub store: Store,
    pub config: LivingConfig,
    pub metrics: Option<SharedMetrics>,
}

impl Scheduler {
    pub async fn run(self, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(EVERY);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            if let Err(e) = self.tick(Utc::now()) {
                tracing::error!(error = %e, "re-check timers could not be read; trying again");
            }
        }
    }

    /// One pass: due timers → re-check jobs, within the room left. Returns the jobs made.
    pub fn tick(&self, now: DateTime<Utc>) -> Result<usize, StoreError> {
        let waiting = self
            .store
            .pending_jobs()?
            .iter()
            .filter(|j| matches!(j.trigger.cause, Cause::Recheck { .. }))
            .count();
        let room = self.config.max_pending_rechecks.saturating_sub(waiting);
        if room == 0 {
            return Ok(0);
        }
        let mut made = 0;
        for timer in self.store.due_timers(now, room)? {
            let Some(kept) = self.store.kept(&timer.job_id)? else {
                self.store.remove_timer(&timer.key)?;
                continue;
            };
            if kept.gone.is_some() || kept.hidden.is_some() {
                // Deleted, withdrawn, or hidden from the bot: not re-checked.
                self.store.remove_timer(&timer.key)?;
                continue;
            }
            let job = super::recheck_job(&kept, timer.n, timer.why.clone());
            if self.store.enqueue(&job, None)? {
                made += 1;
                if let Some(m) = &self.metrics {
                    m.living("recheck");
                }
                tracing::info!(job = %job.id, of = %kept.job_id, why = timer.why.as_str(), "re-check queued");
            }
            // Not inserted: stored before a stop (the job is the timer's), nothing more to do.
            self.store.remove_timer(&timer.key)?;
            let next = self.store.timers_of(&kept.job_id)?.iter().map(|t| t.at).min();
            self.store.update_kept(&kept.job_id, |k| k.next_recheck = next)?;
        }
        Ok(made)
    }
}
