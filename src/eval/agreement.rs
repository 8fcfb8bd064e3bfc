//! How far a judge agrees with the experts, beside how far the experts agree with each other
//! on the same replies — the ceiling a judge can reach. The judge sits in the second expert's
//! seat: it is compared with each reply's first expert (the rating recorded first), as the
//! second expert is. Labels: exact agreement and Cohen's κ (chance-corrected: a judge that
//! answers at random scores about 0); 0–10 scores: Spearman's ρ.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::experts::Experts;
use super::judge::Rating;
use super::rubric::{Dimension, Scale, DIMENSIONS};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DimensionAgreement {
    pub key: String,
    pub name: String,
    /// "exact" (labels) or "spearman" (0–10 scores).
    pub measure: String,
    pub judge: Option<f64>,
    pub judge_kappa: Option<f64>,
    pub judge_n: usize,
    pub experts: Option<f64>,
    pub experts_kappa: Option<f64>,
    pub experts_n: usize,
}

/// Per dimension: the judge against each reply's first expert, and the second expert against
/// the first.
pub fn agreement(experts: &Experts, judged: &BTreeMap<String, Rating>) -> Vec<DimensionAgreement> {
    DIMENSIONS
        .iter()
        .map(|d| {
            let mut judge_pairs = Vec::new();
            let mut expert_pairs = Vec::new();
            for (key, ratings) in &experts.ratings {
                let Some((_, first)) = ratings.first() else { continue };
                if let Some(j) = judged.get(key) {
                    judge_pairs.extend(pairs(d, j, first));
                }
                if let Some((_, second)) = ratings.get(1) {
                    expert_pairs.extend(pairs(d, second, first));
                }
            }
            let (judge, judge_kappa) = measure(d, &judge_pairs);
            let (agree, experts_kappa) = measure(d, &expert_pairs);
            DimensionAgreement {
                key: d.key.into(),
                name: d.name.into(),
                measure: if d.scale == Scale::Score { "spearman" } else { "exact" }.into(),
                judge,
                judge_kappa,
                judge_n: judge_pairs.len(),
                experts: agree,
                experts_kappa,
                experts_n: expert_pairs.len(),
            }
        })
        .collect()
}

/// The (a, b) answers both ratings give on a dimension (per reference: for each URL both rated).
fn pairs(d: &Dimension, a: &Rating, b: &Rating) -> Vec<(String, String)> {
    if d.per_reference {
        b.references
            .iter()
            .filter_map(|(url, rb)| Some((a.references.get(url)?.get(d.key)?.clone(), rb.get(d.key)?.clone())))
            .collect()
    } else {
        match (a.answers.get(d.key), b.answers.get(d.key)) {
            (Some(x), Some(y)) => vec![(x.clone(), y.clone())],
            _ => Vec::new(),
        }
    }
}

/// (agreement, κ): exact agreement and κ for labels; Spearman's ρ (and no κ) for scores.
fn measure(d: &Dimension, pairs: &[(String, String)]) -> (Option<f64>, Option<f64>) {
    if pairs.is_empty() {
        return (None, None);
    }
    match d.scale {
        Scale::Score => {
            let (x, y): (Vec<f64>, Vec<f64>) = pairs
                .iter()
                .filter_map(|(a, b)| Some((a.parse::<f64>().ok()?, b.parse::<f64>().ok()?)))
                .unzip();
            (spearman(&x, &y), None)
        }
        Scale::Labels { .. } => (Some(exact(pairs)), kappa(pairs)),
    }
}

pub fn exact(pairs: &[(String, String)]) -> f64 {
    pairs.iter().filter(|(a, b)| a == b).count() as f64 / pairs.len() as f64
}

/// Cohen's κ; `None` when chance agreement is already total (one label everywhere).
pub fn kappa(pairs: &[(String, String)]) -> Option<f64> {
    let n = pairs.len() as f64;
    let mut left: BTreeMap<&str, f64> = BTreeMap::new();
    let mut right: BTreeMap<&str, f64> = BTreeMap::new();
    for (a, b) in pairs {
        *left.entry(a).or_default() += 1.0;
        *right.entry(b).or_default() += 1.0;
    }
    let chance: f64 = left
        .iter()
        .map(|(l, c)| c / n * right.get(l).copied().unwrap_or(0.0) / n)
        .sum();
    (chance < 1.0 - 1e-12).then(|| (exact(pairs) - chance) / (1.0 - chance))
}

/// Spearman's ρ (ties ranked by their mean rank); `None` under 3 pairs or without variance.
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() < 3 || x.len() != y.len() {
        return None;
    }
    pearson(&ranks(x), &ranks(y))
}

fn ranks(v: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut r = vec![0.0; v.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && v[order[j + 1]] == v[order[i]] {
            j += 1;
        }
        let mean = (i + j) as f64 / 2.0 + 1.0;
        for k in &order[i..=j] {
            r[*k] = mean;
        }
        i = j + 1;
    }
    r
}

fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let cov: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let vx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
    let vy: f64 = y.iter().map(|b| (b - my).powi(2)).sum();
    (vx > 0.0 && vy > 0.0).then(|| cov / (vx * vy).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Experts on 400 replies: the first rates at random, the second agrees half the time.
    fn experts(seed: u64) -> Experts {
        let mut rng = super::super::compare::Rng(seed);
        let mut e = Experts::default();
        for i in 0..400 {
            let mut first = Rating::default();
            let mut second = Rating::default();
            for d in &DIMENSIONS {
                let pick = |rng: &mut super::super::compare::Rng| match d.scale {
                    Scale::Score => format!("{}", rng.below(11)),
                    Scale::Labels { ordered, .. } => ordered[rng.below(ordered.len() as u64) as usize].to_string(),
                };
                let a = pick(&mut rng);
                let b = if rng.below(2) == 0 { a.clone() } else { pick(&mut rng) };
                if d.per_reference {
                    first
                        .references
                        .entry("https://a.example/1".into())
                        .or_default()
                        .insert(d.key.into(), a);
                    second
                        .references
                        .entry("https://a.example/1".into())
                        .or_default()
                        .insert(d.key.into(), b);
                } else {
                    first.answers.insert(d.key.into(), a);
                    second.answers.insert(d.key.into(), b);
                }
            }
            e.ratings
                .insert(format!("{i}/1"), vec![("e1".into(), first), ("e2".into(), second)]);
        }
        e
    }

    #[test]
    fn a_judge_that_copies_the_experts_agrees_fully_and_a_random_one_not_at_all() {
        let e = experts(7);
        let copy: BTreeMap<String, Rating> = e.ratings.iter().map(|(k, r)| (k.clone(), r[0].1.clone())).collect();
        for a in agreement(&e, &copy) {
            assert_eq!(a.judge, Some(1.0), "{}", a.key);
            let ceiling = a.experts.unwrap();
            assert!(
                ceiling > 0.2 && ceiling < 0.9,
                "{}: experts agree half the time: {ceiling}",
                a.key
            );
        }
        let random: BTreeMap<String, Rating> = experts(99)
            .ratings
            .into_iter()
            .map(|(k, r)| (k, r[0].1.clone()))
            .collect();
        for a in agreement(&e, &random) {
            let chance_corrected = if a.measure == "spearman" {
                a.judge
            } else {
                a.judge_kappa
            };
            let v = chance_corrected.unwrap();
            assert!(v.abs() < 0.15, "{}: a random judge scores about 0, got {v}", a.key);
            assert_eq!(a.judge_n, 400);
        }
    }

    #[test]
    fn spearman_and_kappa_on_known_values() {
        assert_eq!(spearman(&[1.0, 2.0, 3.0, 4.0], &[10.0, 20.0, 30.0, 40.0]), Some(1.0));
        assert_eq!(spearman(&[1.0, 2.0, 3.0, 4.0], &[4.0, 3.0, 2.0, 1.0]), Some(-1.0));
        // Ties share their mean rank.
        let r = spearman(&[1.0, 1.0, 2.0, 3.0], &[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert!((r - 0.9486832980505138).abs() < 1e-9, "{r}");
        assert_eq!(spearman(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]), None);
        let p = |a: &str, b: &str| (a.to_string(), b.to_string());
        // 2×2: po = 0.75, pe = 0.5 → κ = 0.5.
        let k = kappa(&[
            p("y", "y"),
            p("n", "n"),
            p("y", "n"),
            p("n", "n"),
            p("y", "y"),
            p("n", "n"),
            p("y", "y"),
            p("n", "y"),
        ]);
        assert!((k.unwrap() - 0.5).abs() < 1e-9, "{k:?}");
        assert_eq!(kappa(&[p("y", "y"), p("y", "y")]), None);
    }
}
