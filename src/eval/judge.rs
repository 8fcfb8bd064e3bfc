//! The LLM judge: one call per reply (`prompts/judge.*.j2`, the post, the reply and its
//! references as data blocks) answered in JSON with every dimension of [`DIMENSIONS`] the
//! judge is asked (reachability is measured, not judged). Answers off a scale are left unrated,
//! never guessed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::rubric::{Dimension, DIMENSIONS};
use crate::llm::{ChatMessage, LlmClient};
use crate::model::Usage;
use crate::prompts::Prompts;

/// A judge's or an expert's rating of one reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Rating {
    /// Each whole-reply dimension's answer by key: a label as its scale spells it, or a score
    /// 0–10 as text.
    pub answers: BTreeMap<String, String>,
    /// Per-reference dimensions' answers, by the reference's URL.
    pub references: BTreeMap<String, BTreeMap<String, String>>,
}

/// What the judge is shown.
#[derive(Debug, Clone, Serialize)]
pub struct Case<'a> {
    pub text: &'a str,
    pub created_at: String,
    pub reply: &'a str,
    pub references: Vec<String>,
}

pub struct Judge {
    pub llm: LlmClient,
    pub prompts: std::sync::Arc<Prompts>,
}

impl Judge {
    /// Rates one reply: the rating, and the tokens the call cost.
    pub async fn rate(&self, case: &Case<'_>) -> Result<(Rating, Usage), String> {
        let system = self.prompts.render("judge.system.j2", ()).map_err(|e| e.to_string())?;
        let user = self.prompts.render("judge.user.j2", case).map_err(|e| e.to_string())?;
        let answer = self
            .llm
            .chat(&[ChatMessage::system(system), ChatMessage::user(user)])
            .await
            .map_err(|e| format!("judge: {e}"))?;
        let usage = Usage {
            prompt_tokens: answer.prompt_tokens,
            completion_tokens: answer.completion_tokens,
        };
        Ok((parse(&answer.text, &case.references), usage))
    }
}

/// Reads a judge's JSON answer (the first `{` to the last `}`; fences and prose around it
/// ignored). References are matched to the ones shown by URL; any others are dropped.
pub fn parse(text: &str, shown: &[String]) -> Rating {
    let json = match (text.find('{'), text.rfind('}')) {
        (Some(a), Some(b)) if a < b => &text[a..=b],
        _ => return Rating::default(),
    };
    let Ok(serde_json::Value::Object(v)) = serde_json::from_str::<serde_json::Value>(json) else {
        return Rating::default();
    };
    let as_text = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    let mut rating = Rating::default();
    for d in DIMENSIONS.iter().filter(|d| !d.per_reference && !d.measured) {
        if let Some(a) = v.get(d.key).and_then(as_text).and_then(|a| d.normalize(&a)) {
            rating.answers.insert(d.key.into(), a);
        }
    }
    for r in v.get("references").and_then(|r| r.as_array()).into_iter().flatten() {
        let Some(url) = r.get("url").and_then(|u| u.as_str()).map(clean_url) else {
            continue;
        };
        if !shown.iter().any(|s| clean_url(s) == url) {
            continue;
        }
        let mut answers = BTreeMap::new();
        for (field, key) in [
            ("credibility", "reference_credibility"),
            ("relevance", "reference_relevance"),
        ] {
            let d = Dimension::by_key(key).expect("a rubric key");
            if let Some(a) = r.get(field).and_then(as_text).and_then(|a| d.normalize(&a)) {
                answers.insert(key.to_string(), a);
            }
        }
        rating.references.insert(url, answers);
    }
    rating
}

/// A URL as references are matched: trimmed, without trailing punctuation or slash.
pub fn clean_url(url: &str) -> String {
    url.trim().trim_end_matches(['.', ',', ')', ';', '/']).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_read_on_its_scales_and_nothing_is_guessed() {
        let shown = vec!["https://apnews.com/a".to_string()];
        let r = parse(
            "Here you go:\n```json\n{\"explicitness\": \"explicit\", \"identification\": \"Exist without misidentification\", \"informativeness\": null, \"text_relevance\": 8, \"toxicity\": \"maybe\", \"overall\": \"7\", \"references\": [{\"url\": \"https://apnews.com/a/\", \"credibility\": \"very high\", \"relevance\": \"Yes\"}, {\"url\": \"https://evil.example/x\", \"credibility\": \"Very High\"}]}\n```",
            &shown,
        );
        assert_eq!(r.answers.get("explicitness").map(String::as_str), Some("Explicit"));
        assert_eq!(r.answers.get("text_relevance").map(String::as_str), Some("8"));
        assert_eq!(r.answers.get("overall").map(String::as_str), Some("7"));
        assert!(!r.answers.contains_key("toxicity"), "off the scale: unrated");
        assert!(!r.answers.contains_key("informativeness"));
        assert_eq!(r.references.len(), 1, "a reference not shown is dropped");
        assert_eq!(
            r.references["https://apnews.com/a"]["reference_credibility"],
            "Very High"
        );
        assert_eq!(parse("no json here", &shown), Rating::default());
    }

    /// The system prompt offers exactly the labels the rubric reads.
    #[test]
    fn the_judge_prompt_names_every_label() {
        let prompts = Prompts::load(std::path::Path::new("")).unwrap();
        let system = prompts
            .render("judge.system.j2", ())
            .unwrap()
            .replace(char::is_whitespace, "");
        for d in DIMENSIONS.iter().filter(|d| !d.measured) {
            if let super::super::rubric::Scale::Labels { ordered, unordered } = d.scale {
                for l in ordered.iter().chain(unordered) {
                    let squeezed = l.replace(char::is_whitespace, "");
                    assert!(system.contains(&format!("\"{squeezed}\"")), "{}: {l}", d.key);
                }
            }
            let key = if d.per_reference { "references" } else { d.key };
            assert!(system.contains(key), "{}", d.key);
        }
    }
}
