//! Reading the model's verdict and wording the reply's: the model answers
//! `{"verdict": <one of Verdict::ALL>, "explanation": "…"}` (a JSON schema where the endpoint
//! honours one; prose that opens "This post is <verdict>" is read too, for endpoints that
//! ignore `response_format`). The reply then opens with the bot's own sentence for that
//! verdict; any verdict the explanation states for itself is cut, so no text from a post, a
//! page or the model chooses how the bot states its verdict.

use serde_json::Value;

use super::parse::{json_in, normalize};
use crate::model::Verdict;

/// Phrases that name a verdict, longest first within each (so "inaccurate" is not "accurate").
const PHRASES: &[(&str, Verdict)] = &[
    ("missing context", Verdict::MissingContext),
    ("missing_context", Verdict::MissingContext),
    ("lacking context", Verdict::MissingContext),
    ("lacks context", Verdict::MissingContext),
    ("cannot be verified", Verdict::Unverifiable),
    ("can not be verified", Verdict::Unverifiable),
    ("unverifiable", Verdict::Unverifiable),
    ("unverified", Verdict::Unverifiable),
    ("unproven", Verdict::Unverifiable),
    ("partly false", Verdict::Misleading),
    ("partially false", Verdict::Misleading),
    ("out of context", Verdict::Misleading),
    ("misleading", Verdict::Misleading),
    ("inaccurate", Verdict::Inaccurate),
    ("incorrect", Verdict::Inaccurate),
    ("untrue", Verdict::Inaccurate),
    ("false", Verdict::Inaccurate),
    ("wrong", Verdict::Inaccurate),
    ("fake", Verdict::Inaccurate),
    ("a myth", Verdict::Inaccurate),
    ("accurate", Verdict::Accurate),
    ("correct", Verdict::Accurate),
    ("true", Verdict::Accurate),
];

/// The verdict a word or phrase names (`"Missing Context"`, `missing-context`, `false`, …).
pub fn verdict_word(s: &str) -> Option<Verdict> {
    let w = s.trim().to_lowercase().replace('-', " ");
    let w = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
    Verdict::ALL
        .into_iter()
        .find(|v| v.as_str() == w || v.as_str().replace('_', " ") == w)
        .or_else(|| PHRASES.iter().find(|(p, _)| *p == w).map(|(_, v)| *v))
}

/// The verdict and explanation of a model's answer, or `None` when it chose none.
pub fn read(text: &str) -> Option<(Verdict, String)> {
    if let Some(Value::Object(o)) = json_in(text) {
        let verdict = o.get("verdict").and_then(Value::as_str).and_then(verdict_word)?;
        let explanation = o.get("explanation").and_then(Value::as_str).unwrap_or("");
        return Some((verdict, strip_own_verdict(explanation)));
    }
    // Prose: "This post is <verdict>[.:,;—] explanation".
    let (verdict, rest) = leading_verdict(text.trim())?;
    Some((verdict, rest.trim().to_string()))
}

/// "This post is <phrase>" (or "The post is", "The claim is") at the start, and what follows
/// the phrase's clause.
fn leading_verdict(text: &str) -> Option<(Verdict, &str)> {
    // ASCII lowercasing keeps every byte offset valid in `text` (full Unicode lowercasing can
    // change lengths: "İ" becomes three bytes).
    let lower = text.to_ascii_lowercase();
    let after = ["this post is ", "the post is ", "this claim is ", "the claim is "]
        .iter()
        .find_map(|p| lower.strip_prefix(p).map(|rest| text.len() - rest.len()))?;
    let rest_lower = &lower[after..];
    let (phrase, verdict) = PHRASES.iter().find(|(p, _)| {
        rest_lower.starts_with(p) && !rest_lower[p.len()..].starts_with(|c: char| c.is_alphanumeric())
    })?;
    let tail = &text[after + phrase.len()..];
    // The rest of the verdict's clause (", and here is why:") goes with it.
    let cut = tail
        .find(['.', ':', ';', '!', '\n', '—'])
        .map_or(tail.len(), |i| i + tail[i..].chars().next().map_or(1, char::len_utf8));
    Some((*verdict, &tail[cut..]))
}

/// An explanation without a verdict of its own at its start: a first sentence that says what
/// the post or claim is ("This post is actually TRUE! …", "The claim is **false**."), or a
/// leading verdict word ("True: …", "FALSE. …") is cut.
pub fn strip_own_verdict(explanation: &str) -> String {
    let e = explanation.trim();
    if let Some((_, rest)) = leading_verdict(e) {
        return rest.trim().to_string();
    }
    let lower = e.to_ascii_lowercase();
    let about_the_post = [
        "this post is",
        "the post is",
        "this claim is",
        "the claim is",
        "this post's claim is",
    ]
    .iter()
    .any(|p| lower.starts_with(p));
    if about_the_post {
        return after_first_clause(e).trim().to_string();
    }
    // A bare verdict word first: "True: …", "**False**. …".
    let first: String = lower
        .trim_start_matches(['*', '_', '"', '\''])
        .chars()
        .take_while(|c| c.is_ascii_alphabetic() || *c == ' ')
        .collect();
    let word = first.trim();
    let is_verdict = PHRASES.iter().any(|(p, _)| *p == word) || Verdict::ALL.iter().any(|v| v.as_str() == word);
    let next = lower
        .trim_start_matches(['*', '_', '"', '\''])
        .get(first.len()..)
        .unwrap_or("")
        .trim_start_matches(['*', '_', '"', '\'']);
    if !word.is_empty() && is_verdict && next.starts_with([':', '.', '!', ';', '\u{2014}']) {
        return after_first_clause(e).trim().to_string();
    }
    e.to_string()
}

/// What follows the first clause (up to `.`, `:`, `;`, `!`, `?`, a newline or a dash).
fn after_first_clause(text: &str) -> &str {
    match text.find(['.', ':', ';', '!', '?', '\n', '\u{2014}']) {
        Some(i) => &text[i + text[i..].chars().next().map_or(1, char::len_utf8)..],
        None => "",
    }
}

/// The bot's sentence for the verdict, in `lang` (the post's language where the bot has words
/// in it).
pub fn sentence(verdict: Verdict, lang: &str) -> String {
    crate::words::say(lang, verdict.key(), ())
}

/// The reply: the bot's sentence for the verdict (in `lang`), then the explanation.
pub fn word(verdict: Verdict, explanation: &str, lang: &str) -> String {
    let mut e = explanation.trim().to_string();
    // A sentence starts with a capital; a URL, a handle or a tag keeps its spelling.
    let first_word = e.split_whitespace().next().unwrap_or("");
    let plain = !first_word.contains("://") && !first_word.starts_with(['@', '#']) && !first_word.starts_with("www.");
    if let Some(first) = e.chars().next().filter(|c| plain && c.is_lowercase()) {
        e.replace_range(..first.len_utf8(), &first.to_uppercase().to_string());
    }
    if e.is_empty() {
        sentence(verdict, lang)
    } else {
        format!("{} {e}", sentence(verdict, lang))
    }
}

/// Whether `reply` only restates `post`: at least 80 % of its words are the post's own (small
/// models asked to fact-check sometimes restate the claim; a bot must never post it back).
pub fn is_echo(reply: &str, post: &str) -> bool {
    let words = |t: &str| -> Vec<String> {
        normalize(t)
            .to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    };
    let reply_words = words(reply);
    if reply_words.is_empty() {
        return true;
    }
    let post_words: std::collections::HashSet<String> = words(post).into_iter().collect();
    let own = reply_words.iter().filter(|w| post_words.contains(*w)).count();
    own * 5 >= reply_words.len() * 4
}

/// The JSON schema of an answer.
pub fn schema() -> serde_json::Value {
    let names: Vec<&str> = Verdict::ALL.iter().map(|v| v.as_str()).collect();
    serde_json::json!({"type": "object", "properties": {
        "verdict": {"type": "string", "enum": names},
        "explanation": {"type": "string"}}, "required": ["verdict", "explanation"]})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_answers_and_prose_are_read() {
        let (v, e) = read(r#"{"verdict": "missing_context", "explanation": "The photo is from 2019."}"#).unwrap();
        assert_eq!((v, e.as_str()), (Verdict::MissingContext, "The photo is from 2019."));
        let (v, _) = read("```json\n{\"verdict\": \"Missing Context\", \"explanation\": \"x\"}\n```").unwrap();
        assert_eq!(v, Verdict::MissingContext);
        assert_eq!(
            read(r#"{"verdict": "inaccurate", "explanation": ""}"#).unwrap().0,
            Verdict::Inaccurate
        );
        assert!(read(r#"{"verdict": "probably", "explanation": "hm"}"#).is_none());
        let (v, e) = read("This post is false: the Moon is made of rock.").unwrap();
        assert_eq!((v, e.as_str()), (Verdict::Inaccurate, "the Moon is made of rock."));
        let (v, e) = read("This post is inaccurate, and here is why. Samples show rock.").unwrap();
        assert_eq!((v, e.as_str()), (Verdict::Inaccurate, "Samples show rock."));
        assert_eq!(
            read("This post is misleading.").unwrap(),
            (Verdict::Misleading, String::new())
        );
        assert!(read("The Great Wall is visible from the Moon.").is_none());
        assert!(read("This post is interesting.").is_none());
        // Non-ASCII text around the verdict: no offset may land inside a character.
        let (v, e) = read("This post is false: İstanbul's İİİ bridge never moved.").unwrap();
        assert_eq!(
            (v, e.as_str()),
            (Verdict::Inaccurate, "İstanbul's İİİ bridge never moved.")
        );
        assert!(read("İİİİ This post is false.").is_none());
        assert_eq!(strip_own_verdict("THİS POST İS true — ok"), "THİS POST İS true — ok");
    }

    /// The explanation cannot state a verdict of its own, whatever a post or a page told the
    /// model to write: the reply opens with the bot's sentence for the chosen verdict.
    #[test]
    fn only_the_bot_words_the_verdict() {
        let injected =
            r#"{"verdict": "inaccurate", "explanation": "This post is TRUE and verified by NASA! Samples show rock."}"#;
        let (v, e) = read(injected).unwrap();
        assert_eq!(word(v, &e, "en"), "This post is false. Samples show rock.");
        assert_eq!(
            word(Verdict::Accurate, "water boils at 100 C at sea level.", "en"),
            "This post is accurate. Water boils at 100 C at sea level."
        );
        assert_eq!(word(Verdict::Unverifiable, "", "en"), "This post cannot be verified.");
        assert_eq!(
            word(Verdict::Misleading, "https://news.example/a says otherwise.", "en"),
            "This post is misleading. https://news.example/a says otherwise."
        );
    }

    #[test]
    fn an_echo_is_not_an_answer() {
        let post = "The Great Wall of China is the only man-made structure visible from the Moon with the naked eye.";
        assert!(is_echo(post, post));
        assert!(is_echo("The Great Wall of China is visible from the Moon.", post));
        assert!(is_echo("", post));
        assert!(!is_echo(
            "Astronauts say the wall cannot be seen from the Moon without aid.",
            post
        ));
    }
}
