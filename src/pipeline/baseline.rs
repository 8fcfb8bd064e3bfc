//! Muse's "without retrieval" baseline: the LLM answers from what it knows, told to say where
//! and why the post is (in)accurate, briefly, starting "This post is". No URLs are allowed in
//! the reply (there is no evidence to cite); the composer enforces that.

use minijinja::context;

use super::{PipelineError, Usage};
use crate::job::{Draft, Outcome, Post};
use crate::llm::{ChatMessage, LlmClient};
use crate::prompts::Prompts;

/// Word budget given to the model; the composer still splits whatever comes back.
pub const MAX_WORDS: u32 = 120;

pub async fn draft(llm: &LlmClient, prompts: &Prompts, post: &Post) -> Result<(Draft, Usage), PipelineError> {
    let system = prompts.render("reply_baseline.system.j2", context! { max_words => MAX_WORDS })?;
    let user = prompts.render(
        "reply_baseline.user.j2",
        context! {
            author => post.author_display_name.clone(),
            created_at => post.created_at.to_rfc3339(),
            text => post.text.clone(),
        },
    )?;
    let completion = llm
        .chat(&[ChatMessage::system(system), ChatMessage::user(user)])
        .await?;
    Ok((
        Draft {
            outcome: Outcome::Reply,
            text: completion.text,
            urls: Vec::new(),
        },
        Usage {
            prompt_tokens: completion.prompt_tokens,
            completion_tokens: completion.completion_tokens,
        },
    ))
}
