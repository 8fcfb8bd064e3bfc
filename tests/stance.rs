//! The watch's decision "label this post" on the labelled post–claim pairs of
//! `tests/data/stance/pairs.jsonl` (its README says which are real CheckThat! tweets and which
//! the project's own construction): a pair is labelled when the post's claim is the review's
//! (the cosine of the post and the claim at or above the shipped `claims.same_claim` plus
//! `watch.same_claim_margin`, as the watch decides) and the post asserts it (`watch::stance`). The texts of the CheckThat! rows
//! and every claim are read from `../shared/data/claim-matching` (skipped without it, except
//! under `CI=true`). Prints precision and recall per split; the rules were written on the dev
//! split, and the test split is what the shipped figure reports. The CheckThat! tweets lose
//! the dataset's "— Name (@handle) date" signature first: on the network the author is the
//! post's metadata, not its words.

mod common;

use std::collections::HashMap;

use common::Sandbox;
use musebot::claims::matcher::clean_post;
use musebot::relevance::{cosine, Embedder, RelevanceConfig};
use musebot::watch::stance::{stance, Stance};

struct Pair {
    post: String,
    claim: String,
    label: bool,
    split: String,
    kind: String,
}

fn pairs() -> Option<Vec<Pair>> {
    let dir = common::sandbox::shared_data("claim-matching")?;
    let mut tweets = HashMap::new();
    for line in std::fs::read_to_string(dir.join("CT2022-Task2A-EN-Train-Dev_Queries.tsv"))
        .unwrap()
        .lines()
    {
        if let Some((id, text)) = line.split_once('\t') {
            tweets.insert(id.to_string(), text.to_string());
        }
    }
    let mut claims = HashMap::new();
    for line in std::fs::read_to_string(dir.join("vclaims.jsonl")).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        claims.insert(
            v["vclaim_id"].as_str().unwrap().to_string(),
            v["vclaim"].as_str().unwrap().to_string(),
        );
    }
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/stance/pairs.jsonl");
    let mut out = Vec::new();
    for line in std::fs::read_to_string(file).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let post = match v["iclaim_id"].as_str() {
            Some(id) => without_trailer(tweets.get(id).unwrap_or_else(|| panic!("no tweet {id}"))),
            None => v["post"].as_str().unwrap().to_string(),
        };
        let claim = claims[v["vclaim_id"].as_str().unwrap()].clone();
        let kind = if v["same_claim"] == false {
            "other_claim".to_string()
        } else {
            v["stance"].as_str().unwrap().to_string()
        };
        out.push(Pair {
            post,
            claim,
            label: v["label"].as_bool().unwrap(),
            split: v["split"].as_str().unwrap().to_string(),
            kind,
        });
    }
    Some(out)
}

/// A CheckThat! tweet without the "— Name (@handle) Month D, YYYY" trailer the dataset appends:
/// on the network the author is the post's metadata, not its text.
fn without_trailer(tweet: &str) -> String {
    let trimmed = tweet.trim_end();
    let Some(at) = trimmed.rfind('—') else {
        return trimmed.to_string();
    };
    let tail = &trimmed[at..];
    let dated = tail.split_whitespace().rev().take(3).collect::<Vec<_>>();
    let is_trailer = tail.contains("(@")
        && tail.ends_with(|c: char| c.is_ascii_digit())
        && dated.len() == 3
        && dated[0].len() == 4
        && dated[1].trim_end_matches(',').parse::<u8>().is_ok();
    if is_trailer {
        trimmed[..at].trim_end().to_string()
    } else {
        trimmed.to_string()
    }
}

#[test]
fn without_trailer_cuts_only_the_signature() {
    assert_eq!(
        without_trailer("Pray for Wyoming. — Jo Doe (@jodoe) May 6, 2016"),
        "Pray for Wyoming."
    );
    assert_eq!(without_trailer("A — B test"), "A — B test");
}

#[test]
fn stance_on_the_labelled_pairs() {
    let Some(pairs) = pairs() else { return };
    assert!(pairs.len() >= 300, "{} pairs", pairs.len());
    let sandbox = Sandbox::load();
    let embedder = Embedder::load(&RelevanceConfig {
        onnxruntime: sandbox.get("MUSEBOT_ORT_DYLIB"),
        model: sandbox.get("MUSEBOT_EMBED_MODEL"),
        tokenizer: sandbox.get("MUSEBOT_EMBED_TOKENIZER"),
        ..RelevanceConfig::default()
    })
    .expect("the sandbox's model loads");
    // The watch's bar: the matcher's same-claim threshold plus the margin for unasked labels.
    let threshold =
        musebot::claims::ClaimsConfig::default().same_claim + musebot::config::WatchConfig::default().same_claim_margin;
    let mut texts = Vec::new();
    for p in &pairs {
        texts.push(clean_post(&p.post));
        texts.push(p.claim.clone());
    }
    let vectors = embedder.embed(&texts).unwrap();
    let mut figures: HashMap<String, [usize; 4]> = HashMap::new();
    let mut wrong = Vec::new();
    for (i, p) in pairs.iter().enumerate() {
        let same = cosine(&vectors[2 * i], &vectors[2 * i + 1]) >= threshold;
        let said = stance(&p.post, &p.claim);
        let labelled = same && said == Stance::Asserts;
        let f = figures.entry(p.split.clone()).or_default();
        match (labelled, p.label) {
            (true, true) => f[0] += 1,
            (true, false) => {
                f[1] += 1;
                wrong.push(format!("[{}] labelled a {} post: {}", p.split, p.kind, p.post));
            }
            (false, true) => f[2] += 1,
            (false, false) => f[3] += 1,
        }
    }
    for line in &wrong {
        println!("{line}");
    }
    let mut splits: Vec<_> = figures.into_iter().collect();
    splits.sort();
    for (split, [tp, fp, fn_, tn]) in &splits {
        let precision = *tp as f64 / (tp + fp).max(1) as f64;
        let recall = *tp as f64 / (tp + fn_).max(1) as f64;
        println!(
            "stance {split}: {} pairs, labelled {}, precision {precision:.3}, recall {recall:.3} (same_claim {threshold})",
            tp + fp + fn_ + tn,
            tp + fp
        );
        // The rules were written on the dev split: there they must keep the target. The test
        // split is posts they never saw, and its figure is the one the book quotes (0.750 when
        // `watch.auto_label` was made off by default): a floor catches a rule that gets worse.
        let floor = if split == "dev" { 0.95 } else { 0.70 };
        assert!(precision >= floor, "{split}: precision {precision:.3}");
        assert!(*tp > 0, "{split}: nothing labelled");
    }
}
