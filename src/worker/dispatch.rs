//! The dispatcher: feeds workers from the bounded queues — mentions, commands and flags always
//! first, even ahead of a batch waiting for permits — plus a periodic sweep of the store (jobs
//! of configured platforms, due for a retry, hashtag hits after the rest and re-checks of kept
//! answers last; served before new hashtag hits, so retries and held drafts never starve), at most `max_jobs_in_flight` at once; on
//! shutdown it stops taking jobs and gives in-flight ones the grace period. Work nobody asked
//! for (hashtag hits, reports, re-checks, the watch) holds at most `max_jobs_in_flight - 1`
//! permits, so one is always left for a mention or a moderator's command, and a mention that
//! comes while unasked work waits for a permit is taken first.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing::Instrument;

use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::Worker;

/// How often the dispatcher re-reads unfinished jobs from the store.
pub const SWEEP_EVERY: Duration = Duration::from_secs(2);

/// A job's mark in the in-flight set, removed on drop (the task's end, a panic's unwinding).
struct InFlight {
    set: Arc<Mutex<HashSet<String>>>,
    id: String,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        // A poisoned lock (a panic while it was held) still holds the set.
        let mut set = self.set.lock().unwrap_or_else(|p| p.into_inner());
        set.remove(&self.id);
    }
}

/// Feeds workers from the queue and the store; on shutdown stops taking jobs, gives in-flight
/// ones `grace` to finish, then aborts them (their last finished stage is saved).
pub async fn dispatch(
    worker: Arc<Worker>,
    (mut first, mut later): (mpsc::Receiver<String>, mpsc::Receiver<String>),
    max_in_flight: usize,
    grace: Duration,
    shutdown: CancellationToken,
) {
    let permits = Arc::new(Semaphore::new(max_in_flight));
    // What unasked work may hold at once: all but one permit (one, with a single permit).
    let unasked = Arc::new(Semaphore::new(max_in_flight.saturating_sub(1).max(1)));
    // Ids of unasked jobs among those the sweep and the later queue hand over.
    let mut unasked_ids: HashSet<String> = HashSet::new();
    let in_flight: Arc<Mutex<HashSet<String>>> = Arc::default();
    let mut tasks = JoinSet::new();
    let mut sweep = tokio::time::interval(SWEEP_EVERY);
    loop {
        let mut ids: std::collections::VecDeque<String> = tokio::select! {
            biased;
            _ = shutdown.cancelled() => break,
            id = first.recv() => match id { Some(id) => [id].into(), None => break },
            _ = sweep.tick() => match worker.store.pending_jobs() {
                Ok(jobs) => {
                    let now = chrono::Utc::now();
                    let mut due: Vec<_> = jobs.into_iter()
                        .filter(|j| j.retry_at.is_none_or(|t| t <= now))
                        .filter(|j| worker.platforms.get(j.trigger.platform).is_some())
                        .collect();
                    // Mentions, commands and flags first, then hashtag hits and reports, re-checks
                    // and watched posts last.
                    due.sort_by_key(|j| match j.trigger.cause {
                        crate::model::Cause::Recheck { .. } | crate::model::Cause::Watch { .. } => 2,
                        crate::model::Cause::HashtagHit { .. } | crate::model::Cause::Report { .. } => 1,
                        _ => 0,
                    });
                    unasked_ids = due.iter().filter(|j| is_unasked(&j.trigger.cause)).map(|j| j.id.clone()).collect();
                    due.into_iter().map(|j| j.id).collect()
                }
                Err(e) => {
                    tracing::error!(error = %e, "cannot read pending jobs");
                    std::collections::VecDeque::new()
                }
            },
            id = later.recv() => match id {
                Some(id) => {
                    unasked_ids.insert(id.clone());
                    [id].into()
                }
                None => break,
            },
        };
        while tasks.try_join_next().is_some() {}
        while let Some(mut id) = ids.pop_front() {
            // A mention that came while this batch waited for permits goes first.
            if let Ok(first_id) = first.try_recv() {
                ids.push_front(id);
                id = first_id;
            }
            if !in_flight.lock().expect("in-flight lock").insert(id.clone()) {
                continue;
            }
            // Unasked work first takes its share's permit — given up, and the job put back,
            // when a mention comes meanwhile.
            let share = if unasked_ids.contains(&id) {
                tokio::select! {
                    biased;
                    _ = shutdown.cancelled() => {
                        in_flight.lock().expect("in-flight lock").remove(&id);
                        break;
                    }
                    asked = first.recv() => {
                        in_flight.lock().expect("in-flight lock").remove(&id);
                        ids.push_front(id);
                        match asked {
                            Some(asked) => ids.push_front(asked),
                            None => break,
                        }
                        continue;
                    }
                    p = unasked.clone().acquire_owned() => Some(p.expect("semaphore never closed")),
                }
            } else {
                None
            };
            let permit = tokio::select! {
                _ = shutdown.cancelled() => {
                    in_flight.lock().expect("in-flight lock").remove(&id);
                    break;
                }
                p = permits.clone().acquire_owned() => p.expect("semaphore never closed"),
            };
            let worker = worker.clone();
            // Released when the task ends in any way, a panic outside a stage included: a
            // job left marked in flight would never be taken again until a restart.
            let guard = InFlight {
                set: in_flight.clone(),
                id,
            };
            // In the dispatcher's span (its account's), so every job's log names its account.
            tasks.spawn(
                async move {
                    worker.run(&guard.id).await;
                    drop(guard);
                    drop(permit);
                    drop(share);
                }
                .in_current_span(),
            );
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

/// Work nobody asked for: it never takes the last permit.
fn is_unasked(cause: &crate::model::Cause) -> bool {
    matches!(
        cause,
        crate::model::Cause::Recheck { .. }
            | crate::model::Cause::Watch { .. }
            | crate::model::Cause::HashtagHit { .. }
            | crate::model::Cause::Report { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic outside a stage releases the job's mark, so the sweep takes it again.
    #[tokio::test]
    async fn a_task_that_panics_releases_its_job() {
        let set: Arc<Mutex<HashSet<String>>> = Arc::default();
        set.lock().unwrap().insert("mastodon:1".into());
        let guard = InFlight {
            set: set.clone(),
            id: "mastodon:1".into(),
        };
        let task = tokio::spawn(async move {
            let _guard = guard;
            panic!("a bug outside the stages");
        });
        assert!(task.await.is_err());
        assert!(set.lock().unwrap().is_empty());
    }
}
