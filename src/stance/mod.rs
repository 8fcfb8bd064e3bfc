//! A post's stance toward the claim it matched (asserts / denies / asks / mentions / unclear,
//! `crate::model::Stance`), decided once per answer by [`decide`] and used wherever a
//! fact-check becomes a statement about a post: the reply's wording, labels, the watch, the
//! moderators' findings, re-checks.
//!
//! The model is the project's own: a logistic head ([`Head`], `head.json`, pinned by SHA-256
//! in `crate::pins::STANCE_HEAD`) over the features of [`features`] — word cues in the bot's
//! 19 languages, the word rules' decision ([`rules`]) and the multilingual sentence embeddings
//! (Universal Sentence Encoder multilingual v3) of the post and the claim. `scripts/train-stance.sh`
//! fits it ([`train`]) on the Emergent dev split and the project's own pairs and picks its
//! threshold on the dev split only; `cargo bench --bench stance` scores it. The word rules
//! veto: a post they read as denying or asking never asserts. Without the multilingual model
//! (or with a damaged head) only the rules speak, and they never decide `Asserts` alone — the
//! post is `Unclear`, so the bot talks about the claim, not the post.
//!
//! Pure and CPU-light (a dot product over ~1,100 features): the caller embeds.

pub mod features;
pub mod rules;
pub mod train;

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

pub use crate::model::{PostStance, Stance, StanceBy};

/// The shipped head, as `scripts/train-stance.sh` wrote it.
pub const HEAD_JSON: &str = include_str!("head.json");

/// Characters of a post the stance reads (no platform allows more in one post).
pub const MAX_CHARS: usize = 5_000;

/// A logistic head: `score = sigmoid(weights · features + bias)`, *asserts* at `threshold`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Head {
    pub version: u32,
    /// The probability of *asserts* at or above which a post asserts the claim.
    pub threshold: f32,
    pub bias: f32,
    pub weights: Vec<f32>,
    /// What it was fitted on and how it scored (for the record; not read by the decision).
    #[serde(default)]
    pub trained: serde_json::Value,
}

impl Head {
    /// The probability that a post with these features asserts the claim.
    pub fn score(&self, features: &[f32]) -> f32 {
        let z: f32 = self.weights.iter().zip(features).map(|(w, x)| w * x).sum::<f32>() + self.bias;
        1.0 / (1.0 + (-z).exp())
    }
}

/// The shipped head, once its bytes matched their pin; `None` (logged once) otherwise.
pub fn head() -> Option<&'static Head> {
    static HEAD: OnceLock<Option<Head>> = OnceLock::new();
    HEAD.get_or_init(|| {
        let sha = crate::pins::sha256_bytes(HEAD_JSON.as_bytes());
        if sha != crate::pins::STANCE_HEAD {
            tracing::error!(%sha, pinned = crate::pins::STANCE_HEAD, "the stance head does not match its pin; only the word rules decide stance (no post is called asserting)");
            return None;
        }
        match serde_json::from_str::<Head>(HEAD_JSON) {
            Ok(h) if h.weights.len() == features::LEN => Some(h),
            Ok(h) => {
                tracing::error!(weights = h.weights.len(), "the stance head has the wrong size; only the word rules decide stance");
                None
            }
            Err(e) => {
                tracing::error!(error = %e, "the stance head does not parse; only the word rules decide stance");
                None
            }
        }
    })
    .as_ref()
}

/// The cosine of the post's and the claim's embeddings at or above which a post the rules
/// read as asserting (no question, denial, report or quote cue anywhere) restates the claim in
/// its own voice: it asserts whatever the head's score (decision 0047).
pub const RESTATES: f32 = 0.9;

/// Whether a pair's features say the post restates the claim ([`RESTATES`]; the cosine is the
/// last feature).
pub fn restates(features: &[f32]) -> bool {
    features.len() == features::LEN && features.last().is_some_and(|c| *c >= RESTATES)
}

/// The post's first [`MAX_CHARS`] characters.
pub fn capped(text: &str) -> &str {
    match text.char_indices().nth(MAX_CHARS) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// The post's stance toward `claim`. `vectors`: the unit multilingual embeddings of the post
/// and of the claim (`None`: no multilingual model; the rules alone, never `Asserts`).
pub fn decide(post: &str, claim: &str, vectors: Option<(&[f32], &[f32])>) -> PostStance {
    decide_with(head(), post, claim, vectors)
}

/// The word rules' reading of a post in any of the bot's languages: the English rules
/// ([`rules::stance`]), then the asking and denying cues of every language (`cues.txt`) that
/// the claim itself does not carry — a post that asks or denies in Japanese is not read as
/// asserting either.
pub fn reading(post: &str, claim: &str) -> Stance {
    let rule = rules::stance(post, claim);
    if matches!(rule, Stance::Denies | Stance::Asks) {
        return rule;
    }
    let more = |group: &str| features::group_count(post, group) > features::group_count(claim, group);
    if more("ask") || post.contains(['？', '¿', '؟']) {
        Stance::Asks
    } else if more("deny") {
        Stance::Denies
    } else {
        rule
    }
}

/// [`decide`] with a given head (the bench's cross-validated folds).
pub fn decide_with(head: Option<&Head>, post: &str, claim: &str, vectors: Option<(&[f32], &[f32])>) -> PostStance {
    let post = capped(post);
    let rule = reading(post, claim);
    let scored = match (head, vectors) {
        (Some(h), Some((p, c))) => features::all(post, rule, p, c).map(|f| (h.score(&f), h.threshold, f)),
        _ => None,
    };
    let (stance, score, by) = match scored {
        Some((score, threshold, f)) => (train::stance_at(score, rule, threshold, &f), score, StanceBy::Model),
        None => {
            let stance = match rule {
                Stance::Asserts => Stance::Unclear,
                other => other,
            };
            (stance, 0.0, StanceBy::Rules)
        }
    };
    PostStance {
        stance,
        score,
        claim: claim.chars().take(MAX_CHARS).collect(),
        by,
    }
}

/// The stances of `(post, claim)` pairs, every text embedded in one run of `embedder` (the
/// multilingual model; CPU-bound: a blocking thread). A failed run leaves the rules alone.
pub fn decide_all(embedder: Option<&crate::relevance::Embedder>, pairs: &[(&str, &str)]) -> Vec<PostStance> {
    let vectors = embedder.filter(|_| !pairs.is_empty()).and_then(|e| {
        let texts: Vec<String> = pairs
            .iter()
            .flat_map(|(p, c)| [capped(p).to_string(), capped(c).to_string()])
            .collect();
        e.embed(&texts)
            .map_err(|e| tracing::warn!(error = %e, "stance: the embedding failed; the word rules alone decide"))
            .ok()
    });
    pairs
        .iter()
        .enumerate()
        .map(|(i, (post, claim))| {
            let v = vectors.as_ref().map(|v| (v[2 * i].as_slice(), v[2 * i + 1].as_slice()));
            decide(post, claim, v)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLAIM: &str = "The Great Wall of China is visible from the Moon with the naked eye";

    #[test]
    fn the_shipped_head_matches_its_pin_and_its_features() {
        let head = head().expect("the shipped head loads");
        assert_eq!(head.weights.len(), features::LEN);
        assert!(head.threshold > 0.0 && head.threshold < 1.0);
    }

    #[test]
    fn without_the_model_the_rules_never_call_a_post_asserting() {
        let plain = decide("The Great Wall of China is visible from the Moon!", CLAIM, None);
        assert_eq!((plain.stance, plain.by), (Stance::Unclear, StanceBy::Rules));
        let denial = decide(
            "No, the Great Wall is not visible from the Moon. It's a myth.",
            CLAIM,
            None,
        );
        assert_eq!(denial.stance, Stance::Denies);
        let question = decide("Is the Great Wall visible from the Moon?", CLAIM, None);
        assert_eq!(question.stance, Stance::Asks);
    }

    #[test]
    fn the_rules_veto_the_model_and_the_model_decides_the_rest() {
        // A head that scores every post 1: the rules' denials and questions still stand.
        let always = Head {
            version: 1,
            threshold: 0.5,
            bias: 50.0,
            weights: vec![0.0; features::LEN],
            trained: serde_json::Value::Null,
        };
        let v = vec![0.0f32; features::DIM];
        let d = |post: &str| decide_with(Some(&always), post, CLAIM, Some((&v, &v))).stance;
        assert_eq!(
            d("It is a myth that the Great Wall is visible from the Moon."),
            Stance::Denies
        );
        assert_eq!(d("Can you really see the Great Wall from the Moon?"), Stance::Asks);
        assert_eq!(
            d("A viral post says the Great Wall is visible from the Moon."),
            Stance::Asserts
        );
        let never = Head {
            bias: -50.0,
            ..always.clone()
        };
        let d = |post: &str| decide_with(Some(&never), post, CLAIM, Some((&v, &v))).stance;
        assert_eq!(
            d("A viral post says the Great Wall is visible from the Moon."),
            Stance::Mentions
        );
        assert_eq!(d("The Great Wall is visible from the Moon."), Stance::Unclear);
        // Vectors of another model's size: the rules alone.
        let short = vec![0.0f32; 3];
        assert_eq!(
            decide_with(
                Some(&always),
                "The Great Wall is visible from the Moon.",
                CLAIM,
                Some((&short, &short))
            )
            .by,
            StanceBy::Rules
        );
    }

    #[test]
    fn a_huge_post_is_read_up_to_the_cap() {
        let post = "a".repeat(3 * MAX_CHARS);
        assert_eq!(capped(&post).len(), MAX_CHARS);
        let _ = decide(&post, CLAIM, None);
    }
}
