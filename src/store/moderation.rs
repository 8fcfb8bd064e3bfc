//! The `moderation` tree: watched hashtags (`watch:<platform>:<tag>`), paused auto-replies
//! (`paused:<platform>`), opt-outs (`optout:<platform>:<handle>`) and moderators' decisions
//! on held drafts (`review:<job id>`, written once). Every write is flushed
//! before it returns: a moderator's acknowledged command survives a crash.

use super::{Store, StoreError};
use crate::model::{Job, OptOut, PlatformKind, ReviewDecision, TagWatch};

/// The schema of the `moderation` tree's records (watches, opt-outs, decisions, spend),
/// written into every record as jobs carry theirs. A record without one is schema 1; one of a
/// newer schema (a later build's) is not read: a watch or an opt-out of it is left alone, a
/// decision of it keeps its draft held, a spend of it counts from zero — and it is logged.
pub const MODERATION_SCHEMA: u64 = 1;

fn encode<T: serde::Serialize>(value: &T) -> Vec<u8> {
    let mut v = serde_json::to_value(value).expect("moderation record serialises");
    if let Some(o) = v.as_object_mut() {
        o.insert("schema".into(), MODERATION_SCHEMA.into());
    }
    serde_json::to_vec(&v).expect("moderation record serialises")
}

fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    let mut v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let schema = v.get("schema").and_then(serde_json::Value::as_u64).unwrap_or(1);
    if schema > MODERATION_SCHEMA {
        tracing::warn!(
            schema,
            "a moderation record of a newer build is not read; upgrade musebot to use it"
        );
        return None;
    }
    if let Some(o) = v.as_object_mut() {
        o.remove("schema");
    }
    serde_json::from_value(v).ok()
}

impl Store {
    /// Starts (or replaces) a watch; `false` when the tag was already watched (the policy and
    /// start time are then kept).
    pub fn watch(&self, w: &TagWatch) -> Result<bool, StoreError> {
        let key = format!("watch:{}:{}", w.platform.as_str(), w.tag);
        let bytes = encode(w);
        let new = self
            .moderation
            .compare_and_swap(key.as_bytes(), None as Option<&[u8]>, Some(bytes))?
            .is_ok();
        if new {
            // A tag watched again starts from now, not from where an old watch stopped.
            self.cursors.remove(format!("{}:tag:{}", w.platform.as_str(), w.tag))?;
        }
        self.flush()?;
        Ok(new)
    }

    /// Sets where a watched tag's verdicts go (labeler mode); `false` when the tag is not
    /// watched or already goes there.
    pub fn set_watch_channel(
        &self,
        platform: PlatformKind,
        tag: &str,
        channel: crate::model::Channel,
    ) -> Result<bool, StoreError> {
        let Some(mut w) = self.watches(platform).into_iter().find(|w| w.tag == tag) else {
            return Ok(false);
        };
        if w.channel == Some(channel) {
            return Ok(false);
        }
        w.channel = Some(channel);
        let key = format!("watch:{}:{}", platform.as_str(), tag);
        self.moderation.insert(key.as_bytes(), encode(&w))?;
        self.flush()?;
        Ok(true)
    }

    /// Stops a watch; `false` when the tag was not watched.
    pub fn unwatch(&self, platform: PlatformKind, tag: &str) -> Result<bool, StoreError> {
        let gone = self
            .moderation
            .remove(format!("watch:{}:{tag}", platform.as_str()))?
            .is_some();
        self.flush()?;
        Ok(gone)
    }

    /// The hashtags watched on `platform`, by tag.
    pub fn watches(&self, platform: PlatformKind) -> Vec<TagWatch> {
        self.moderation
            .scan_prefix(format!("watch:{}:", platform.as_str()))
            .values()
            .filter_map(Result::ok)
            .filter_map(|v| decode(&v))
            .collect()
    }

    pub fn watch_of(&self, platform: PlatformKind, tag: &str) -> Option<TagWatch> {
        self.moderation
            .get(format!("watch:{}:{tag}", platform.as_str()))
            .ok()
            .flatten()
            .and_then(|v| decode(&v))
    }

    /// Pauses (`true`) or resumes hashtag auto-replies on `platform`; `false` when nothing
    /// changed.
    pub fn set_paused(&self, platform: PlatformKind, paused: bool) -> Result<bool, StoreError> {
        let key = format!("paused:{}", platform.as_str());
        let changed = if paused {
            self.moderation.insert(key, &b"1"[..])?.is_none()
        } else {
            self.moderation.remove(key)?.is_some()
        };
        self.flush()?;
        Ok(changed)
    }

    /// Switches the reading of reports on `platform` off (`true`: a moderator's `reports off`)
    /// or back on; `false` when nothing changed.
    pub fn set_reports_off(&self, platform: PlatformKind, off: bool) -> Result<bool, StoreError> {
        let key = format!("reports_off:{}", platform.as_str());
        let changed = if off {
            self.moderation.insert(key, &b"1"[..])?.is_none()
        } else {
            self.moderation.remove(key)?.is_some()
        };
        self.flush()?;
        Ok(changed)
    }

    pub fn reports_off(&self, platform: PlatformKind) -> bool {
        self.moderation
            .contains_key(format!("reports_off:{}", platform.as_str()))
            .unwrap_or(false)
    }

    pub fn paused(&self, platform: PlatformKind) -> bool {
        self.moderation
            .contains_key(format!("paused:{}", platform.as_str()))
            .unwrap_or(false)
    }

    /// Records (`Some`) or lifts (`None`) a user's opt-out; `false` when nothing changed.
    pub fn set_opt_out(&self, platform: PlatformKind, handle: &str, out: Option<&OptOut>) -> Result<bool, StoreError> {
        let key = format!("optout:{}:{}", platform.as_str(), handle.to_lowercase());
        let tree = self.optouts(platform);
        let changed = match out {
            Some(o) => tree.insert(key, encode(o))?.is_none(),
            None => tree.remove(key)?.is_some(),
        };
        self.flush()?;
        Ok(changed)
    }

    /// The opt-out recorded under `key` (an account id, or an older build's handle).
    pub fn opt_out_at(&self, platform: PlatformKind, key: &str) -> Option<OptOut> {
        self.optouts(platform)
            .get(format!("optout:{}:{}", platform.as_str(), key.to_lowercase()))
            .ok()
            .flatten()
            .and_then(|v| decode(&v))
    }

    pub fn opted_out(&self, platform: PlatformKind, handle: &str) -> bool {
        self.optouts(platform)
            .contains_key(format!("optout:{}:{}", platform.as_str(), handle.to_lowercase()))
            .unwrap_or(false)
    }

    /// Records a moderator's decision on a held draft; `false` when one was already taken
    /// (the first decision stands).
    pub fn decide(&self, job_id: &str, d: &ReviewDecision) -> Result<bool, StoreError> {
        let bytes = encode(d);
        let first = self
            .moderation
            .compare_and_swap(format!("review:{job_id}"), None as Option<&[u8]>, Some(bytes))?
            .is_ok();
        self.flush()?;
        Ok(first)
    }

    pub fn decision(&self, job_id: &str) -> Option<ReviewDecision> {
        self.moderation
            .get(format!("review:{job_id}"))
            .ok()
            .flatten()
            .and_then(|v| decode(&v))
    }

    /// Drafts held for review and not yet decided, oldest first.
    pub fn held_drafts(&self) -> Result<Vec<Job>, StoreError> {
        let mut held: Vec<Job> = self
            .pending_jobs()?
            .into_iter()
            .filter(|j| j.review.as_ref().is_some_and(|r| r.decision.is_none()) && self.decision(&j.id).is_none())
            .collect();
        held.sort_by_key(|j| j.review.as_ref().map(|r| r.since));
        Ok(held)
    }

    /// Adds to a day's LLM spend (in the quota tree, pruned two days after the day) and
    /// returns the new total.
    pub fn add_spend(
        &self,
        key: &str,
        prompt: u64,
        completion: u64,
        cost: f64,
    ) -> Result<crate::model::Spend, StoreError> {
        let mut total = crate::model::Spend::default();
        self.quota.update_and_fetch(key, |old| {
            let mut s: crate::model::Spend = old.and_then(decode).unwrap_or_default();
            s.prompt_tokens += prompt;
            s.completion_tokens += completion;
            s.cost += cost;
            total = s;
            Some(encode(&s))
        })?;
        Ok(total)
    }

    pub fn spend(&self, key: &str) -> crate::model::Spend {
        self.quota
            .get(key)
            .ok()
            .flatten()
            .and_then(|b| decode(&b))
            .unwrap_or_default()
    }

    /// Every opt-out (for the status command and the admin page).
    pub fn opt_outs(&self) -> Vec<OptOut> {
        let prefix = |p: PlatformKind| format!("optout:{}:", p.as_str());
        [PlatformKind::Mastodon, PlatformKind::Bluesky]
            .into_iter()
            .flat_map(|p| self.optouts(p).scan_prefix(prefix(p)).values())
            .filter_map(Result::ok)
            .filter_map(|v| decode(&v))
            .collect()
    }

    /// The tree holding `platform`'s opt-outs (shared between accounts: `Store::account`).
    fn optouts(&self, platform: PlatformKind) -> &sled::Tree {
        match platform {
            PlatformKind::Bluesky => &self.optouts_bluesky,
            PlatformKind::Mastodon => &self.optouts_mastodon,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TagPolicy;

    #[test]
    fn watches_pauses_and_opt_outs_persist() {
        let dir = tempfile::tempdir().unwrap();
        let m = PlatformKind::Mastodon;
        {
            let s = Store::open(dir.path()).unwrap();
            let w = TagWatch {
                platform: m,
                tag: "election".into(),
                policy: TagPolicy::default(),
                by: "mod".into(),
                since: chrono::Utc::now(),
                channel: None,
            };
            assert!(s.watch(&w).unwrap());
            assert!(!s.watch(&w).unwrap(), "watching twice keeps the first");
            assert!(s.set_paused(m, true).unwrap());
            let o = OptOut {
                platform: m,
                handle: "bob".into(),
                since: chrono::Utc::now(),
            };
            assert!(s.set_opt_out(m, "Bob", Some(&o)).unwrap());
        }
        // sled's flusher thread may hold the file lock a moment after the handle is dropped.
        let s = (0..50)
            .find_map(|_| {
                Store::open(dir.path())
                    .map_err(|_| std::thread::sleep(std::time::Duration::from_millis(100)))
                    .ok()
            })
            .expect("the store reopens");
        assert_eq!(s.watches(m).len(), 1);
        assert!(s.watches(PlatformKind::Bluesky).is_empty());
        assert!(s.paused(m) && !s.paused(PlatformKind::Bluesky));
        assert!(s.opted_out(m, "bob") && !s.opted_out(PlatformKind::Bluesky, "bob"));
        assert!(s.set_opt_out(m, "BOB", None).unwrap());
        assert!(!s.opted_out(m, "bob"));
        assert!(s.unwatch(m, "election").unwrap());
        assert!(!s.unwatch(m, "election").unwrap());
        assert!(s.set_paused(m, false).unwrap());
    }

    #[test]
    fn records_carry_their_schema_and_newer_ones_are_not_read() {
        let s = Store::open_temporary().unwrap();
        let m = PlatformKind::Mastodon;
        let w = TagWatch {
            platform: m,
            tag: "vote".into(),
            policy: Default::default(),
            by: "alice".into(),
            since: chrono::Utc::now(),
            channel: None,
        };
        s.watch(&w).unwrap();
        let raw = s.moderation.scan_prefix("watch:").values().next().unwrap().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&raw).unwrap();
        assert_eq!(v["schema"], 1, "{v}");
        assert_eq!(s.watches(m), vec![w.clone()]);
        // An older build's record (no schema) is read; a newer one is not.
        let key = String::from_utf8(
            s.moderation
                .scan_prefix("watch:")
                .keys()
                .next()
                .unwrap()
                .unwrap()
                .to_vec(),
        )
        .unwrap();
        let mut old = v.clone();
        old.as_object_mut().unwrap().remove("schema");
        s.moderation.insert(&key, serde_json::to_vec(&old).unwrap()).unwrap();
        assert_eq!(s.watches(m).len(), 1);
        let mut newer = v;
        newer["schema"] = 2.into();
        s.moderation.insert(&key, serde_json::to_vec(&newer).unwrap()).unwrap();
        assert!(s.watches(m).is_empty());
    }
}
