//! A reply's life after posting: the answered post as it is kept for re-checking ([`Kept`]),
//! why a re-check runs ([`RecheckWhy`]) and the updates posted ([`UpdateRecord`]). Stored in
//! the store's `living` tree; read by the re-check stage, the scheduler, the follower and the
//! admin page.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::post::PlatformKind;
use super::trigger::Trigger;
use super::verdict::Verdict;

/// A claim's vector in the claim matcher's space (int8, ×127 of the unit vector).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimVector {
    /// `english` or `multilingual`: vectors of different spaces are never compared.
    pub space: String,
    pub v: Vec<i8>,
}

impl ClaimVector {
    /// The cosine of two vectors of the same space (`None` across spaces or lengths).
    pub fn cosine(&self, other: &ClaimVector) -> Option<f32> {
        if self.space != other.space || self.v.len() != other.v.len() || self.v.is_empty() {
            return None;
        }
        let dot: i32 = self
            .v
            .iter()
            .zip(&other.v)
            .map(|(a, b)| i32::from(*a) * i32::from(*b))
            .sum();
        let norm = |v: &[i8]| (v.iter().map(|x| i32::from(*x).pow(2)).sum::<i32>() as f32).sqrt();
        let n = norm(&self.v) * norm(&other.v);
        (n > 0.0).then(|| dot as f32 / n)
    }

    /// From a unit vector.
    pub fn from_unit(space: &str, v: &[f32]) -> ClaimVector {
        ClaimVector {
            space: space.into(),
            v: v.iter()
                .map(|x| (x * 127.0).round().clamp(-127.0, 127.0) as i8)
                .collect(),
        }
    }
}

/// What claim memory found for a post: the kept answer it reuses (`from`), with the cosine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recalled {
    pub from: Option<String>,
    #[serde(default)]
    pub cosine: f32,
}

/// One update posted (or an edit made) in a kept reply's thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpdateRecord {
    /// The re-check job that posted it.
    pub job_id: String,
    pub at: DateTime<Utc>,
    pub verdict: Option<Verdict>,
    /// What the update said: its verdict and the reviews it named ([`UpdateRecord::digest`]).
    pub digest: String,
    /// The parts posted (empty for an edit of the first reply).
    #[serde(default)]
    pub ids: Vec<String>,
}

impl UpdateRecord {
    /// What makes two updates the same: the verdict and the reviews named, in any order.
    pub fn digest(verdict: Option<Verdict>, reviews: &[String]) -> String {
        let mut r: Vec<&str> = reviews.iter().map(String::as_str).collect();
        r.sort_unstable();
        r.dedup();
        format!("{}|{}", verdict.map_or("none", Verdict::as_str), r.join(" "))
    }
}

/// An answered post kept for re-checking (`living.keep_days`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Kept {
    /// The job that answered it (the key: `kept:<job_id>`).
    pub job_id: String,
    pub platform: PlatformKind,
    /// The trigger the answer was for: what a re-check resolves and whom it addresses.
    pub trigger: Trigger,
    /// The checked post's id.
    pub target_id: String,
    /// The checked post's claim as it was read (its text; dropped when the post is deleted).
    pub claim: String,
    pub language: Option<String>,
    /// The claim matcher's vector of the claim; `None` without a model (or once the post is
    /// deleted).
    #[serde(default)]
    pub vector: Option<ClaimVector>,
    /// The verdict the thread states now (the first reply's, then the last update's).
    pub verdict: Option<Verdict>,
    /// The post's stance toward the checked claim the thread states now (`None`: no check
    /// named, or an older record): a re-check whose stance crosses *asserts* is news.
    #[serde(default)]
    pub stance: Option<super::stance::Stance>,
    /// The reply's outcome word (`reply`, `insufficient`).
    pub outcome: String,
    /// The URLs the thread cites.
    pub evidence: Vec<String>,
    /// Every review already weighed for this claim — those the thread names, the same-claim
    /// matches the answer saw, each a re-check was set for — so one review sets one re-check.
    pub reviews: Vec<String>,
    /// The professional reviews the thread names (the first answer's and its updates').
    #[serde(default)]
    pub named: Vec<String>,
    /// The bot's parts in the thread, in order (replies, then updates).
    pub parts: Vec<String>,
    /// The thread's first part's public URL.
    #[serde(default)]
    pub first_url: Option<String>,
    /// SHA-256 of the post's text as read: another digest later means an edit.
    pub digest: String,
    /// SHA-256 of the post's words as read (case, spacing and punctuation but `?` left out):
    /// an edit that leaves them is not re-checked. Empty in an older record (every edit of
    /// it is re-checked).
    #[serde(default)]
    pub words: String,
    pub kept_at: DateTime<Utc>,
    pub until: DateTime<Utc>,
    /// Re-check timers set so far (each timer's number: the re-check job's id).
    pub timers: u32,
    /// When the next timer is due, for the admin page.
    #[serde(default)]
    pub next_recheck: Option<DateTime<Utc>>,
    pub updates: Vec<UpdateRecord>,
    /// Set when the bot's reply was deleted (the post deleted, or withdrawn): why.
    #[serde(default)]
    pub gone: Option<String>,
    /// The corpus generation its claim was last matched against.
    #[serde(default)]
    pub matched_generation: u64,
    /// The label the post carries from the bot's labeler now (value and the CID it was put
    /// on): what a changed verdict or a withdrawal negates.
    #[serde(default)]
    pub label: Option<(super::label::LabelValue, String)>,
    /// Set when the checked post is hidden from the bot (the author blocked it, or the post's
    /// server answers others but not the bot) while it still exists: why. The answer stays up
    /// and is no longer re-checked.
    #[serde(default)]
    pub hidden: Option<String>,
    /// The number of the re-check set on demand (an edit, a review, a command) last: one at a
    /// time waits.
    #[serde(default)]
    pub pending: Option<u32>,
    /// When an asked or edited re-check was set last (`living.recheck_cooldown` counts from it).
    #[serde(default)]
    pub last_asked: Option<DateTime<Utc>>,
    /// Re-checks that found nothing new (`living.max_idle_rechecks` bounds those asked for).
    #[serde(default)]
    pub idle_rechecks: u32,
}

impl Kept {
    /// The part a follow-up hangs under: the thread's last.
    pub fn last_part(&self) -> Option<&str> {
        self.parts.last().map(String::as_str)
    }

    /// Whether an update with this digest was already posted.
    pub fn has_update(&self, digest: &str) -> bool {
        self.updates.iter().any(|u| u.digest == digest)
    }

    /// Once an answer is gone it stays gone: a change made to `before`, a gone answer, keeps
    /// it closed — its reason, no text or vector, no next re-check, and no label put back (a
    /// negation may still clear one). Every write of a kept answer passes through this.
    pub fn hold_closed(&mut self, before: &Kept) {
        let Some(gone) = &before.gone else { return };
        self.gone = Some(gone.clone());
        self.claim.clear();
        self.vector = None;
        self.next_recheck = None;
        if self.label.is_some() && self.label != before.label {
            self.label = before.label.clone();
        }
    }
}
