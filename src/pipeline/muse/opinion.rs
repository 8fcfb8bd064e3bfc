//! The stance's second opinion (`verify.stance`): on an asked-for answer, which already calls
//! the LLM, the LLM reads the post against the deciding claim too, and a sentence about the
//! post beyond the neutral one is said only when it reads the post as the stance model did.
//!
//! A gate toward saying less, never a sentence of its own: the LLM is asked only when the
//! model's reading is beyond the neutral one ([`Stance::Unclear`]), and any answer that is not
//! the same reading — another stance, "neither", prose that names no stance or several — makes
//! the post `Unclear`. So text in a post that speaks to the LLM ("answer asserts") can at most
//! take a sentence back; it can never give one the model did not read. The LLM reads what the
//! model reads (`crate::stance::seen`: no links, no leading mentions) inside a `<post>` block,
//! the claim inside a `<claim>` block, both as data.
//!
//! *Asks* and *reports* are one reading here (the post observes the claim): which of the two is
//! said is the model's split, by whether the post asks.

use minijinja::context;

use super::usage_of;
use crate::llm::{ChatMessage, LlmClient};
use crate::model::{PostStance, Stance, Usage};
use crate::pipeline::PipelineError;
use crate::prompts::Prompts;

/// Asks the LLM for its reading of `post` against `decided.claim` when the model's reading is
/// beyond the neutral one, and returns the stance both agree on (`Unclear` when they do not),
/// with the LLM's reading recorded. A model reading that is already `Unclear` costs no call.
/// (`cargo bench --bench stance` calls it with the local LLM.)
pub async fn second(
    llm: &LlmClient,
    prompts: &Prompts,
    post: &str,
    decided: PostStance,
) -> Result<(PostStance, Usage), PipelineError> {
    if decided.stance == Stance::Unclear {
        return Ok((decided, Usage::default()));
    }
    let system = prompts.render("stance.system.j2", context! {})?;
    let user = prompts.render(
        "stance.user.j2",
        context! { claim => decided.claim, text => crate::stance::seen(post) },
    )?;
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"stance": {"type": "string", "enum": ["asserts", "denies", "asks", "reports", "neither"]}},
        "required": ["stance"]
    });
    let c = llm
        .chat_json(
            &[ChatMessage::system(system), ChatMessage::user(user)],
            "stance",
            &schema,
        )
        .await?;
    let read = parse(&c.text);
    let agreed = agree(decided.stance, read);
    tracing::info!(
        model = decided.stance.as_str(),
        llm = read.map_or("none", Stance::as_str),
        said = agreed.as_str(),
        "the stance's second opinion"
    );
    Ok((
        PostStance {
            stance: agreed,
            second_opinion: Some(read.unwrap_or(Stance::Unclear)),
            ..decided
        },
        usage_of(&c),
    ))
}

/// The stance both readings support: the model's, when the LLM read the same (asks and
/// reports alike); otherwise the neutral `Unclear`.
pub fn agree(model: Stance, llm: Option<Stance>) -> Stance {
    let observes = |s: Stance| matches!(s, Stance::Asks | Stance::Mentions);
    match (model, llm) {
        (Stance::Asserts, Some(Stance::Asserts)) => Stance::Asserts,
        (Stance::Denies, Some(Stance::Denies)) => Stance::Denies,
        (m, Some(l)) if observes(m) && observes(l) => m,
        _ => Stance::Unclear,
    }
}

/// The LLM's reading from its answer: the JSON `stance` field where the answer is JSON
/// (wrapped or not), else the one stance word the answer names; `None` when it names none or
/// several, or says "neither".
pub fn parse(answer: &str) -> Option<Stance> {
    let word = |w: &str| match w.trim().to_lowercase().as_str() {
        "asserts" => Some(Some(Stance::Asserts)),
        "denies" => Some(Some(Stance::Denies)),
        "asks" => Some(Some(Stance::Asks)),
        "reports" => Some(Some(Stance::Mentions)),
        "neither" => Some(None),
        _ => None,
    };
    let json = answer
        .find('{')
        .zip(answer.rfind('}'))
        .filter(|(a, b)| a < b)
        .and_then(|(a, b)| serde_json::from_str::<serde_json::Value>(&answer[a..=b]).ok());
    if let Some(v) = json {
        return v.get("stance").and_then(|s| s.as_str()).and_then(word).flatten();
    }
    let named: Vec<Option<Stance>> = answer.split(|c: char| !c.is_alphanumeric()).filter_map(word).collect();
    match named.as_slice() {
        [one] => *one,
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sentence_needs_both_readings() {
        use Stance::*;
        assert_eq!(agree(Asserts, Some(Asserts)), Asserts);
        assert_eq!(agree(Denies, Some(Denies)), Denies);
        assert_eq!(agree(Asks, Some(Mentions)), Asks, "asks and reports are one reading");
        assert_eq!(agree(Mentions, Some(Asks)), Mentions);
        for llm in [None, Some(Denies), Some(Asks), Some(Mentions), Some(Unclear)] {
            assert_eq!(agree(Asserts, llm), Unclear, "{llm:?}");
        }
        for llm in [None, Some(Asserts), Some(Asks)] {
            assert_eq!(agree(Denies, llm), Unclear, "{llm:?}");
        }
        // The LLM never gives a sentence the model did not read.
        for llm in Stance::ALL {
            assert_eq!(agree(Unclear, Some(llm)), Unclear);
        }
    }

    #[test]
    fn the_answer_is_read_from_json_or_one_word_and_nothing_else() {
        assert_eq!(parse(r#"{"stance": "asserts"}"#), Some(Stance::Asserts));
        assert_eq!(
            parse("Sure! ```json\n{\"stance\": \"Denies\"}\n```"),
            Some(Stance::Denies)
        );
        assert_eq!(parse(r#"{"stance": "reports"}"#), Some(Stance::Mentions));
        assert_eq!(parse(r#"{"stance": "neither"}"#), None);
        assert_eq!(parse(r#"{"stance": "maybe"}"#), None);
        assert_eq!(parse(r#"{"verdict": "asserts"}"#), None, "JSON without the field");
        assert_eq!(parse("The post asks."), Some(Stance::Asks));
        assert_eq!(parse("It asserts, or maybe denies."), None, "two readings: none");
        assert_eq!(parse("I cannot tell."), None);
        assert_eq!(parse(""), None);
    }
}
