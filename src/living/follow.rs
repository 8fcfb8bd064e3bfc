//! The follower: kept answers' posts looked at again, `follow_batch` a round every
//! `follow_secs` (round-robin from a place kept in sled, so a restart goes on where it was).
//! The checked post deleted (or hidden from the bot) → every part of the answer deleted
//! ([`super::take_down`]); edited (another digest of its text) → a re-check, which posts an
//! update only if the verdict changes. The post that asked deleted → the answer stays, unless
//! `delete_when_asker_deletes`. A rate limit ends the round; other errors skip the post until
//! the next round.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::config::LivingConfig;
use crate::metrics::SharedMetrics;
use crate::model::RecheckWhy;
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

    /// One round over the next `follow_batch` kept answers.
    pub async fn round(&self) -> Result<Round, StoreError> {
        let after = self.store.living_mark("follow")?.unwrap_or_default();
        let mut page = self.store.kept_page(&after, self.config.follow_batch)?;
        if page.len() < self.config.follow_batch && !after.is_empty() {
            // Wrap around: the start of the list in the same round.
            let more = self.store.kept_page("", self.config.follow_batch - page.len())?;
            page.extend(more.into_iter().filter(|k| k.job_id.as_str() <= after.as_str()));
        }
        let mut round = Round::default();
        let mut last = String::new();
        for mut kept in page {
            last = kept.job_id.clone();
            if kept.gone.is_some() {
                continue;
            }
            let Some(platform) = self.platforms.get(kept.platform) else {
                continue;
            };
            round.looked += 1;
            let gone = match platform.resolve(&kept.trigger).await {
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
                    break;
                }
                Err(e) => {
                    tracing::warn!(job = %kept.job_id, error = %e, "a kept answer's post could not be read; next round");
                    continue;
                }
            };
            let gone = match gone {
                Some(why) => Some(why),
                None if self.config.delete_when_asker_deletes && kept.trigger.status_id != kept.target_id => {
                    match platform.exists(&kept.trigger.status_id).await {
                        Ok(false) => Some("the post that asked was deleted".to_string()),
                        _ => None,
                    }
                }
                None => None,
            };
            if let Some(why) = gone {
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
