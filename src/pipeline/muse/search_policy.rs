//! Step 2, search policy: every query on the first working backend (`search::Searcher`:
//! fallback, cache, `before` bound), then Muse's publisher rules — links from publishers that
//! are not credible are dropped, at most [`PER_TIER_PER_QUERY`] per tier per query, each URL
//! once. Fills `Retrieval::candidates`; costs no LLM tokens.

use std::collections::HashSet;

use super::Muse;
use crate::model::{Candidate, DropReason, Retrieval, Usage};

/// Links kept per priority tier per query (Muse).
pub const PER_TIER_PER_QUERY: usize = 10;

pub async fn run(m: &Muse, r: &mut Retrieval) -> Usage {
    let queries = r.queries.clone().unwrap_or_default();
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for query in queries {
        let hits = match m.searcher.search(&query, m.before).await {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!(query, error = %e, "search failed");
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
                r.drop_url(hit.url, DropReason::LowCredibility);
                continue;
            };
            if !seen.insert(key) {
                continue;
            }
            let slot = &mut per_tier[tier as usize];
            if *slot >= PER_TIER_PER_QUERY {
                r.drop_url(hit.url, DropReason::TierFull);
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
    r.candidates = Some(out);
    Usage::default()
}
