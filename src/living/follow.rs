//! The follower: kept answers' posts looked at again, `follow_batch` a round every
//! `follow_secs` (round-robin from a place kept in sled, so a restart goes on where it was),
//! read in batches — Mastodon's `GET /api/v1/statuses?id[]=` 20 at a time (one by one on
//! servers before 4.3), Bluesky's `getPosts` 25 at a time — so a round of 100 costs 5 requests.
//! The checked post deleted (or hidden from the bot) → every part of the answer deleted
//! ([`super::take_down`]); edited (another digest of its text) → a re-check, which posts an
//! update only if the verdict changes. The post that asked deleted → the answer stays, unless
//! `delete_when_asker_deletes`. A rate limit ends the round; other errors skip the post until
//! the next round.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::config::LivingConfig;
use crate::metrics::SharedMetrics;
use crate::model::{Kept, PlatformKind, RecheckWhy};
use crate::platform::{PlatformError, Platforms};
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
                Ok(r) if r.deleted + r.edited > 0 => tracing::info!(
                    looked = r.looked,
                    deleted = r.deleted,
                    edited = r.edited,
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
                    // Missing from the batch: deleted, hidden, or a partial answer — asked alone.
                    None => platform.resolve(&kept.trigger).await,
                };
                let mut gone = match seen {
                    Ok(post) => {
                        let digest = super::digest(&post);
                        if digest != kept.digest {
                            tracing::info!(job = %kept.job_id, "the checked post was edited; re-checking it");
                            kept.digest = digest;
                            kept.claim = post.text.clone();
                            self.store.save_kept(&kept)?;
                            super::recheck_now(&self.store, &self.config, &mut kept, RecheckWhy::Edited)?;
                            round.edited += 1;
                        }
                        None
                    }
                    Err(PlatformError::Gone(why)) => Some(format!("the checked post is gone: {why}")),
                    Err(PlatformError::RateLimited { until, .. }) => {
                        tracing::warn!(until = %until, "rate limited while following kept answers; the round ends");
                        break 'platforms;
                    }
                    Err(e) => {
                        tracing::warn!(job = %kept.job_id, error = %e, "a kept answer's post could not be read; next round");
                        continue;
                    }
                };
                if gone.is_none() && self.config.delete_when_asker_deletes && kept.trigger.status_id != kept.target_id {
                    if let Ok(false) = platform.exists(&kept.trigger.status_id).await {
                        gone = Some("the post that asked was deleted".to_string());
                    }
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
}
