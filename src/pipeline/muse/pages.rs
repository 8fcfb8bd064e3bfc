//! Step 3, pages: candidates are read tier first (search order within a tier) until
//! `relevance.max_pages` pages pass relevance, and no further (Muse's stopping rule). They are
//! fetched in waves through the SSRF guard, [`FETCH_PARALLEL`] at a time; a wave's pages are
//! read in order, as many at once as are still needed (the first as they arrive), each
//! extracted on a blocking thread (a panic in the extractor costs that page only); pages past
//! the last one needed are "not read" (never extracted or embedded, fetched at most). Each
//! page is cut into passages, a BM25 prefilter of the post's words keeps the best few
//! (`relevance.prefilter`), only those are embedded — the best `relevance.prefilter_first` by
//! BM25 first, the others only for a page those leave below the threshold
//! ([`passage_cosines`]) — and a page scores its best embedded passage's cosine.
//! For a post with images, a page whose main image is the post's picture ([`super::visual`]) is
//! relevant whatever its text scores. A post not in English is scored by the multilingual
//! model when one is configured ([`Scale`]). The claim each kept page's fact-check reviewed is
//! scored against the post too — below the relevance threshold it is a check of another claim,
//! at or above `claims.same_claim` the post's own claim — and marked with the fact-checker
//! whose page it is (`credibility::factcheckers`), and API reviews follow their page's redirect. Fills `Retrieval::pages` (tier, then relevance); costs no LLM tokens.

use chrono::{DateTime, Utc};
use futures_util::stream::{self, StreamExt};

use super::Muse;
use crate::extract::{self, Decision};
use crate::model::{Candidate, DropReason, Dropped, KeptPage, Post, Retrieval, Usage};
use crate::pipeline::PipelineError;
use crate::relevance;

/// Pages fetched at once.
pub const FETCH_PARALLEL: usize = 4;
/// Words of a page read for passages (news articles are far shorter; a page of 100,000
/// paragraphs is not read to its end).
pub const READ_WORDS: usize = 20_000;

/// The first `n` words of `text` (whitespace kept as in the text), or all of it, and never more
/// than [`READ_CHARS_PER_WORD`] × `n` characters: a page of a few giant "words" is read no
/// further than a page of ordinary ones.
fn first_words(text: &str, n: usize) -> String {
    let words = match text.split_whitespace().nth(n) {
        Some(word) => {
            let end = word.as_ptr() as usize - text.as_ptr() as usize;
            text[..end].to_string()
        }
        None => text.to_string(),
    };
    crate::prompts::cap_chars(words, n.saturating_mul(READ_CHARS_PER_WORD))
}

/// Characters read per word of [`READ_WORDS`] (English averages under 6 with its space).
pub const READ_CHARS_PER_WORD: usize = 10;

/// Fills `Retrieval::pages`. When every page it tried failed for reasons outside the pages
/// (network, timeouts, 5xx, 429), that is an outage, not "no evidence": the step fails, the job
/// is tried again later, and nothing is checkpointed.
pub async fn run(m: &Muse, post: &Post, r: &mut Retrieval) -> Result<Usage, PipelineError> {
    let candidates = r.candidates.clone().unwrap_or_default();
    let mut dropped = Vec::new();
    let mut tally = Tally::default();
    let pictures = Pictures {
        hashes: r.images.iter().flatten().filter_map(|d| d.phash.clone()).collect(),
        embeddings: r.images.iter().flatten().filter_map(|d| d.embedding.clone()).collect(),
    };
    let queries = r.queries.clone().unwrap_or_default();
    let mut pages = read_pages(
        m,
        post,
        &queries,
        &pictures,
        candidates,
        m.before,
        &mut dropped,
        &mut tally,
    )
    .await?;
    // A Fact Check Tools review names the URL it was published at; its page may have landed
    // elsewhere (judged there): the review follows its page.
    for (from, to) in &tally.redirects {
        for review in r.fact_checks.iter_mut().filter(|f| &f.url == from) {
            review.url = to.clone();
        }
    }
    score_claims(m, post, &queries, &mut pages, &mut r.fact_checks).await?;
    if pages.is_empty() && tally.tried > 0 && tally.outages == tally.tried {
        return Err(PipelineError::Outage(format!(
            "every page fetch failed ({} pages: network, timeout or server errors)",
            tally.tried
        )));
    }
    r.dropped.extend(dropped);
    r.pages = Some(pages);
    Ok(Usage::default())
}

/// The post's pictures as visual relevance compares them.
struct Pictures {
    hashes: Vec<String>,
    embeddings: Vec<Vec<f32>>,
}

/// Why a page was not read, and whether that was an outage (network, timeout, 5xx, 429).
type Miss = (DropReason, bool);

/// An extracted page and its main image's URL.
type Read = (extract::Page, Option<String>);

/// Pages tried, how many of them failed for an outage, and the redirects followed to a
/// citable page (from, to).
#[derive(Debug, Default)]
struct Tally {
    tried: usize,
    outages: usize,
    redirects: Vec<(String, String)>,
}

/// The claim each kept page's reviews (its markup's, or the API's for its URL) reviewed, scored
/// against the post with the page's relevance model: below the threshold it is a check of
/// another claim (`ClaimReview::other_claim`), never named and never evidence. A review without
/// claim text, or on a page kept because its main image is the post's picture (a check of that
/// picture, whatever the post's words), is judged by its page alone. The post is read as the
/// pages are: its text and its images' descriptions.
async fn score_claims(
    m: &Muse,
    post: &Post,
    queries: &[String],
    pages: &mut [KeptPage],
    api: &mut [crate::model::ClaimReview],
) -> Result<(), PipelineError> {
    let pages: Vec<&mut KeptPage> = pages.iter_mut().filter(|p| p.image_match.is_none()).collect();
    let urls: Vec<String> = pages.iter().map(|p| p.url.clone()).collect();
    let mut reviews: Vec<&mut crate::model::ClaimReview> = pages
        .into_iter()
        .flat_map(|p| p.claim_reviews.iter_mut())
        .chain(api.iter_mut().filter(|r| urls.contains(&r.url)))
        .filter(|r| !r.claim.trim().is_empty())
        .collect();
    if reviews.is_empty() {
        return Ok(());
    }
    let mut post_text = strip_urls(&post.text);
    for alt in post.media.iter().filter_map(|x| x.alt.as_deref()) {
        post_text.push('\n');
        post_text.push_str(alt);
    }
    let scale = Scale::for_post(m, post, &post_text, queries);
    let mut texts = vec![post_text];
    texts.extend(reviews.iter().map(|r| r.claim.clone()));
    let vectors = embed(&scale.embedder, texts).await?;
    let (post_vec, claims) = vectors
        .split_first()
        .ok_or_else(|| PipelineError::Relevance("no embedding for the post".into()))?;
    for (review, vector) in reviews.iter_mut().zip(claims) {
        let cosine = relevance::cosine(post_vec, vector);
        review.claim_cosine = Some(cosine);
        review.other_claim = cosine < scale.threshold;
        // Only this claim's check on a fact-checker's page is named, by the table's name.
        review.same_claim = cosine >= scale.same_claim;
        review.fact_checker = m.credibility.fact_checker(&review.url).map(str::to_string);
        if review.other_claim {
            tracing::info!(url = %review.url, publisher = %review.publisher, cosine, "fact-check of another claim: not named");
        }
    }
    Ok(())
}

/// Reads candidates tier first (search order within a tier) in waves, until
/// `relevance.max_pages` pages pass the relevance threshold, and no further (Muse's stopping
/// rule). A wave is fetched at once (at least [`FETCH_PARALLEL`] pages, so one failed fetch does
/// not cost another round trip); its pages are read in order, as many at a time as are still
/// needed (those the wave surely reads as they arrive, the rest when their turn comes; each
/// extracted on a blocking thread), then scored, and a page fetched after enough were found is
/// never extracted or embedded ("not read"): CPU goes only to pages that could still count.
/// Kept pages: tier, then relevance.
#[allow(clippy::too_many_arguments)]
async fn read_pages(
    m: &Muse,
    post: &Post,
    queries: &[String],
    pictures: &Pictures,
    mut candidates: Vec<Candidate>,
    before: Option<DateTime<Utc>>,
    dropped: &mut Vec<Dropped>,
    tally: &mut Tally,
) -> Result<Vec<KeptPage>, PipelineError> {
    candidates.sort_by_key(|c| c.tier);
    // The post as Muse embeds it: its text and its images' descriptions (or alt text).
    let mut post_text = strip_urls(&post.text);
    for alt in post.media.iter().filter_map(|x| x.alt.as_deref()) {
        post_text.push('\n');
        post_text.push_str(alt);
    }
    let scale = Scale::for_post(m, post, &post_text, queries);
    let max_pages = m.relevance.max_pages.max(1);
    let want_main_image = !pictures.hashes.is_empty();
    let mut post_vec: Option<Vec<f32>> = None;
    let mut kept = Vec::new();
    let mut rest = candidates.into_iter();
    while kept.len() < max_pages {
        let wave: Vec<Candidate> = rest
            .by_ref()
            .take((max_pages - kept.len()).max(FETCH_PARALLEL))
            .collect();
        if wave.is_empty() {
            break;
        }
        // The pages this wave surely reads are extracted as they arrive; the rest wait.
        let reading = Reading {
            eager: max_pages - kept.len(),
            before,
            want_main_image,
        };
        let fetched = match &post_vec {
            Some(_) => fetch_wave(m, wave, &reading, dropped, tally).await,
            None => {
                // The post is embedded while the first wave downloads.
                let (vector, fetched) = tokio::join!(
                    embed(&scale.embedder, vec![post_text.clone()]),
                    fetch_wave(m, wave, &reading, dropped, tally)
                );
                post_vec = vector?.pop();
                fetched
            }
        };
        let post_vec = post_vec
            .as_deref()
            .ok_or_else(|| PipelineError::Relevance("no embedding for the post".into()))?;
        let mut fetched = fetched.into_iter();
        while kept.len() < max_pages {
            let turn: Vec<(Candidate, Pending)> = fetched.by_ref().take(max_pages - kept.len()).collect();
            if turn.is_empty() {
                break;
            }
            let readable = read_turn(turn, &reading, dropped).await;
            kept.extend(score_turn(m, &scale, post_vec, pictures, readable, dropped).await?);
        }
        // Enough were found: what this wave fetched beyond them is not read.
        dropped.extend(fetched.map(|(c, _)| Dropped {
            url: c.url,
            reason: DropReason::NotRead,
        }));
    }
    dropped.extend(rest.map(|c| Dropped {
        url: c.url,
        reason: DropReason::NotRead,
    }));
    kept.sort_by(|a, b| a.tier.cmp(&b.tier).then(b.relevance.total_cmp(&a.relevance)));
    Ok(kept)
}

/// How a wave's pages are read: the first `eager` (those the wave surely reads) as soon as
/// each arrives, the rest only when their turn comes.
struct Reading {
    eager: usize,
    before: Option<DateTime<Utc>>,
    want_main_image: bool,
}

/// A fetched page: read as it arrived, or waiting for its turn.
enum Pending {
    Read(Read),
    Unread(crate::fetch::Fetched),
}

/// Fetches one wave of candidates, [`FETCH_PARALLEL`] at a time, in the wave's order (a page
/// that redirected is judged where it landed: cited there, at that publisher's tier), and
/// reads the first `reading.eager` as they arrive. Pages that failed are dropped with why.
async fn fetch_wave(
    m: &Muse,
    wave: Vec<Candidate>,
    reading: &Reading,
    dropped: &mut Vec<Dropped>,
    tally: &mut Tally,
) -> Vec<(Candidate, Pending)> {
    let fetched: Vec<(String, Candidate, Result<Pending, Miss>)> = stream::iter(wave.into_iter().enumerate())
        .map(|(i, mut c)| async move {
            let asked = c.url.clone();
            let page = match m.fetcher.fetch(&c.url).await {
                Ok(f) if f.url.as_str() != c.url => match m.citable(f.url.as_str()) {
                    // Judged where it landed: the page is cited at its final URL, at that
                    // publisher's tier.
                    Ok((domain, tier)) => {
                        tracing::info!(from = %c.url, to = %f.url, "search result redirected; judged at its final URL");
                        c.url = f.url.to_string();
                        c.domain = domain;
                        c.tier = tier;
                        Ok(f)
                    }
                    Err(why) => Err((DropReason::Redirected(format!("{} ({})", f.url, why.as_str())), false)),
                },
                Ok(f) => Ok(f),
                Err(e) if e.reason() == "blocked" => Err((DropReason::Blocked(e.to_string()), false)),
                Err(e) => Err((DropReason::Unreachable(e.to_string()), e.is_outage())),
            };
            let page = match page {
                Ok(f) if i < reading.eager => read_fetched(f, &c.url, reading.before, reading.want_main_image)
                    .await
                    .map(Pending::Read),
                Ok(f) => Ok(Pending::Unread(f)),
                Err(miss) => Err(miss),
            };
            (asked, c, page)
        })
        .buffered(FETCH_PARALLEL)
        .collect()
        .await;
    let mut pages = Vec::new();
    for (asked, c, page) in fetched {
        tally.tried += 1;
        if asked != c.url {
            tally.redirects.push((asked, c.url.clone()));
        }
        match page {
            Ok(p) => pages.push((c, p)),
            Err((reason, outage)) => {
                tally.outages += usize::from(outage);
                dropped.push(Dropped { url: c.url, reason });
            }
        }
    }
    pages
}

/// Reads one turn of fetched pages: those not read yet each extracted on a blocking thread of
/// its own (all at once) and checked for length and date; the readable ones in the turn's order.
async fn read_turn(
    turn: Vec<(Candidate, Pending)>,
    reading: &Reading,
    dropped: &mut Vec<Dropped>,
) -> Vec<(Candidate, extract::Page, Option<String>)> {
    let read = futures_util::future::join_all(turn.into_iter().map(|(c, pending)| async move {
        let page = match pending {
            Pending::Read(read) => Ok(read),
            Pending::Unread(f) => read_fetched(f, &c.url, reading.before, reading.want_main_image).await,
        };
        (c, page)
    }))
    .await;
    let mut readable = Vec::new();
    for (c, page) in read {
        match page {
            Ok((p, main)) => readable.push((c, p, main)),
            Err((reason, _)) => dropped.push(Dropped { url: c.url, reason }),
        }
    }
    readable
}

/// A fetched page extracted (bounded nesting, its own big-stack thread, a time budget: a
/// hostile page costs this page only) and checked for length and date.
async fn read_fetched(
    f: crate::fetch::Fetched,
    url: &str,
    before: Option<DateTime<Utc>>,
    want_main_image: bool,
) -> Result<Read, Miss> {
    // Only a post with pictures compares pages' main images.
    let main_image = want_main_image
        .then(|| super::visual::main_image(&f.html, &f.url))
        .flatten();
    let at = f.url.to_string();
    let html = f.html;
    let read = tokio::task::spawn_blocking(move || extract::extract_bounded(html, Some(at), extract::EXTRACT_BUDGET))
        .await
        .unwrap_or_else(|e| Err(extract::ExtractError::Panicked(e.to_string())));
    match read {
        Ok(page) => match extract::decide(&page, before) {
            Decision::Keep => Ok((page, main_image)),
            Decision::TooShort { .. } => Err((DropReason::TooShort, false)),
            Decision::TooNew { .. } => Err((DropReason::TooNew, false)),
        },
        Err(e) => {
            tracing::warn!(url, error = %e, "page unreadable; skipped");
            Err((DropReason::Unreadable(e.to_string()), false))
        }
    }
}

/// Scores a turn's pages by their best passage among those the lexical prefilter picks; keeps those
/// at or above the threshold with their most relevant passages, in page order.
async fn score_turn(
    m: &Muse,
    scale: &Scale,
    post_vec: &[f32],
    pictures: &Pictures,
    readable: Vec<(Candidate, extract::Page, Option<String>)>,
    dropped: &mut Vec<Dropped>,
) -> Result<Vec<KeptPage>, PipelineError> {
    let cfg = &m.relevance;
    // Visual relevance: the main images of the pages, for a post with pictures.
    let mut matches = Vec::new();
    for (c, _, main) in &readable {
        let closeness = match (&m.images, main) {
            (Some(images), Some(url)) if !pictures.hashes.is_empty() => {
                super::visual::closeness(images, url, &c.url, &pictures.hashes, &pictures.embeddings)
                    .await
                    .map(|cl| (cl, cl.same_picture(images)))
            }
            _ => None,
        };
        matches.push(closeness);
    }
    let mains: Vec<Option<String>> = readable.iter().map(|(_, _, main)| main.clone()).collect();
    let readable: Vec<(Candidate, extract::Page)> = readable.into_iter().map(|(c, p, _)| (c, p)).collect();
    // Cutting and ranking passages is CPU work on untrusted text: off the async workers, on
    // at most the first READ_WORDS words of each page. Each page's prefiltered passages, best
    // BM25 score first, with their place in the page.
    let texts: Vec<String> = readable.iter().map(|(_, p)| first_words(&p.text, READ_WORDS)).collect();
    let (query, words, prefilter) = (scale.query.clone(), cfg.passage_words, cfg.prefilter);
    let per_page: Vec<Vec<(usize, String)>> = tokio::task::spawn_blocking(move || {
        texts
            .iter()
            .map(|text| {
                let all = relevance::passages(text, words);
                relevance::lexical_ranked(&query, &all, prefilter)
                    .into_iter()
                    .map(|i| (i, all[i].clone()))
                    .collect()
            })
            .collect()
    })
    .await
    .map_err(|e| PipelineError::Relevance(e.to_string()))?;
    let same_picture: Vec<bool> = matches.iter().map(|m| m.is_some_and(|(_, same)| same)).collect();
    let cosines = passage_cosines(scale, post_vec, &per_page, &same_picture, cfg.prefilter_first).await?;
    let mut kept = Vec::new();
    for (((((c, page), passages), image_match), main_image), cosines) in
        readable.into_iter().zip(per_page).zip(matches).zip(mains).zip(cosines)
    {
        let mut scored: Vec<(usize, f32)> = cosines.into_iter().enumerate().collect();
        let best = scored.iter().map(|s| s.1).fold(f32::MIN, f32::max);
        let same_picture = image_match.is_some_and(|(_, same)| same);
        if best < scale.threshold && !same_picture {
            tracing::debug!(url = %c.url, best, "low relevance");
            dropped.push(Dropped {
                url: c.url,
                reason: DropReason::LowRelevance,
            });
            continue;
        }
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        // The best ones, in page order.
        let mut top: Vec<usize> = scored.iter().take(cfg.max_passages).map(|s| s.0).collect();
        top.sort_unstable_by_key(|&i| passages[i].0);
        kept.push(KeptPage {
            url: c.url,
            title: page.title,
            domain: c.domain,
            tier: c.tier,
            published: page.date,
            relevance: best,
            passages: top.into_iter().map(|i| passages[i].1.clone()).collect(),
            words: page.word_count,
            image_match: image_match.filter(|(_, same)| *same).and_then(|(cl, _)| cl.bits),
            image_cosine: image_match.and_then(|(cl, _)| cl.cosine),
            main_image,
            claim_reviews: page.claim_reviews,
        });
    }
    Ok(kept)
}

/// Each page's cosines with the post, one per passage embedded, in `per_page`'s order (best
/// BM25 first): the first `first` passages of every page, and the rest only for the pages those
/// leave below the threshold ([`needs_rest`]), all in one run of the sessions with no wait
/// between the stages ([`relevance::Embedder::embed_staged`]). A page passes exactly when it
/// would with all its passages embedded. `first` 0: all at once.
async fn passage_cosines(
    scale: &Scale,
    post_vec: &[f32],
    per_page: &[Vec<(usize, String)>],
    same_picture: &[bool],
    first: usize,
) -> Result<Vec<Vec<f32>>, PipelineError> {
    let groups: Vec<relevance::Staged> = per_page
        .iter()
        .map(|p| relevance::Staged::split(p.iter().map(|(_, t)| t.clone()).collect(), first))
        .collect();
    let (post, threshold, same) = (post_vec.to_vec(), scale.threshold, same_picture.to_vec());
    let embedder = scale.embedder.clone();
    let vectors = tokio::task::spawn_blocking(move || {
        embedder.embed_staged(&groups, |g, vectors| {
            let cosines: Vec<f32> = vectors.iter().map(|v| relevance::cosine(&post, v)).collect();
            needs_rest(same[g], &cosines, threshold)
        })
    })
    .await
    .map_err(|e| PipelineError::Relevance(e.to_string()))?
    .map_err(|e| PipelineError::Relevance(e.to_string()))?;
    Ok(vectors
        .iter()
        .map(|page| page.iter().map(|v| relevance::cosine(post_vec, v)).collect())
        .collect())
}

/// Whether a page's other passages must be embedded too: it is not kept for its picture, and
/// its first passages all score below `threshold`.
fn needs_rest(same_picture: bool, first: &[f32], threshold: f32) -> bool {
    !same_picture && first.iter().all(|c| *c < threshold)
}

/// The model, threshold and prefilter query one post's pages are scored with: for a post in
/// English (or of no known language), or without a multilingual model, the configured model
/// and the post's text; for another language, the multilingual model, its threshold, and the
/// post's text with its queries (written in its language and in English), so the BM25
/// prefilter finds an English page's passages by English words.
struct Scale {
    embedder: std::sync::Arc<crate::relevance::Embedder>,
    threshold: f32,
    /// The model's calibrated "same claim" cosine (`claims.same_claim*`).
    same_claim: f32,
    query: String,
}

impl Scale {
    fn for_post(m: &Muse, post: &Post, post_text: &str, queries: &[String]) -> Scale {
        let lang = crate::lang::primary(post.language.as_deref());
        match (&m.multilingual, lang.as_deref()) {
            (Some(multi), Some(l)) if l != "en" => Scale {
                embedder: multi.clone(),
                threshold: m.relevance.multilingual_threshold,
                same_claim: m.claims.same_claim_multilingual,
                query: std::iter::once(post_text.to_string())
                    .chain(queries.iter().cloned())
                    .collect::<Vec<_>>()
                    .join("\n"),
            },
            _ => Scale {
                embedder: m.embedder.clone(),
                threshold: m.relevance.threshold,
                same_claim: m.claims.same_claim,
                query: post_text.to_string(),
            },
        }
    }
}

/// Embeds on a blocking thread (the model is CPU-bound).
async fn embed(
    embedder: &std::sync::Arc<crate::relevance::Embedder>,
    texts: Vec<String>,
) -> Result<Vec<Vec<f32>>, PipelineError> {
    if texts.is_empty() {
        return Ok(Vec::new());
    }
    let embedder = embedder.clone();
    tokio::task::spawn_blocking(move || embedder.embed(&texts))
        .await
        .map_err(|e| PipelineError::Relevance(e.to_string()))?
        .map_err(|e| PipelineError::Relevance(e.to_string()))
}

/// The post's text without links (`scheme://…`, `www.…`, bare `host.tld/path`), which would
/// only add noise to the embedding and the BM25 query. `scripts/calibrate_relevance.py`
/// (`clean`) removes the same.
fn strip_urls(text: &str) -> String {
    let is_link = |w: &str| {
        let lower = w.to_lowercase();
        let bare_host_path = w.split_once('/').is_some_and(|(host, _)| {
            let host = host.trim_start_matches(|c: char| !c.is_alphanumeric());
            host.contains('.')
                && !host.starts_with('.')
                && !host.ends_with('.')
                && host
                    .chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '.' | '-' | '_'))
        });
        lower.contains("://") || lower.starts_with("www.") || bare_host_path
    };
    text.split_whitespace()
        .filter(|w| !is_link(w))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_read_to_a_word_budget() {
        assert_eq!(first_words("a b\n\nc d", 3), "a b\n\nc ");
        assert_eq!(first_words("a b", 3), "a b");
        let long = "word ".repeat(100_000);
        assert_eq!(first_words(&long, READ_WORDS).split_whitespace().count(), READ_WORDS);
    }

    #[test]
    fn only_pages_their_first_passages_leave_below_the_threshold_embed_the_rest() {
        assert!(needs_rest(false, &[0.1, 0.2], 0.28));
        assert!(!needs_rest(false, &[0.1, 0.5], 0.28), "passes on its first passages");
        assert!(!needs_rest(false, &[0.28, 0.0], 0.28), "at the threshold it passes");
        assert!(!needs_rest(true, &[0.1, 0.2], 0.28), "kept for its picture");
    }

    #[test]
    fn links_are_stripped_from_the_post() {
        assert_eq!(
            strip_urls("Look https://t.co/x and www.site.com or twitter.com/elonjet/1 (see news.example/a) 3.5/10 ok"),
            "Look and or (see ok" // as calibrate_relevance.py's clean() gives
        );
    }
}
