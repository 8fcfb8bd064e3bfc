//! New reviews against kept claims: when the fact-check corpus's generation moves (an import,
//! the feeds' reviews), each kept answer's claim not matched against that generation yet is
//! matched again — `rematch_batch` a round, on a blocking thread — and a deciding review the
//! answer has not weighed (same claim, a fact-checker's page) sets one re-check. This is the
//! claim matcher run over the kept posts when reviews arrive, not every kept post against
//! every review; the re-check then reads the review where it lands, like any match. Nothing is
//! read while the generation stands still, and while it keeps moving (a long import) a round
//! runs at most once a minute.

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
/// While the generation keeps moving (an import committing batch after batch), a round at most
/// this often.
const SETTLE: Duration = Duration::from_secs(60);

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
        // Kept claims are matched again only when the corpus has grown, and while an import
        // is still committing batches (the generation moving tick after tick) at most once a
        // minute: a flood of reviews costs a round a minute, not a round a batch.
        let now = std::time::Instant::now();
        let (mut done, mut seen, mut last_round) = (None, None, now.checked_sub(SETTLE).unwrap_or(now));
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            let generation = me.matcher.corpus().generation();
            if done == Some(generation) {
                continue;
            }
            let moving = seen != Some(generation);
            seen = Some(generation);
            if moving && last_round.elapsed() < SETTLE {
                continue;
            }
            last_round = std::time::Instant::now();
            let round = me.clone();
            match tokio::task::spawn_blocking(move || round.round()).await {
                Ok(Ok((n, finished))) => {
                    if n > 0 {
                        tracing::info!(rechecks = n, "new reviews match kept answers");
                    }
                    if finished {
                        done = Some(generation);
                    }
                }
                Ok(Err(e)) => tracing::warn!(error = %e, "kept claims could not be matched this round"),
                Err(e) => tracing::error!(error = %e, "the re-matching round panicked"),
            }
        }
    }

    /// One round (blocking): the re-checks set, and whether every kept claim is now matched
    /// against this generation (else the next round goes on).
    pub fn round(&self) -> anyhow::Result<(usize, bool)> {
        let generation = self.matcher.corpus().generation();
        let mut set = 0;
        let mut seen = 0;
        let mut finished = true;
        let mut after = String::new();
        'pages: loop {
            let page = self.store.kept_page(&after, 500)?;
            let Some(last) = page.last() else { break };
            after = last.job_id.clone();
            for kept in page {
                if kept.gone.is_some() || kept.matched_generation >= generation || kept.claim.is_empty() {
                    continue;
                }
                if seen >= self.config.rematch_batch {
                    finished = false;
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
                if let Some(c) = &fresh {
                    tracing::info!(job = %kept.job_id, review = %c.entry.review.url, cosine = ?c.cosine, "a new review matches a kept answer's claim");
                }
                let url = fresh.map(|c| c.entry.review.url.clone());
                self.store.update_kept(&kept.job_id, |k| {
                    k.matched_generation = k.matched_generation.max(generation);
                    if let Some(url) = &url {
                        if !k.reviews.contains(url) {
                            k.reviews.push(url.clone());
                        }
                    }
                })?;
                if let Some(url) = url {
                    let (done, _) = super::recheck_now(
                        &self.store,
                        &self.config,
                        &kept.job_id,
                        RecheckWhy::Review(url),
                        super::Asker::Other,
                    )?;
                    if done == super::RecheckSet::Set {
                        set += 1;
                    }
                }
            }
        }
        Ok((set, finished))
    }
}
