//! Fitting the stance head: a softmax regression over [`super::features`] (full-batch Adam,
//! L2, features standardised and the scaling folded into the weights, rows weighted),
//! deterministic — the same rows give the same weights, rounded to 1e-4 so the file's hash does
//! not follow the last bits of the embeddings — and the per-sentence thresholds chosen for
//! precision on cross-validated probabilities. `super::train` reads the data; the bench and
//! `scripts/train-stance.sh` call both; the daemon never does.

use super::{Domain, Linear, Reading, Sentences, Stance, Thresholds, CLASSES, POLARITY_GUARD};

/// L2 strength and full-batch Adam steps of the shipped fit (chosen by claim-fold
/// cross-validation on the dev files: decision 0050).
pub const L2: f32 = 300.0;
pub const STEPS: usize = 300;

/// [`L2`] and [`STEPS`], or the bench's overrides (`MUSEBOT_STANCE_L2`, `MUSEBOT_STANCE_STEPS`),
/// to measure another fit beside the shipped one.
pub fn l2_and_steps() -> (f32, usize) {
    let var = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<f64>().ok());
    (
        var("MUSEBOT_STANCE_L2").map_or(L2, |v| v as f32),
        var("MUSEBOT_STANCE_STEPS").map_or(STEPS, |v| v as usize),
    )
}

/// One training row: its features, its class (the stance's: 0 `for`, 1 `against`, 2
/// `observing`; the gate's: 0 post, 1 reply) and how much it counts.
pub struct Row<'a> {
    pub x: &'a [f32],
    pub y: usize,
    pub w: f32,
}

/// Rows are split into this many fixed chunks for the gradient (threads), so the sums, and so
/// the weights, do not depend on the machine's cores.
const CHUNKS: usize = 2;

/// A softmax regression of the rows' classes (`classes` of them) on their features.
pub fn fit(rows: &[Row], classes: usize) -> Linear {
    let (l2, steps) = l2_and_steps();
    let d = rows.first().map_or(0, |r| r.x.len());
    let total: f32 = rows.iter().map(|r| r.w).sum::<f32>().max(1.0);
    let mut mean = vec![0f64; d];
    let mut var = vec![0f64; d];
    for r in rows {
        for (m, v) in mean.iter_mut().zip(r.x) {
            *m += f64::from(*v) * f64::from(r.w) / f64::from(total);
        }
    }
    for r in rows {
        for ((s, m), v) in var.iter_mut().zip(&mean).zip(r.x) {
            *s += (f64::from(*v) - m).powi(2) * f64::from(r.w) / f64::from(total);
        }
    }
    let sd: Vec<f32> = var.iter().map(|v| v.sqrt() as f32).collect();
    let mean: Vec<f32> = mean.iter().map(|m| *m as f32).collect();
    let z: Vec<f32> = rows
        .iter()
        .flat_map(|r| {
            r.x.iter()
                .zip(&mean)
                .zip(&sd)
                .map(|((v, m), s)| if *s < 1e-6 { 0.0 } else { (v - m) / s })
        })
        .collect();
    // Weights: classes rows of d, then classes biases.
    let n_w = classes * d + classes;
    let mut w = vec![0f32; n_w];
    let (mut m1, mut m2) = (vec![0f32; n_w], vec![0f32; n_w]);
    let (lr, b1, b2) = (0.05f32, 0.9f32, 0.999f32);
    let per = rows.len().div_ceil(CHUNKS).max(1);
    for t in 1..=steps {
        let w_now = &w;
        let parts: Vec<Vec<f32>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..CHUNKS)
                .map(|c| {
                    let z = &z;
                    s.spawn(move || {
                        let mut g = vec![0f32; n_w];
                        let end = ((c + 1) * per).min(rows.len());
                        for i in (c * per).min(end)..end {
                            let x = &z[i * d..(i + 1) * d];
                            let mut logits = vec![0f32; classes];
                            for (k, l) in logits.iter_mut().enumerate() {
                                *l = dot(&w_now[k * d..(k + 1) * d], x) + w_now[classes * d + k];
                            }
                            let p = softmax_vec(&logits);
                            for k in 0..classes {
                                let e = (p[k] - f32::from(u8::from(rows[i].y == k))) * rows[i].w / total;
                                for (gj, xj) in g[k * d..(k + 1) * d].iter_mut().zip(x) {
                                    *gj += e * xj;
                                }
                                g[classes * d + k] += e;
                            }
                        }
                        g
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a gradient thread"))
                .collect()
        });
        let mut g = vec![0f32; n_w];
        for part in parts {
            for (a, b) in g.iter_mut().zip(part) {
                *a += b;
            }
        }
        for j in 0..classes * d {
            g[j] += l2 * w[j] / total;
        }
        let (c1, c2) = (1.0 - b1.powi(t as i32), 1.0 - b2.powi(t as i32));
        for j in 0..n_w {
            m1[j] = b1 * m1[j] + (1.0 - b1) * g[j];
            m2[j] = b2 * m2[j] + (1.0 - b2) * g[j] * g[j];
            w[j] -= lr * (m1[j] / c1) / ((m2[j] / c2).sqrt() + 1e-8);
        }
    }
    let round = |v: f32| (v * 1e4).round() / 1e4;
    let mut weights = Vec::with_capacity(classes);
    let mut bias = Vec::with_capacity(classes);
    for k in 0..classes {
        let row: Vec<f32> = (0..d)
            .map(|j| if sd[j] < 1e-6 { 0.0 } else { w[k * d + j] / sd[j] })
            .collect();
        let b = w[classes * d + k] - row.iter().zip(&mean).map(|(a, m)| a * m).sum::<f32>();
        bias.push(round(b));
        weights.push(row.into_iter().map(round).collect());
    }
    Linear { bias, weights }
}

fn softmax_vec(z: &[f32]) -> Vec<f32> {
    let max = z.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let e: Vec<f32> = z.iter().map(|v| (v - max).exp()).collect();
    let sum: f32 = e.iter().sum::<f32>().max(f32::MIN_POSITIVE);
    e.into_iter().map(|v| v / sum).collect()
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Eight lanes, so the compiler vectorises the sum in a fixed order.
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..8 {
            acc[l] += x[l] * y[l];
        }
    }
    acc.iter().sum::<f32>() + ra.iter().zip(rb).map(|(x, y)| x * y).sum::<f32>()
}

/// One dev file's cross-validated readings, gold classes, questions, polarity oppositions and
/// the precision each sentence must reach on it (`for`, `against`, `observing`).
pub struct DevFile<'a> {
    pub name: &'a str,
    pub readings: &'a [Reading],
    pub gold: &'a [usize],
    pub question: &'a [bool],
    pub opposed: &'a [bool],
    pub targets: [f32; CLASSES],
}

/// A sentence said on fewer posts of a file than this says nothing about its precision there;
/// a threshold needs the sentence said on [`MIN_TOTAL`] posts of all files to be chosen.
const MIN_SAID: usize = 20;
const MIN_TOTAL: usize = 30;

/// How far below its target a sentence's best precision on a file may be and still be said
/// (at its most precise threshold); further, it is never said in that domain.
pub const SHORT: f32 = 0.05;

/// Where no threshold reaches every target: the lowest threshold whose worst shortfall is
/// within this of the best (so a last, noisy point of precision does not cost all the recall).
const TOLERANCE: f32 = 0.02;

/// Never: a threshold no probability reaches.
pub const NEVER: f32 = 1.01;

/// The threshold of class `k`'s sentence for one domain (the posts the gate reads as that
/// kind), on the posts `take` keeps (by question): the lowest at which every file reaches its
/// target precision; where none does, the lowest whose worst file is within [`TOLERANCE`] of
/// the least short — unless even that is more than [`SHORT`] short, when the sentence is
/// [`NEVER`] said. A file where the sentence is said on fewer than [`MIN_SAID`] posts does not
/// constrain it. Candidates: 0.34 to 0.995.
pub fn choose(files: &[DevFile], k: usize, domain: Domain, take: impl Fn(bool) -> bool) -> f32 {
    let never = Thresholds {
        posts: Sentences::all(NEVER),
        headlines: Sentences::all(NEVER),
        replies: Sentences::all(NEVER),
    };
    // Each candidate threshold with the worst shortfall of its files (INFINITY: none short).
    let mut scored: Vec<(f32, f32)> = Vec::new();
    let mut t = 0.34f32;
    while t < 0.9951 {
        let mut worst = f32::INFINITY;
        let mut total = 0;
        for f in files {
            let (mut said, mut right) = (0usize, 0usize);
            let mut th = never;
            set(th.of_mut(domain), k, t);
            for i in 0..f.gold.len() {
                let r = f.readings[i];
                if r.domain != domain || !take(f.question[i]) {
                    continue;
                }
                let (s, _) = super::sentence(&th, r, f.question[i], f.opposed[i], POLARITY_GUARD);
                if class_of(s) == Some(k) {
                    said += 1;
                    right += usize::from(f.gold[i] == k);
                }
            }
            total += said;
            if said >= MIN_SAID {
                worst = worst.min(right as f32 / said as f32 - f.targets[k]);
            }
        }
        if total >= MIN_TOTAL {
            if worst >= 0.0 {
                return (t * 1e3).round() / 1e3;
            }
            scored.push((t, worst));
        }
        t += 0.005;
    }
    let best = scored
        .iter()
        .map(|(_, w)| *w)
        .filter(|w| w.is_finite())
        .fold(f32::NEG_INFINITY, f32::max);
    if best < -SHORT {
        return NEVER;
    }
    scored
        .iter()
        .find(|(_, w)| w.is_finite() && *w >= best - TOLERANCE)
        .map_or(NEVER, |(t, _)| (t * 1e3).round() / 1e3)
}

/// Sets the threshold of class `k` (observing: both of its sentences).
fn set(s: &mut Sentences, k: usize, t: f32) {
    match k {
        0 => s.asserts = t,
        1 => s.denies = t,
        _ => {
            s.asks = t;
            s.reports = t;
        }
    }
}

/// The class a sentence speaks for (`None`: the neutral one).
fn class_of(s: Stance) -> Option<usize> {
    match s {
        Stance::Asserts => Some(0),
        Stance::Denies => Some(1),
        Stance::Asks | Stance::Mentions => Some(2),
        Stance::Unclear => None,
    }
}

/// Every sentence's threshold in each domain (post, headline, reply): *asserts*, *denies*, and
/// *asks* (observing posts with a question) and *reports* (without) each chosen on its own.
pub fn thresholds(files: &[DevFile]) -> Thresholds {
    let domain = |d: Domain| Sentences {
        asserts: choose(files, 0, d, |_| true),
        denies: choose(files, 1, d, |_| true),
        asks: choose(files, 2, d, |q| q),
        reports: choose(files, 2, d, |q| !q),
    };
    Thresholds {
        posts: domain(Domain::Post),
        headlines: domain(Domain::Headline),
        replies: domain(Domain::Reply),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_separable_toy_set_is_fitted_deterministically() {
        let xs: Vec<Vec<f32>> = (0..60)
            .map(|i| {
                let mut v = vec![0.0; super::super::features::LEN];
                v[i % 3] = 1.0;
                v[3] = i as f32 / 60.0;
                v
            })
            .collect();
        let rows: Vec<Row> = xs
            .iter()
            .enumerate()
            .map(|(i, x)| Row { x, y: i % 3, w: 1.0 })
            .collect();
        let head = fit(&rows, 3);
        for (i, x) in xs.iter().enumerate().take(6) {
            let p = head.probabilities::<3>(x);
            let best = (0..CLASSES).max_by(|a, b| p[*a].total_cmp(&p[*b])).unwrap();
            assert_eq!(best, i % 3, "{p:?}");
        }
        assert_eq!(fit(&rows, 3), head, "deterministic");
    }

    #[test]
    fn a_threshold_is_the_lowest_that_reaches_every_files_precision() {
        // Class 0 most probable everywhere: p 0.956 .. 0.51; right above 0.705, wrong below.
        let readings: Vec<Reading> = (0..60)
            .map(|i| {
                let p0 = 0.956 - 0.0075 * i as f32;
                Reading {
                    p: [p0, (1.0 - p0) / 2.0, (1.0 - p0) / 2.0],
                    reply: 0.0,
                    domain: Domain::Post,
                }
            })
            .collect();
        let gold: Vec<usize> = readings.iter().map(|r| usize::from(r.p[0] < 0.705)).collect();
        let q = vec![false; 60];
        let opposed = vec![false; 60];
        let file = |target| DevFile {
            name: "toy",
            readings: &readings,
            gold: &gold,
            question: &q,
            opposed: &opposed,
            targets: [target, 0.5, 0.5],
        };
        // Precision 1.0 above 0.701 (34 posts, p 0.956 to 0.7085): the lowest such threshold.
        assert_eq!(choose(&[file(1.0)], 0, Domain::Post, |_| true), 0.705);
        // Reached at once.
        assert_eq!(choose(&[file(0.5)], 0, Domain::Post, |_| true), 0.34);
        // Nobody in the replies' domain: never said there.
        assert_eq!(choose(&[file(0.5)], 0, Domain::Reply, |_| true), NEVER);
        // The polarity guard leaves the sentence unsaid.
        let all_opposed = vec![true; 60];
        let vetoed = DevFile {
            opposed: &all_opposed,
            ..file(0.5)
        };
        assert_eq!(choose(&[vetoed], 0, Domain::Post, |_| true), NEVER);
    }
}
