//! What the benchmarks share: the scripted LLM's answers for every step (zero judgement,
//! realistic shapes) and percentiles.

use serde_json::{json, Value};

fn block<'a>(text: &'a str, tag: &str) -> &'a str {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    match (text.find(&open), text.rfind(&close)) {
        (Some(a), Some(b)) if a < b => &text[a + open.len()..b],
        _ => "",
    }
}

/// Zero-latency LLM playing each step; quotes the first passage of every page it is shown.
pub fn answer(body: &Value) -> String {
    let system = body["messages"][0]["content"].as_str().unwrap_or("");
    let user = body["messages"][1]["content"].as_str().unwrap_or("");
    if system.contains("web search queries") {
        let words: Vec<&str> = block(user, "post").split_whitespace().filter(|w| w.len() > 4).collect();
        let q: Vec<String> = (0..3)
            .map(|i| words.iter().skip(i * 3).take(4).cloned().collect::<Vec<_>>().join(" "))
            .collect();
        return json!({ "queries": q }).to_string();
    }
    if system.contains("You check a reply") {
        return json!({"verdict": "supported", "reasons": "Every sentence is in the evidence.", "objections": []})
            .to_string();
    }
    if system.contains("Quote passages") {
        let quotes: Vec<String> = user
            .split("content:\n")
            .skip(1)
            .map(|content| content.split_whitespace().take(16).collect::<Vec<_>>().join(" "))
            .collect();
        return json!({"refute": quotes, "context": []}).to_string();
    }
    let urls: Vec<&str> = block(user, "evidence")
        .split_whitespace()
        .filter(|w| w.starts_with("http"))
        .map(|w| w.trim_end_matches([',', ')']))
        .take(2)
        .collect();
    format!("This post is misleading: the sources say otherwise. {}", urls.join(" "))
}

pub fn percentile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1]
}
