//! The watch's "same claim" decision for a post in the English model's space, from more than
//! one cosine: the flat scan's best [`CANDIDATES`] reviews for the post, each read as a pair —
//! its cosine with the post, how far it stands below the best one, how much of the claim's
//! words (weighted by their rarity among the corpus's claims, BM25's IDF) the post holds and how
//! much of the post's the claim holds, and how much of the review's headline the post holds —
//! by a logistic head
//! ([`Head`], `same.json`). The candidate the head rates most likely is the post's claim when
//! that probability reaches the head's threshold, chosen on claim-matching data the head was
//! not fitted on for precision (cross-validated on CheckThat!'s train split; the dev split only
//! measures it: `cargo bench --bench watch`). The words catch what one cosine misses (a
//! tweet that names the claim's people and places in other words), and the second reading
//! picks the right review among near neighbours that the cosine orders wrongly.
//!
//! The head was fitted with one English model's cosines (`Head::model`, a `claims::model_id`)
//! on a corpus of thousands of checks: with another model configured, a corpus under
//! [`MIN_CORPUS`] reviews, or in the multilingual space (whose posts share few words with
//! English claims), the watch decides by the cosine bar as before. Pure and CPU-light (a
//! dot product of [`LEN`] features a candidate); the caller scans and reads the candidates.
//! `scripts/train-same.sh` fits it ([`fit`], [`cross_validate`], [`threshold`]); the daemon
//! never does.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// The shipped head, as `scripts/train-same.sh` wrote it.
pub const HEAD_JSON: &str = include_str!("same.json");

/// Reviews read for each post whose best cosine reaches the head's floor.
pub const CANDIDATES: usize = 5;

/// Reviews the scan brings for each post, of which the first of each cosine are the candidates:
/// reviews with one vector (copies of one claim) are one candidate and no rival of each other.
pub const SCAN_DEPTH: usize = 80;

/// Reviews a corpus needs for the head: it was fitted on a corpus of 14,231 fact-checks, where a
/// post's best candidate nearly always has rivals; in a corpus of a few reviews a post on a
/// checked subject would have none, and the lead it reads would mean nothing. Below this the
/// watch decides by the cosine bar.
pub const MIN_CORPUS: u64 = 1_000;

/// Features of one (post, candidate) pair, in the order of the head's weights.
pub const LEN: usize = 7;

/// A word of a post or claim as the corpus's claim field reads it, with its rarity among the
/// corpus's claims (BM25's IDF; a word no claim holds gets the rarity of one only one holds).
#[derive(Debug, Clone, PartialEq)]
pub struct Word {
    pub text: String,
    pub idf: f32,
}

/// One candidate review of a post, as the head reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair<'a> {
    /// The cosine of the post with the reviewed claim.
    pub cosine: f32,
    /// The best cosine among the post's candidates.
    pub best: f32,
    /// The best cosine among the post's other candidates (each a claim of its own: copies are
    /// one candidate); `None` without one.
    pub rival: Option<f32>,
    pub post: &'a [Word],
    pub claim: &'a [Word],
    /// The review's headline.
    pub title: &'a [Word],
}

/// The features of a pair: cosine, its distance below the best and above its best rival, the
/// claim's words the post holds, the post's the claim holds and the headline's the post holds
/// (IDF-weighted shares), and the first times the cosine. No length: the fit's posts that repeat
/// a claim are tweets and its others replies, so a length would learn the sources, not the claim.
pub fn features(p: &Pair) -> [f32; LEN] {
    let shared = |of: &[Word], other: &[Word]| {
        let total: f32 = of.iter().map(|w| w.idf).sum();
        if total <= 0.0 {
            return 0.0;
        }
        of.iter()
            .filter(|w| other.iter().any(|o| o.text == w.text))
            .map(|w| w.idf)
            .sum::<f32>()
            / total
    };
    let claim_held = shared(p.claim, p.post);
    [
        p.cosine,
        p.cosine - p.best,
        // A rival further than this says nothing more.
        p.rival.map_or(RIVAL_CAP, |r| (p.cosine - r).min(RIVAL_CAP)),
        claim_held,
        shared(p.post, p.claim),
        shared(p.title, p.post),
        claim_held * p.cosine,
    ]
}

/// The most a candidate's lead over its best rival counts.
const RIVAL_CAP: f32 = 0.2;

/// The fitted head: `P(same claim) = σ(bias + weights · features)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Head {
    /// The English model whose cosines it was fitted with (`claims::model_id`).
    pub model: String,
    pub bias: f32,
    pub weights: Vec<f32>,
    /// The probability a candidate needs to be the post's claim.
    pub threshold: f32,
    /// The best cosine below which no candidate is read (none of the fit's chosen pairs was
    /// below it): most posts stop at the scan.
    pub floor: f32,
    /// What the fit measured, for the record: cross-validated on train, and on dev.
    #[serde(default)]
    pub measured: String,
}

impl Head {
    /// The probability that a pair with these features is the post's claim.
    pub fn probability(&self, x: &[f32; LEN]) -> f32 {
        let z = self.bias + self.weights.iter().zip(x).map(|(w, v)| w * v).sum::<f32>();
        1.0 / (1.0 + (-z).exp())
    }

    /// Of a post's candidates (each its features), the one the head rates most likely, with
    /// that probability, when it reaches the threshold.
    pub fn choose(&self, candidates: &[[f32; LEN]]) -> Option<(usize, f32)> {
        let (i, p) = candidates
            .iter()
            .map(|x| self.probability(x))
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(&b.1))?;
        (p >= self.threshold).then_some((i, p))
    }

    fn well_formed(&self) -> bool {
        self.weights.len() == LEN
            && self
                .weights
                .iter()
                .chain([&self.bias, &self.threshold, &self.floor])
                .all(|w| w.is_finite())
            && !self.model.is_empty()
    }
}

/// The shipped head; `None` (logged once) when it does not parse or has the wrong size — the
/// watch then decides by the cosine bar.
pub fn head() -> Option<&'static Head> {
    static HEAD: OnceLock<Option<Head>> = OnceLock::new();
    HEAD.get_or_init(|| match serde_json::from_str::<Head>(HEAD_JSON) {
        Ok(h) if h.well_formed() => Some(h),
        Ok(_) => {
            tracing::error!("the same-claim head has the wrong size; the watch decides by the cosine bar");
            None
        }
        Err(e) => {
            tracing::error!(error = %e, "the same-claim head does not parse; the watch decides by the cosine bar");
            None
        }
    })
    .as_ref()
}

/// One training row: a (post, candidate) pair's features and whether the candidate is the
/// post's gold fact-check.
#[derive(Debug, Clone)]
pub struct Row {
    pub x: [f32; LEN],
    pub gold: bool,
}

/// L2 strength and Newton steps of the fit.
const L2: f64 = 1.0;
const STEPS: usize = 25;

/// A logistic regression of the rows' gold on their features (Newton's method on standardised
/// features, L2, the scaling folded back into the weights): deterministic, rounded to 1e-4.
pub fn fit(rows: &[Row]) -> (f32, Vec<f32>) {
    let n = rows.len().max(1) as f64;
    let mut mean = [0f64; LEN];
    let mut sd = [0f64; LEN];
    for r in rows {
        for (m, v) in mean.iter_mut().zip(r.x) {
            *m += f64::from(v) / n;
        }
    }
    for r in rows {
        for ((s, m), v) in sd.iter_mut().zip(&mean).zip(r.x) {
            *s += (f64::from(v) - m).powi(2) / n;
        }
    }
    let sd: Vec<f64> = sd.iter().map(|v| v.sqrt().max(1e-6)).collect();
    let z: Vec<[f64; LEN + 1]> = rows
        .iter()
        .map(|r| {
            let mut z = [1f64; LEN + 1];
            for j in 0..LEN {
                z[j + 1] = (f64::from(r.x[j]) - mean[j]) / sd[j];
            }
            z
        })
        .collect();
    const D: usize = LEN + 1;
    let mut w = [0f64; D];
    for _ in 0..STEPS {
        let mut grad = [0f64; D];
        let mut hess = [[0f64; D]; D];
        for (zi, r) in z.iter().zip(rows) {
            let s: f64 = w.iter().zip(zi).map(|(a, b)| a * b).sum();
            let p = 1.0 / (1.0 + (-s).exp());
            let y = if r.gold { 1.0 } else { 0.0 };
            for a in 0..D {
                grad[a] += (p - y) * zi[a];
                for b in 0..D {
                    hess[a][b] += p * (1.0 - p) * zi[a] * zi[b];
                }
            }
        }
        for a in 1..D {
            grad[a] += L2 * w[a];
            hess[a][a] += L2;
        }
        let step = solve(hess, grad);
        for (wa, s) in w.iter_mut().zip(step) {
            *wa -= s;
        }
    }
    let round = |v: f64| ((v * 1e4).round() / 1e4) as f32;
    let weights: Vec<f64> = (0..LEN).map(|j| w[j + 1] / sd[j]).collect();
    let bias = w[0] - weights.iter().zip(&mean).map(|(a, m)| a * m).sum::<f64>();
    (round(bias), weights.into_iter().map(round).collect())
}

/// `a⁻¹ b` by Gaussian elimination with partial pivoting (a small, positive definite system).
fn solve<const D: usize>(mut a: [[f64; D]; D], mut b: [f64; D]) -> [f64; D] {
    for col in 0..D {
        let pivot = (col..D)
            .max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))
            .unwrap_or(col);
        a.swap(col, pivot);
        b.swap(col, pivot);
        let d = a[col][col];
        if d.abs() < 1e-12 {
            continue;
        }
        for row in 0..D {
            if row != col {
                let f = a[row][col] / d;
                for k in col..D {
                    a[row][k] -= f * a[col][k];
                }
                b[row] -= f * b[col];
            }
        }
    }
    let mut x = [0f64; D];
    for i in 0..D {
        x[i] = if a[i][i].abs() < 1e-12 { 0.0 } else { b[i] / a[i][i] };
    }
    x
}

/// A post's chosen candidate as scored: the head's probability and whether it is the gold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Choice {
    pub p: f32,
    pub right: bool,
}

/// The choice the head makes for each post (`posts`: each its candidates' rows), by the given
/// weights, without a threshold; `None` for a post without candidates.
pub fn choices(bias: f32, weights: &[f32], posts: &[Vec<Row>]) -> Vec<Option<Choice>> {
    let head = Head {
        model: String::new(),
        bias,
        weights: weights.to_vec(),
        threshold: 0.0,
        floor: 0.0,
        measured: String::new(),
    };
    posts
        .iter()
        .map(|rows| {
            let best = rows
                .iter()
                .map(|r| (head.probability(&r.x), r.gold))
                .max_by(|a, b| a.0.total_cmp(&b.0))?;
            Some(Choice {
                p: best.0,
                right: best.1,
            })
        })
        .collect()
}

/// Each post's choice with the head fitted on the other `k - 1` folds (post `i` in fold
/// `i % k`): probabilities the threshold can be chosen on.
pub fn cross_validate(posts: &[Vec<Row>], k: usize) -> Vec<Option<Choice>> {
    let mut out = vec![None; posts.len()];
    for fold in 0..k {
        let train: Vec<Row> = posts
            .iter()
            .enumerate()
            .filter(|(i, _)| i % k != fold)
            .flat_map(|(_, rows)| rows.iter().cloned())
            .collect();
        let (bias, weights) = fit(&train);
        let held: Vec<(usize, Vec<Row>)> = posts
            .iter()
            .enumerate()
            .filter(|(i, _)| i % k == fold)
            .map(|(i, r)| (i, r.clone()))
            .collect();
        let rows: Vec<Vec<Row>> = held.iter().map(|(_, r)| r.clone()).collect();
        for ((i, _), c) in held.iter().zip(choices(bias, &weights, &rows)) {
            out[*i] = c;
        }
    }
    out
}

/// The lowest probability at which the choices at or above it are right at least `precision`
/// of the time (the largest such set, scanning from the most sure); 1.01 (nothing decided)
/// when no set reaches it.
pub fn threshold(choices: &[Option<Choice>], precision: f64) -> f32 {
    let mut sorted: Vec<Choice> = choices.iter().flatten().copied().collect();
    sorted.sort_by(|a, b| b.p.total_cmp(&a.p));
    let (mut right, mut best) = (0usize, 1.01f32);
    for (n, c) in sorted.iter().enumerate() {
        right += usize::from(c.right);
        let next_differs = sorted.get(n + 1).is_none_or(|d| d.p < c.p);
        if next_differs && right as f64 / (n + 1) as f64 >= precision {
            best = c.p;
        }
    }
    best
}

/// Precision and recall of the choices at `threshold`, over `total` posts (each with a gold).
pub fn figures(choices: &[Option<Choice>], threshold: f32, total: usize) -> (f64, f64, usize, usize) {
    let decided: Vec<&Choice> = choices.iter().flatten().filter(|c| c.p >= threshold).collect();
    let right = decided.iter().filter(|c| c.right).count();
    let precision = if decided.is_empty() {
        f64::NAN
    } else {
        right as f64 / decided.len() as f64
    };
    (precision, right as f64 / total.max(1) as f64, right, decided.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<Word> {
        s.split_whitespace()
            .map(|w| Word {
                text: w.into(),
                idf: 1.0,
            })
            .collect()
    }

    #[test]
    fn the_shipped_head_parses_and_names_its_model() {
        let h = head().expect("same.json parses");
        assert_eq!(h.weights.len(), LEN);
        assert!(h.threshold > 0.5 && h.threshold <= 1.01, "{}", h.threshold);
        assert!(h.floor > 0.0 && h.floor < 1.0);
    }

    #[test]
    fn shared_words_count_by_rarity_both_ways() {
        let post = words("pelosi daughter arrested today");
        let claim = words("pelosi daughter arrested");
        let title = words("nancy pelosi");
        let x = features(&Pair {
            cosine: 0.8,
            best: 0.9,
            rival: Some(0.75),
            post: &post,
            claim: &claim,
            title: &title,
        });
        assert!((x[1] + 0.1).abs() < 1e-6);
        assert!((x[2] - 0.05).abs() < 1e-6, "{}", x[2]);
        assert_eq!(x[3], 1.0, "every claim word is in the post");
        assert_eq!(x[4], 0.75, "three of the post's four words are in the claim");
        assert_eq!(x[5], 0.5, "one of the headline's two words is in the post");
        let alone = features(&Pair {
            rival: None,
            ..Pair {
                cosine: 0.8,
                best: 0.9,
                rival: None,
                post: &post,
                claim: &claim,
                title: &title,
            }
        });
        assert_eq!(alone[2], RIVAL_CAP);
    }

    #[test]
    fn the_fit_separates_what_the_features_separate_and_the_threshold_keeps_precision() {
        // Two candidates a post: a post that repeats a claim shares more of its gold's words
        // the surer it is; one post in four repeats none (both candidates wrong). Noise from a
        // fixed linear congruential sequence.
        let mut seed = 7u64;
        let mut noise = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 33) as f32 / (1u64 << 31) as f32) * 0.3
        };
        let row = |cosine: f32, shared: f32, gold: bool| Row {
            x: [cosine, 0.0, 0.05, shared, shared, shared, shared * cosine],
            gold,
        };
        let posts: Vec<Vec<Row>> = (0..400)
            .map(|i| {
                let repeats = i % 4 != 0;
                let shared = if repeats { 0.4 + 2.0 * noise() } else { noise() };
                vec![
                    row(0.6 + noise(), shared.min(1.0), repeats),
                    row(0.55, noise() * 0.5, false),
                ]
            })
            .collect();
        let cv = cross_validate(&posts, 5);
        let t = threshold(&cv, 0.97);
        let (precision, recall, _, _) = figures(&cv, t, posts.len());
        assert!(precision >= 0.97, "{precision}");
        assert!(recall >= 0.3, "{recall}");
        // Nothing reaches a precision no choice set has.
        let wrong: Vec<Option<Choice>> = vec![Some(Choice { p: 0.9, right: false }); 3];
        assert_eq!(threshold(&wrong, 0.97), 1.01);
    }
}
