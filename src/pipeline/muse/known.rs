//! Known claims in the Muse pipeline: the `match` step and the reply that rests on a
//! professional fact-check of the post's own claim.
//!
//! [`run`] (after describe, before queries) matches the post — its text and its images'
//! descriptions — against the fact-check corpus (`claims::matcher`) and keeps the candidates in
//! `Retrieval::matches`. A candidate *decides* only when its claim is the post's
//! (`same_claim`), its review URL is a fact-checker's page (`credibility::factcheckers`, named
//! by the table), that page, fetched through the guard, landed on a citable page of the same
//! fact-checker — where it landed is what the reply links — and the landed page's own
//! `ClaimReview` markup reviews the post's claim too ([`super::live`]): the reply is then
//! named and settled by that live review, never by the dump's rating, claim or date. Landed
//! pages become search candidates, so the evidence step can quote them (one without such
//! markup is evidence like any page, never a verdict). For a watched post ([`run_watched`]) the
//! review the watch decided is the post's claim (by its learned head, whatever the cosine), and
//! its live page must review the claim the corpus holds for it.
//!
//! [`stance`] (after evidence) decides once what the post says about the first deciding
//! review's claim (`crate::stance`). [`answer`] (after the reply step, and again after
//! verification) makes the reply rest on the deciding reviews (`Retrieval::deciding_reviews`:
//! the corpus's and the evidence pages' own same-claim checks) *as the post's stance allows*:
//! only a post that asserts the claim gets the bot's verdict sentence mapped from their
//! ratings' class (false → inaccurate, misleading → misleading, missing context → missing
//! context, true → accurate), the checks named, then the model's explanation when it reached
//! the same verdict. A post that denies the claim is told it agrees with (or disputes) the
//! checkers; one that asks, reports, or whose stance is unclear hears about the claim and its
//! rating, never that it is false or accurate — and carries no verdict, so no label. Checks of
//! different pages whose classes differ are named as disagreeing, with no verdict; checks
//! whose ratings have no class are quoted, with no verdict of the bot's own. Never "could not
//! verify" beside a matched check.

use super::Muse;
use crate::model::{
    ClaimMatch, ClaimReview, ClaimVector, Draft, Outcome, Post, PostStance, RatingHint, Retrieval, Stance, Usage,
    Verdict,
};
use crate::pipeline::PipelineError;

/// Deciding matches whose pages are fetched (the rest are kept for `check` only).
const MAX_DECIDING: usize = 3;

/// The match step: fills `Retrieval::matches` (empty without a corpus).
pub async fn run(m: &Muse, post: &Post, r: &mut Retrieval) -> Result<Usage, PipelineError> {
    run_watched(m, post, r, None).await
}

/// [`run`] for a watched post whose review the network watch decided is the post's claim
/// (`watched`, its URL; by the learned head or the cosine bar): that candidate is the post's
/// claim whatever its cosine, and its live page must review the claim the corpus holds for it
/// (the page's claim against the corpus's, at `claims.same_claim`), so a poisoned import
/// still decides nothing.
pub async fn run_watched(
    m: &Muse,
    post: &Post,
    r: &mut Retrieval,
    watched: Option<&str>,
) -> Result<Usage, PipelineError> {
    let Some(matcher) = m.matcher.clone() else {
        r.matches = Some(Vec::new());
        return Ok(Usage::default());
    };
    let mut text = post.text.clone();
    for alt in post.media.iter().filter_map(|x| x.alt.as_deref()) {
        text.push('\n');
        text.push_str(alt);
    }
    let lang = crate::lang::primary(post.language.as_deref());
    // A watched post's review was chosen among its best candidates by cosine: look deeper, so
    // the fused ranking holds it too.
    let k = match watched {
        Some(_) => m.claims.candidates.max(2 * crate::claims::same::CANDIDATES),
        None => m.claims.candidates.max(1),
    };
    let finder = matcher.clone();
    let found = tokio::task::spawn_blocking(move || {
        let (space, candidates, vector) = finder.find_with_vector(&text, lang.as_deref(), k)?;
        // The post's own vector for claim memory, in the configured model's space.
        let memory = finder.memory_space(lang.as_deref());
        let kept = match &vector {
            Some(v) if space == memory => Some(v.clone()),
            _ => finder.embed(&crate::claims::matcher::clean_post(&text), memory)?,
        };
        let kept = kept.map(|v| ClaimVector::from_unit(memory.as_str(), &v));
        Ok((candidates, kept, (space, vector)))
    })
    .await
    .unwrap_or_else(|e| {
        Err(crate::claims::CorpusError::Tantivy(
            tantivy::TantivyError::InternalError(e.to_string()),
        ))
    });
    let (candidates, matched_in) = match found {
        Ok((c, vector, matched_in)) => {
            r.claim_vector = vector;
            (c, matched_in)
        }
        Err(e) => {
            // The corpus is an aid: a broken one costs the match, not the reply.
            tracing::warn!(error = %e, "claim matching failed; the post is checked without it");
            r.matches = Some(Vec::new());
            return Ok(Usage::default());
        }
    };
    let mut matches = Vec::new();
    let mut fetched = 0;
    // Landed matches (their index) and their pages' markup, decided once all are read.
    let mut landed: Vec<(usize, Vec<ClaimReview>)> = Vec::new();
    let reader = super::live::Reader {
        fetcher: &m.fetcher,
        credibility: &m.credibility,
        citable: &|url: &str| m.citable(url),
    };
    // The watched review's place among the matches (its URL may change where it lands).
    let mut watched_at = None;
    for c in candidates {
        let mut review = c.entry.review;
        review.claim_cosine = c.cosine;
        if watched == Some(review.url.as_str()) {
            watched_at = Some(matches.len());
        }
        review.same_claim = c.same_claim || watched_at == Some(matches.len());
        review.fact_checker = m.credibility.fact_checker(&review.url).map(str::to_string);
        let mut found = ClaimMatch {
            title: c.entry.title,
            score: c.score,
            cosine: c.cosine,
            bm25: c.bm25,
            decides: false,
            why_not: None,
            landed: false,
            live: None,
            review,
        };
        let too_new = match (m.before, found.review.reviewed) {
            (Some(b), Some(d)) => d >= b,
            _ => false,
        };
        if found.review.same_claim {
            if too_new {
                // Only what was published before the cut-off counts (`search.before`, eval).
                found.why_not = Some("reviewed after the cut-off".into());
            } else if found.review.fact_checker.is_none() {
                found.why_not = Some("not a fact-checker's page".into());
            } else if fetched >= MAX_DECIDING {
                found.why_not = Some("more same-claim checks than are read".into());
            } else {
                fetched += 1;
                if let Some(markup) = super::live::land(&reader, &mut found).await {
                    landed.push((matches.len(), markup));
                }
            }
        }
        matches.push(found);
    }
    confirm_live(m, &matcher, matched_in, &mut matches, landed, watched_at).await;
    let decided = matches.iter().filter(|x| x.decides).count();
    tracing::info!(candidates = matches.len(), decided, "claims matched");
    r.matches = Some(matches);
    Ok(Usage::default())
}

/// A watched post's answer, from the fact-check corpus alone (no search, no LLM): the match
/// step (each same-claim match read on its live page), then the verdict of the deciding
/// reviews, worded by the bot — or "nothing found" when none decides.
pub async fn draft_known(
    m: &Muse,
    post: &Post,
    r: &mut Retrieval,
    only: Option<&str>,
    watched: Option<&str>,
) -> Result<(Draft, Usage), PipelineError> {
    if r.matches.is_none() {
        let started = std::time::Instant::now();
        run_watched(m, post, r, watched).await?;
        r.record_step("match", started.elapsed().as_millis() as u64, Usage::default());
    }
    // `only`: the one review that may decide (a watched post's, whose stance was read).
    if let (Some(url), Some(matches)) = (only, r.matches.as_mut()) {
        matches.retain(|c| c.review.url == url);
    }
    // The model alone: a watched post's answer calls no LLM.
    if r.stance.is_none() {
        read_stance(m, post, r).await;
    }
    let lang = crate::words::language(post.language.as_deref());
    let mut draft = Draft {
        outcome: Outcome::Insufficient,
        text: crate::words::say(lang, "insufficient_found", ()),
        urls: Vec::new(),
        verdict: None,
        stance: None,
    };
    answer(&mut draft, &r.deciding_reviews(), post, r.stance.as_ref());
    Ok((draft, r.usage()))
}

/// The stance step of an asked-for answer: the model's reading ([`read_stance`]), then — with
/// `verify.stance` — the LLM's second opinion ([`super::opinion`]), which can only make it the
/// neutral one.
pub async fn stance(m: &Muse, post: &Post, r: &mut Retrieval) -> Result<Usage, PipelineError> {
    read_stance(m, post, r).await;
    match r.stance.take() {
        Some(decided) if m.stance_opinion => {
            let (decided, usage) = super::opinion::second(&m.llm, &m.prompts, &post.text, decided).await?;
            r.stance = Some(decided);
            Ok(usage)
        }
        decided => {
            r.stance = decided;
            Ok(Usage::default())
        }
    }
}

/// The stance model's reading of the post toward the first deciding review's claim (as its
/// live page states it), by the multilingual model on a blocking thread; nothing when no review
/// decides. A post of pictures only has no words to take a stance: `Unclear`. A watched post's
/// answer ([`draft_known`]) reads only this: no LLM.
pub async fn read_stance(m: &Muse, post: &Post, r: &mut Retrieval) {
    let Some(first) = r.deciding_reviews().into_iter().next() else {
        return;
    };
    let embedder = m.multilingual.clone();
    let (text, claim) = (post.text.clone(), first.claim.clone());
    let decided = tokio::task::spawn_blocking(move || {
        crate::stance::decide_all(embedder.as_deref(), &[(text.as_str(), claim.as_str())]).pop()
    })
    .await
    .ok()
    .flatten()
    .unwrap_or_else(|| crate::stance::decide(&post.text, &first.claim, None));
    tracing::info!(stance = decided.stance.as_str(), score = decided.score, by = ?decided.by, "the post's stance toward the checked claim");
    r.stance = Some(decided);
}

/// Decides each landed match by its page's own markup: every review's claim embedded in the
/// space the post was matched in and compared with the post's vector at the matcher's
/// threshold (`live::confirm`). A failed embedding decides nothing (the match stays evidence).
async fn confirm_live(
    m: &Muse,
    matcher: &std::sync::Arc<crate::claims::matcher::Matcher>,
    (space, post): (crate::claims::matcher::Space, Option<Vec<f32>>),
    matches: &mut [ClaimMatch],
    landed: Vec<(usize, Vec<ClaimReview>)>,
    watched: Option<usize>,
) {
    if landed.is_empty() {
        return;
    }
    // Each page's claims, compared with the post — or, for the watched review, with the claim
    // the corpus holds for it (the watch decided that claim is the post's).
    let groups: Vec<(Option<String>, Vec<String>)> = landed
        .iter()
        .map(|(i, markup)| {
            let against = (Some(*i) == watched).then(|| matches[*i].review.claim.clone());
            (against, markup.iter().map(|r| r.claim.clone()).collect())
        })
        .collect();
    let threshold = matcher.threshold(space);
    let cosines: Option<Vec<Vec<f32>>> = match post {
        Some(post) => {
            let matcher = matcher.clone();
            tokio::task::spawn_blocking(move || {
                let mut out = Vec::new();
                for (against, claims) in groups {
                    let vector = match against {
                        Some(claim) => matcher.embed(&claim, space)?,
                        None => Some(post.clone()),
                    };
                    let Some(vector) = vector else { return Ok(None) };
                    match matcher.cosines(&vector, &claims, space)? {
                        Some(c) => out.push(c),
                        None => return Ok(None),
                    }
                }
                Ok::<_, crate::claims::CorpusError>(Some(out))
            })
            .await
            .map_err(|e| e.to_string())
            .and_then(|x| x.map_err(|e| e.to_string()))
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, "a matched page's review could not be embedded; it decides nothing");
                None
            })
        }
        None => None,
    };
    for (n, (i, markup)) in landed.into_iter().enumerate() {
        let these = cosines.as_ref().and_then(|c| c.get(n)).map(Vec::as_slice);
        if let Some(found) = matches.get_mut(i) {
            let post_cosine = found.review.claim_cosine;
            super::live::confirm(found, markup, these, threshold, m.before);
            if Some(i) == watched {
                // What the review queue shows is the post's cosine, not the page's with the corpus.
                if let Some(live) = found.live.as_mut() {
                    live.claim_cosine = post_cosine;
                }
            }
            tracing::info!(url = %found.review.url, decides = found.decides, why_not = ?found.why_not, "a matched review read on its page");
        }
    }
}

/// The candidates the search step adds: the landed matches' pages (deciding or not), at their
/// tier.
pub fn candidates(m: &Muse, r: &Retrieval) -> Vec<crate::model::Candidate> {
    r.matches
        .iter()
        .flatten()
        .filter(|x| x.landed || x.decides)
        .filter_map(|x| {
            let (domain, tier) = m.citable(&x.review.url).ok()?;
            Some(crate::model::Candidate {
                url: x.review.url.clone(),
                title: x.title.clone(),
                domain,
                tier,
                query: "claim match".into(),
            })
        })
        .collect()
}

/// The bot's verdict for a rating class.
pub(crate) fn verdict_of(hint: RatingHint) -> Option<Verdict> {
    match hint {
        RatingHint::False => Some(Verdict::Inaccurate),
        RatingHint::Misleading => Some(Verdict::Misleading),
        RatingHint::MissingContext => Some(Verdict::MissingContext),
        RatingHint::True => Some(Verdict::Accurate),
        RatingHint::Unclear => None,
    }
}

/// What the deciding checks settle: one verdict, a disagreement, or only what they rated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    Verdict(Verdict),
    Disagree,
    /// No rating of them has a class: they are quoted, the bot adds no verdict.
    RatedOnly,
}

/// What `reviews` (one per page) settle: one verdict when their classes agree ("misleading"
/// and "missing context" agree, as misleading), a disagreement when they differ, only what
/// they rated when none has a class.
pub fn settle(reviews: &[ClaimReview]) -> Option<Settled> {
    reviews.first()?;
    let verdicts: Vec<Verdict> = reviews.iter().filter_map(|r| verdict_of(r.hint())).collect();
    let partly = |v: &Verdict| matches!(v, Verdict::Misleading | Verdict::MissingContext);
    Some(match verdicts.first() {
        None => Settled::RatedOnly,
        Some(v) if verdicts.iter().all(|x| x == v) => Settled::Verdict(*v),
        Some(_) if verdicts.iter().all(partly) => Settled::Verdict(Verdict::Misleading),
        Some(_) => Settled::Disagree,
    })
}

/// Checks named and settled at most (the reply names these; the rest are for `check`).
pub const MAX_NAMED: usize = 3;

/// Makes `draft` rest on the deciding reviews (`Retrieval::deciding_reviews`, the first
/// [`MAX_NAMED`]), if there are any; otherwise the draft is left as the model or the bot wrote
/// it. The model's explanation is kept only when it reached the verdict the checks settle.
/// Verification judges the model's words: a revision is kept when it reaches the same verdict,
/// a withdrawal drops them — and the verdict, which is the fact-checkers' (of this very claim,
/// by the calibrated decision), not the model's, stands with the checks named.
pub fn answer(draft: &mut Draft, reviews: &[ClaimReview], post: &Post, stance: Option<&PostStance>) {
    use super::factcheck::reply_sentence;
    let reviews = &reviews[..reviews.len().min(MAX_NAMED)];
    let Some(settled) = settle(reviews) else {
        return;
    };
    let lang = crate::words::language(post.language.as_deref());
    let Some(named) = reply_sentence(reviews, post.created_at, lang, settled == Settled::Disagree) else {
        return;
    };
    // Not measured (a record of an older build): talk about the claim, never about the post.
    let kind = stance.map_or(Stance::Unclear, |s| s.stance);
    let model_explanation = |v: Verdict| -> Option<String> {
        if draft.outcome != Outcome::Reply || draft.verdict != Some(v) {
            return None;
        }
        let own = crate::pipeline::verdict::sentence(v, lang);
        let rest = draft.text.strip_prefix(own.as_str()).unwrap_or(&draft.text).trim();
        // An earlier answer already named the checks (a verification pass): keep what follows.
        let rest = rest.strip_prefix(named.as_str()).unwrap_or(rest).trim();
        (!rest.is_empty()).then(|| rest.to_string())
    };
    let mut urls: Vec<String> = reviews.iter().map(|r| r.url.clone()).collect();
    let (text, verdict) = match (kind, settled) {
        (Stance::Asserts, Settled::Verdict(v)) => {
            let own = crate::pipeline::verdict::sentence(v, lang);
            match model_explanation(v) {
                Some(rest) => {
                    urls.extend(draft.urls.iter().cloned());
                    (format!("{own} {named} {rest}"), Some(v))
                }
                None => (format!("{own} {named}"), Some(v)),
            }
        }
        (Stance::Asserts, Settled::Disagree | Settled::RatedOnly) => (named, None),
        (other, settled) => (
            format!("{} {named}", about_the_claim(other, settled, reviews, lang)),
            None,
        ),
    };
    urls.dedup();
    let mut seen = Vec::new();
    urls.retain(|u| {
        let new = !seen.contains(u);
        seen.push(u.clone());
        new
    });
    *draft = Draft {
        outcome: Outcome::Reply,
        text: text.trim().to_string(),
        urls,
        verdict,
        stance: stance.cloned(),
    };
}

/// The bot's sentence for a post that does not assert the checked claim: it agrees with the
/// checkers (denies a claim they found false or misleading), disputes a claim they found true,
/// or asks about, reports or touches on a claim they checked — the claim named, quoted as the
/// checker's page states it, and nothing said of the post's truth.
fn about_the_claim(stance: Stance, settled: Settled, reviews: &[ClaimReview], lang: &str) -> String {
    let claim = reviews
        .first()
        .map(|r| super::factcheck::quoted(&r.claim, 200))
        .unwrap_or_default();
    let key = match (stance, settled) {
        (Stance::Denies, Settled::Verdict(Verdict::Accurate)) => "stance_disputes_true",
        (Stance::Denies, Settled::Verdict(_)) => "stance_agrees",
        (Stance::Denies, _) => "stance_disputes",
        (Stance::Asks, _) => "stance_asks",
        (Stance::Mentions, _) => "stance_mentions",
        (Stance::Asserts | Stance::Unclear, _) => "stance_unclear",
    };
    crate::words::say(lang, key, minijinja::context! { claim })
}

#[cfg(test)]
#[path = "known_tests.rs"]
mod tests;
