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

/// Where the lemon-water fact-check lives (`www.factcheck.org`, served on loopback).
pub const LEMON_HOST: &str = "www.factcheck.org";
pub const LEMON_CHECK: &str = "/2025/05/lemon-water/";

/// A fact-checker's site whose page reviews "Drinking hot lemon water cures COVID-19" as False
/// in its own markup (a corpus match decides only by the live page's review).
pub async fn lemon_water_site() -> web::Site {
    web::Site::start(std::collections::BTreeMap::from([lemon_water_page()])).await
}

/// The lemon-water check's page: its path and HTML.
pub fn lemon_water_page() -> (String, String) {
    check_page(
        LEMON_CHECK,
        "Drinking hot lemon water cures COVID-19",
        "False",
        "Lemon water does not cure COVID-19",
        "Doctors and health agencies say there is no evidence that lemon water prevents or cures any viral infection. ",
    )
}

/// A fact-check page on [`LEMON_HOST`] at `path` reviewing `claim` with `rating`, in its own
/// ClaimReview markup, `words` eight times as its body.
pub fn check_page(path: &str, claim: &str, rating: &str, title: &str, words: &str) -> (String, String) {
    let markup = serde_json::json!({"@context": "https://schema.org", "@type": "ClaimReview",
        "url": format!("http://{LEMON_HOST}{path}"),
        "claimReviewed": claim,
        "datePublished": "2025-05-01",
        "author": {"@type": "Organization", "name": "FactCheck.org"},
        "reviewRating": {"@type": "Rating", "alternateName": rating}});
    let page = format!(
        "<html lang=\"en\"><head><title>{title}</title><script type=\"application/ld+json\">{markup}</script></head><body><article><h1>{title}</h1><p>{}</p></article></body></html>",
        words.repeat(8)
    );
    (path.to_string(), page)
}

/// The corpus's record of that check (JSONL for `musebot index import`).
pub fn lemon_water_review() -> String {
    review_line(
        LEMON_CHECK,
        "Drinking hot lemon water cures COVID-19",
        "False",
        "Lemon water does not cure COVID-19",
    )
}

/// The corpus's record of a check of [`check_page`] (one JSONL line).
pub fn review_line(path: &str, claim: &str, rating: &str, title: &str) -> String {
    let review = serde_json::json!({"@context": "https://schema.org", "@type": "ClaimReview",
        "url": format!("http://{LEMON_HOST}{path}"),
        "name": title,
        "claimReviewed": claim,
        "datePublished": "2025-05-01",
        "reviewRating": {"@type": "Rating", "alternateName": rating}});
    format!("{review}\n")
}

/// The `[relevance]` section with the sandbox's models, the multilingual one (which the stance
/// model reads) included.
pub fn relevance_toml(sandbox: &Sandbox) -> String {
    format!(
        "[relevance]\nonnxruntime = \"{}\"\nmodel = \"{}\"\ntokenizer = \"{}\"\nmultilingual_model = \"{}\"\nmultilingual_tokenizer = \"{}\"\n",
        sandbox.get("MUSEBOT_ORT_DYLIB"),
        sandbox.get("MUSEBOT_EMBED_MODEL"),
        sandbox.get("MUSEBOT_EMBED_TOKENIZER"),
        sandbox.get("MUSEBOT_EMBED_MODEL_MULTI"),
        sandbox.get("MUSEBOT_EMBED_TOKENIZER_MULTI"),
    )
}

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
