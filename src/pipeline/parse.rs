//! Robust reading of what the LLM wrote: JSON when the endpoint honoured the schema, tolerant
//! fallbacks for small models (a bare list, numbered lines, "none"), and the verbatim check
//! every evidence quote must pass.

use serde_json::Value;

/// Search queries from the model's answer; empty when it said "none".
pub fn queries(text: &str, n: usize) -> Vec<String> {
    let from_json = json_in(text).and_then(|v| {
        let list = v.get("queries").cloned().unwrap_or(v);
        list.as_array().map(|a| {
            a.iter()
                .filter_map(|q| q.as_str().map(str::to_string))
                .collect::<Vec<_>>()
        })
    });
    let raw = match from_json {
        Some(list) => list,
        None if text
            .trim()
            .trim_matches(|c: char| !c.is_alphanumeric())
            .eq_ignore_ascii_case("none") =>
        {
            Vec::new()
        }
        None => text
            .lines()
            .map(|l| {
                l.trim()
                    .trim_start_matches(|c: char| c.is_ascii_digit() || matches!(c, '.' | ')' | '-' | '*' | '•'))
                    .trim()
            })
            .map(|l| l.trim_matches(['"', '\'', '`']).trim().to_string())
            .filter(|l| !l.is_empty() && !l.ends_with(':') && l.len() <= 200 && !l.eq_ignore_ascii_case("none"))
            .collect(),
    };
    let mut out: Vec<String> = Vec::new();
    for q in raw {
        let q = q.split_whitespace().collect::<Vec<_>>().join(" ");
        // `{"queries": ["none"]}`: a small model's way of saying "none".
        let none = q
            .trim_matches(|c: char| !c.is_alphanumeric())
            .eq_ignore_ascii_case("none");
        if !q.is_empty() && !none && q.len() <= 200 && !out.iter().any(|o| o.eq_ignore_ascii_case(&q)) {
            out.push(q);
        }
    }
    out.truncate(n);
    out
}

/// Quotes that refute the post and quotes that give context, at most `max_each` each.
pub fn evidence(text: &str, max_each: usize) -> (Vec<String>, Vec<String>) {
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|q| q.as_str().map(str::to_string))
                    .filter(|q| !q.trim().is_empty())
                    .take(max_each)
                    .collect()
            })
            .unwrap_or_default()
    };
    if let Some(v) = json_in(text) {
        let refute = strings(
            v.get("refute")
                .or_else(|| v.get("explicit"))
                .or_else(|| v.get("refutes")),
        );
        let context = strings(v.get("context").or_else(|| v.get("implicit")));
        return (refute, context);
    }
    // No JSON: take quoted lines as refuting candidates; verification drops what is not verbatim.
    let quoted: Vec<String> = text
        .lines()
        .map(|l| {
            l.trim()
                .trim_start_matches(|c: char| c.is_ascii_digit() || matches!(c, '.' | ')' | '-' | '*' | '>'))
                .trim()
        })
        .filter(|l| l.starts_with('"') && l.ends_with('"') && l.len() > 2)
        .map(|l| l[1..l.len() - 1].to_string())
        .take(max_each)
        .collect();
    (quoted, Vec::new())
}

/// The first JSON object or array embedded in `text` (models wrap JSON in prose or fences).
pub(crate) fn json_in(text: &str) -> Option<Value> {
    for (open, close) in [('{', '}'), ('[', ']')] {
        if let (Some(start), Some(end)) = (text.find(open), text.rfind(close)) {
            if start < end {
                if let Ok(v) = serde_json::from_str::<Value>(&text[start..=end]) {
                    return Some(v);
                }
            }
        }
    }
    None
}

/// Shortest quote accepted (shorter "quotes" prove nothing).
pub const MIN_QUOTE_CHARS: usize = 20;

/// Whitespace collapsed, typographic quotes and dashes made plain, for the verbatim check.
pub fn normalize(text: &str) -> String {
    let mapped: String = text
        .chars()
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' | '\u{201B}' | '\u{2032}' => '\'',
            '\u{201C}' | '\u{201D}' | '\u{201F}' | '\u{2033}' => '"',
            '\u{2013}' | '\u{2014}' | '\u{2212}' => '-',
            '\u{00A0}' => ' ',
            c => c,
        })
        .collect();
    mapped.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `quote` appears verbatim (after [`normalize`]) in `source`.
pub fn is_verbatim(quote: &str, normalized_source: &str) -> bool {
    let q = normalize(quote.trim().trim_matches(['"', '\u{201C}', '\u{201D}']));
    q.chars().count() >= MIN_QUOTE_CHARS && normalized_source.contains(&q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_cases() {
        let cases: &[(&str, &[&str])] = &[
            (
                r#"{"queries": ["moon cheese NASA", "Apollo lunar samples", "moon composition"]}"#,
                &["moon cheese NASA", "Apollo lunar samples", "moon composition"],
            ),
            ("```json\n{\"queries\": [\"a b\", \"A  B\", \"c\"]}\n```", &["a b", "c"]),
            (r#"["one", "two", "three", "four"]"#, &["one", "two", "three"]),
            (
                "Here are queries:\n1. \"moon made of cheese\"\n2. apollo rocks\n- lunar geology",
                &["moon made of cheese", "apollo rocks", "lunar geology"],
            ),
            ("none", &[]),
            (r#"{"queries": ["none"]}"#, &[]),
            (r#"{"queries": ["None.", "moon rocks"]}"#, &["moon rocks"]),
            ("None.", &[]),
            (r#"{"queries": []}"#, &[]),
        ];
        for (text, want) in cases {
            assert_eq!(
                queries(text, 3),
                want.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                "{text}"
            );
        }
    }

    #[test]
    fn evidence_cases() {
        let (r, c) = evidence(r#"{"refute": ["a", "b", "c"], "context": ["d"]}"#, 2);
        assert_eq!((r.len(), c), (2, vec!["d".to_string()]));
        let (r, c) = evidence(r#"Sure! {"explicit": ["x"], "implicit": []}"#, 2);
        assert_eq!((r, c.len()), (vec!["x".to_string()], 0));
        let (r, _) = evidence("1. \"The Moon is made of rock.\"\nnone else", 2);
        assert_eq!(r, vec!["The Moon is made of rock.".to_string()]);
        assert_eq!(evidence("none", 2), (vec![], vec![]));
        let (r, _) = evidence(r#"{"refute": ["a", "b", "c", "d", "e"], "context": []}"#, 4);
        assert_eq!(r.len(), 4);
    }

    #[test]
    fn verbatim_check() {
        let src = normalize(
            "Samples returned by the Apollo missions show the Moon is made of rock.\n\nIt’s   basalt — mostly.",
        );
        assert!(is_verbatim("the Apollo missions show the Moon is made of rock", &src));
        assert!(is_verbatim("“It's basalt - mostly.”", &src));
        assert!(!is_verbatim(
            "the Apollo missions show the Moon is made of cheese",
            &src
        ));
        assert!(!is_verbatim("made of rock", &src), "too short to prove anything");
    }
}
