//! `musebot eval compare A B`: two runs over the same posts (two models, two configs) paired
//! by post id. Per figure: the mean of A, of B, and of the paired differences B − A with a 95 %
//! bootstrap interval (2,000 resamples of the posts, a fixed seed: the same runs give the same
//! interval); then the posts where the two differ most.

use std::collections::BTreeMap;

use serde::Serialize;

use super::record::{positions, PostResult};

/// The per-post numbers compared, by name.
pub fn numbers(r: &PostResult) -> BTreeMap<String, f64> {
    let f = &r.figures;
    let mut n = BTreeMap::new();
    let pct = |a: usize, b: usize| (b > 0).then(|| 100.0 * a as f64 / b as f64);
    for (name, v) in [
        ("urls from evidence %", pct(f.urls_from_evidence, f.reply_urls)),
        ("links reachable %", pct(f.urls_reachable, f.reply_urls)),
        ("quotes verbatim %", pct(f.quotes_verbatim, f.quotes)),
    ] {
        if let Some(v) = v {
            n.insert(name.to_string(), v);
        }
    }
    if !r.failed() {
        n.insert(
            "could not verify (0/1)".into(),
            f64::from(u8::from(r.outcome == "insufficient")),
        );
        n.insert("parts".into(), f.parts as f64);
        n.insert("characters".into(), f.chars as f64);
        n.insert("llm calls".into(), f64::from(f.llm_calls));
        n.insert("llm calls in sequence".into(), f64::from(f.llm_in_sequence));
        n.insert("seconds".into(), f.seconds);
        n.insert("tokens".into(), (f.prompt_tokens + f.completion_tokens) as f64);
        n.insert("cost".into(), f.cost);
    }
    for (d, p) in positions(r) {
        n.insert(format!("judge {d} (0–1)"), p);
    }
    n
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    pub figure: String,
    pub posts: usize,
    pub mean_a: f64,
    pub mean_b: f64,
    /// Mean of B − A over the posts both have the figure for.
    pub diff: f64,
    pub low: f64,
    pub high: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub paired: usize,
    pub only_a: usize,
    pub only_b: usize,
    pub differences: Vec<Difference>,
    /// (id, how far apart, A's reply, B's reply), the farthest first.
    pub most_different: Vec<(String, f64, String, String)>,
    /// The same differences over each language's paired posts (the language A's record
    /// counts the post under, `record::language_of`), when the posts are in more than one.
    pub by_language: Vec<LanguageDifferences>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LanguageDifferences {
    pub language: String,
    pub paired: usize,
    pub differences: Vec<Difference>,
}

pub fn compare(a: &BTreeMap<String, PostResult>, b: &BTreeMap<String, PostResult>) -> Comparison {
    let paired: Vec<(&PostResult, &PostResult)> = a.iter().filter_map(|(id, x)| Some((x, b.get(id)?))).collect();
    let all = differences(&paired);
    let mut groups: BTreeMap<String, Vec<(&PostResult, &PostResult)>> = BTreeMap::new();
    for (x, y) in &paired {
        groups.entry(super::record::language_of(x)).or_default().push((x, y));
    }
    let by_language = if groups.len() > 1 {
        groups
            .into_iter()
            .map(|(language, pairs)| LanguageDifferences {
                paired: pairs.len(),
                differences: differences(&pairs),
                language,
            })
            .collect()
    } else {
        Vec::new()
    };
    // How far apart two answers are: the judge's overall score when both have one, else
    // whether the outcome or verdict differs, then the reply's length.
    let mut most: Vec<(String, f64, String, String)> = paired
        .iter()
        .map(|(x, y)| {
            let (nx, ny) = (numbers(x), numbers(y));
            let key = "judge overall (0–1)";
            let apart = match (nx.get(key), ny.get(key)) {
                (Some(p), Some(q)) => (p - q).abs() * 10.0,
                _ => {
                    let differs = x.outcome != y.outcome || x.verdict != y.verdict;
                    f64::from(u8::from(differs)) * 10.0
                        + (x.figures.chars as f64 - y.figures.chars as f64).abs() / 1000.0
                }
            };
            (x.id.clone(), apart, x.reply(), y.reply())
        })
        .collect();
    most.sort_by(|p, q| q.1.total_cmp(&p.1).then_with(|| p.0.cmp(&q.0)));
    most.truncate(5);
    Comparison {
        paired: paired.len(),
        only_a: a.len() - paired.len(),
        only_b: b.keys().filter(|k| !a.contains_key(*k)).count(),
        differences: all,
        most_different: most,
        by_language,
    }
}

/// Each figure's means in A and B and the bootstrap interval of B − A over `paired`.
fn differences(paired: &[(&PostResult, &PostResult)]) -> Vec<Difference> {
    let mut by_figure: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for (x, y) in paired {
        let (nx, ny) = (numbers(x), numbers(y));
        for (k, vx) in &nx {
            if let Some(vy) = ny.get(k) {
                by_figure.entry(k.clone()).or_default().push((*vx, *vy));
            }
        }
    }
    by_figure
        .into_iter()
        .map(|(figure, v)| {
            let diffs: Vec<f64> = v.iter().map(|(x, y)| y - x).collect();
            let (low, high) = bootstrap(&diffs, 2000, 1);
            Difference {
                posts: v.len(),
                mean_a: mean(v.iter().map(|p| p.0)),
                mean_b: mean(v.iter().map(|p| p.1)),
                diff: mean(diffs.iter().copied()),
                low,
                high,
                figure,
            }
        })
        .collect()
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}

/// The 2.5th and 97.5th percentiles of the resampled means.
pub fn bootstrap(values: &[f64], resamples: usize, seed: u64) -> (f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0);
    }
    let mut rng = Rng(seed);
    let mut means: Vec<f64> = (0..resamples)
        .map(|_| mean((0..values.len()).map(|_| values[rng.below(values.len() as u64) as usize])))
        .collect();
    means.sort_by(f64::total_cmp);
    let at = |q: f64| means[((q * (resamples - 1) as f64).round() as usize).min(resamples - 1)];
    (at(0.025), at(0.975))
}

/// splitmix64: a small deterministic generator (resampling needs no cryptography, and a
/// fixed seed makes a comparison repeatable).
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

impl Comparison {
    pub fn to_text(&self, a: &str, b: &str) -> String {
        let mut out = format!(
            "A = {a}\nB = {b}\n{} posts paired ({} only in A, {} only in B)\n\n{:<34} {:>6} {:>12} {:>12} {:>12}  95% interval of B − A\n",
            self.paired, self.only_a, self.only_b, "figure", "posts", "A", "B", "B − A"
        );
        for d in &self.differences {
            out.push_str(&format!(
                "{:<34} {:>6} {:>12.4} {:>12.4} {:>12.4}  [{:.4}, {:.4}]\n",
                d.figure, d.posts, d.mean_a, d.mean_b, d.diff, d.low, d.high
            ));
        }
        for l in &self.by_language {
            out.push_str(&format!("\n{} ({} posts paired):\n", l.language, l.paired));
            for d in &l.differences {
                out.push_str(&format!(
                    "{:<34} {:>6} {:>12.4} {:>12.4} {:>12.4}  [{:.4}, {:.4}]\n",
                    d.figure, d.posts, d.mean_a, d.mean_b, d.diff, d.low, d.high
                ));
            }
        }
        out.push_str("\nposts where A and B differ most:\n");
        for (id, apart, x, y) in &self.most_different {
            out.push_str(&format!(
                "  {id} ({apart:.2} apart)\n    A: {}\n    B: {}\n",
                x.replace('\n', " / "),
                y.replace('\n', " / ")
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_holds_the_difference_and_excludes_zero_only_when_it_should() {
        let same = vec![0.0; 50];
        assert_eq!(bootstrap(&same, 500, 3), (0.0, 0.0));
        let mut rng = Rng(5);
        let noisy: Vec<f64> = (0..200)
            .map(|_| 1.0 + (rng.below(1000) as f64 / 1000.0 - 0.5))
            .collect();
        let (low, high) = bootstrap(&noisy, 2000, 1);
        assert!(low > 0.9 && high < 1.1 && low < 1.0 && high > 1.0, "[{low}, {high}]");
        let centred: Vec<f64> = noisy.iter().map(|v| v - 1.0).collect();
        let (low, high) = bootstrap(&centred, 2000, 1);
        assert!(
            low < 0.0 && high > 0.0,
            "no difference: the interval holds 0: [{low}, {high}]"
        );
        assert_eq!(bootstrap(&noisy, 2000, 1), bootstrap(&noisy, 2000, 1), "repeatable");
    }
}
