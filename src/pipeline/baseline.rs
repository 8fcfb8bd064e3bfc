//! Muse's "without retrieval" baseline: the LLM answers from what it knows, choosing a verdict
//! from the closed set and saying where and why, briefly; the bot words the verdict
//! ([`super::verdict`]). No URLs are allowed in the reply (there is no evidence to cite); the
//! composer enforces that. An answer that chooses no verdict, or only restates the post, is
//! asked for once more, then replaced by the honest "could not check" reply: the bot never
//! posts a claim back as its answer.

use minijinja::context;

use super::{verdict, PipelineError};
use crate::llm::{ChatMessage, LlmClient};
use crate::model::{Draft, Outcome, Post, Usage};
use crate::prompts::Prompts;

/// Word budget given to the model; the composer still splits whatever comes back.
pub const MAX_WORDS: u32 = 120;

pub async fn draft(llm: &LlmClient, prompts: &Prompts, post: &Post) -> Result<(Draft, Usage), PipelineError> {
    let language = crate::words::name(crate::words::language(post.language.as_deref()));
    let system = prompts.render(
        "reply_baseline.system.j2",
        context! { max_words => MAX_WORDS, language },
    )?;
    let mut usage = Usage::default();
    for retry in [false, true] {
        let mut ctx = super::muse::post_context(post);
        ctx.insert("retry".into(), serde_json::json!(retry));
        let user = prompts.render("reply_baseline.user.j2", ctx)?;
        let completion = llm
            .chat_json(
                &[ChatMessage::system(system.clone()), ChatMessage::user(user)],
                "verdict",
                &verdict::schema(),
            )
            .await?;
        usage.prompt_tokens += completion.prompt_tokens;
        usage.completion_tokens += completion.completion_tokens;
        let answer = verdict::read(&completion.text)
            .filter(|(_, explanation)| explanation.is_empty() || !verdict::is_echo(explanation, &post.text));
        if let Some((v, explanation)) = answer {
            let draft = Draft {
                outcome: Outcome::Reply,
                text: verdict::word(v, &explanation, crate::words::language(post.language.as_deref())),
                urls: Vec::new(),
                verdict: Some(v),
                stance: None,
            };
            return Ok((draft, usage));
        }
        tracing::warn!(retry, "the answer chose no verdict or restates the post");
    }
    let draft = Draft {
        outcome: Outcome::Insufficient,
        text: crate::words::say(crate::words::language(post.language.as_deref()), "unverified", ()),
        urls: Vec::new(),
        verdict: None,
        stance: None,
    };
    Ok((draft, usage))
}
