//! Step 2, search policy: every query on the first working backend (`search::Searcher`:
//! fallback, cache, `before` bound; a re-check's record, `Retrieval::fresh`, reads no cached
//! answer) and every described image through reverse image search
//! (`search::reverse`), both through Google Fact Check Tools when `[factcheck]` has a key
//! (`search::factcheck`: the reviews' pages become candidates, the reviews go to
//! `Retrieval::fact_checks`), then Muse's publisher rules — links from publishers that are not
//! credible are dropped (`Muse::citable`: blocked domains, social posts, the credibility
//! rule), at most [`PER_TIER_PER_QUERY`] per tier per query (or image), each
//! URL once; the deciding claim matches' pages (`known::candidates`) come first. A failed
//! reverse search costs only its image's links. Fills `Retrieval::candidates`; costs no LLM tokens. When every query failed (network,
//! 5xx, 429, a refused key) that is an outage, not an empty result: the step fails and the job
//! is tried again later, and nothing is checkpointed.

use std::collections::HashSet;

use super::Muse;
use crate::model::{Candidate, DropReason, Dropped, Post, Retrieval, Usage};
use crate::pipeline::PipelineError;
use crate::search::Hit;

/// Links kept per priority tier per query (Muse).
pub const PER_TIER_PER_QUERY: usize = 10;
/// Pages of a reverse image search shown to the out-of-context debate, per image.
pub const CONTEXT_SOURCES: usize = 10;

pub async fn run(m: &Muse, post: &Post, r: &mut Retrieval) -> Result<Usage, PipelineError> {
    let queries = r.queries.clone().unwrap_or_default();
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut dropped = Vec::new();
    let (mut failed, mut last_error) = (0, None);
    let mut searches: Vec<(String, Vec<Hit>)> = Vec::new();
    // A re-check asks the backends again: the cache holds what the first answer found.
    let freshness = if r.fresh {
        crate::search::Freshness::Fresh
    } else {
        crate::search::Freshness::Cached
    };
    for query in &queries {
        // Each query in its own language (the model writes some in the post's, some in
        // English); one too short to tell goes without a language parameter.
        match m
            .searcher
            .search_as(query, m.before, crate::lang::detect(query), freshness)
            .await
        {
            Ok(h) => searches.push((query.clone(), h)),
            Err(e) => {
                tracing::warn!(query, error = %e, "search failed");
                failed += 1;
                last_error = Some(e);
            }
        }
    }
    if let Some(reverse) = &m.reverse {
        for image in r.images.iter().flatten().filter(|d| d.refused.is_none()) {
            let q = crate::search::reverse::ImageQuery {
                url: &image.url,
                jpeg_base64: None,
                phash: image.phash.as_deref(),
            };
            match reverse.search(&q).await {
                Ok(h) => {
                    // Links to the post itself are not evidence about it.
                    let h: Vec<Hit> = h
                        .into_iter()
                        .filter(|h| Some(&h.url) != post.url.as_ref() && !m.blocked(&h.url))
                        .collect();
                    // Every page showing the picture is context for the out-of-context
                    // check, credible or not; only those that pass `Muse::citable` where they
                    // land may be cited (`context::as_evidence`).
                    for hit in h.iter().take(CONTEXT_SOURCES) {
                        let ctx = r.image_context.get_or_insert_with(Default::default);
                        ctx.urls.push(hit.url.clone());
                        let title = hit.title.trim();
                        ctx.sources.push(if title.is_empty() {
                            hit.url.clone()
                        } else {
                            format!("{title} — {}", hit.url)
                        });
                    }
                    searches.push((format!("reverse image: {}", image.url), h));
                }
                Err(e) => tracing::warn!(image = %image.url, error = %e, "reverse image search failed"),
            }
        }
    }
    if let Some(fc) = &m.factcheck {
        // Professional fact-checks of the queries and the pictures: their pages are candidates
        // like any result; their reviews are kept for pages whose markup lacks one.
        let language = crate::lang::primary(post.language.as_deref());
        let language = language.as_deref();
        let mut asked: Vec<(
            String,
            Result<Vec<crate::model::ClaimReview>, crate::search::SearchError>,
        )> = Vec::new();
        for query in &queries {
            asked.push((format!("fact-check: {query}"), fc.search(query, language).await));
        }
        for image in r.images.iter().flatten().filter(|d| d.refused.is_none()) {
            asked.push((
                format!("fact-check image: {}", image.url),
                fc.image_search(&image.url, language).await,
            ));
        }
        for (what, result) in asked {
            match result {
                Ok(reviews) => {
                    tracing::info!(what, reviews = reviews.len(), "fact-check search");
                    searches.push((what, crate::search::factcheck::as_hits(&reviews)));
                    for review in reviews {
                        if !r
                            .fact_checks
                            .iter()
                            .any(|x| x.url == review.url && x.claim == review.claim)
                        {
                            r.fact_checks.push(review);
                        }
                    }
                }
                Err(e) => tracing::warn!(what, error = %e, "fact-check search failed; the web search goes on"),
            }
        }
    }
    // The pages of the fact-checks of the post's own claim come first (claim matching): the
    // evidence step may quote them.
    let matched = super::known::candidates(m, r);
    let answered = !searches.is_empty() || !matched.is_empty();
    for c in matched {
        let key = c
            .url
            .split('#')
            .next()
            .unwrap_or(&c.url)
            .trim_end_matches('/')
            .to_string();
        if seen.insert(key) {
            out.push(c);
        }
    }
    let mut drop_url = |url: String, reason| dropped.push(Dropped { url, reason });
    for (query, hits) in searches {
        let mut per_tier = [0usize; 3];
        for hit in hits {
            let (domain, tier) = match m.citable(&hit.url) {
                Ok(v) => v,
                Err(reason) => {
                    drop_url(hit.url, reason);
                    continue;
                }
            };
            let key = hit
                .url
                .split('#')
                .next()
                .unwrap_or(&hit.url)
                .trim_end_matches('/')
                .to_string();
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
                domain,
                tier,
                query: query.clone(),
            });
        }
    }
    if let Some(e) = last_error.filter(|_| failed == queries.len() && !answered) {
        return Err(PipelineError::Outage(format!("every search failed; last: {e}")));
    }
    r.dropped.extend(dropped);
    r.candidates = Some(out);
    Ok(Usage::default())
}
