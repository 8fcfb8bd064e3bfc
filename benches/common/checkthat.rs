//! CheckThat! 2022 Task 2A English as the benches read it (`../shared/data/claim-matching/`):
//! the Snopes fact-checks as corpus entries, and the tweets of a qrels split with the id of the
//! fact-check each repeats.
#![allow(dead_code)]

use std::path::Path;

use musebot::claims::Entry;
use musebot::model::{ClaimReview, ReviewSource};

/// The Snopes fact-checks of CheckThat!.
pub fn claims(dir: &Path) -> Vec<Entry> {
    let text = std::fs::read_to_string(dir.join("vclaims.jsonl")).expect("vclaims.jsonl");
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| {
            let id = v["vclaim_id"].as_str()?.trim_start_matches("vclaim-sno-").to_string();
            Some(Entry {
                review: ClaimReview {
                    url: format!("https://www.snopes.com/fact-check/{id}/"),
                    publisher: "Snopes".into(),
                    publisher_site: Some("snopes.com".into()),
                    claim: v["vclaim"].as_str()?.to_string(),
                    claimant: None,
                    rating: String::new(),
                    rating_value: None,
                    best_rating: None,
                    worst_rating: None,
                    reviewed: None,
                    language: Some("en".into()),
                    appearances: Vec::new(),
                    source: ReviewSource::Corpus,
                    claim_cosine: None,
                    other_claim: false,
                    same_claim: false,
                    fact_checker: None,
                },
                title: v["title"].as_str().unwrap_or("").to_string(),
            })
        })
        .collect()
}

/// The labelled set the benches score as held out (in `dir`, the shared `claim-matching`
/// folder): CheckThat!'s queries and dev qrels, or the files `MUSEBOT_QUERIES` (id TAB text)
/// and `MUSEBOT_QRELS` (TREC qrels) name, as for `cargo bench --bench claim_matching`.
pub fn held_out(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let path = |var: &str, default: &str| {
        std::env::var(var)
            .ok()
            .filter(|v| !v.is_empty())
            .map_or_else(|| dir.join(default), std::path::PathBuf::from)
    };
    (
        path("MUSEBOT_QUERIES", "CT2022-Task2A-EN-Train-Dev_Queries.tsv"),
        path("MUSEBOT_QRELS", "CT2022-Task2A-EN-Dev_QRELs.tsv"),
    )
}

/// The tweets of `qrels` (CheckThat!'s TREC qrels) in `queries` (id TAB text): (text, the id
/// of the fact-check it repeats, without `vclaim-sno-`).
pub fn tweets(queries: &Path, qrels: &Path) -> Vec<(String, String)> {
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let gold: std::collections::HashMap<String, String> = read(qrels)
        .lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            Some((
                cols.first()?.trim().to_string(),
                cols.get(2)?.trim().trim_start_matches("vclaim-sno-").to_string(),
            ))
        })
        .collect();
    read(queries)
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .filter_map(|(id, t)| Some((t.to_string(), gold.get(id.trim())?.clone())))
        .collect()
}

/// The fact-check id in a review's URL (a copy's has `copy-N` after it).
pub fn review_id(url: &str) -> Option<&str> {
    url.split("/fact-check/").nth(1).and_then(|r| r.split('/').next())
}
