//! Fitting and scoring the stance head: the labelled pairs (the Emergent headlines of
//! `../shared/data/stance/` and the project's own pairs in `tests/data/stance/`), a logistic
//! regression fitted deterministically (full-batch Adam, L2, features standardised and the
//! scaling folded into the weights), folds by claim, the threshold chosen on cross-validated
//! scores, and the figures the bench prints. `scripts/train-stance.sh` (the `train_stance`
//! example) and `cargo bench --bench stance` use it; the daemon never does. The caller embeds.

use std::collections::BTreeMap;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::{features, rules, Head, Stance};

/// A pair's gold stance, as Emergent names it: `for` is the only positive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gold {
    For,
    Against,
    Observing,
}

impl Gold {
    pub const ALL: [Gold; 3] = [Gold::For, Gold::Against, Gold::Observing];

    pub fn as_str(self) -> &'static str {
        match self {
            Gold::For => "for",
            Gold::Against => "against",
            Gold::Observing => "observing",
        }
    }
}

/// One labelled post–claim pair.
#[derive(Debug, Clone)]
pub struct Pair {
    pub post: String,
    pub claim: String,
    pub gold: Gold,
    /// What no fold splits: the claim's id.
    pub group: String,
    pub lang: String,
    /// `dev` or `test` (own pairs); Emergent's file is all `dev`.
    pub split: String,
}

/// Emergent's CSV (`id, claimHeadline, articleHeadline, articleHeadlineStance, claimId`).
pub fn read_emergent(path: &Path) -> Result<Vec<Pair>, String> {
    let mut reader = csv::Reader::from_path(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, row) in reader.records().enumerate() {
        let row = row.map_err(|e| format!("{}: row {}: {e}", path.display(), i + 1))?;
        let field = |name: usize| row.get(name).unwrap_or("").to_string();
        let gold = match field(3).as_str() {
            "for" => Gold::For,
            "against" => Gold::Against,
            "observing" => Gold::Observing,
            other => return Err(format!("{}: row {}: unknown stance {other:?}", path.display(), i + 1)),
        };
        out.push(Pair {
            post: field(2),
            claim: field(1),
            gold,
            group: field(4),
            lang: "en".into(),
            split: "dev".into(),
        });
    }
    Ok(out)
}

fn gold_of(stance: &str) -> Option<Gold> {
    match stance {
        "asserts" => Some(Gold::For),
        "denies" => Some(Gold::Against),
        "asks" | "mentions" => Some(Gold::Observing),
        _ => None,
    }
}

/// The project's own pairs: `tests/data/stance/pairs.jsonl` (same-claim pairs only; the
/// CheckThat! rows' texts from `claim_matching`, the shared `claim-matching` folder) and
/// `tests/data/stance/multilingual.jsonl`.
pub fn read_own(repo: &Path, claim_matching: &Path) -> Result<Vec<Pair>, String> {
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let mut tweets = BTreeMap::new();
    for line in read(&claim_matching.join("CT2022-Task2A-EN-Train-Dev_Queries.tsv"))?.lines() {
        if let Some((id, text)) = line.split_once('\t') {
            tweets.insert(id.to_string(), text.to_string());
        }
    }
    let mut claims = BTreeMap::new();
    for line in read(&claim_matching.join("vclaims.jsonl"))?.lines() {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        if let (Some(id), Some(text)) = (v["vclaim_id"].as_str(), v["vclaim"].as_str()) {
            claims.insert(id.to_string(), text.to_string());
        }
    }
    let mut out = Vec::new();
    let dir = repo.join("tests/data/stance");
    for line in read(&dir.join("pairs.jsonl"))?.lines() {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        let (Some(gold), true) = (gold_of(v["stance"].as_str().unwrap_or("")), v["same_claim"] != false) else {
            continue;
        };
        let post = match v["iclaim_id"].as_str() {
            Some(id) => without_trailer(tweets.get(id).ok_or_else(|| format!("no tweet {id}"))?),
            None => v["post"].as_str().unwrap_or("").to_string(),
        };
        let id = v["vclaim_id"].as_str().unwrap_or("");
        out.push(Pair {
            post,
            claim: claims.get(id).ok_or_else(|| format!("no claim {id}"))?.clone(),
            gold,
            group: id.to_string(),
            lang: v["lang"].as_str().unwrap_or("en").to_string(),
            split: v["split"].as_str().unwrap_or("dev").to_string(),
        });
    }
    for line in read(&dir.join("multilingual.jsonl"))?.lines() {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        let Some(gold) = gold_of(v["stance"].as_str().unwrap_or("")) else {
            continue;
        };
        let claim = v["claim"].as_str().unwrap_or("").to_string();
        out.push(Pair {
            post: v["post"].as_str().unwrap_or("").to_string(),
            group: format!("ml:{claim}"),
            claim,
            gold,
            lang: v["lang"].as_str().unwrap_or("").to_string(),
            split: v["split"].as_str().unwrap_or("dev").to_string(),
        });
    }
    Ok(out)
}

/// A CheckThat! tweet without the "— Name (@handle) Month D, YYYY" trailer the dataset appends:
/// on the network the author is the post's metadata, not its text.
pub fn without_trailer(tweet: &str) -> String {
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

/// Each pair's features, the rules' decision and whether it is gold `for`. `vectors[2i]` is
/// pair i's post embedding, `vectors[2i + 1]` its claim's.
pub fn featurize(pairs: &[Pair], vectors: &[Vec<f32>]) -> Vec<(Vec<f32>, Stance)> {
    pairs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let post = super::capped(&p.post);
            let rule = super::reading(post, &p.claim);
            let f = features::all(post, rule, &vectors[2 * i], &vectors[2 * i + 1])
                .unwrap_or_else(|| vec![0.0; features::LEN]);
            (f, rule)
        })
        .collect()
}

/// L2 strength and full-batch Adam steps of the shipped fit (chosen by claim-fold
/// cross-validation on the Emergent dev split: decision 0046).
pub const L2: f64 = 300.0;
pub const STEPS: usize = 400;

/// How many times each own pair (social posts, the daemon's domain) counts in a fit beside
/// the Emergent headlines (`MUSEBOT_STANCE_OWN_WEIGHT` overrides it in the bench, to measure).
pub const OWN_WEIGHT: usize = 3;

/// [`OWN_WEIGHT`], or the bench's override.
pub fn own_weight() -> usize {
    std::env::var("MUSEBOT_STANCE_OWN_WEIGHT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(OWN_WEIGHT)
}

/// A logistic regression of `y` on `x`, deterministic: the same inputs give the same weights,
/// rounded to 1e-4 so the file's hash does not follow the last bits of the embeddings.
pub fn fit(x: &[Vec<f32>], y: &[bool]) -> Head {
    let n = x.len().max(1) as f64;
    let d = x.first().map_or(0, Vec::len);
    let mut mean = vec![0f64; d];
    let mut sd = vec![0f64; d];
    for row in x {
        for (m, v) in mean.iter_mut().zip(row) {
            *m += f64::from(*v) / n;
        }
    }
    for row in x {
        for ((s, m), v) in sd.iter_mut().zip(&mean).zip(row) {
            *s += (f64::from(*v) - m).powi(2) / n;
        }
    }
    let sd: Vec<f64> = sd.iter().map(|s| s.sqrt()).collect();
    let z: Vec<Vec<f64>> = x
        .iter()
        .map(|row| {
            row.iter()
                .zip(&mean)
                .zip(&sd)
                .map(|((v, m), s)| if *s < 1e-9 { 0.0 } else { (f64::from(*v) - m) / s })
                .collect()
        })
        .collect();
    let mut w = vec![0f64; d + 1];
    let (mut m1, mut m2) = (vec![0f64; d + 1], vec![0f64; d + 1]);
    let (lr, b1, b2) = (0.05, 0.9, 0.999);
    for t in 1..=STEPS {
        let mut g = vec![0f64; d + 1];
        for (row, yi) in z.iter().zip(y) {
            let s = row.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>() + w[d];
            let err = 1.0 / (1.0 + (-s).exp()) - f64::from(u8::from(*yi));
            for (gj, a) in g.iter_mut().zip(row) {
                *gj += err * a / n;
            }
            g[d] += err / n;
        }
        for j in 0..d {
            g[j] += L2 * w[j] / n;
        }
        for j in 0..=d {
            m1[j] = b1 * m1[j] + (1.0 - b1) * g[j];
            m2[j] = b2 * m2[j] + (1.0 - b2) * g[j] * g[j];
            let mh = m1[j] / (1.0 - b1.powi(t as i32));
            let vh = m2[j] / (1.0 - b2.powi(t as i32));
            w[j] -= lr * mh / (vh.sqrt() + 1e-8);
        }
    }
    let round = |v: f64| ((v * 1e4).round() / 1e4) as f32;
    let weights: Vec<f64> = (0..d).map(|j| if sd[j] < 1e-9 { 0.0 } else { w[j] / sd[j] }).collect();
    let bias = w[d] - (0..d).map(|j| weights[j] * mean[j]).sum::<f64>();
    Head {
        version: 1,
        threshold: 0.5,
        bias: round(bias),
        weights: weights.into_iter().map(round).collect(),
        trained: serde_json::Value::Null,
    }
}

/// The fold of each pair: its claim's SHA-256 modulo `k`, so no claim is in two folds and the
/// folds do not depend on the file's order.
pub fn folds(pairs: &[Pair], k: usize) -> Vec<usize> {
    pairs
        .iter()
        .map(|p| {
            let h = Sha256::digest(p.group.as_bytes());
            usize::from(h[0]) * 256 + usize::from(h[1])
        })
        .map(|h| h % k.max(1))
        .collect()
}

/// Each scored pair's score from a head fitted without its fold (`extra`: pairs added to
/// every fold's training, never scored).
pub fn cross_validate(
    scored: &[(Vec<f32>, Stance)],
    gold: &[Gold],
    fold: &[usize],
    k: usize,
    extra: &[(Vec<f32>, bool)],
) -> Vec<f32> {
    let mut out = vec![0f32; scored.len()];
    for f in 0..k {
        let mut x: Vec<Vec<f32>> = Vec::new();
        let mut y = Vec::new();
        for ((row, _), (g, fi)) in scored.iter().zip(gold.iter().zip(fold)) {
            if *fi != f {
                x.push(row.clone());
                y.push(*g == Gold::For);
            }
        }
        for (row, label) in extra {
            x.push(row.clone());
            y.push(*label);
        }
        let head = fit(&x, &y);
        for (i, (row, _)) in scored.iter().enumerate() {
            if fold[i] == f {
                out[i] = head.score(row);
            }
        }
    }
    out
}

/// The stance each pair gets at `threshold` (the decision of `super::decide_with`; `features`
/// for [`super::restates`]).
pub fn stance_at(score: f32, rule: Stance, threshold: f32, features: &[f32]) -> Stance {
    match rule {
        Stance::Denies | Stance::Asks => rule,
        _ if score >= threshold => Stance::Asserts,
        Stance::Asserts if super::restates(features) => Stance::Asserts,
        Stance::Mentions => Stance::Mentions,
        _ => Stance::Unclear,
    }
}

/// The threshold of highest label precision whose recall is at least `min_recall` (ties: the
/// lower threshold, more recall); 0.5 when none reaches it.
pub fn choose_threshold(scores: &[f32], featured: &[(Vec<f32>, Stance)], gold: &[Gold], min_recall: f64) -> f32 {
    let positives = gold.iter().filter(|g| **g == Gold::For).count().max(1) as f64;
    let mut candidates: Vec<f32> = scores.to_vec();
    candidates.sort_by(|a, b| b.total_cmp(a));
    candidates.dedup();
    let mut best: Option<(f64, f32)> = None;
    for t in candidates {
        let f = Figures::of(
            &scores
                .iter()
                .zip(featured)
                .map(|(s, (f, r))| stance_at(*s, *r, t, f))
                .collect::<Vec<_>>(),
            gold,
        );
        if f.tp as f64 / positives < min_recall {
            continue;
        }
        if best.is_none_or(|(p, _)| f.precision() >= p) {
            best = Some((f.precision(), t));
        }
    }
    best.map_or(0.5, |(_, t)| t)
}

/// What a scorer made of a file: the confusion table (gold × decided stance) and the label
/// figures (*asserts* is a label, `for` the only positive).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    /// `table[gold][stance]`, in `Gold::ALL` × `Stance::ALL` order.
    pub table: [[usize; 5]; 3],
    pub tp: usize,
    pub fp: usize,
    pub positives: usize,
}

impl Figures {
    pub fn of(decided: &[Stance], gold: &[Gold]) -> Figures {
        let mut f = Figures::default();
        for (s, g) in decided.iter().zip(gold) {
            let gi = Gold::ALL.iter().position(|x| x == g).unwrap_or(0);
            let si = Stance::ALL.iter().position(|x| x == s).unwrap_or(4);
            f.table[gi][si] += 1;
            let labelled = *s == Stance::Asserts;
            f.positives += usize::from(*g == Gold::For);
            f.tp += usize::from(labelled && *g == Gold::For);
            f.fp += usize::from(labelled && *g != Gold::For);
        }
        f
    }

    pub fn precision(&self) -> f64 {
        if self.tp + self.fp == 0 {
            0.0
        } else {
            self.tp as f64 / (self.tp + self.fp) as f64
        }
    }

    pub fn recall(&self) -> f64 {
        self.tp as f64 / self.positives.max(1) as f64
    }

    /// `against` pairs labelled.
    pub fn against_labelled(&self) -> usize {
        self.table[1][0]
    }

    /// The table as text, one gold row a line.
    pub fn table_text(&self) -> String {
        let mut out = format!("{:>10} |", "gold");
        for s in Stance::ALL {
            out.push_str(&format!(" {:>8}", s.as_str()));
        }
        for (g, row) in Gold::ALL.iter().zip(&self.table) {
            out.push_str(&format!("\n{:>10} |", g.as_str()));
            for n in row {
                out.push_str(&format!(" {n:>8}"));
            }
        }
        out
    }
}

/// Who decided each of the scorer's stances: for the word rules alone, the rules' own reading
/// (their `Asserts` counted as a label, as the watch used them).
pub fn rules_alone(pairs: &[Pair]) -> Vec<Stance> {
    pairs
        .iter()
        .map(|p| rules::stance(super::capped(&p.post), &p.claim))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_separable_toy_set_is_fitted_and_scored() {
        let x: Vec<Vec<f32>> = (0..40).map(|i| vec![i as f32, 1.0]).collect();
        let y: Vec<bool> = (0..40).map(|i| i >= 20).collect();
        let head = fit(&x, &y);
        assert!(head.score(&[35.0, 1.0]) > 0.5 && head.score(&[5.0, 1.0]) < 0.5);
        assert_eq!(fit(&x, &y), head, "deterministic");
        let gold = [Gold::For, Gold::Against, Gold::Observing, Gold::For];
        let f = Figures::of(
            &[Stance::Asserts, Stance::Denies, Stance::Asserts, Stance::Unclear],
            &gold,
        );
        assert_eq!((f.tp, f.fp, f.positives, f.against_labelled()), (1, 1, 2, 0));
        assert!((f.precision() - 0.5).abs() < 1e-9 && (f.recall() - 0.5).abs() < 1e-9);
    }

    #[test]
    fn without_trailer_cuts_only_the_signature() {
        assert_eq!(
            without_trailer("Pray for Wyoming. — Jo Doe (@jodoe) May 6, 2016"),
            "Pray for Wyoming."
        );
        assert_eq!(without_trailer("A — B test"), "A — B test");
    }
}
