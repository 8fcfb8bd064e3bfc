//! New reviews against kept claims: when the fact-check corpus's generation moves (an import,
//! the feeds' reviews), each kept answer's claim not matched against that generation yet is
//! matched again — `rematch_batch` a round, on a blocking thread — and a deciding review the
//! answer has not weighed (same claim, a fact-checker's page) sets one re-check. This is the
//! claim matcher run over the kept posts when reviews arrive, not every kept post against
//! every review; the re-check then reads the review where it lands, like any match.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::claims::matcher::Matcher;
use crate::config::LivingConfig;
use crate::credibility::Credibility;
use crate::model::RecheckWhy;
use crate::store::Store;

/// How often the corpus's generation is looked at.
pub const EVERY: Duration = Duration::from_secs(5);

pub struct Rematcher {
    pub store: Store,
    pub config: LivingConfig,
    pub matcher: Arc<Matcher>,
    pub credibility: Arc<Credibility>,
    /// Candidates looked at per claim (`claims.candidates`).
    pub candidates: usize,
}

impl Rematcher {
    pub async fn run(self, shutdown: CancellationToken) {
        let me = Arc::new(self);
        let mut tick = tokio::time::interval(EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            let round = me.clone();
            match tokio::task::spawn_blocking(move || round.round()).await {
                Ok(Ok(n)) if n > 0 => tracing::info!(rechecks = n, "new reviews match kept answers"),
                Ok(Ok(_)) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, "kept claims could not be matched this round"),
                Err(e) => tracing::error!(error = %e, "the re-matching round panicked"),
            }
        }
    }

    /// One round (blocking): returns the re-checks set.
    pub fn round(&self) -> anyhow::Result<usize> {
        let generation = self.matcher.corpus().generation();
        let mut set = 0;
        let mut seen = 0;
        let mut after = String::new();
        'pages: loop {
            let page = self.store.kept_page(&after, 500)?;
            let Some(last) = page.last() else { break };
            after = last.job_id.clone();
            for mut kept in page {
                if kept.gone.is_some() || kept.matched_generation >= generation || kept.claim.is_empty() {
                    continue;
                }
                if seen >= self.config.rematch_batch {
                    break 'pages;
                }
                seen += 1;
                let lang = crate::lang::primary(kept.language.as_deref());
                let (_, found) = self
                    .matcher
                    .find(&kept.claim, lang.as_deref(), self.candidates.max(1))?;
                let fresh = found.into_iter().find(|c| {
                    c.same_claim
                        && self.credibility.fact_checker(&c.entry.review.url).is_some()
                        && !kept.reviews.contains(&c.entry.review.url)
                });
                kept.matched_generation = generation;
                match fresh {
                    Some(c) => {
                        let url = c.entry.review.url.clone();
                        kept.reviews.push(url.clone());
                        tracing::info!(job = %kept.job_id, review = %url, cosine = ?c.cosine, "a new review matches a kept answer's claim");
                        if super::recheck_now(&self.store, &self.config, &mut kept, RecheckWhy::Review(url))? {
                            set += 1;
                        } else {
                            self.store.save_kept(&kept)?;
                        }
                    }
                    None => self.store.save_kept(&kept)?,
                }
            }
        }
        Ok(set)
    }
}
