//! The only module that touches sled. Trees: `cursors` (stream positions), `jobs` (one JSON
//! [`Job`] per trigger, any schema [`decode_job`] reads), `replies` (target post → reply ids), `quota` (per-requester counters
//! and notices), `sessions` (platform login sessions: the tokens a restart refreshes instead of
//! logging in again), `living` (answered posts kept for re-checking, their timers: `living.rs`). Every write that must survive a crash is flushed before it is acknowledged
//! (sled's own background flush runs only every 500 ms). The store's schema is read before
//! any write and a newer one refused; backups and restores are `backup.rs`.

use std::path::Path;

pub mod backup;
mod backup_key;
mod kept;
mod living;
mod moderation;
pub mod prune;
#[cfg(test)]
mod tests_accounts;

/// A kept answer as the tests make it.
#[cfg(test)]
pub(crate) use living::tests::kept as test_kept;
pub use living::Timer;
pub use prune::{Pruned, Retention};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::model::{decode_job, id_less, Job, ReplyRecord, Status};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("state store: {0}")]
    Sled(#[from] sled::Error),
    #[error("state store: corrupt record `{key}`: {reason}")]
    Corrupt { key: String, reason: String },
    #[error("state store: record `{key}` {reason}")]
    Unreadable { key: String, reason: String },
    #[error("state store: written by a newer musebot (store schema {found}; this build reads {} at most) — run the newer build, or restore the backup taken before the upgrade (`musebot state restore`)", backup::SCHEMA)]
    Newer { found: u32 },
}

impl StoreError {
    /// Whether another process holds the store (a running daemon: sled's file lock).
    pub fn is_locked(&self) -> bool {
        matches!(self, StoreError::Sled(sled::Error::Io(e)) if e.to_string().contains("could not acquire lock"))
    }
}

#[derive(Clone)]
pub struct Store {
    db: sled::Db,
    cursors: sled::Tree,
    jobs: sled::Tree,
    replies: sled::Tree,
    quota: sled::Tree,
    /// Index of unfinished job ids.
    pending: sled::Tree,
    /// Caches (search results): keys prefixed by their kind.
    cache: sled::Tree,
    /// Platform sessions (tokens), by account.
    sessions: sled::Tree,
    /// The perceptual-hash index of pictures seen (`{phash}|{page url}` → when).
    images: sled::Tree,
    /// Watched hashtags, paused flags, opt-outs (`moderation.rs`).
    moderation: sled::Tree,
    /// Answered posts kept for re-checking and their timers (`living.rs`).
    living: sled::Tree,
    /// Opt-outs (`stop`, `#nobot` kept), one tree per platform and server for every account
    /// that serves it: Bluesky's DIDs hold network-wide; Mastodon's account ids only on
    /// their server.
    optouts_bluesky: sled::Tree,
    optouts_mastodon: sled::Tree,
}

impl Store {
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        Self::from_db(sled::Config::new().path(dir).flush_every_ms(Some(500)).open()?)
    }

    fn from_db(db: sled::Db) -> Result<Store, StoreError> {
        backup::check_schema(&db)?;
        Ok(Store {
            optouts_bluesky: db.open_tree("moderation")?,
            optouts_mastodon: db.open_tree("moderation")?,
            cursors: db.open_tree("cursors")?,
            jobs: db.open_tree("jobs")?,
            replies: db.open_tree("replies")?,
            quota: db.open_tree("quota")?,
            pending: db.open_tree("pending")?,
            cache: db.open_tree("cache")?,
            sessions: db.open_tree("sessions")?,
            images: db.open_tree("images")?,
            moderation: db.open_tree("moderation")?,
            living: db.open_tree("living")?,
            db,
        })
    }

    /// The same store as a named account of the daemon sees it: its own cursors, jobs,
    /// replies, counters, sessions, moderation and kept answers (trees `{name}/…`), the
    /// caches shared, and opt-outs shared with every account on the same platform — on
    /// Mastodon, with those on the same server (`mastodon_host`; the default account's server
    /// keeps the default account's tree). The empty name is the default account: this store.
    pub fn account(&self, name: &str, mastodon_host: &str, default_mastodon_host: &str) -> Result<Store, StoreError> {
        if name.is_empty() {
            return Ok(self.clone());
        }
        let db = &self.db;
        let own = |tree: &str| db.open_tree(format!("{name}/{tree}"));
        let optouts_mastodon = if mastodon_host.is_empty() || mastodon_host == default_mastodon_host {
            self.optouts_mastodon.clone()
        } else {
            db.open_tree(format!("optouts/mastodon/{}", mastodon_host.to_lowercase()))?
        };
        Ok(Store {
            cursors: own("cursors")?,
            jobs: own("jobs")?,
            replies: own("replies")?,
            quota: own("quota")?,
            pending: own("pending")?,
            sessions: own("sessions")?,
            moderation: own("moderation")?,
            living: own("living")?,
            cache: self.cache.clone(),
            images: self.images.clone(),
            optouts_bluesky: self.optouts_bluesky.clone(),
            optouts_mastodon,
            db: self.db.clone(),
        })
    }

    /// A store that lives only as long as this process (`musebot check`, tests).
    pub fn open_temporary() -> Result<Store, StoreError> {
        Self::from_db(sled::Config::new().temporary(true).open()?)
    }

    /// Re-indexes unfinished jobs (the index and the job are separate writes; a crash between
    /// them must not hide a job). Run once at start-up; returns how many were re-indexed.
    pub fn repair_pending(&self) -> Result<usize, StoreError> {
        let mut fixed = 0;
        for item in self.jobs.iter() {
            let (k, v) = item?;
            if let Ok(job) = decode(&String::from_utf8_lossy(&k), &v) {
                if job.status == Status::Pending && !self.pending.contains_key(&k)? {
                    self.pending.insert(&k, &[])?;
                    fixed += 1;
                }
            }
        }
        self.flush()?;
        Ok(fixed)
    }

    /// Makes every write so far durable. The fsync blocks, so on a multi-thread runtime it
    /// runs under `block_in_place`: the worker thread hands its other tasks to the rest of
    /// the pool for the duration, and no async task waits behind the disk.
    pub fn flush(&self) -> Result<(), StoreError> {
        let on_multi_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        if on_multi_thread {
            tokio::task::block_in_place(|| self.db.flush())?;
        } else {
            self.db.flush()?;
        }
        Ok(())
    }

    pub fn cursor(&self, name: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .cursors
            .get(name)?
            .map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    /// Inserts the job unless one with its id exists, moves the cursor, and flushes: after
    /// this returns `Ok(true)` the mention cannot be lost, and a second delivery returns
    /// `Ok(false)`.
    pub fn enqueue(&self, job: &Job, cursor: Option<(&str, &str)>) -> Result<bool, StoreError> {
        let bytes = encode(job);
        let inserted = self
            .jobs
            .compare_and_swap(job.id.as_bytes(), None as Option<&[u8]>, Some(bytes))?
            .is_ok();
        if inserted && job.status == Status::Pending {
            self.pending.insert(job.id.as_bytes(), &[])?;
        }
        if let Some((name, value)) = cursor {
            self.advance_cursor(name, value)?;
        }
        self.flush()?;
        Ok(inserted)
    }

    /// Replaces the job stored under `job.id` by `job` when `takes_over` says the stored one
    /// may be replaced (a report job that ended on its reporter alone), atomically: a job
    /// changed meanwhile is left as it is. `true` when replaced. The cursor moves either way.
    pub fn reopen(
        &self,
        job: &Job,
        cursor: Option<(&str, &str)>,
        takes_over: impl Fn(&Job) -> bool,
    ) -> Result<bool, StoreError> {
        let mut replaced = false;
        if let Some(old) = self.jobs.get(job.id.as_bytes())? {
            if decode(&job.id, &old).is_ok_and(|o| takes_over(&o)) {
                replaced = self
                    .jobs
                    .compare_and_swap(job.id.as_bytes(), Some(&old), Some(encode(job)))?
                    .is_ok();
                if replaced && job.status == Status::Pending {
                    self.pending.insert(job.id.as_bytes(), &[])?;
                }
            }
        }
        if let Some((name, value)) = cursor {
            self.advance_cursor(name, value)?;
        }
        self.flush()?;
        Ok(replaced)
    }

    /// Moves a cursor forward (numeric-aware: Mastodon ids are decimal strings of any length).
    pub fn advance_cursor(&self, name: &str, value: &str) -> Result<(), StoreError> {
        let cur = self.cursor(name)?;
        if cur.as_deref().is_none_or(|c| id_less(c, value)) {
            self.cursors.insert(name, value.as_bytes())?;
        }
        Ok(())
    }

    /// Persists a job's new stage output and flushes before returning.
    pub fn save(&self, job: &Job) -> Result<(), StoreError> {
        self.jobs.insert(job.id.as_bytes(), encode(job))?;
        if job.status != Status::Pending {
            self.pending.remove(job.id.as_bytes())?;
        }
        self.flush()
    }

    pub fn job(&self, id: &str) -> Result<Option<Job>, StoreError> {
        self.jobs.get(id)?.map(|v| decode(id, &v)).transpose()
    }

    /// Jobs not finished yet, oldest first (resumed at start-up).
    pub fn pending_jobs(&self) -> Result<Vec<Job>, StoreError> {
        let mut out = Vec::new();
        for item in self.pending.iter() {
            let (k, _) = item?;
            let key = String::from_utf8_lossy(&k).into_owned();
            match self.job(&key) {
                Ok(Some(job)) if job.status == Status::Pending => out.push(job),
                Ok(_) => {
                    self.pending.remove(&k)?;
                }
                Err(e) => {
                    // Said once, not at every sweep: out of the queue until the next start
                    // (`repair_pending` indexes it again if a build can read it then).
                    tracing::error!(job = %key, error = %e, "unreadable job record; left out of the queue until the next start");
                    self.pending.remove(&k)?;
                }
            }
        }
        out.sort_by_key(|j| j.created_at);
        Ok(out)
    }

    /// Every readable job; an unreadable record is left out (logged at debug: the queue's
    /// sweep has said so once), so one bad record does not hide the others.
    pub fn all_jobs(&self) -> Result<Vec<Job>, StoreError> {
        let mut out = Vec::new();
        for item in self.jobs.iter() {
            let (k, v) = item?;
            match decode(&String::from_utf8_lossy(&k), &v) {
                Ok(job) => out.push(job),
                Err(e) => tracing::debug!(error = %e, "unreadable job record left out"),
            }
        }
        Ok(out)
    }

    pub fn reply_for(&self, target_key: &str) -> Result<Option<ReplyRecord>, StoreError> {
        self.replies
            .get(target_key)?
            .map(|v| {
                serde_json::from_slice(&v).map_err(|e| StoreError::Corrupt {
                    key: target_key.into(),
                    reason: e.to_string(),
                })
            })
            .transpose()
    }

    /// Records the reply thread of a target; not overwritten by later answers.
    /// Forgets the reply recorded for a target (its answer was deleted), flushed.
    pub fn forget_reply(&self, target_key: &str) -> Result<(), StoreError> {
        self.replies.remove(target_key)?;
        self.flush()
    }

    pub fn record_reply(&self, target_key: &str, record: &ReplyRecord) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(record).expect("reply record serialises");
        let _ = self
            .replies
            .compare_and_swap(target_key, None as Option<&[u8]>, Some(bytes))?;
        Ok(())
    }

    /// A cached value (any JSON-serialisable type); `None` when absent or unreadable.
    pub fn cache_get<T: serde::de::DeserializeOwned>(&self, kind: &str, key: &str) -> Option<T> {
        self.cache_get_at(kind, key).map(|(_, v)| v)
    }

    /// A cached value with the time it was stored.
    pub fn cache_get_at<T: serde::de::DeserializeOwned>(&self, kind: &str, key: &str) -> Option<(DateTime<Utc>, T)> {
        let bytes = self.cache.get(format!("{kind}:{key}")).ok()??;
        serde_json::from_slice(&bytes).ok()
    }

    /// Stores a cached value, stamped now (not flushed: a cache may be lost in a crash).
    pub fn cache_put<T: Serialize>(&self, kind: &str, key: &str, value: &T) -> Result<(), StoreError> {
        self.cache_put_at(kind, key, Utc::now(), value)
    }

    /// Stores a cached value as `[stored_at, value]`, the one shape the prune reads.
    pub fn cache_put_at<T: Serialize>(
        &self,
        kind: &str,
        key: &str,
        at: DateTime<Utc>,
        value: &T,
    ) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(&(at, value)).expect("cache value serialises");
        self.cache.insert(format!("{kind}:{key}"), bytes)?;
        Ok(())
    }

    /// Charges job `job_id` to the counter `key` (a requester's window) unless `limit` jobs
    /// are already charged to it; `true` when the job may go on. Charging the same job again
    /// (a stage re-run after a crash) is free. Atomic and flushed: a restart, or a crash
    /// loop, cannot reset a requester's quota.
    pub fn charge(&self, key: &str, job_id: &str, limit: u32) -> Result<bool, StoreError> {
        let decode =
            |b: Option<&[u8]>| -> Vec<String> { b.and_then(|b| serde_json::from_slice(b).ok()).unwrap_or_default() };
        let mut allowed = false;
        self.quota.update_and_fetch(key, |old| {
            let mut jobs = decode(old);
            allowed = jobs.iter().any(|j| j == job_id) || jobs.len() < limit as usize;
            if allowed && !jobs.iter().any(|j| j == job_id) {
                jobs.push(job_id.to_string());
            }
            Some(serde_json::to_vec(&jobs).expect("job ids serialise"))
        })?;
        self.flush()?;
        Ok(allowed)
    }

    /// Charges job `job_id` to the sliding window `key` (`rate:…`): at most `limit` jobs in
    /// any `window` (the entries older than `window` before `now` no longer count); `true` when
    /// the job may go on. The same job again is free. Atomic and flushed, as [`Store::charge`].
    pub fn charge_window(
        &self,
        key: &str,
        job_id: &str,
        limit: u32,
        window: chrono::Duration,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        debug_assert!(key.starts_with("rate:"), "sliding windows live under rate:");
        let mut allowed = false;
        self.quota.update_and_fetch(key, |old| {
            let mut jobs: Vec<(String, DateTime<Utc>)> =
                old.and_then(|b| serde_json::from_slice(b).ok()).unwrap_or_default();
            jobs.retain(|(_, at)| now - *at < window);
            let known = jobs.iter().any(|(j, _)| j == job_id);
            allowed = known || jobs.len() < limit as usize;
            if allowed && !known {
                jobs.push((job_id.to_string(), now));
            }
            Some(serde_json::to_vec(&jobs).expect("job ids serialise"))
        })?;
        self.flush()?;
        Ok(allowed)
    }

    /// Adds one to the counter `key` (a fixed window, its key ending in `:<YYYYMMDDHH>` so the
    /// prune drops it) unless it has reached `limit`; `true` when it was added. Atomic and
    /// flushed, like [`Store::charge`].
    pub fn count_up(&self, key: &str, limit: u64) -> Result<bool, StoreError> {
        let mut added = false;
        self.quota.update_and_fetch(key, |old| {
            let n = old
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map_or(0, u64::from_be_bytes);
            added = n < limit;
            Some((if added { n + 1 } else { n }).to_be_bytes().to_vec())
        })?;
        self.flush()?;
        Ok(added)
    }

    /// The jobs charged to counter `key`.
    pub fn charged(&self, key: &str) -> Vec<String> {
        self.quota
            .get(key)
            .ok()
            .flatten()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// Takes job `job_id` off counter `key` (its slot is free again). Flushed.
    pub fn uncharge(&self, key: &str, job_id: &str) -> Result<(), StoreError> {
        self.quota.update_and_fetch(key, |old| {
            let mut jobs: Vec<String> = old.and_then(|b| serde_json::from_slice(b).ok()).unwrap_or_default();
            jobs.retain(|j| j != job_id);
            Some(serde_json::to_vec(&jobs).expect("job ids serialise"))
        })?;
        self.flush()
    }

    /// Takes job `job_id` off every counter whose key starts with `prefix` (the windows it was
    /// charged to, whichever they were). Flushed.
    pub fn uncharge_prefix(&self, prefix: &str, job_id: &str) -> Result<(), StoreError> {
        let keys: Vec<sled::IVec> = self.quota.scan_prefix(prefix).keys().filter_map(Result::ok).collect();
        for key in keys {
            self.quota.update_and_fetch(&key, |old| {
                let mut jobs: Vec<String> = old.and_then(|b| serde_json::from_slice(b).ok()).unwrap_or_default();
                jobs.retain(|j| j != job_id);
                Some(serde_json::to_vec(&jobs).expect("job ids serialise"))
            })?;
        }
        self.flush()
    }

    /// Remembers that the picture with perceptual hash `phash` appears at `url` (a post or a
    /// page), for the local reverse image search. Not flushed: losing the last few on a crash
    /// only makes the index a little less complete.
    pub fn add_image(&self, phash: &str, url: &str) -> Result<(), StoreError> {
        let key = format!("{phash}|{url}");
        self.images
            .insert(key.as_bytes(), chrono::Utc::now().to_rfc3339().as_bytes())?;
        Ok(())
    }

    /// Every (phash, url) in the index (pruned after `daemon.keep_days`).
    pub fn image_index(&self) -> Vec<(String, String)> {
        self.images
            .iter()
            .keys()
            .filter_map(Result::ok)
            .filter_map(|k| {
                let k = String::from_utf8_lossy(&k).into_owned();
                let (h, u) = k.split_once('|')?;
                Some((h.to_string(), u.to_string()))
            })
            .collect()
    }

    /// A platform's stored session for `account` (its tokens: never log it).
    pub fn session(&self, account: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .sessions
            .get(account)?
            .map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    /// Stores (and flushes) a platform's session for `account`, so a restart refreshes it
    /// instead of logging in again.
    pub fn set_session(&self, account: &str, session: &str) -> Result<(), StoreError> {
        self.sessions.insert(account, session.as_bytes())?;
        self.flush()
    }

    /// Forgets a session the server no longer accepts.
    pub fn drop_session(&self, account: &str) -> Result<(), StoreError> {
        self.sessions.remove(account)?;
        self.flush()
    }

    /// Sets a flag once; `true` if this call set it.
    pub fn set_once(&self, key: &str) -> Result<bool, StoreError> {
        Ok(self
            .quota
            .compare_and_swap(key, None as Option<&[u8]>, Some(&b"1"[..]))?
            .is_ok())
    }
}

fn encode(job: &Job) -> Vec<u8> {
    serde_json::to_vec(job).expect("job serialises")
}

fn decode(key: &str, bytes: &[u8]) -> Result<Job, StoreError> {
    decode_job(bytes).map_err(|e| StoreError::Unreadable {
        key: key.into(),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Opens a store just dropped in this process: sled's flusher thread may hold the file lock
    /// for a moment after the handle is gone.
    /// Opens a store again in the same process: sled's flusher thread may hold the file lock
    /// for a moment after the last handle is dropped.
    pub(super) fn reopen(dir: &std::path::Path) -> Store {
        for _ in 0..50 {
            match Store::open(dir) {
                Ok(s) => return s,
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(100)),
            }
        }
        Store::open(dir).unwrap()
    }
    use crate::model::Trigger;

    fn mention(id: &str) -> Trigger {
        Trigger::test_mention(id)
    }

    #[test]
    fn enqueue_is_once_and_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let s = Store::open(dir.path()).unwrap();
            assert!(s.enqueue(&Job::new(mention("9")), Some(("m", "9"))).unwrap());
            assert!(!s.enqueue(&Job::new(mention("9")), Some(("m", "9"))).unwrap());
            s.advance_cursor("m", "10").unwrap();
            s.advance_cursor("m", "8").unwrap();
            s.flush().unwrap();
        }
        let s = reopen(dir.path());
        assert_eq!(s.pending_jobs().unwrap().len(), 1);
        assert_eq!(s.cursor("m").unwrap().as_deref(), Some("10"));
    }

    #[test]
    fn a_quota_charges_each_job_once_and_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let s = Store::open(dir.path()).unwrap();
            assert!(s.charge("q:bob:h1", "j1", 2).unwrap());
            assert!(s.charge("q:bob:h1", "j1", 2).unwrap(), "the same job again is free");
            assert!(s.charge("q:bob:h1", "j2", 2).unwrap());
            assert!(!s.charge("q:bob:h1", "j3", 2).unwrap());
            assert!(s.charge("q:bob:h2", "j3", 2).unwrap(), "another window");
        }
        let s = reopen(dir.path());
        assert!(!s.charge("q:bob:h1", "j4", 2).unwrap(), "a restart does not reset it");
        assert!(s.charge("q:bob:h1", "j2", 2).unwrap());
    }

    /// One unreadable record (a newer build's, a torn write) costs only itself: the queue
    /// leaves it out once (not at every sweep), the admin page's list still shows the rest, and
    /// a restart indexes it again only if it can be read then.
    #[test]
    fn an_unreadable_job_costs_only_itself() {
        let s = Store::open_temporary().unwrap();
        let good = Job::new(crate::model::Trigger::test_mention("1"));
        s.enqueue(&good, None).unwrap();
        s.jobs.insert("bad", &b"{not json"[..]).unwrap();
        s.pending.insert("bad", &[]).unwrap();
        assert_eq!(s.pending_jobs().unwrap().len(), 1);
        assert!(!s.pending.contains_key("bad").unwrap(), "left out of the queue");
        assert_eq!(s.pending_jobs().unwrap().len(), 1);
        assert_eq!(s.all_jobs().unwrap().len(), 1, "the others are still listed");
        assert_eq!(s.repair_pending().unwrap(), 0);
        assert!(!s.pending.contains_key("bad").unwrap());
    }

    /// A hashtag slot is released from the window it was taken in, whichever window it is
    /// when the hit ends (yesterday's day, an earlier author window).
    #[test]
    fn a_slot_is_released_in_the_window_it_was_taken() {
        let s = Store::open_temporary().unwrap();
        assert!(s.charge("tagday:mastodon:moon:2026113000", "j", 20).unwrap());
        assert!(s.charge("tagday:mastodon:moon:2026113000", "k", 20).unwrap());
        assert!(s.charge("tagday:mastodon:moonlight:2026113000", "j", 20).unwrap());
        s.uncharge_prefix("tagday:mastodon:moon:", "j").unwrap();
        assert_eq!(s.charged("tagday:mastodon:moon:2026113000"), vec!["k".to_string()]);
        assert_eq!(
            s.charged("tagday:mastodon:moonlight:2026113000"),
            vec!["j".to_string()],
            "another tag"
        );
    }

    #[test]
    fn counters_and_flags() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path()).unwrap();
        assert!(s.set_once("n").unwrap());
        assert!(!s.set_once("n").unwrap());
    }
}
