//! Step 4, evidence: pages in order, [`EVIDENCE_PAGES`] per LLM call (`relevance.evidence_parallel`
//! calls at once), until [`ENOUGH_REFUTING_PAGES`] refute. The LLM reads only each page's most relevant passages and
//! returns refuting and context quotes; **every quote must appear verbatim** in one page's
//! passages and is credited to that page (≤ [`QUOTES_PER_PAGE`] of each kind per page, Muse's
//! rule); quotes found in no page are dropped and counted. Fills `Retrieval::evidence`.

use minijinja::context;

use super::{post_context, Muse};
use crate::llm::ChatMessage;
use crate::model::{DropReason, Dropped, Evidence, KeptPage, Post, Retrieval, Usage};
use crate::pipeline::{parse, PipelineError};

/// Pages the evidence LLM reads in one call.
pub const EVIDENCE_PAGES: usize = 2;
/// Refuting quotes, and context quotes, kept per page (Muse).
pub const QUOTES_PER_PAGE: usize = 2;
/// Evidence extraction stops once this many pages refute the post (Muse).
pub const ENOUGH_REFUTING_PAGES: usize = 2;

pub async fn run(m: &Muse, post: &Post, r: &mut Retrieval) -> Result<Usage, PipelineError> {
    let pages = r.pages.clone().unwrap_or_default();
    let (mut evidence, usage) = evidence(m, post, &pages, &mut r.dropped).await?;
    r.unverified_quotes = evidence.iter().map(|e| e.unverified).sum();
    add_fact_checks(&mut evidence, &pages, &r.fact_checks);
    add_matches(m, &mut evidence, r.matches.as_deref().unwrap_or_default());
    r.evidence = Some(
        evidence
            .into_iter()
            .filter(|e| !e.refute.is_empty() || !e.context.is_empty())
            .collect(),
    );
    Ok(usage)
}

/// Quotes from pages in order, [`EVIDENCE_PAGES`] pages per LLM call, until enough refute.
/// One call reads a wave of pages: the post and the instructions are sent once, not once per
/// page. `relevance.evidence_parallel` waves are read at once (a round); Muse's early stop
/// applies between rounds, so a round that already holds enough refutations is the last. Each
/// quote is credited to the page whose passages hold it verbatim; quotes found in none are
/// dropped and counted on the wave's first page; at most two of each kind per page.
async fn evidence(
    m: &Muse,
    post: &Post,
    pages: &[KeptPage],
    dropped: &mut Vec<Dropped>,
) -> Result<(Vec<Evidence>, Usage), PipelineError> {
    let mut usage = Usage::default();
    let mut out = Vec::new();
    let mut refuting = 0;
    let waves: Vec<&[KeptPage]> = pages.chunks(EVIDENCE_PAGES).collect();
    let at_once = m.relevance.evidence_parallel.max(1);
    let mut next = 0;
    while next < waves.len() {
        if refuting >= ENOUGH_REFUTING_PAGES {
            for p in waves[next..].iter().flat_map(|w| w.iter()) {
                dropped.push(Dropped {
                    url: p.url.clone(),
                    reason: DropReason::NotReached,
                });
            }
            break;
        }
        let round = &waves[next..(next + at_once).min(waves.len())];
        next += round.len();
        let answers = futures_util::future::join_all(round.iter().map(|wave| read_wave(m, post, wave))).await;
        for (wave, answer) in round.iter().zip(answers) {
            let (found, unverified, u) = answer?;
            usage.prompt_tokens += u.prompt_tokens;
            usage.completion_tokens += u.completion_tokens;
            if unverified > 0 {
                tracing::info!(url = %wave[0].url, unverified, "dropped quotes not found verbatim in the pages");
            }
            for (i, (page, (refute, context))) in wave.iter().zip(found).enumerate() {
                if refute.is_empty() && context.is_empty() {
                    dropped.push(Dropped {
                        url: page.url.clone(),
                        reason: DropReason::NoEvidence,
                    });
                }
                refuting += usize::from(!refute.is_empty());
                out.push(Evidence {
                    url: page.url.clone(),
                    tier: page.tier,
                    published: page.published,
                    relevance: page.relevance,
                    refute,
                    context,
                    unverified: if i == 0 { unverified } else { 0 },
                });
            }
        }
    }
    Ok((out, usage))
}

/// One evidence call on one wave of pages: the quotes credited per page, how many no page
/// holds verbatim, and the tokens.
async fn read_wave(m: &Muse, post: &Post, wave: &[KeptPage]) -> Result<(Vec<PageQuotes>, usize, Usage), PipelineError> {
    let max_each = QUOTES_PER_PAGE * wave.len();
    // The post's own language (not only those the bot speaks): a Korean post is "ko".
    let code = crate::lang::primary(post.language.as_deref()).unwrap_or_else(|| "an unknown language".into());
    let language = crate::words::name(&code).to_string();
    let system = m
        .prompts
        .render("evidence.system.j2", context! { n => wave.len(), language })?;
    let schema = serde_json::json!({"type": "object", "properties": {
        "refute": {"type": "array", "items": {"type": "string"}, "maxItems": max_each},
        "context": {"type": "array", "items": {"type": "string"}, "maxItems": max_each}}, "required": ["refute", "context"]});
    let mut ctx = post_context(post);
    let listed: Vec<serde_json::Value> = wave
        .iter()
        .map(|page| {
            serde_json::json!({
                "published": page.published.map(|d| d.to_rfc3339()).unwrap_or_else(|| "unknown".into()),
                "passages": page.passages,
            })
        })
        .collect();
    ctx.insert("pages".into(), serde_json::json!(listed));
    let user = m.prompts.render("evidence.user.j2", &ctx)?;
    let c = m
        .llm
        .chat_json(
            &[ChatMessage::system(system), ChatMessage::user(user)],
            "evidence",
            &schema,
        )
        .await?;
    let usage = Usage {
        prompt_tokens: c.prompt_tokens,
        completion_tokens: c.completion_tokens,
    };
    let (refute, context) = parse::evidence(&c.text, max_each);
    // Each passage on its own: a "quote" stitched across two passages is not verbatim.
    let sources: Vec<Vec<String>> = wave
        .iter()
        .map(|p| p.passages.iter().map(|x| parse::normalize(x)).collect())
        .collect();
    let (found, unverified) = attribute(refute, context, &sources);
    Ok((found, unverified, usage))
}

/// Refuting and context quotes credited to one page.
type PageQuotes = (Vec<String>, Vec<String>);

/// Credits each quote to the first page one of whose (normalised) passages holds it verbatim and still has
/// room ([`QUOTES_PER_PAGE`] of each kind per page); returns per page (refute, context) and how
/// many quotes no page holds.
fn attribute(refute: Vec<String>, context: Vec<String>, sources: &[Vec<String>]) -> (Vec<PageQuotes>, usize) {
    let mut found: Vec<PageQuotes> = vec![(Vec::new(), Vec::new()); sources.len()];
    let mut unverified = 0;
    let quotes = refute
        .into_iter()
        .map(|q| (q, true))
        .chain(context.into_iter().map(|q| (q, false)));
    for (quote, is_refute) in quotes {
        let holders: Vec<usize> = (0..sources.len())
            .filter(|&i| sources[i].iter().any(|passage| parse::is_verbatim(&quote, passage)))
            .collect();
        if holders.is_empty() {
            unverified += 1;
            continue;
        }
        let room = |i: &usize| {
            let (refute, context) = &found[*i];
            (if is_refute { refute } else { context }).len() < QUOTES_PER_PAGE
        };
        if let Some(i) = holders.into_iter().find(room) {
            let list = if is_refute { &mut found[i].0 } else { &mut found[i].1 };
            list.push(quote.trim().to_string());
        }
    }
    (found, unverified)
}

/// A relevant page that is a professional fact-check is evidence for what it rated, quoted or
/// not: the bot's own line says who reviewed which claim, when, and their rating (the claim
/// and the rating are the publisher's words, cut short), so the reply and its verification
/// see the check. The page's markup first; the Fact Check Tools API's record for a page
/// without one.
fn add_fact_checks(evidence: &mut Vec<Evidence>, pages: &[crate::model::KeptPage], api: &[crate::model::ClaimReview]) {
    for page in pages {
        let reviews: Vec<&crate::model::ClaimReview> = if page.claim_reviews.is_empty() {
            api.iter().filter(|r| r.url == page.url).collect()
        } else {
            page.claim_reviews.iter().collect()
        };
        // A check of another claim is no evidence about this one.
        let reviews: Vec<&crate::model::ClaimReview> = reviews.into_iter().filter(|r| !r.other_claim).collect();
        if reviews.is_empty() {
            continue;
        }
        let lines: Vec<String> = reviews.iter().map(|r| super::factcheck::evidence_line(r)).collect();
        match evidence.iter_mut().find(|e| e.url == page.url) {
            Some(e) => e.context.extend(lines),
            None => evidence.push(Evidence {
                url: page.url.clone(),
                tier: page.tier,
                published: page.published,
                relevance: page.relevance,
                refute: Vec::new(),
                context: lines,
                unverified: 0,
            }),
        }
    }
}

/// The fact-checks of the post's own claim that claim matching found (`Retrieval::matches`,
/// deciding ones, as their live pages' markup gives them — never the corpus's record) are
/// evidence too, their page read or not: the reply and its verification see the check they
/// rest on.
fn add_matches(m: &Muse, evidence: &mut Vec<Evidence>, matches: &[crate::model::ClaimMatch]) {
    for (x, review) in matches.iter().filter_map(|x| Some((x, x.deciding()?))) {
        let line = super::factcheck::evidence_line(review);
        match evidence.iter_mut().find(|e| e.url == review.url) {
            Some(e) => {
                if !e.context.contains(&line) {
                    e.context.push(line);
                }
            }
            None => {
                let Ok((_, tier)) = m.citable(&review.url) else {
                    continue;
                };
                evidence.push(Evidence {
                    url: review.url.clone(),
                    tier,
                    published: review.reviewed,
                    relevance: x.cosine.unwrap_or_default(),
                    refute: Vec::new(),
                    context: vec![line],
                    unverified: 0,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_credited_to_the_page_that_holds_them() {
        let sources: Vec<Vec<String>> = [
            "The Apollo samples show the Moon is made of rock. Officials said so in 1970.",
            "A second article: the lunar crust is anorthosite, not cheese, geologists say.",
        ]
        .map(|p| vec![parse::normalize(p)])
        .to_vec();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let (found, unverified) = attribute(
            s(&[
                "the lunar crust is anorthosite, not cheese",
                "The Apollo samples show the Moon is made of rock.",
                "The Moon is made entirely of green cheese, NASA said",
                "Officials said so in 1970.",
                "The Apollo samples show the Moon",
            ]),
            s(&[
                "  geologists say.  ",
                "lunar crust is anorthosite, not cheese, geologists say.",
            ]),
            &sources,
        );
        assert_eq!(unverified, 2, "the fabricated quote and the too-short one: {found:?}");
        // Page 1: two refuting quotes at most (the third is over the cap); page 2: its own.
        assert_eq!(
            found[0].0,
            s(&[
                "The Apollo samples show the Moon is made of rock.",
                "Officials said so in 1970."
            ])
        );
        assert_eq!(found[1].0, s(&["the lunar crust is anorthosite, not cheese"]));
        assert_eq!(
            found[1].1,
            s(&["lunar crust is anorthosite, not cheese, geologists say."])
        );
        assert!(found[0].1.is_empty());
    }

    /// The verbatim check runs per passage: the end of one passage glued to the start of the
    /// next is not a quote, even though the two sit side by side in the page.
    #[test]
    fn a_quote_stitched_across_two_passages_is_rejected() {
        let page = vec![
            parse::normalize("The agency said the samples were collected in 1969 by the crew."),
            parse::normalize("Cheese was never found in any of the lunar samples studied since."),
        ];
        let stitched = "collected in 1969 by the crew. Cheese was never found".to_string();
        let within = "Cheese was never found in any of the lunar samples".to_string();
        let (found, unverified) = attribute(vec![stitched, within.clone()], Vec::new(), &[page]);
        assert_eq!(unverified, 1, "{found:?}");
        assert_eq!(found[0].0, vec![within]);
    }
}
