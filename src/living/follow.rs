//! The follower: kept answers' posts looked at again, `follow_batch` a round every
//! `follow_secs` (round-robin from a place kept in sled, so a restart goes on where it was),
//! read in batches — Mastodon's `GET /api/v1/statuses?id[]=` 20 at a time (one by one on
//! servers before 4.3), Bluesky's `getPosts` 25 at a time — so a round of 100 costs 5 requests.
//! A checked post the bot can no longer read is asked about where blocks do not apply
//! ([`crate::platform::Platform::confirm_deleted`]): deleted → every part of the answer deleted
//! ([`super::take_down`]); only hidden from the bot (its author blocks the bot, or the
//! platform cannot tell) → the answer stays, marked `hidden` (a block must not take a
//! correction down while the false post stays up), looked for in the batch reads only and
//! followed again once the bot sees it again. Edited (another digest of
//! its text) → a re-check at once when its words changed (spacing or case alone
//! is not re-checked), which posts an update only if the verdict changes. The post that
//! asked deleted (confirmed the same way) → the answer stays, unless
//! `delete_when_asker_deletes`. A rate limit ends the round; other errors skip the post until
//! the next round.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::config::LivingConfig;
use crate::metrics::SharedMetrics;
use crate::model::{Kept, PlatformKind, RecheckWhy};
use crate::platform::{Absence, Platform, PlatformError, Platforms};
use crate::store::{Store, StoreError};

pub struct Follower {
    pub store: Store,
    pub config: LivingConfig,
    pub platforms: Platforms,
    pub metrics: Option<SharedMetrics>,
}

/// What one round did, for the log and tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    pub looked: usize,
    pub deleted: usize,
    pub edited: usize,
    /// Posts found hidden from the bot (not deleted): their answers stay, looked at only in
    /// the batch reads until they are seen again.
    pub hidden: usize,
    /// Hidden posts seen again: followed (and re-checked) again.
    pub visible: usize,
}

impl Follower {
    pub async fn run(self, shutdown: CancellationToken) {
        // The first round one interval after start, not at once: a restart's catch-up and the
        // replies it resumes come first on the platform's request budget.
        let every = Duration::from_secs(self.config.follow_secs.max(1));
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            match self.round().await {
                Ok(r) if r.deleted + r.edited + r.hidden > 0 => tracing::info!(
                    looked = r.looked,
                    deleted = r.deleted,
                    edited = r.edited,
                    hidden = r.hidden,
                    "kept answers followed"
                ),
                Ok(_) => {}
                Err(e) => tracing::error!(error = %e, "kept answers could not be followed this round"),
            }
        }
    }

    /// One round over the next `follow_batch` kept answers: their posts read in as few
    /// requests as the platform allows; a post missing from that answer is looked up alone
    /// before anything is deleted (a partial answer must not take an answer down).
    pub async fn round(&self) -> Result<Round, StoreError> {
        let after = self.store.living_mark("follow")?.unwrap_or_default();
        // A server that reads one post a request gets a smaller round.
        let batch = [PlatformKind::Mastodon, PlatformKind::Bluesky]
            .iter()
            .filter_map(|k| self.platforms.get(*k))
            .map(|p| p.follow_cap())
            .fold(self.config.follow_batch, usize::min);
        let mut page = self.store.kept_page(&after, batch)?;
        if page.len() < batch && !after.is_empty() {
            // Wrap around: the start of the list in the same round.
            let more = self.store.kept_page("", batch - page.len())?;
            page.extend(more.into_iter().filter(|k| k.job_id.as_str() <= after.as_str()));
        }
        let last = page.last().map(|k| k.job_id.clone()).unwrap_or_default();
        // Answers of the last hour are looked at every round besides: an edit right after an
        // answer (or its label) is met within one interval.
        let since = chrono::Utc::now() - chrono::Duration::hours(1);
        for fresh in self.store.fresh_kept(since)? {
            if !page.iter().any(|k| k.job_id == fresh.job_id) {
                page.push(fresh);
            }
        }
        let mut round = Round::default();
        'platforms: for kind in [PlatformKind::Mastodon, PlatformKind::Bluesky] {
            let Some(platform) = self.platforms.get(kind) else {
                continue;
            };
            let mine: Vec<Kept> = page
                .iter()
                .filter(|k| k.platform == kind && k.gone.is_none())
                .cloned()
                .collect();
            if mine.is_empty() {
                continue;
            }
            let ids: Vec<String> = mine.iter().map(|k| k.trigger.target_id().to_string()).collect();
            let found = match platform.look_many(&ids).await {
                Ok(f) => f,
                Err(PlatformError::RateLimited { until, .. }) => {
                    tracing::warn!(until = %until, "rate limited while following kept answers; the round ends");
                    break;
                }
                Err(e) => {
                    tracing::warn!(platform = kind.as_str(), error = %e, "kept answers' posts could not be read; next round");
                    continue;
                }
            };
            round.looked += mine.len();
            for mut kept in mine {
                let target = kept.trigger.target_id().to_string();
                let seen = match found.iter().find(|p| p.id == target) {
                    Some(post) => Ok(post.clone()),
                    // Hidden and still missing: not asked alone again.
                    None if kept.hidden.is_some() => Err(PlatformError::Gone("still hidden".into())),
                    // Missing from the batch: deleted, hidden, or a partial answer — asked alone.
                    None => platform.resolve(&kept.trigger).await,
                };
                // A post hidden from the bot is looked at with the rest (in the same batch
                // read): seen again, it is followed again; still missing, it is not asked about.
                let hidden = kept.hidden.is_some();
                if hidden && seen.is_err() {
                    continue;
                }
                if hidden {
                    tracing::info!(job = %kept.job_id, "the checked post is visible to the bot again; followed again");
                    self.store.update_kept(&kept.job_id, |k| k.hidden = None)?;
                    round.visible += 1;
                    // The timers that fell due while it was hidden were dropped: an answer
                    // that is not settled (the rule `keep` sets timers by) is re-checked once
                    // now instead — within the cooldown and the idle bound, as the author's
                    // doing (a block lifted) is.
                    if super::kept_unsettled(&kept) {
                        super::recheck_now(
                            &self.store,
                            &self.config,
                            &kept.job_id,
                            RecheckWhy::Scheduled,
                            super::Asker::Seen,
                        )?;
                    }
                }
                let mut gone = match seen {
                    Ok(post) => {
                        let digest = super::digest(&post);
                        if digest != kept.digest && self.edited(&kept, digest, &post)? {
                            round.edited += 1;
                        }
                        None
                    }
                    Err(PlatformError::Gone(why)) => match platform.confirm_deleted(&target).await {
                        Ok(Absence::Deleted) => Some(format!("the checked post is deleted: {why}")),
                        Ok(Absence::Hidden(how) | Absence::Unknown(how)) => {
                            self.hidden(&kept, &how)?;
                            round.hidden += 1;
                            continue;
                        }
                        Err(PlatformError::RateLimited { until, .. }) => {
                            tracing::warn!(until = %until, "rate limited while following kept answers; the round ends");
                            break 'platforms;
                        }
                        Err(e) => {
                            tracing::warn!(job = %kept.job_id, error = %e, "whether a kept answer's post is deleted could not be asked; next round");
                            continue;
                        }
                    },
                    Err(PlatformError::RateLimited { until, .. }) => {
                        tracing::warn!(until = %until, "rate limited while following kept answers; the round ends");
                        break 'platforms;
                    }
                    Err(e) => {
                        tracing::warn!(job = %kept.job_id, error = %e, "a kept answer's post could not be read; next round");
                        continue;
                    }
                };
                let ask_followed = self.config.delete_when_asker_deletes && kept.trigger.status_id != kept.target_id;
                if gone.is_none() && ask_followed && deleted(platform, &kept.trigger.status_id).await {
                    gone = Some("the post that asked was deleted".to_string());
                }
                let Some(why) = gone else { continue };
                match super::take_down(platform, &self.store, &mut kept, why).await {
                    Ok(()) => {
                        round.deleted += 1;
                        if let Some(m) = &self.metrics {
                            m.living("deletion");
                        }
                    }
                    Err(super::TakeDownError::Store(e)) => return Err(e),
                    Err(e) => {
                        tracing::warn!(job = %kept.job_id, error = %e, "the answer could not be deleted yet; next round")
                    }
                }
            }
        }
        self.store.set_living_mark("follow", &last)?;
        Ok(round)
    }

    /// The checked post is there but hidden from the bot (or the platform cannot say): the
    /// answer stays up, and is marked so that it is no longer followed or re-checked.
    fn hidden(&self, kept: &Kept, how: &str) -> Result<(), StoreError> {
        tracing::info!(job = %kept.job_id, why = how, "the checked post is hidden from the bot, not deleted; the answer stays");
        self.store.update_kept(&kept.job_id, |k| {
            k.hidden.get_or_insert_with(|| how.to_string());
        })?;
        if let Some(m) = &self.metrics {
            m.living("hidden");
        }
        Ok(())
    }

    /// The checked post reads otherwise now. Its words the same (spacing, case):
    /// the new digest is taken and nothing is re-checked. Else its old claim vector is
    /// forgotten at once (claim memory must not answer the old words from it) and a re-check
    /// is set at once — the cooldown does not hold edits, the idle bound does. The new text
    /// and digests are taken only when the re-check is set (or the thread takes none): an
    /// edit met while a re-check waits is met again next round. Returns whether a re-check
    /// was set.
    fn edited(&self, kept: &Kept, digest: String, post: &crate::model::Post) -> Result<bool, StoreError> {
        let (text, words) = (&post.text, super::words(post));
        if !kept.words.is_empty() && words == kept.words {
            tracing::info!(job = %kept.job_id, "the checked post was edited without changing its words; nothing to re-check");
            self.store.update_kept(&kept.job_id, |k| k.digest = digest.clone())?;
            return Ok(false);
        }
        self.store.forget_vector(&kept.job_id)?;
        let (set, _) = super::recheck_now(
            &self.store,
            &self.config,
            &kept.job_id,
            RecheckWhy::Edited,
            super::Asker::Other,
        )?;
        match set {
            super::RecheckSet::Set | super::RecheckSet::Closed => {
                self.store.update_kept(&kept.job_id, |k| {
                    k.digest = digest.clone();
                    k.words = words.clone();
                    k.claim = text.to_string();
                })?;
                if set == super::RecheckSet::Set {
                    tracing::info!(job = %kept.job_id, "the checked post was edited; re-checking it");
                }
                Ok(set == super::RecheckSet::Set)
            }
            later => {
                tracing::debug!(job = %kept.job_id, why = ?later, "the checked post was edited; re-checked later");
                Ok(false)
            }
        }
    }
}

/// Whether a post the bot cannot read is confirmed deleted (hidden from the bot, or not
/// knowable, is not; neither is a failure to ask).
async fn deleted(platform: &Platform, id: &str) -> bool {
    match platform.exists(id).await {
        Ok(false) => matches!(platform.confirm_deleted(id).await, Ok(Absence::Deleted)),
        _ => false,
    }
}

#[cfg(test)]
#[path = "follow_tests.rs"]
mod tests;
