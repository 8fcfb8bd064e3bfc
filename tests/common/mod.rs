//! Test harness, one room per peer, all on loopback: [`mastodon`] (`mastodon-mock` from the
//! sandbox venv that `scripts/setup-sandbox.sh` provisions), [`llm`] (a scripted
//! OpenAI-compatible server), [`web`] (real pages under publishers' host names and a
//! SearXNG-format search server), [`daemon`] (the `musebot` binary itself), [`proxy`] (a
//! cuttable TCP link) and [`sandbox`] (what setup-sandbox wrote, the real local LLM).
//! `llm` and `web` need nothing but external crates, so `benches/` and the worker's unit tests
//! include the same files with `#[path]`.
#![allow(dead_code, unused_imports)]

pub mod bluesky;
pub mod daemon;
pub mod llm;
pub mod mastodon;
pub mod proxy;
pub mod sandbox;
pub mod web;
pub mod webdriver;

pub use daemon::*;
pub use llm::*;
pub use mastodon::*;
pub use sandbox::*;
pub use web::*;

/// A scripted LLM's answers about the lemon-water claim: one query, an upheld debate, the
/// first two passages of the pages as refuting quotes, and a reply citing the first evidence URL.
pub fn lemon_water(body: &serde_json::Value) -> String {
    let system = body["messages"][0]["content"].as_str().unwrap_or("");
    let user = body["messages"][1]["content"].as_str().unwrap_or("");
    if system.contains("web search queries") {
        return serde_json::json!({"queries": ["lemon water COVID-19 cure"]}).to_string();
    }
    if system.contains("You check a reply") {
        return serde_json::json!({"verdict": "supported", "reasons": "Every sentence is in the evidence.", "objections": []})
            .to_string();
    }
    if system.contains("Quote passages") {
        let refute: Vec<String> = page_passages(user)
            .iter()
            .take(2)
            .map(|p| web::first_words(p, 16))
            .collect();
        return serde_json::json!({"refute": refute, "context": []}).to_string();
    }
    if system.contains("using only the facts given") {
        let url = evidence_urls(user, 1)
            .first()
            .map(|u| u.to_string())
            .unwrap_or_default();
        return format!("This post is false. Health agencies say lemon water cures no viral infection ({url}).");
    }
    "none".into()
}
