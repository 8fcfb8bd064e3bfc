//! `[living]`: a reply's life after posting — how long answered posts are kept for re-checking,
//! when a "could not verify" answer is looked at again, how many updates a thread may get, how
//! corrections are made, and how often the checked posts are looked at (deleted, edited).

use serde::{Deserialize, Serialize};

/// How a correction reaches readers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Corrections {
    /// One "Update: …" reply in the bot's own thread (every platform).
    FollowUp,
    /// Mastodon: the first part of the reply is edited (`PUT /api/v1/statuses/:id`; the server
    /// keeps the edit history and notifies those who boosted it). Bluesky has no edit and
    /// always posts a follow-up.
    Edit,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LivingConfig {
    /// Keep answered posts for re-checking, follow their deletions and edits, and remember
    /// their claims (claim memory).
    pub enabled: bool,
    /// Days an answered post is kept (its claim text, vector, thread ids).
    pub keep_days: u64,
    /// When a "could not verify" answer is checked again, after it was posted: durations such
    /// as "90s", "30m", "1h", "2d".
    pub recheck_after: Vec<String>,
    /// Updates a thread gets at most.
    pub max_updates: u32,
    /// `follow_up` (a reply "Update: …") or `edit` (Mastodon only: the first part is edited).
    pub corrections: Corrections,
    /// Seconds between looks at the kept posts (deleted? edited?).
    pub follow_secs: u64,
    /// Kept posts looked at per round, read in batches (Mastodon 4.3+: 20 a request, one by
    /// one on older servers; Bluesky: 25 a request), on the request budget replies share.
    pub follow_batch: usize,
    /// Re-checks waiting for a worker at once: a backlog (after downtime, a flood of reviews)
    /// drains at this pace, behind fresh mentions.
    pub max_pending_rechecks: usize,
    /// Kept claims matched again per round when new reviews arrive in the fact-check corpus.
    pub rematch_batch: usize,
    /// Delete the bot's answer when the asker deletes the post that asked (default: it stays,
    /// others may have read it).
    pub delete_when_asker_deletes: bool,
    /// Answer a new post whose claim is a kept post's from that answer's evidence (re-verified,
    /// not searched again).
    pub memory: bool,
    /// An asked (`recheck` by the asker) or edited re-check at most once in this long, per
    /// answer ("90s", "30m", "1h", "2d"); a moderator's `recheck` is not held to it.
    pub recheck_cooldown: String,
    /// Re-checks of an answer that may find nothing new before the asker's `recheck` and the
    /// author's edits stop setting more (a moderator's still does).
    pub max_idle_rechecks: u32,
}

impl Default for LivingConfig {
    fn default() -> Self {
        LivingConfig {
            enabled: true,
            keep_days: 7,
            recheck_after: vec!["1h".into(), "24h".into()],
            max_updates: 2,
            corrections: Corrections::FollowUp,
            follow_secs: 60,
            follow_batch: 100,
            max_pending_rechecks: 2,
            rematch_batch: 200,
            delete_when_asker_deletes: false,
            memory: true,
            recheck_cooldown: "1h".into(),
            max_idle_rechecks: 3,
        }
    }
}

impl LivingConfig {
    /// `recheck_after` as durations (an unreadable one is a config error named by `validate`).
    pub fn recheck_delays(&self) -> Vec<chrono::Duration> {
        self.recheck_after.iter().filter_map(|d| duration(d)).collect()
    }

    /// `recheck_cooldown` as a duration (an unreadable one is a config error named by
    /// `validate`; an hour until then).
    pub fn cooldown(&self) -> chrono::Duration {
        duration(&self.recheck_cooldown).unwrap_or_else(|| chrono::Duration::hours(1))
    }

    pub fn keep(&self) -> chrono::Duration {
        chrono::Duration::days(self.keep_days as i64)
    }
}

/// "90s", "30m", "1h", "2d" (a number and one unit).
pub fn duration(text: &str) -> Option<chrono::Duration> {
    let t = text.trim();
    let unit = t.chars().last()?;
    let n: i64 = t[..t.len() - unit.len_utf8()].trim().parse().ok().filter(|n| *n > 0)?;
    match unit {
        's' => Some(chrono::Duration::seconds(n)),
        'm' => Some(chrono::Duration::minutes(n)),
        'h' => Some(chrono::Duration::hours(n)),
        'd' => Some(chrono::Duration::days(n)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_a_number_and_a_unit() {
        assert_eq!(duration("90s"), Some(chrono::Duration::seconds(90)));
        assert_eq!(duration(" 1h"), Some(chrono::Duration::hours(1)));
        assert_eq!(duration("2d"), Some(chrono::Duration::days(2)));
        for bad in ["", "h", "1", "1w", "-1h", "0s", "1.5h", "1 hour"] {
            assert_eq!(duration(bad), None, "{bad}");
        }
    }
}
