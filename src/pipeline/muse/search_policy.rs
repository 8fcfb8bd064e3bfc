//! Step 2, search policy: every query on the first working backend (`search::Searcher`:
//! fallback, cache, `before` bound), then Muse's publisher rules — links from publishers that
//! are not credible are dropped, at most [`PER_TIER_PER_QUERY`] per tier per query, each URL
//! once. Fills `Retrieval::candidates`; costs no LLM tokens. When every query failed (network,
//! 5xx, 429, a refused key) that is an outage, not an empty result: the step fails and the job
//! is tried again later, and nothing is checkpointed.

use std::collections::HashSet;

use super::Muse;
use crate::model::{Candidate, DropReason, Dropped, Retrieval, Usage};
use crate::pipeline::PipelineError;

/// Links kept per priority tier per query (Muse).
pub const PER_TIER_PER_QUERY: usize = 10;

pub async fn run(m: &Muse, r: &mut Retrieval) -> Result<Usage, PipelineError> {
    let queries = r.queries.clone().unwrap_or_default();
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut dropped = Vec::new();
    let mut drop_url = |url: String, reason| dropped.push(Dropped { url, reason });
    let (mut failed, mut last_error) = (0, None);
    for query in &queries {
        let hits = match m.searcher.search(query, m.before).await {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!(query, error = %e, "search failed");
                failed += 1;
                last_error = Some(e);
                continue;
            }
        };
        let mut per_tier = [0usize; 3];
        for hit in hits {
            let key = hit
                .url
                .split('#')
                .next()
                .unwrap_or(&hit.url)
                .trim_end_matches('/')
                .to_string();
            let verdict = m.credibility.verdict(&hit.url);
            let Some(tier) = verdict.tier else {
                drop_url(hit.url, DropReason::LowCredibility);
                continue;
            };
            if !seen.insert(key) {
                continue;
            }
            let slot = &mut per_tier[tier as usize];
            if *slot >= PER_TIER_PER_QUERY {
                drop_url(hit.url, DropReason::TierFull);
                continue;
            }
            *slot += 1;
            out.push(Candidate {
                url: hit.url,
                title: hit.title,
                domain: verdict.domain,
                tier,
                query: query.clone(),
            });
        }
    }
    if let Some(e) = last_error.filter(|_| failed == queries.len()) {
        return Err(PipelineError::Outage(format!("every search failed; last: {e}")));
    }
    r.dropped.extend(dropped);
    r.candidates = Some(out);
    Ok(Usage::default())
}
