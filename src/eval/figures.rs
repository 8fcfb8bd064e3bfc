//! The figures no model is needed for, per post and in total: the reply's links (from the
//! evidence? answering through the fetch guard?), its quotes (verbatim in a page it cites?),
//! its verdict and outcome, parts and characters, LLM calls (in all and one after another),
//! time, tokens and cost.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::pipeline::parse::{is_verbatim, normalize, MIN_QUOTE_CHARS};

/// One link of a reply, checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkCheck {
    pub url: String,
    /// Among the URLs of the evidence the reply was written from.
    pub from_evidence: bool,
    /// It answered 200 through the fetch guard (redirects followed, private addresses refused).
    pub reachable: bool,
    /// "ok", or why not (the fetcher's reason: status, timeout, forbidden address…).
    pub status: String,
}

/// One quote of a reply, checked against the pages the reply cites.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuoteCheck {
    pub quote: String,
    pub verbatim: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    pub reply_urls: usize,
    pub urls_from_evidence: usize,
    pub urls_reachable: usize,
    pub quotes: usize,
    pub quotes_verbatim: usize,
    pub parts: usize,
    pub chars: usize,
    pub llm_calls: u32,
    pub llm_in_sequence: u32,
    pub seconds: f64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost: f64,
    pub judge_prompt_tokens: u64,
    pub judge_completion_tokens: u64,
    #[serde(default)]
    pub judge_cost: f64,
}

/// The URLs a posted text shows, in order, once each, without the punctuation around them.
pub fn urls_in(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        if let Some(i) = word.find("://") {
            // The scheme's first byte: after the last character before it that no scheme has.
            let start = word[..i]
                .char_indices()
                .rev()
                .find(|(_, c)| !c.is_ascii_alphanumeric() && *c != '+' && *c != '-')
                .map_or(0, |(j, c)| j + c.len_utf8());
            // A URL ends at its first character that is not ASCII (`…/a）によると`).
            let url = word[start..]
                .split(|c: char| !c.is_ascii())
                .next()
                .unwrap_or("")
                .trim_end_matches(['.', ',', ')', ';', ':', '!', '?', '"', '\'']);
            if url.len() > i - start + 3 && !out.iter().any(|u| u == url) {
                out.push(url.to_string());
            }
        }
    }
    out
}

/// The quotes of a text: what stands between a language's quotation marks (“…”, „…“, «…»,
/// 「…」, 『…』, "…"), when it is at least [`MIN_QUOTE_CHARS`] long (shorter ones are words
/// in quotation marks).
pub fn quotes_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    // Opening mark → the marks that close it: English, German („…“ and „…”), French and
    // Spanish (« … »), Japanese (「…」, 『…』), straight quotes.
    let closes = |open: char| -> &'static [char] {
        match open {
            '“' => &['”'],
            '„' => &['“', '”'],
            '«' => &['»'],
            '「' => &['」'],
            '『' => &['』'],
            _ => &['"'],
        }
    };
    while let Some((i, open)) = rest
        .char_indices()
        .find(|(_, c)| matches!(c, '“' | '"' | '„' | '«' | '「' | '『'))
    {
        let after = &rest[i + open.len_utf8()..];
        let Some((j, close)) = after.char_indices().find(|(_, c)| closes(open).contains(c)) else {
            break;
        };
        let quote = after[..j].trim();
        if normalize(quote).chars().count() >= MIN_QUOTE_CHARS {
            out.push(quote.to_string());
        }
        rest = &after[j + close.len_utf8()..];
    }
    out
}

/// Each quote of `draft` checked against the text of the pages (normalised) the reply cites.
pub fn check_quotes(draft: &str, pages: &[String]) -> Vec<QuoteCheck> {
    let pages: Vec<String> = pages.iter().map(|p| normalize(p)).collect();
    quotes_in(draft)
        .into_iter()
        .map(|quote| QuoteCheck {
            verbatim: pages.iter().any(|p| is_verbatim(&quote, p)),
            quote,
        })
        .collect()
}

/// Whether each reply URL is among the evidence's.
pub fn from_evidence(url: &str, evidence: &HashSet<String>) -> bool {
    // Replies carry evidence URLs with `@` percent-encoded (`compose::at_safe`).
    let trim = |u: &str| crate::compose::at_safe(u.trim_end_matches('/'));
    evidence.iter().any(|e| trim(e) == trim(url))
}

/// The totals of a run: sums, shares and distributions.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Totals {
    pub posts: usize,
    pub failed: usize,
    pub outcomes: BTreeMap<String, usize>,
    pub verdicts: BTreeMap<String, usize>,
    /// Share of finished posts answered "could not verify".
    pub could_not_verify: Option<f64>,
    pub urls_from_evidence: Option<f64>,
    pub quotes_verbatim: Option<f64>,
    pub urls_reachable: Option<f64>,
    pub sum: Figures,
    /// Mean position (0 worst … 1 best) of the judge's answers, per dimension.
    pub judge_means: BTreeMap<String, f64>,
    /// The same figures over each language's posts (`record::language_of`), for a run over
    /// posts in more than one language.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub by_language: BTreeMap<String, Totals>,
}

/// `part / whole`, or `None` without a whole.
pub fn share(part: usize, whole: usize) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_foreign_url_and_a_stitched_quote_are_caught() {
        let page = "The agency said on Monday that the samples brought back by Apollo 11 were basalt and \
                    breccia. Officials added that no organic material of any kind was ever found in them."
            .to_string();
        let draft = "Inaccurate. The agency said “the samples brought back by Apollo 11 were basalt and breccia” \
                     and that \"no organic material of any kind was ever found\"; it also said \
                     “the samples brought back by Apollo 11 were never found in them” (https://apnews.com/a, \
                     see also https://evil.example/b).";
        let quotes = check_quotes(draft, &[page]);
        assert_eq!(quotes.len(), 3, "{quotes:?}");
        assert!(quotes[0].verbatim && quotes[1].verbatim);
        assert!(
            !quotes[2].verbatim,
            "two pieces of the page stitched together are not a quote"
        );
        let urls = urls_in(draft);
        assert_eq!(urls, vec!["https://apnews.com/a", "https://evil.example/b"]);
        let evidence: HashSet<String> = ["https://apnews.com/a/".to_string()].into();
        assert!(from_evidence(&urls[0], &evidence));
        assert!(!from_evidence(&urls[1], &evidence), "a URL no evidence gave");
    }

    #[test]
    fn quotes_in_other_languages_marks_are_read() {
        let q = quotes_in("Laut Bericht „die Mauer ist vom Mond aus nicht zu sehen“ und « la muraille n'est pas visible depuis la Lune » et 「月から肉眼で見える人工物はないと飛行士たちは語った」");
        assert_eq!(
            q,
            vec![
                "die Mauer ist vom Mond aus nicht zu sehen",
                "la muraille n'est pas visible depuis la Lune",
                "月から肉眼で見える人工物はないと飛行士たちは語った"
            ]
        );
    }

    #[test]
    fn short_quotation_marks_are_not_quotes() {
        assert!(quotes_in("a so-called \"expert\" said “no”").is_empty());
        assert!(quotes_in("an unclosed “quote that never ends").is_empty());
        assert_eq!(urls_in("(see:https://a.example/x).").len(), 1);
        // A multi-byte character right before the scheme, or full-width text after the URL.
        assert_eq!(
            urls_in("—https://apnews.com/a «https://b.example/c» 報道（https://www.nhk.or.jp/a）"),
            vec!["https://apnews.com/a", "https://b.example/c", "https://www.nhk.or.jp/a"]
        );
    }
}
