//! How a kept answer (`kept:<job id>` in the `living` tree) changes: only through
//! [`Store::update_kept`], a sled transaction that reads the record as it is now, applies one
//! task's change to it and writes it back — retried on a conflict, so the re-matcher, the
//! follower, the scheduler, the update and label recorders and the commands, each changing
//! only its own fields, never write back a stale copy over another's change (a lost update's
//! part ids would leave parts up after a withdrawal; a stale copy would bring a withdrawn
//! answer back). A re-check timer set by a change is written in the same transaction, so the
//! number it takes and the timer are kept together or not at all. Once an answer is gone it
//! stays gone ([`Kept::hold_closed`]). The record is created once, by [`Store::create_kept`].

use chrono::{DateTime, Utc};
use sled::transaction::{ConflictableTransactionError, TransactionError};

use super::living::{kept_key, part_key, target_key, timer_key};
use super::{Store, StoreError};
use crate::model::{Kept, RecheckWhy};

/// A timer a change sets with the record: when, its number, why.
pub type TimerSet = (DateTime<Utc>, u32, RecheckWhy);

impl Store {
    /// Writes a new kept answer unless one is kept for that job already (then that one is
    /// returned, unchanged), and indexes its parts and its target; flushed.
    pub fn create_kept(&self, kept: &Kept) -> Result<Option<Kept>, StoreError> {
        let bytes = serde_json::to_vec(kept).expect("a kept post serialises");
        let swapped = self
            .living
            .compare_and_swap(kept_key(&kept.job_id), None as Option<&[u8]>, Some(bytes))?;
        if swapped.is_err() {
            return self.kept(&kept.job_id);
        }
        self.index_kept(kept)?;
        self.living
            .insert(format!("fresh:{}", kept.job_id), kept.kept_at.to_rfc3339().as_bytes())?;
        self.flush()?;
        Ok(None)
    }

    /// Marks a kept answer as fresh again from `at` (a re-check's label just put on): the
    /// follower looks at its post every round for the next hour, as after the first answer.
    pub fn mark_fresh(&self, job_id: &str, at: DateTime<Utc>) -> Result<(), StoreError> {
        self.living
            .insert(format!("fresh:{job_id}"), at.to_rfc3339().as_bytes())?;
        Ok(())
    }

    /// Kept answers created after `since`, open ones only (the follower looks at these every
    /// round, so an edit soon after an answer or a label is met within one interval, not one
    /// whole cycle over every kept answer); entries older than `since` are dropped as met.
    pub fn fresh_kept(&self, since: DateTime<Utc>) -> Result<Vec<Kept>, StoreError> {
        let mut out = Vec::new();
        for item in self.living.scan_prefix(b"fresh:") {
            let (k, v) = item?;
            let at = DateTime::parse_from_rfc3339(&String::from_utf8_lossy(&v))
                .map(|d| d.with_timezone(&Utc))
                .unwrap_or(since);
            if at < since {
                self.living.remove(&k)?;
                continue;
            }
            let job_id = String::from_utf8_lossy(&k["fresh:".len()..]).into_owned();
            if let Some(kept) = self.kept(&job_id)?.filter(|k| k.gone.is_none() && k.hidden.is_none()) {
                out.push(kept);
            }
        }
        Ok(out)
    }

    /// Applies `change` to the kept answer as it is now and writes it, atomically; returns the
    /// answer as written and what `change` returned, or `None` when no answer is kept for
    /// `job_id`. `change` may run more than once (on a conflict it runs again on the newer
    /// record), so it changes only the record it is given. Flushed.
    pub fn update_kept<R>(
        &self,
        job_id: &str,
        change: impl Fn(&mut Kept) -> R,
    ) -> Result<Option<(Kept, R)>, StoreError> {
        self.update_kept_with(job_id, |k| (change(k), None))
    }

    /// [`Store::update_kept`] for a change that may also set a re-check timer: the timer is
    /// written in the same transaction as the record that counts it.
    pub fn update_kept_with<R>(
        &self,
        job_id: &str,
        change: impl Fn(&mut Kept) -> (R, Option<TimerSet>),
    ) -> Result<Option<(Kept, R)>, StoreError> {
        let key = kept_key(job_id);
        let result = self.living.transaction(|tx| {
            let Some(bytes) = tx.get(&key)? else {
                return Ok(None);
            };
            let before: Kept = serde_json::from_slice(&bytes).map_err(|e| {
                ConflictableTransactionError::Abort(StoreError::Corrupt {
                    key: key.clone(),
                    reason: e.to_string(),
                })
            })?;
            let mut after = before.clone();
            let (out, timer) = change(&mut after);
            after.hold_closed(&before);
            if after != before {
                tx.insert(
                    key.as_bytes(),
                    serde_json::to_vec(&after).expect("a kept post serialises"),
                )?;
            }
            if let Some((at, n, why)) = &timer {
                let why = serde_json::to_vec(why).expect("a reason serialises");
                tx.insert(timer_key(*at, job_id, *n).as_bytes(), why)?;
            }
            Ok(Some((after, out)))
        });
        let updated = match result {
            Ok(u) => u,
            Err(TransactionError::Abort(e)) => return Err(e),
            Err(TransactionError::Storage(e)) => return Err(StoreError::Sled(e)),
        };
        if let Some((kept, _)) = &updated {
            self.index_kept(kept)?;
            self.flush()?;
        }
        Ok(updated)
    }

    /// The kept answer's parts (replies and updates) and its target, findable by id; a
    /// Bluesky answer also by its post's record key (`rkey:`, the evidence page's links by
    /// handle).
    fn index_kept(&self, kept: &Kept) -> Result<(), StoreError> {
        if let Some(key) = super::living::rkey_key(kept) {
            self.living.insert(key, kept.job_id.as_bytes())?;
        }
        for part in &kept.parts {
            self.living
                .insert(part_key(kept.platform, part), kept.job_id.as_bytes())?;
        }
        if kept.gone.is_none() {
            self.living
                .insert(target_key(kept.platform, &kept.target_id), kept.job_id.as_bytes())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::model::{LabelValue, UpdateRecord};

    fn kept(id: &str) -> Kept {
        let mut k = crate::store::living::tests::kept(id, Utc::now() + chrono::Duration::days(7));
        k.label = Some((LabelValue::False, "cid".into()));
        k
    }

    #[test]
    fn a_kept_answer_is_created_once() {
        let store = Store::open_temporary().unwrap();
        let first = kept("mastodon:1");
        assert!(store.create_kept(&first).unwrap().is_none());
        let mut other = first.clone();
        other.claim = "another".into();
        assert_eq!(
            store.create_kept(&other).unwrap(),
            Some(first.clone()),
            "the first stands"
        );
        assert_eq!(store.kept("mastodon:1").unwrap(), Some(first));
        assert!(store.update_kept("mastodon:9", |_| ()).unwrap().is_none());
    }

    #[test]
    fn concurrent_writers_lose_no_update_and_a_withdrawn_answer_stays_withdrawn() {
        // The writers of a kept answer at once, as the daemon's tasks run them: updates
        // recorded (each its parts), the re-matcher's generation, the follower's digest,
        // re-check timers, label changes — and a withdrawal in the middle. Nothing written
        // may be lost, and nothing may bring the withdrawn answer or its label back.
        let store = Store::open_temporary().unwrap();
        store.create_kept(&kept("mastodon:1")).unwrap();
        let store = Arc::new(store);
        let mut threads = Vec::new();
        for w in 0..4u32 {
            let store = store.clone();
            threads.push(std::thread::spawn(move || {
                for i in 0..25u32 {
                    store
                        .update_kept("mastodon:1", |k| {
                            let id = format!("u{w}-{i}");
                            k.updates.push(UpdateRecord {
                                job_id: id.clone(),
                                at: Utc::now(),
                                verdict: None,
                                digest: id.clone(),
                                ids: vec![id.clone()],
                            });
                            k.parts.push(id);
                        })
                        .unwrap();
                }
            }));
        }
        {
            let store = store.clone();
            threads.push(std::thread::spawn(move || {
                for g in 1..=50u64 {
                    store.update_kept("mastodon:1", |k| k.matched_generation = g).unwrap();
                    store
                        .update_kept("mastodon:1", |k| {
                            // A stale label recorder: puts the label back.
                            k.label = Some((LabelValue::Misleading, "cid2".into()));
                        })
                        .unwrap();
                    if g == 25 {
                        store
                            .update_kept("mastodon:1", |k| {
                                k.label = None;
                                k.gone = Some("withdrawn".into());
                                k.claim.clear();
                                k.vector = None;
                            })
                            .unwrap();
                    }
                }
            }));
        }
        {
            let store = store.clone();
            threads.push(std::thread::spawn(move || {
                for n in 0..40u32 {
                    store
                        .update_kept_with("mastodon:1", |k| {
                            // A stale follower: the text of the post again, the answer open.
                            k.gone = None;
                            k.claim = "the claim again".into();
                            let n = k.timers;
                            k.timers += 1;
                            ((), Some((Utc::now(), n, RecheckWhy::Edited)))
                        })
                        .unwrap();
                    let _ = n;
                }
            }));
        }
        for t in threads {
            t.join().unwrap();
        }
        let k = store.kept("mastodon:1").unwrap().unwrap();
        assert_eq!(k.updates.len(), 100, "every update recorded");
        assert_eq!(k.parts.len(), 101, "every part recorded (the reply and 100 updates)");
        assert_eq!(k.matched_generation, 50);
        assert_eq!(k.gone.as_deref(), Some("withdrawn"), "once gone, never back");
        assert!(k.claim.is_empty() && k.vector.is_none());
        assert_eq!(k.label, None, "the withdrawn answer's label is not put back");
        assert_eq!(k.timers, 40, "each timer took its own number");
        let numbers: std::collections::BTreeSet<u32> =
            store.timers_of("mastodon:1").unwrap().iter().map(|t| t.n).collect();
        assert_eq!(numbers.len(), 40, "each number's timer was written with it");
        for part in &k.parts {
            assert_eq!(
                store
                    .kept_by_part(crate::model::PlatformKind::Mastodon, part)
                    .unwrap()
                    .map(|k| k.job_id),
                Some("mastodon:1".to_string())
            );
        }
    }
}
