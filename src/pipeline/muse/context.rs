//! Step 2b, context (MAD-Sherlock, seed 004; after search, before pages): does the post use its picture in the picture's
//! original context? When reverse image search found where the picture appeared before, the
//! pages' titles are the "external context"; agents (the same [`Debater`] as draft
//! verification, with their own system prompt) debate whether the post's claims about the
//! picture agree with them. An agreed "unsupported" means out of context, and the reply is told
//! where the picture came from and why. Fills `Retrieval::image_context.finding`.

use super::{post_context, Muse};
use crate::model::{ContextFinding, DebateEnd, Post, Retrieval, Support, Usage};
use crate::pipeline::debate::{Case, Debater};
use crate::pipeline::PipelineError;

pub async fn run(m: &Muse, post: &Post, r: &mut Retrieval) -> Result<Usage, PipelineError> {
    let Some(ctx) = r.image_context.as_mut() else {
        return Ok(Usage::default());
    };
    let Some((agents, rounds)) = m.context_debate else {
        ctx.finding = Some(ContextFinding::NotChecked);
        return Ok(Usage::default());
    };
    let mut values = post_context(post);
    values.insert("sources".into(), serde_json::json!(ctx.sources));
    let case = Case {
        opening: m.prompts.render("ooc.user.j2", values)?,
    };
    let debater = Debater {
        system: "ooc.system.j2",
        llm: &m.llm,
        prompts: &m.prompts,
        agents,
        rounds,
    };
    // The step is checkpointed as a whole: a crash mid-debate repeats this debate.
    let usage = debater.run(&case, &mut ctx.debate, &mut |_| {}).await?;
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
    tracing::info!(finding = ?finding, sources = ctx.sources.len(), "image context checked");
    ctx.finding = Some(finding);
    Ok(usage)
}

/// What the reply is told when the picture is used out of context: its sources and the
/// agents' reasons (`None` otherwise).
pub fn for_reply(r: &Retrieval, agents: usize) -> Option<serde_json::Value> {
    let ctx = r.image_context.as_ref()?;
    if ctx.finding != Some(ContextFinding::OutOfContext) {
        return None;
    }
    let mut reasons = ctx.debate.objections(agents);
    if reasons.is_empty() {
        reasons.extend(ctx.debate.turns.last().map(|t| t.reasons.clone()));
    }
    Some(serde_json::json!({ "sources": ctx.sources, "reasons": reasons.join(" ") }))
}
