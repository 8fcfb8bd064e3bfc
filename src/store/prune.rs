//! Keeping the store bounded: finished jobs and their reply records expire after
//! `daemon.keep_days`, search cache entries after `search.cache_ttl_secs`, and quota windows
//! and notice flags two days after their hour. Unfinished jobs are never pruned. The daemon
//! prunes at start-up and every hour, on a blocking thread.

use chrono::{DateTime, NaiveDateTime, Utc};

use super::{Store, StoreError};
use crate::model::{ReplyRecord, Status};

/// Prunes the store at start-up and every hour, on a blocking thread.
pub async fn hourly(store: Store, retention: Retention, shutdown: tokio_util::sync::CancellationToken) {
    let mut every = tokio::time::interval(std::time::Duration::from_secs(3600));
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = every.tick() => {}
        }
        let s = store.clone();
        match tokio::task::spawn_blocking(move || s.prune(&retention, chrono::Utc::now())).await {
            Ok(Ok(p)) if p != super::Pruned::default() => {
                tracing::info!(
                    jobs = p.jobs,
                    replies = p.replies,
                    cache = p.cache,
                    quota = p.quota,
                    "store pruned"
                )
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "store prune failed; trying again in an hour"),
            Err(e) => tracing::warn!(error = %e, "store prune stopped"),
        }
    }
}

/// How long each kind of record is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Finished jobs (done, skipped, failed) and reply records.
    pub jobs: chrono::Duration,
    /// Search cache entries.
    pub cache: chrono::Duration,
    /// Quota windows and notice flags, past their hour.
    pub quota: chrono::Duration,
}

/// What one pass removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    pub jobs: usize,
    pub replies: usize,
    pub cache: usize,
    pub quota: usize,
    /// Kept posts past their `living.keep_days` (with their timers).
    pub kept: usize,
}

impl Store {
    /// Removes what `retention` says is expired at `now`, then flushes.
    pub fn prune(&self, retention: &Retention, now: DateTime<Utc>) -> Result<Pruned, StoreError> {
        let mut out = Pruned::default();
        for item in self.jobs.iter() {
            let (k, v) = item?;
            let Ok(job) = crate::model::decode_job(&v) else {
                continue;
            };
            if job.status != Status::Pending && now - job.updated_at > retention.jobs {
                self.jobs.remove(&k)?;
                self.pending.remove(&k)?;
                out.jobs += 1;
            }
        }
        for item in self.replies.iter() {
            let (k, v) = item?;
            let at = serde_json::from_slice::<ReplyRecord>(&v).ok().and_then(|r| r.at);
            if at.is_none_or(|at| now - at > retention.jobs) {
                self.replies.remove(&k)?;
                out.replies += 1;
            }
        }
        for item in self.cache.iter() {
            let (k, v) = item?;
            // Cache values are `[stored_at, value]`.
            let at = serde_json::from_slice::<serde_json::Value>(&v)
                .ok()
                .and_then(|x| x.get(0).and_then(|t| t.as_str()).map(str::to_string))
                .and_then(|t| DateTime::parse_from_rfc3339(&t).ok())
                .map(|t| t.with_timezone(&Utc));
            if at.is_none_or(|at| now - at > retention.cache) {
                self.cache.remove(&k)?;
                out.cache += 1;
            }
        }
        for item in self.images.iter() {
            let (k, v) = item?;
            let at = DateTime::parse_from_rfc3339(&String::from_utf8_lossy(&v))
                .ok()
                .map(|t| t.with_timezone(&Utc));
            if at.is_none_or(|at| now - at > retention.jobs) {
                self.images.remove(&k)?;
                out.cache += 1;
            }
        }
        for item in self.quota.iter() {
            let (k, v) = item?;
            if k.starts_with(b"rate:") {
                // A sliding window: kept while its newest entry is within the retention.
                let newest = serde_json::from_slice::<Vec<(String, DateTime<Utc>)>>(&v)
                    .ok()
                    .and_then(|jobs| jobs.iter().map(|(_, at)| *at).max());
                if newest.is_none_or(|at| now - at > retention.quota) {
                    self.quota.remove(&k)?;
                    out.quota += 1;
                }
                continue;
            }
            // `checks:<who>:<YYYYMMDDHH>` and `notice:<who>:<YYYYMMDDHH>`; a key without a
            // window is a counter of an older build, no longer read.
            let key = String::from_utf8_lossy(&k);
            let window = key
                .rsplit(':')
                .next()
                .and_then(|w| NaiveDateTime::parse_from_str(&format!("{w}0000"), "%Y%m%d%H%M%S").ok())
                .map(|t| t.and_utc());
            if window.is_none_or(|w| now - w > retention.quota) {
                self.quota.remove(&k)?;
                out.quota += 1;
            }
        }
        out.kept = self.prune_kept(now)?;
        self.flush()?;
        Ok(out)
    }

    /// Records per tree (jobs, replies, cache, quota), for tests and the prune log.
    pub fn counts(&self) -> [usize; 4] {
        [self.jobs.len(), self.replies.len(), self.cache.len(), self.quota.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Job, Trigger};

    fn trigger(id: usize) -> Trigger {
        Trigger {
            language: None,
            text: "x".repeat(2000),
            ..Trigger::test_mention(&id.to_string())
        }
    }

    /// Many finished jobs, replies, cache entries and quota windows; a prune keeps only what
    /// is recent or unfinished, and the store's record counts fall (sled reclaims the file
    /// space itself, later).
    #[test]
    fn a_prune_keeps_the_recent_and_the_unfinished() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path()).unwrap();
        let now = Utc::now();
        let old = now - chrono::Duration::days(40);
        for i in 0..2000 {
            let mut job = Job::new(trigger(i));
            job.status = if i % 100 == 0 { Status::Pending } else { Status::Done };
            job.updated_at = if i < 1800 { old } else { now };
            if job.status == Status::Pending {
                s.enqueue(&job, None).unwrap();
            } else {
                s.save(&job).unwrap();
            }
            let at = if i < 1800 { Some(old) } else { Some(now) };
            let record = ReplyRecord {
                job_id: job.id.clone(),
                reply_ids: vec!["1".into()],
                first_url: None,
                at,
            };
            s.record_reply(&format!("mastodon:{i}"), &record).unwrap();
            s.cache_put_at(
                "search",
                &format!("q{i}"),
                if i < 1800 { old } else { now },
                &vec!["hit"; 20],
            )
            .unwrap();
        }
        let hour = |t: DateTime<Utc>| t.format("%Y%m%d%H").to_string();
        for who in 0..300 {
            s.charge(&format!("checks:mastodon:u{who}:{}", hour(old)), "j", 5)
                .unwrap();
            s.set_once(&format!("notice:mastodon:u{who}:{}", hour(old))).unwrap();
        }
        s.charge(&format!("checks:mastodon:bob:{}", hour(now)), "j", 5).unwrap();
        s.quota.insert("checks:mastodon:legacy", &1u64.to_be_bytes()).unwrap();
        s.flush().unwrap();
        let before = s.counts();
        let retention = Retention {
            jobs: chrono::Duration::days(30),
            cache: chrono::Duration::days(1),
            quota: chrono::Duration::days(2),
        };
        let pruned = s.prune(&retention, now).unwrap();
        // 1800 old, of which 18 are unfinished and kept.
        assert_eq!(pruned.jobs, 1782);
        assert_eq!(pruned.replies, 1800);
        assert_eq!(pruned.cache, 1800);
        assert_eq!(pruned.quota, 601);
        assert_eq!(s.counts(), [before[0] - 1782, 200, 200, 1]);
        assert_eq!(s.pending_jobs().unwrap().len(), 20, "no unfinished job is lost");
        assert!(s.charge(&format!("checks:mastodon:bob:{}", hour(now)), "j", 5).unwrap());
        // A second pass finds nothing more.
        assert_eq!(s.prune(&retention, now).unwrap(), Pruned::default());
    }

    #[test]
    fn a_sliding_window_counts_the_last_hour_not_the_clock_hour() {
        let s = Store::open_temporary().unwrap();
        let hour = chrono::Duration::hours(1);
        let t0 = DateTime::parse_from_rfc3339("2026-12-01T10:59:00Z")
            .unwrap()
            .with_timezone(&Utc);
        for j in 0..3 {
            assert!(s.charge_window("rate:checks:x", &format!("a{j}"), 3, hour, t0).unwrap());
        }
        // Two minutes later, across the clock hour: still the same hour's three.
        let t1 = t0 + chrono::Duration::minutes(2);
        assert!(!s.charge_window("rate:checks:x", "b0", 3, hour, t1).unwrap());
        assert!(
            s.charge_window("rate:checks:x", "a1", 3, hour, t1).unwrap(),
            "a charged job again is free"
        );
        // An hour after the first three, their slots are free.
        let t2 = t0 + hour;
        assert!(s.charge_window("rate:checks:x", "b0", 3, hour, t2).unwrap());
        let retention = Retention {
            jobs: chrono::Duration::days(30),
            cache: chrono::Duration::days(1),
            quota: chrono::Duration::days(2),
        };
        assert_eq!(s.prune(&retention, t2).unwrap().quota, 0, "a live window is kept");
        assert_eq!(s.prune(&retention, t2 + chrono::Duration::days(3)).unwrap().quota, 1);
    }

    /// Every kind of cache entry is written in the shape the prune reads: an image's reading
    /// (a struct, not a pair) stored now survives the hourly prune and is read back.
    #[test]
    fn cached_image_readings_survive_the_prune() {
        let s = Store::open_temporary().unwrap();
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct Reading {
            ocr: String,
        }
        let reading = Reading { ocr: "text".into() };
        s.cache_put("image", "sha", &reading).unwrap();
        let retention = Retention {
            jobs: chrono::Duration::days(30),
            cache: chrono::Duration::days(1),
            quota: chrono::Duration::days(2),
        };
        assert_eq!(s.prune(&retention, Utc::now()).unwrap().cache, 0);
        assert_eq!(s.cache_get::<Reading>("image", "sha"), Some(reading));
        let later = Utc::now() + chrono::Duration::days(2);
        assert_eq!(
            s.prune(&retention, later).unwrap().cache,
            1,
            "and expires after its TTL"
        );
    }
}
