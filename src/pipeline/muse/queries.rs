//! Step 1, queries: the LLM writes up to [`TEXT_QUERIES`] search queries from the post's text,
//! time and author (`chat_json` with a schema where the endpoint honours it; `parse::queries`
//! tolerates prose, lists and "none"), in the post's language and English, and in a second
//! language the post is partly written in (`lang::also`). Fills `Retrieval::queries`; none
//! means nothing to check.

use minijinja::context;

use super::{post_context, usage_of, Muse};
use crate::llm::ChatMessage;
use crate::model::{Post, Retrieval, Usage};
use crate::pipeline::{parse, PipelineError};

/// Queries for a text-only post (Muse: 3; 5 once image descriptions exist).
pub const TEXT_QUERIES: usize = 3;

/// Queries for a post whose images were described (Muse: 5).
pub const IMAGE_QUERIES: usize = 5;

pub async fn run(m: &Muse, post: &Post, r: &mut Retrieval) -> Result<Usage, PipelineError> {
    let n = if super::describe::has_descriptions(r) {
        IMAGE_QUERIES
    } else {
        TEXT_QUERIES
    };
    // The post's language as a bare code (a Bluesky `langs` entry is whatever the client
    // wrote): the model is asked for queries in it and in English.
    let language = crate::lang::primary(post.language.as_deref());
    // A post written partly in another language gets queries in that one too.
    let also = crate::lang::also(&post.text, post.language.as_deref());
    let system = m.prompts.render(
        "queries.system.j2",
        context! { n => n, language => language, also => also },
    )?;
    let user = m.prompts.render("queries.user.j2", post_context(post))?;
    let schema = serde_json::json!({"type": "object", "properties": {"queries": {"type": "array", "items": {"type": "string"}, "maxItems": n}}, "required": ["queries"]});
    let c = m
        .llm
        .chat_json(
            &[ChatMessage::system(system), ChatMessage::user(user)],
            "queries",
            &schema,
        )
        .await?;
    let queries = parse::queries(&c.text, n);
    tracing::info!(?queries, "queries generated");
    r.queries = Some(queries);
    Ok(usage_of(&c))
}
