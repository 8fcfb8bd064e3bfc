//! The `living` tree: answered posts kept for re-checking and their timers.
//!
//! Keys: `kept:<job id>` → [`Kept`] (JSON); `due:<unix seconds, 12 digits>:<job id>:<n>` → the
//! timer's [`RecheckWhy`] (ordered by time, so the due ones are a range scan); `part:<platform>:
//! <part id>` → the job id whose thread holds that part (a command given under the bot's
//! answer finds it); `target:<platform>:<post id>` → the job id that answered that post;
//! `rkey:<record key>/<job id>` → the job id, for every kept Bluesky answer whose post has that
//! record key (several authors' posts can share one; a prefix scan of one key reads only its
//! own entries — the evidence page asks it before resolving a handle);
//! `vec:<job id>` → a kept verdict's claim vector (claim memory); `mark:<name>` → the tasks'
//! places. Every write is flushed before it returns: a timer set is a timer kept.

use chrono::{DateTime, Utc};

use super::{Store, StoreError};
use crate::model::{ClaimVector, Kept, PlatformKind, RecheckWhy};

/// A due timer: its key (removed once its job is stored), the kept job and the timer's number.
#[derive(Debug, Clone, PartialEq)]
pub struct Timer {
    pub key: String,
    pub at: DateTime<Utc>,
    pub job_id: String,
    pub n: u32,
    pub why: RecheckWhy,
}

pub(super) fn kept_key(job_id: &str) -> String {
    format!("kept:{job_id}")
}

pub(super) fn timer_key(at: DateTime<Utc>, job_id: &str, n: u32) -> String {
    format!("due:{:012}:{job_id}:{n}", at.timestamp().max(0))
}

pub(super) fn target_key(platform: PlatformKind, target: &str) -> String {
    format!("target:{}:{target}", platform.as_str())
}

pub(super) fn part_key(platform: PlatformKind, part: &str) -> String {
    format!("part:{}:{part}", platform.as_str())
}

/// The prefix of every `rkey:` entry for one record key (`/` never appears in a record key).
fn rkey_prefix(rkey: &str) -> String {
    format!("rkey:{rkey}/")
}

/// The `rkey:` entry of a kept answer about a Bluesky post (`at://<did>/app.bsky.feed.post/
/// <rkey>`); none for another platform's or any other target.
pub(super) fn rkey_key(kept: &Kept) -> Option<String> {
    if kept.platform != PlatformKind::Bluesky {
        return None;
    }
    let mut parts = kept.target_id.strip_prefix("at://")?.split('/');
    let (_, collection, rkey) = (parts.next()?, parts.next()?, parts.next()?);
    (collection == "app.bsky.feed.post" && !rkey.is_empty() && parts.next().is_none())
        .then(|| format!("{}{}", rkey_prefix(rkey), kept.job_id))
}

impl Store {
    /// The kept answer about the post `target` (the latest, when it was answered twice).
    pub fn kept_by_target(&self, platform: PlatformKind, target: &str) -> Result<Option<Kept>, StoreError> {
        match self.living.get(target_key(platform, target))? {
            Some(id) => self.kept(&String::from_utf8_lossy(&id)),
            None => Ok(None),
        }
    }

    pub fn kept(&self, job_id: &str) -> Result<Option<Kept>, StoreError> {
        let key = kept_key(job_id);
        self.living
            .get(&key)?
            .map(|v| {
                serde_json::from_slice(&v).map_err(|e| StoreError::Corrupt {
                    key,
                    reason: e.to_string(),
                })
            })
            .transpose()
    }

    /// Up to `limit` job ids of kept Bluesky answers about a post with record key `rkey`, in
    /// key order: a prefix scan of that key's own entries.
    pub fn kept_ids_by_rkey(&self, rkey: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        if rkey.is_empty() || rkey.contains('/') {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for item in self.living.scan_prefix(rkey_prefix(rkey)).take(limit) {
            let (_, id) = item?;
            out.push(String::from_utf8_lossy(&id).into_owned());
        }
        Ok(out)
    }

    /// Writes the `rkey:` entry of every kept answer (those kept before the index existed);
    /// returns how many there are. Idempotent; run once at start by the evidence pages.
    pub fn index_rkeys(&self) -> Result<usize, StoreError> {
        let (mut n, mut after) = (0, String::new());
        loop {
            let page = self.kept_page(&after, 500)?;
            let Some(last) = page.last() else { break };
            after = last.job_id.clone();
            for kept in &page {
                if let Some(key) = rkey_key(kept) {
                    self.living.insert(key, kept.job_id.as_bytes())?;
                    n += 1;
                }
            }
        }
        self.flush()?;
        Ok(n)
    }

    /// The kept post whose thread holds `part` (a reply part or an update).
    pub fn kept_by_part(&self, platform: PlatformKind, part: &str) -> Result<Option<Kept>, StoreError> {
        match self.living.get(part_key(platform, part))? {
            Some(id) => self.kept(&String::from_utf8_lossy(&id)),
            None => Ok(None),
        }
    }

    /// Up to `limit` kept posts after `after` (a job id; "" from the start), in key order:
    /// the follower's and the re-matcher's rounds. Unreadable records are skipped (logged).
    pub fn kept_page(&self, after: &str, limit: usize) -> Result<Vec<Kept>, StoreError> {
        let start = format!("kept:{after}");
        let mut out = Vec::new();
        for item in self.living.range(start.as_bytes()..) {
            let (k, v) = item?;
            if !k.starts_with(b"kept:") {
                break;
            }
            if k.as_ref() == start.as_bytes() {
                continue;
            }
            match serde_json::from_slice::<Kept>(&v) {
                Ok(kept) => out.push(kept),
                Err(e) => {
                    tracing::warn!(key = %String::from_utf8_lossy(&k), error = %e, "unreadable kept post skipped")
                }
            }
            if out.len() >= limit {
                break;
            }
        }
        Ok(out)
    }

    /// Every kept post (the admin page, claim memory), up to `limit`.
    pub fn kept_all(&self, limit: usize) -> Result<Vec<Kept>, StoreError> {
        self.kept_page("", limit)
    }

    /// Sets a re-check timer, flushed.
    pub fn add_timer(&self, at: DateTime<Utc>, job_id: &str, n: u32, why: &RecheckWhy) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(why).expect("a reason serialises");
        self.living.insert(timer_key(at, job_id, n), bytes)?;
        self.flush()
    }

    /// Timers due at `now` or before, oldest first, at most `limit`.
    pub fn due_timers(&self, now: DateTime<Utc>, limit: usize) -> Result<Vec<Timer>, StoreError> {
        let end = format!("due:{:012}~", now.timestamp().max(0));
        let mut out = Vec::new();
        for item in self.living.range(b"due:".as_slice()..end.as_bytes()) {
            let (k, v) = item?;
            let key = String::from_utf8_lossy(&k).into_owned();
            let Some((at, job_id, n)) = parse_timer(&key) else {
                tracing::warn!(key, "malformed timer removed");
                self.living.remove(&k)?;
                continue;
            };
            let why = serde_json::from_slice(&v).unwrap_or(RecheckWhy::Scheduled);
            out.push(Timer {
                key,
                at,
                job_id,
                n,
                why,
            });
            if out.len() >= limit {
                break;
            }
        }
        Ok(out)
    }

    /// Every timer of a kept post (the admin page; pruning).
    pub fn timers_of(&self, job_id: &str) -> Result<Vec<Timer>, StoreError> {
        let mut out = Vec::new();
        for item in self.living.scan_prefix(b"due:") {
            let (k, v) = item?;
            let key = String::from_utf8_lossy(&k).into_owned();
            if let Some((at, id, n)) = parse_timer(&key) {
                if id == job_id {
                    let why = serde_json::from_slice(&v).unwrap_or(RecheckWhy::Scheduled);
                    out.push(Timer {
                        key,
                        at,
                        job_id: id,
                        n,
                        why,
                    });
                }
            }
        }
        Ok(out)
    }

    pub fn remove_timer(&self, key: &str) -> Result<(), StoreError> {
        self.living.remove(key)?;
        self.flush()
    }

    /// Files a kept answer's claim vector for claim memory (`vec:<job id>` → until, space,
    /// int8 values), flushed.
    pub fn save_vector(&self, job_id: &str, v: &ClaimVector, until: DateTime<Utc>) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(&(until, v)).expect("a vector serialises");
        self.living.insert(format!("vec:{job_id}"), bytes)?;
        self.flush()
    }

    pub fn forget_vector(&self, job_id: &str) -> Result<(), StoreError> {
        self.living.remove(format!("vec:{job_id}"))?;
        Ok(())
    }

    /// The kept answer whose claim is nearest `v` at `min` or above (same space, not expired,
    /// not `except`), with the cosine: claim memory. A flat scan of the vectors alone.
    pub fn nearest_claim(
        &self,
        v: &ClaimVector,
        min: f32,
        now: DateTime<Utc>,
        except: &[&str],
    ) -> Result<Option<(String, f32)>, StoreError> {
        let mut best: Option<(String, f32)> = None;
        for item in self.living.scan_prefix(b"vec:") {
            let (k, bytes) = item?;
            let id = String::from_utf8_lossy(&k[4..]).into_owned();
            let Ok((until, kept)) = serde_json::from_slice::<(DateTime<Utc>, ClaimVector)>(&bytes) else {
                continue;
            };
            if until <= now || except.contains(&id.as_str()) {
                continue;
            }
            if let Some(c) = v.cosine(&kept).filter(|c| *c >= min) {
                if best.as_ref().is_none_or(|(_, b)| c > *b) {
                    best = Some((id, c));
                }
            }
        }
        Ok(best)
    }

    /// Removes a kept post, its timers and its parts' index (pruning at `keep_days`).
    pub fn forget_kept(&self, kept: &Kept) -> Result<(), StoreError> {
        self.forget_vector(&kept.job_id)?;
        self.living.remove(format!("fresh:{}", kept.job_id))?;
        for t in self.timers_of(&kept.job_id)? {
            self.living.remove(t.key)?;
        }
        for part in &kept.parts {
            self.living.remove(part_key(kept.platform, part))?;
        }
        if let Some(key) = rkey_key(kept) {
            self.living.remove(key)?;
        }
        let by_target = target_key(kept.platform, &kept.target_id);
        if self
            .living
            .get(&by_target)?
            .is_some_and(|id| id.as_ref() == kept.job_id.as_bytes())
        {
            self.living.remove(by_target)?;
        }
        self.living.remove(kept_key(&kept.job_id))?;
        self.flush()
    }

    /// A value of the living tree's own (the follower's place, the corpus generation seen).
    pub fn living_mark(&self, name: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .living
            .get(format!("mark:{name}"))?
            .map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    pub fn set_living_mark(&self, name: &str, value: &str) -> Result<(), StoreError> {
        self.living.insert(format!("mark:{name}"), value.as_bytes())?;
        self.flush()
    }

    /// Kept posts whose `until` has passed are forgotten; returns how many.
    pub fn prune_kept(&self, now: DateTime<Utc>) -> Result<usize, StoreError> {
        let mut n = 0;
        let mut after = String::new();
        loop {
            let page = self.kept_page(&after, 500)?;
            let Some(last) = page.last() else { break };
            after = last.job_id.clone();
            for kept in page.iter().filter(|k| k.until <= now) {
                self.forget_kept(kept)?;
                n += 1;
            }
        }
        Ok(n)
    }
}

fn parse_timer(key: &str) -> Option<(DateTime<Utc>, String, u32)> {
    let rest = key.strip_prefix("due:")?;
    let (secs, rest) = rest.split_once(':')?;
    let (job, n) = rest.rsplit_once(':')?;
    let at = DateTime::from_timestamp(secs.parse().ok()?, 0)?;
    Some((at, job.to_string(), n.parse().ok()?))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::Trigger;

    pub(crate) fn kept(id: &str, until: DateTime<Utc>) -> Kept {
        Kept {
            job_id: id.into(),
            platform: PlatformKind::Mastodon,
            trigger: Trigger::test_mention(id),
            target_id: format!("t{id}"),
            claim: "the claim".into(),
            language: None,
            vector: None,
            verdict: None,
            stance: None,
            outcome: "insufficient".into(),
            evidence: vec![],
            reviews: vec![],
            named: vec![],
            parts: vec![format!("p{id}")],
            first_url: None,
            digest: "d".into(),
            words: String::new(),
            kept_at: Utc::now(),
            until,
            timers: 0,
            next_recheck: None,
            updates: vec![],
            gone: None,
            matched_generation: 0,
            label: None,
            hidden: None,
            pending: None,
            last_asked: None,
            idle_rechecks: 0,
        }
    }

    #[test]
    fn timers_come_due_in_time_order_and_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let now = Utc::now();
        {
            let store = Store::open(dir.path()).unwrap();
            // Job ids with colons (Bluesky's at-URIs) parse back whole.
            let job = "bluesky:at://did:plc:x/app.bsky.feed.post/3k";
            store
                .add_timer(now + chrono::Duration::hours(1), job, 1, &RecheckWhy::Scheduled)
                .unwrap();
            store
                .add_timer(now - chrono::Duration::seconds(5), job, 0, &RecheckWhy::Edited)
                .unwrap();
            store
                .add_timer(
                    now - chrono::Duration::seconds(50),
                    "mastodon:9",
                    3,
                    &RecheckWhy::Review("https://r.example/1".into()),
                )
                .unwrap();
        }
        let store = crate::store::tests::reopen(dir.path());
        let due = store.due_timers(now, 10).unwrap();
        assert_eq!(due.len(), 2, "{due:?}");
        assert_eq!((due[0].job_id.as_str(), due[0].n), ("mastodon:9", 3));
        assert_eq!(due[0].why, RecheckWhy::Review("https://r.example/1".into()));
        assert_eq!(
            (due[1].job_id.as_str(), due[1].n),
            ("bluesky:at://did:plc:x/app.bsky.feed.post/3k", 0)
        );
        assert_eq!(store.due_timers(now, 1).unwrap().len(), 1, "bounded");
        store.remove_timer(&due[0].key).unwrap();
        assert_eq!(store.due_timers(now, 10).unwrap().len(), 1);
        assert_eq!(store.due_timers(now + chrono::Duration::hours(2), 10).unwrap().len(), 2);
    }

    #[test]
    fn kept_posts_are_found_by_their_parts_and_pruned_with_their_timers() {
        let store = Store::open_temporary().unwrap();
        let now = Utc::now();
        let old = kept("mastodon:1", now - chrono::Duration::seconds(1));
        let live = kept("mastodon:2", now + chrono::Duration::days(7));
        store.create_kept(&old).unwrap();
        store.create_kept(&live).unwrap();
        store
            .add_timer(now + chrono::Duration::hours(1), &old.job_id, 0, &RecheckWhy::Scheduled)
            .unwrap();
        assert_eq!(
            store
                .kept_by_part(PlatformKind::Mastodon, "pmastodon:2")
                .unwrap()
                .unwrap()
                .job_id,
            "mastodon:2"
        );
        assert!(store
            .kept_by_part(PlatformKind::Bluesky, "pmastodon:2")
            .unwrap()
            .is_none());
        let page = store.kept_page("", 1).unwrap();
        assert_eq!(page.len(), 1);
        assert_eq!(
            store.kept_page(&page[0].job_id, 5).unwrap().len(),
            1,
            "the next page starts after"
        );
        assert_eq!(store.prune_kept(now).unwrap(), 1);
        assert!(store.kept("mastodon:1").unwrap().is_none());
        assert!(store.timers_of("mastodon:1").unwrap().is_empty());
        assert!(store
            .kept_by_part(PlatformKind::Mastodon, "pmastodon:1")
            .unwrap()
            .is_none());
        assert!(store.kept("mastodon:2").unwrap().is_some());
    }

    fn bluesky(job: &str, target: &str) -> Kept {
        let mut k = kept(job, Utc::now() + chrono::Duration::days(7));
        k.platform = PlatformKind::Bluesky;
        k.target_id = target.into();
        k
    }

    #[test]
    fn a_record_key_finds_every_authors_answer_and_only_its_own() {
        let store = Store::open_temporary().unwrap();
        // Two authors' posts with one record key, one with a longer key sharing its start,
        // a Mastodon answer and a Bluesky target that is no post.
        let alice = bluesky("bluesky:m1", "at://did:plc:alice/app.bsky.feed.post/3kabc");
        let bob = bluesky("bluesky:m2", "at://did:plc:bob/app.bsky.feed.post/3kabc");
        let longer = bluesky("bluesky:m3", "at://did:plc:alice/app.bsky.feed.post/3kabcd");
        let mut other = kept("mastodon:1", Utc::now() + chrono::Duration::days(7));
        other.target_id = "at://did:plc:x/app.bsky.feed.post/3kabc".into();
        let list = bluesky("bluesky:m4", "at://did:plc:alice/app.bsky.graph.list/3kabc");
        for k in [&alice, &bob, &longer, &other, &list] {
            store.create_kept(k).unwrap();
        }
        assert_eq!(
            store.kept_ids_by_rkey("3kabc", 10).unwrap(),
            ["bluesky:m1", "bluesky:m2"]
        );
        assert_eq!(store.kept_ids_by_rkey("3kabc", 1).unwrap().len(), 1, "bounded");
        assert_eq!(store.kept_ids_by_rkey("3kabcd", 10).unwrap(), ["bluesky:m3"]);
        assert!(store.kept_ids_by_rkey("3kab", 10).unwrap().is_empty());
        assert!(store.kept_ids_by_rkey("", 10).unwrap().is_empty());
        // An update rewrites the same entry; forgetting the answer removes it.
        store.update_kept("bluesky:m1", |k| k.digest = "e".into()).unwrap();
        assert_eq!(store.kept_ids_by_rkey("3kabc", 10).unwrap().len(), 2);
        store.forget_kept(&alice).unwrap();
        assert_eq!(store.kept_ids_by_rkey("3kabc", 10).unwrap(), ["bluesky:m2"]);
        // Answers kept before the index existed are indexed at start.
        store.living.remove(rkey_key(&bob).unwrap()).unwrap();
        assert!(store.kept_ids_by_rkey("3kabc", 10).unwrap().is_empty());
        assert_eq!(store.index_rkeys().unwrap(), 2, "m2 and m3 (the list is no post)");
        assert_eq!(store.kept_ids_by_rkey("3kabc", 10).unwrap(), ["bluesky:m2"]);
    }
}
