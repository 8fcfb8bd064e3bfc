//! Muse's "without retrieval" baseline: the LLM answers from what it knows, told to say where
//! and why the post is (in)accurate, briefly, starting "This post is". No URLs are allowed in
//! the reply (there is no evidence to cite); the composer enforces that. An answer that takes
//! no position, or only restates the post, is asked for once more, then replaced by the honest
//! "could not check" reply: the bot never posts a claim back as its answer.

use minijinja::context;

use super::{parse, PipelineError};
use crate::llm::{ChatMessage, LlmClient};
use crate::model::{Draft, Outcome, Post, Usage};
use crate::prompts::Prompts;

/// Word budget given to the model; the composer still splits whatever comes back.
pub const MAX_WORDS: u32 = 120;

pub async fn draft(llm: &LlmClient, prompts: &Prompts, post: &Post) -> Result<(Draft, Usage), PipelineError> {
    let system = prompts.render("reply_baseline.system.j2", context! { max_words => MAX_WORDS })?;
    let mut usage = Usage::default();
    for retry in [false, true] {
        let user = prompts.render(
            "reply_baseline.user.j2",
            context! {
                author => post.author_display_name.clone(),
                created_at => post.created_at.to_rfc3339(),
                text => post.text.clone(),
                retry => retry,
            },
        )?;
        let completion = llm
            .chat(&[ChatMessage::system(system.clone()), ChatMessage::user(user)])
            .await?;
        usage.prompt_tokens += completion.prompt_tokens;
        usage.completion_tokens += completion.completion_tokens;
        if parse::states_a_verdict(&completion.text, &post.text) {
            let draft = Draft {
                outcome: Outcome::Reply,
                text: completion.text,
                urls: Vec::new(),
            };
            return Ok((draft, usage));
        }
        tracing::warn!(retry, "the reply takes no position on the post or restates it");
    }
    let draft = Draft {
        outcome: Outcome::Insufficient,
        text: prompts.render("reply_unverified.j2", context! {})?,
        urls: Vec::new(),
    };
    Ok((draft, usage))
}
