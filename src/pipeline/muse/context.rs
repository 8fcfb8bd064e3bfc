//! Step 2b, context (MAD-Sherlock, seed 004; after search, before pages): does the post use its
//! picture in the picture's original context? When reverse image search found where the picture
//! appeared before, the first [`READ_PAGES`] of those pages are fetched and extracted (through
//! the same guarded fetcher as evidence pages) and one call summarises what they say the
//! picture shows, in English whatever their language. Agents (the same [`Debater`] as draft
//! verification, with their own system prompt) then debate whether the post's claims about the
//! picture agree with the sources; with a vision model (`[vision]`) they are that model and see
//! the picture itself. An agreed "unsupported" means out of context: the read pages that pass
//! the citing rule where they landed (`Muse::citable`) join the evidence
//! ([`Retrieval::all_evidence`]) so the reply may cite them, and the reply is told
//! where the picture came from and why. The summary and every debate turn are checkpointed, so a
//! crash repeats neither. Fills `Retrieval::image_context`.

use futures_util::{stream, StreamExt};
use minijinja::context;

use super::{describe, post_context, usage_of, Muse};
use crate::extract::{self, Decision};
use crate::llm::{ChatMessage, LlmClient};
use crate::model::{
    ContextFinding, ContextPage, Debate, DebateEnd, Evidence, ImageContext, Post, Retrieval, Support, Usage,
};
use crate::pipeline::debate::{Case, Debater};
use crate::pipeline::PipelineError;

/// How many of the pages showing the picture are read for the summary (the paper's top 3).
pub const READ_PAGES: usize = 3;
/// Words of each page the summary call sees, and at most this many characters.
const PAGE_WORDS: usize = 400;
const PAGE_CHARS: usize = 3_000;

pub async fn run(
    m: &Muse,
    post: &Post,
    r: &mut Retrieval,
    checkpoint: &mut (dyn FnMut(&Retrieval) + Send),
) -> Result<Usage, PipelineError> {
    let Some(ctx) = r.image_context.as_mut() else {
        return Ok(Usage::default());
    };
    let Some((agents, rounds)) = m.context_debate else {
        ctx.finding = Some(ContextFinding::NotChecked);
        return Ok(Usage::default());
    };
    let mut usage = Usage::default();
    if ctx.read.is_none() {
        let (read, summary, u) = summarise(m, &ctx.urls).await?;
        usage = u;
        ctx.read = Some(read);
        ctx.summary = summary;
        checkpoint(r);
    }
    let ctx = r.image_context.as_ref().expect("set above");
    let mut values = post_context(post);
    values.insert("sources".into(), serde_json::json!(ctx.sources));
    values.insert("summary".into(), serde_json::json!(ctx.summary));
    let (llm, images) = agents_model(m, post).await;
    let case = Case {
        opening: m.prompts.render("ooc.user.j2", values)?,
        images,
    };
    let debater = Debater {
        system: "ooc.system.j2",
        llm,
        prompts: &m.prompts,
        agents,
        rounds,
    };
    let mut debate = ctx.debate.clone();
    let u = debater
        .run(&case, &mut debate, &mut |d: &Debate| {
            if let Some(c) = r.image_context.as_mut() {
                c.debate = d.clone();
            }
            checkpoint(r);
        })
        .await?;
    usage.prompt_tokens += u.prompt_tokens;
    usage.completion_tokens += u.completion_tokens;
    let ctx = r.image_context.as_mut().expect("set above");
    ctx.debate = debate;
    let finding = match ctx.debate.end {
        Some(DebateEnd::Agreed {
            support: Support::Supported,
            ..
        }) => ContextFinding::InContext,
        Some(DebateEnd::Agreed {
            support: Support::Unsupported,
            ..
        }) => ContextFinding::OutOfContext,
        _ => ContextFinding::Contested,
    };
    if finding == ContextFinding::OutOfContext {
        ctx.evidence = as_evidence(m, ctx);
    }
    tracing::info!(
        finding = ?finding,
        sources = ctx.sources.len(),
        read = ctx.read.iter().flatten().filter(|p| p.skipped.is_none()).count(),
        turns = ctx.debate.turns.len(),
        "image context checked"
    );
    ctx.finding = Some(finding);
    Ok(usage)
}

/// The agents' model and what they see of the picture: with a vision model, that model and the
/// post's first picture; else the main model and the picture's description only.
async fn agents_model<'a>(m: &'a Muse, post: &Post) -> (&'a LlmClient, Vec<String>) {
    let vision = m.images.as_deref().and_then(|i| i.vision.as_ref().map(|v| (i, v)));
    let first = post.media.iter().find(|x| x.kind.is_picture());
    if let (Some((images, vision)), Some(first)) = (vision, first) {
        if let Some(copy) = describe::vision_copy(images, &first.url).await {
            return (vision, vec![copy]);
        }
    }
    (&m.llm, Vec::new())
}

/// Reads the first [`READ_PAGES`] pages (concurrently) and summarises what they say the picture
/// shows in one call; a page that cannot be read is kept with the reason (and logged).
async fn summarise(m: &Muse, urls: &[String]) -> Result<(Vec<ContextPage>, Option<String>, Usage), PipelineError> {
    // Only pages a reply could cite are read: the summary rides on the first citable page as
    // its context and steers the agents, so an attacker's page showing the picture with their
    // own story must not write it. The others stay reverse-search context (their titles, in
    // `sources`), never read.
    let chosen: Vec<String> = urls
        .iter()
        .filter(|u| match m.citable(u) {
            Ok(_) => true,
            Err(why) => {
                tracing::info!(url = %u, reason = why.as_str(), "a page showing the picture is not read (not citable)");
                false
            }
        })
        .take(READ_PAGES)
        .cloned()
        .collect();
    let mut read: Vec<(ContextPage, Option<String>)> = stream::iter(chosen)
        .map(|url| read_page(m, url))
        .buffered(READ_PAGES)
        .collect()
        .await;
    // Judged again where each landed (a credible link may redirect elsewhere).
    for (p, text) in read.iter_mut() {
        if let (Some(_), Err(why)) = (text.as_ref(), m.citable(&p.url)) {
            tracing::info!(url = %p.url, reason = why.as_str(), "a page showing the picture landed where it is not cited; not summarised");
            p.skipped = Some(format!("landed on a page that is not cited ({})", why.as_str()));
            *text = None;
        }
    }
    let pages: Vec<serde_json::Value> = read
        .iter()
        .filter_map(|(p, text)| {
            let text = text.as_ref()?;
            let words: Vec<&str> = text.split_whitespace().take(PAGE_WORDS).collect();
            let words = crate::prompts::cap_chars(words.join(" "), PAGE_CHARS);
            Some(serde_json::json!({
                "url": p.url,
                "title": p.title.clone().unwrap_or_default(),
                "language": p.language.clone().unwrap_or_else(|| "unknown".into()),
                "published": p.published.map(|d| d.format("%Y-%m-%d").to_string()).unwrap_or_else(|| "unknown".into()),
                "text": words,
            }))
        })
        .collect();
    let read: Vec<ContextPage> = read.into_iter().map(|(p, _)| p).collect();
    if pages.is_empty() {
        return Ok((read, None, Usage::default()));
    }
    let system = m.prompts.render("ooc_summary.system.j2", context! {})?;
    let user = m.prompts.render("ooc_summary.user.j2", context! { pages => pages })?;
    let c = m
        .llm
        .chat(&[ChatMessage::system(system), ChatMessage::user(user)])
        .await?;
    let summary: String = c.text.trim().chars().take(800).collect();
    Ok((read, Some(summary).filter(|s| !s.is_empty()), usage_of(&c)))
}

/// One page where the picture appeared: fetched, extracted, and kept (with its text) or
/// skipped with the reason.
async fn read_page(m: &Muse, url: String) -> (ContextPage, Option<String>) {
    let mut page = ContextPage {
        url: url.clone(),
        title: None,
        language: None,
        published: None,
        skipped: None,
    };
    let fetched = match m.fetcher.fetch(&url).await {
        Ok(f) => f,
        Err(e) => {
            tracing::warn!(url, error = %e, "a page showing the picture was not fetched; skipped");
            page.skipped = Some(format!("not fetched: {e}"));
            return (page, None);
        }
    };
    let html = fetched.html;
    let at = fetched.url.to_string();
    // The page is known, and judged for citing, by where it landed.
    page.url = at.clone();
    let extracted =
        tokio::task::spawn_blocking(move || extract::extract_bounded(html, Some(at), extract::EXTRACT_BUDGET))
            .await
            .unwrap_or_else(|e| Err(extract::ExtractError::Panicked(e.to_string())));
    let extracted = match extracted {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(url, error = %e, "a page showing the picture is unreadable; skipped");
            page.skipped = Some(format!("unreadable: {e}"));
            return (page, None);
        }
    };
    page.title = extracted.title.clone();
    page.language = extracted.language.clone();
    page.published = extracted.date;
    match extract::decide(&extracted, m.before) {
        Decision::Keep => (page, Some(extracted.text)),
        other => {
            let why = format!("{other:?}");
            tracing::info!(url, reason = %why, "a page showing the picture was skipped");
            page.skipped = Some(why);
            (page, None)
        }
    }
}

/// The read pages a reply may cite for an out-of-context finding: only those that pass
/// [`Muse::citable`] at the URL they landed on (a credible publisher, not blocked, nobody's
/// social post — the `local` index offers any post the bot ever saw, which its author can
/// later change); the others informed the agents and stay context. Each says the picture
/// appeared there (with its title); the first carries the summary.
fn as_evidence(m: &Muse, ctx: &ImageContext) -> Vec<Evidence> {
    ctx.read
        .iter()
        .flatten()
        .filter(|p| p.skipped.is_none())
        .filter_map(|p| match m.citable(&p.url) {
            Ok((_, tier)) => Some((p, tier)),
            Err(why) => {
                tracing::info!(url = %p.url, reason = why.as_str(), "a page showing the picture is context only, not cited");
                None
            }
        })
        .enumerate()
        .map(|(i, (p, tier))| {
            let title = p.title.as_deref().map(|t| format!(" (\"{t}\")")).unwrap_or_default();
            let mut line = format!("The post's image appeared on this page{title}.");
            if let (0, Some(s)) = (i, &ctx.summary) {
                line.push_str(&format!(" What the pages showing it say: {s}"));
            }
            Evidence {
                url: p.url.clone(),
                tier,
                published: p.published,
                relevance: 1.0,
                refute: Vec::new(),
                context: vec![line],
                unverified: 0,
            }
        })
        .collect()
}

/// What the reply is told when the picture is used out of context: its sources, the summary of
/// what they show, and the agents' reasons (`None` otherwise).
pub fn for_reply(r: &Retrieval, agents: usize) -> Option<serde_json::Value> {
    let ctx = r.image_context.as_ref()?;
    if ctx.finding != Some(ContextFinding::OutOfContext) {
        return None;
    }
    let mut reasons = ctx.debate.objections(agents);
    // Agents who agree often word the same objection alike.
    let mut seen = std::collections::HashSet::new();
    reasons.retain(|r| seen.insert(r.to_lowercase()));
    if reasons.is_empty() {
        reasons.extend(ctx.debate.turns.last().map(|t| t.reasons.clone()));
    }
    Some(serde_json::json!({ "sources": ctx.sources, "summary": ctx.summary, "reasons": reasons.join(" ") }))
}
