//! The stance model's data and figures: the labelled pairs (the Emergent headlines and the
//! RumourEval 2017 replies of `../shared/data/stance/`, the project's own pairs and labelled
//! tweets in `tests/data/stance/`, and the shapes there that are only ever scored), their features, folds by claim, cross-validated probabilities (the
//! fit itself is `super::fit`), and the figures the bench prints per sentence.
//! `scripts/train-stance.sh` and `cargo bench --bench stance` use it; the daemon never does.
//! The caller embeds.

use std::collections::BTreeMap;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::fit::{self, Row};
use super::{features, rules, Domain, Head, Reading, Stance, CLASSES};

/// A pair's gold stance, as Emergent names it: `for` is the only positive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gold {
    For,
    Against,
    Observing,
}

impl Gold {
    pub const ALL: [Gold; 3] = [Gold::For, Gold::Against, Gold::Observing];

    /// The head's class index (its weights' row).
    pub fn class(self) -> usize {
        self as usize
    }

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

/// Emergent's CSV (`id, claimHeadline, articleHeadline, articleHeadlineStance, claimId`), and
/// any file in its columns (`rumoureval2017.csv`).
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
/// `tests/data/stance/multilingual.jsonl` and `contrastive.jsonl`.
pub fn read_own(repo: &Path, claim_matching: &Path) -> Result<Vec<Pair>, String> {
    let dir = repo.join("tests/data/stance");
    let mut out = read_rows(&dir.join("pairs.jsonl"), claim_matching)?;
    for name in ["multilingual.jsonl", "contrastive.jsonl"] {
        out.extend(read_written(&dir.join(name))?);
    }
    Ok(out)
}

/// `tests/data/stance/shapes.jsonl`: the shapes that fool a model of sentence embeddings (a
/// true post stating a false claim's opposite with an antonym, an assertion leaning on an
/// authority, a denial without "false" or "myth", an assertion with words that look like
/// denial), written by the project. Test data only: never trained on.
pub fn read_shapes(repo: &Path) -> Result<Vec<Pair>, String> {
    read_written(&repo.join("tests/data/stance/shapes.jsonl"))
}

/// A file of pairs written with their texts (`multilingual.jsonl`'s fields, and `group`).
fn read_written(path: &Path) -> Result<Vec<Pair>, String> {
    let mut out = Vec::new();
    for line in read_text(path)?.lines() {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("{}: {e}", path.display()))?;
        let Some(gold) = gold_of(v["stance"].as_str().unwrap_or("")) else {
            continue;
        };
        let claim = v["claim"].as_str().unwrap_or("").to_string();
        // A claim and its negation are one group: no fold trains on one and scores the other.
        let group = match v["group"].as_str() {
            Some(g) => format!("cx:{g}"),
            None => format!("ml:{claim}"),
        };
        out.push(Pair {
            post: v["post"].as_str().unwrap_or("").to_string(),
            group,
            claim,
            gold,
            lang: v["lang"].as_str().unwrap_or("").to_string(),
            split: v["split"].as_str().unwrap_or("dev").to_string(),
        });
    }
    Ok(out)
}

/// The real tweets of CheckThat! 2022 Task 2A that the project labelled for stance toward
/// their gold fact-check's claim (`tests/data/stance/tweets.jsonl`: same-claim rows a reader
/// was sure of; `dev` the train split's tweets, `test` the dev split's): the posts the network
/// watch decides repeat a checked claim, as they are written.
pub fn read_tweets(repo: &Path, claim_matching: &Path) -> Result<Vec<Pair>, String> {
    read_rows(&repo.join("tests/data/stance/tweets.jsonl"), claim_matching)
}

fn read_text(p: &Path) -> Result<String, String> {
    std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))
}

/// The same-claim rows of a file in `pairs.jsonl`'s fields (rows marked `"sure": false`
/// left out): a CheckThat! row's tweet (without its trailer) and claim read from
/// `claim_matching`, another row's `post`.
fn read_rows(path: &Path, claim_matching: &Path) -> Result<Vec<Pair>, String> {
    let mut tweets = BTreeMap::new();
    for line in read_text(&claim_matching.join("CT2022-Task2A-EN-Train-Dev_Queries.tsv"))?.lines() {
        if let Some((id, text)) = line.split_once('\t') {
            tweets.insert(id.to_string(), text.to_string());
        }
    }
    let mut claims = BTreeMap::new();
    for line in read_text(&claim_matching.join("vclaims.jsonl"))?.lines() {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        if let (Some(id), Some(text)) = (v["vclaim_id"].as_str(), v["vclaim"].as_str()) {
            claims.insert(id.to_string(), text.to_string());
        }
    }
    let mut out = Vec::new();
    for line in read_text(path)?.lines() {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        let kept = v["same_claim"] != false && v["sure"] != false;
        let (Some(gold), true) = (gold_of(v["stance"].as_str().unwrap_or("")), kept) else {
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

/// One pair as the model reads it: its features, whether its visible text asks, and whether
/// it differs from the claim in polarity (`super::features::opposed`).
#[derive(Debug, Clone)]
pub struct Featured {
    pub features: Vec<f32>,
    pub question: bool,
    pub opposed: bool,
}

/// The texts of every pair (`super::pair_texts`), each distinct text once, and for each pair
/// the index of each of its texts in that list.
pub fn embedded_texts(pairs: &[Pair]) -> (Vec<String>, Vec<Vec<usize>>) {
    let texts: Vec<(&str, &str)> = pairs.iter().map(|p| (p.post.as_str(), p.claim.as_str())).collect();
    super::distinct_texts(&texts)
}

/// Each pair's features from the embeddings of [`embedded_texts`] (`vectors[j]` is text j's).
pub fn featurize(pairs: &[Pair], vectors: &[Vec<f32>], index: &[Vec<usize>]) -> Vec<Featured> {
    pairs
        .iter()
        .zip(index)
        .map(|(p, at)| {
            let post = super::seen(&p.post);
            let rule = super::reading(&post, &p.claim);
            let mine: Vec<Vec<f32>> = at.iter().map(|j| vectors[*j].clone()).collect();
            let features = features::all(&post, &p.claim, rule, &mine).unwrap_or_else(|| vec![0.0; features::LEN]);
            Featured {
                features,
                question: super::asks(&post),
                opposed: features::opposed(&post, &p.claim),
            }
        })
        .collect()
}

/// How many times each own pair (social posts, the daemon's domain) counts in the posts'
/// expert beside the headlines (`MUSEBOT_STANCE_OWN_WEIGHT` overrides it in the bench).
pub const OWN_WEIGHT: f32 = 3.0;

/// [`OWN_WEIGHT`], or the bench's override.
pub fn own_weight() -> f32 {
    std::env::var("MUSEBOT_STANCE_OWN_WEIGHT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(OWN_WEIGHT)
}

/// A labelled set for fitting: features, gold, the kind of text its posts are (the gate's
/// class), how much each row counts in each expert (posts', replies'), and each
/// row's fold by claim (`None`: trained on in every fold, never scored).
pub struct Set<'a> {
    pub featured: &'a [Featured],
    pub gold: Vec<Gold>,
    pub domain: Domain,
    pub weights: [f32; 2],
    pub folds: Option<Vec<usize>>,
}

/// How the shipped fit weighs each kind of data in each expert (posts', replies'): the posts'
/// expert learns from the headlines and the own posts ([`OWN_WEIGHT`] times), the replies'
/// expert from the replies and the own posts once.
pub const HEADLINES: [f32; 2] = [1.0, 0.0];
pub const REPLIES: [f32; 2] = [0.0, 1.0];

/// How many times each labelled CheckThat! tweet (`tests/data/stance/tweets.jsonl`, dev
/// split) counts in each expert (posts', replies'); `MUSEBOT_STANCE_TWEET_WEIGHT` overrides the
/// posts' expert's in the bench.
pub const TWEET_WEIGHTS: [f32; 2] = [2.0, 1.0];

/// [`TWEET_WEIGHTS`], or the bench's override of the first.
pub fn tweet_weights() -> [f32; 2] {
    let posts = std::env::var("MUSEBOT_STANCE_TWEET_WEIGHT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(TWEET_WEIGHTS[0]);
    [posts, TWEET_WEIGHTS[1]]
}

/// The own pairs' weights in the two experts.
pub fn own_weights() -> [f32; 2] {
    [own_weight(), 1.0]
}

/// The head fitted on the rows `keep` keeps: the gate (post, headline or reply) on every row once, each
/// expert on the rows its weight counts.
fn fit_rows(sets: &[Set], keep: impl Fn(&Set, usize) -> bool) -> Head {
    let rows = |expert: Option<usize>| -> Vec<Row> {
        let mut out = Vec::new();
        for s in sets {
            for (i, (x, g)) in s.featured.iter().zip(&s.gold).enumerate() {
                if !keep(s, i) {
                    continue;
                }
                let (y, w) = match expert {
                    None => (s.domain.class(), 1.0),
                    Some(e) => (g.class(), s.weights[e]),
                };
                if w > 0.0 {
                    out.push(Row { x: &x.features, y, w });
                }
            }
        }
        out
    };
    Head {
        version: 4,
        thresholds: super::Thresholds {
            posts: super::Sentences::all(0.5),
            headlines: super::Sentences::all(0.5),
            replies: super::Sentences::all(0.5),
        },
        gate: fit::fit(&rows(None), 3),
        experts: vec![fit::fit(&rows(Some(0)), CLASSES), fit::fit(&rows(Some(1)), CLASSES)],
        trained: serde_json::Value::Null,
    }
}

/// The head fitted on every row of `sets`.
pub fn fit_all(sets: &[Set]) -> Head {
    fit_rows(sets, |_, _| true)
}

/// Each row's probabilities from a head fitted without its fold, for every set with folds
/// (`None` for sets without); `k` folds.
pub fn cross_validate(sets: &[Set], k: usize) -> Vec<Option<Vec<Reading>>> {
    let empty = Reading {
        p: [0.0; CLASSES],
        reply: 0.0,
        domain: Domain::Post,
    };
    let mut out: Vec<Option<Vec<Reading>>> = sets
        .iter()
        .map(|s| s.folds.as_ref().map(|_| vec![empty; s.featured.len()]))
        .collect();
    for f in 0..k {
        let head = fit_rows(sets, |s, i| s.folds.as_ref().is_none_or(|folds| folds[i] != f));
        for (s, probs) in sets.iter().zip(out.iter_mut()) {
            let (Some(folds), Some(probs)) = (&s.folds, probs) else {
                continue;
            };
            for (i, x) in s.featured.iter().enumerate() {
                if folds[i] == f {
                    probs[i] = head.read(&x.features);
                }
            }
        }
    }
    out
}

/// The sentence each pair gets from its reading at `thresholds` (`veto`: as
/// [`super::POLARITY_GUARD`]).
pub fn sentences(
    thresholds: &super::Thresholds,
    readings: &[Reading],
    featured: &[Featured],
    guard: bool,
) -> Vec<Stance> {
    readings
        .iter()
        .zip(featured)
        .map(|(r, f)| super::sentence(thresholds, *r, f.question, f.opposed, guard).0)
        .collect()
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

    /// The sentences' figures, as the bench prints them: for each sentence (`asserts` ↔ gold
    /// `for`, `denies` ↔ `against`, `asks or reports` ↔ `observing`) the share of the posts
    /// given it whose gold matches (`-` when never said) and the share of its gold given it;
    /// then how many posts got the neutral sentence.
    pub fn sentences_text(&self) -> String {
        // Columns of `Stance::ALL`: asserts, denies, asks, mentions, unclear.
        let said = |cols: &[usize]| -> usize {
            (0..3)
                .map(|g| cols.iter().map(|c| self.table[g][*c]).sum::<usize>())
                .sum()
        };
        let right = |g: usize, cols: &[usize]| -> usize { cols.iter().map(|c| self.table[g][*c]).sum() };
        let gold = |g: usize| -> usize { self.table[g].iter().sum() };
        let part = |name: &str, g: usize, cols: &[usize]| {
            let n = said(cols);
            let precision = if n == 0 {
                "-".to_string()
            } else {
                format!("{:.3}", right(g, cols) as f64 / n as f64)
            };
            format!(
                "{name} precision {precision} recall {:.3}",
                right(g, cols) as f64 / gold(g).max(1) as f64
            )
        };
        let total: usize = (0..3).map(gold).sum();
        format!(
            "{}; {}; {}; neutral {} of {}",
            part("asserts", 0, &[0]),
            part("denies", 1, &[1]),
            part("asks or reports", 2, &[2, 3]),
            said(&[4]),
            total
        )
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
        .map(|p| rules::stance(&super::seen(&p.post), &p.claim))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figures_of_each_sentence() {
        let gold = [Gold::For, Gold::Against, Gold::Observing, Gold::For, Gold::Observing];
        let f = Figures::of(
            &[
                Stance::Asserts,
                Stance::Denies,
                Stance::Asserts,
                Stance::Unclear,
                Stance::Asks,
            ],
            &gold,
        );
        assert_eq!((f.tp, f.fp, f.positives, f.against_labelled()), (1, 1, 2, 0));
        assert!((f.precision() - 0.5).abs() < 1e-9 && (f.recall() - 0.5).abs() < 1e-9);
        assert_eq!(
            f.sentences_text(),
            "asserts precision 0.500 recall 0.500; denies precision 1.000 recall 1.000; asks or reports precision 1.000 recall 0.500; neutral 1 of 5"
        );
        let never = Figures::of(&[Stance::Unclear], &[Gold::For]);
        assert!(never.sentences_text().starts_with("asserts precision - recall 0.000"));
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
