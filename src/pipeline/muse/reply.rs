//! Step 5, reply: facts sorted by tier, relevance and closeness to the post's date; the model
//! chooses a verdict from the closed set and explains it citing at least one evidence URL (one
//! regeneration), and the bot words the verdict itself ([`crate::pipeline::verdict`]); else the
//! honest insufficient-evidence reply with an accuracy nudge. Returns the [`Draft`], which the
//! worker persists with the job.

use minijinja::context;

use super::{post_context, Muse};
use crate::llm::ChatMessage;
use crate::model::{Draft, Evidence, Outcome, Post, Usage};
use crate::pipeline::{verdict, PipelineError};

/// Word budget of the reply.
pub const REPLY_WORDS: u32 = 120;

/// The reply from the evidence; must cite at least one evidence URL (one regeneration),
/// else the honest insufficient-evidence reply.
/// `image_context`: where the post's picture appeared and why the agents found it used out of
/// context ([`super::context::for_reply`]), when they did.
pub async fn run(
    m: &Muse,
    post: &Post,
    evidence: &[Evidence],
    image_context: Option<serde_json::Value>,
) -> Result<(Draft, Usage), PipelineError> {
    // "Nothing found" and "found, but it settled nothing" are worded apart.
    let insufficient = || -> Result<(Draft, Usage), PipelineError> {
        let key = if evidence.is_empty() {
            "insufficient_none"
        } else {
            "insufficient_found"
        };
        let text = crate::words::say(crate::words::language(post.language.as_deref()), key, ());
        Ok((
            Draft {
                outcome: Outcome::Insufficient,
                text,
                urls: Vec::new(),
                verdict: None,
            },
            Usage::default(),
        ))
    };
    if evidence.is_empty() {
        return insufficient();
    }
    let mut facts: Vec<(&Evidence, &String)> = evidence
        .iter()
        .flat_map(|e| e.refute.iter().chain(e.context.iter()).map(move |q| (e, q)))
        .collect();
    // Tier, then relevance, then closeness to the post's date.
    let distance = |e: &Evidence| {
        e.published
            .map_or(i64::MAX, |d| (d - post.created_at).num_seconds().abs())
    };
    facts.sort_by(|(a, _), (b, _)| {
        a.tier
            .cmp(&b.tier)
            .then(b.relevance.total_cmp(&a.relevance))
            .then(distance(a).cmp(&distance(b)))
    });
    let facts_ctx: Vec<serde_json::Value> = facts
        .iter()
        .map(|(e, q)| serde_json::json!({"quote": q, "url": e.url, "published": e.published.map(|d| d.format("%Y-%m-%d").to_string()).unwrap_or_else(|| "unknown".into())}))
        .collect();
    let urls: Vec<String> = evidence.iter().map(|e| e.url.clone()).collect();
    let system = m
        .prompts
        .render("reply_muse.system.j2", context! { max_words => REPLY_WORDS, language => crate::words::name(crate::words::language(post.language.as_deref())) })?;
    let mut usage = Usage::default();
    for retry in [false, true] {
        let mut ctx = post_context(post);
        ctx.insert("facts".into(), serde_json::json!(facts_ctx));
        ctx.insert("retry".into(), serde_json::json!(retry));
        if let Some(c) = &image_context {
            ctx.insert("image_context".into(), c.clone());
        }
        let user = m.prompts.render("reply_muse.user.j2", &ctx)?;
        let c = m
            .llm
            .chat_json(
                &[ChatMessage::system(system.clone()), ChatMessage::user(user)],
                "verdict",
                &verdict::schema(),
            )
            .await?;
        usage.prompt_tokens += c.prompt_tokens;
        usage.completion_tokens += c.completion_tokens;
        let answer = verdict::read(&c.text);
        let cites = answer
            .as_ref()
            .is_some_and(|(_, e)| urls.iter().any(|u| e.contains(u.as_str())));
        if let Some((v, explanation)) = answer.filter(|(_, e)| cites && !verdict::is_echo(e, &post.text)) {
            return Ok((
                Draft {
                    outcome: Outcome::Reply,
                    text: verdict::word(v, &explanation, crate::words::language(post.language.as_deref())),
                    urls,
                    verdict: Some(v),
                },
                usage,
            ));
        }
        tracing::warn!(
            retry,
            cites,
            "the answer chose no verdict, cites no evidence URL, or restates the post"
        );
    }
    let (draft, _) = insufficient()?;
    Ok((draft, usage))
}
