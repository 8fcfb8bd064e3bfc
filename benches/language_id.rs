//! Language identification on real tweets (`cargo bench --bench language_id`):
//! TweetLID 2014 (13,931 tweets in es, pt, ca, gl, eu, en with gold labels; `a+b` a tweet in
//! several languages, `a/b` ambiguous, `und`, `other`), scored as the shared task's
//! `tweetLID_eval.pl` scored it — per category es, en, eu, pt, gl, ca, amb, und (`other` counts
//! as `und`, as does any answer outside the six), an ambiguous gold accepting any of its
//! languages, a multilingual one crediting each — with precision, recall and F1 per category,
//! their macro average and the share of tweets answered exactly right, for musebot's detector
//! (`lang::read`: whatlang gated, the n-gram model for the six) and whatlang unrestricted, in the
//! same run, with the time per post.
//!
//! The file is `MUSEBOT_LANGID_DATA` (default: the training split; same columns). When it is
//! the file the shipped model was trained on (its SHA-256 is the model's `#source`), musebot is
//! measured by 10-fold cross-validation grouped by author — each fold's model trained on the
//! other nine, no author in both — so no tweet is scored by a model that saw it; on any other
//! file (the held-out test split) the shipped model is measured as it ships.
//! `-- --write-model PATH` trains on the whole file and writes the model (`src/lang/tweetlid.model`).

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use musebot::lang::{self, ngram};
use sha2::{Digest, Sha256};

const CLASSES: [&str; 8] = ["es", "en", "eu", "pt", "gl", "ca", "amb", "und"];
const FOLDS: usize = 10;

struct Row {
    user: String,
    gold: String,
    text: String,
}

fn read(path: &str) -> (Vec<Row>, String) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e} (set MUSEBOT_LANGID_DATA)"));
    let digest = format!("{:x}", Sha256::digest(&bytes));
    let text = String::from_utf8_lossy(&bytes);
    let rows = text
        .lines()
        .skip(1)
        .filter_map(|line| {
            let mut cells = line.splitn(4, '\t');
            let (_id, user, gold, text) = (cells.next()?, cells.next()?, cells.next()?, cells.next()?);
            Some(Row {
                user: user.to_lowercase(),
                gold: gold.trim().to_lowercase(),
                text: text.to_string(),
            })
        })
        .collect();
    (rows, digest)
}

/// The classes a training tweet is labelled with: its language, or each of a multilingual
/// tweet's (the first alternative where a part is ambiguous); `und` for `und` and `other`;
/// none for an ambiguous tweet.
fn training_labels(gold: &str) -> Vec<&str> {
    if gold == "und" || gold == "other" {
        return vec!["und"];
    }
    if gold.contains('/') && !gold.contains('+') {
        return Vec::new();
    }
    gold.split('+')
        .filter_map(|part| part.split('/').next())
        .filter(|l| ngram::LANGS.contains(l))
        .collect()
}

#[derive(Default)]
struct Tally {
    tp: HashMap<String, f64>,
    fp: HashMap<String, f64>,
    fn_: HashMap<String, f64>,
    exact: usize,
    n: usize,
}

impl Tally {
    /// One tweet, as `tweetLID_eval.pl` counts it.
    fn add(&mut self, gold: &str, answer: &[String]) {
        let mut answer: Vec<String> = answer
            .iter()
            .map(|a| {
                if ngram::LANGS.contains(&a.as_str()) {
                    a.clone()
                } else {
                    "und".into()
                }
            })
            .collect();
        answer.dedup();
        answer.truncate(3);
        let gold = if gold == "other" { "und" } else { gold };
        let inc = |m: &mut HashMap<String, f64>, k: &str| *m.entry(k.to_string()).or_default() += 1.0;
        self.n += 1;
        if gold.contains('+') {
            let parts: Vec<Vec<&str>> = gold.split('+').map(|p| p.split('/').collect()).collect();
            let mut credited = vec![false; parts.len()];
            for a in &answer {
                match parts
                    .iter()
                    .enumerate()
                    .position(|(i, p)| !credited[i] && p.contains(&a.as_str()))
                {
                    Some(i) => {
                        credited[i] = true;
                        inc(&mut self.tp, a);
                    }
                    None => inc(&mut self.fp, a),
                }
            }
            for (i, p) in parts.iter().enumerate() {
                if !credited[i] {
                    inc(&mut self.fn_, p[0]);
                }
            }
            if credited.iter().all(|c| *c) && answer.len() == parts.len() {
                self.exact += 1;
            }
        } else if gold.contains('/') {
            let set: Vec<&str> = gold.split('/').collect();
            let mut hit = false;
            for a in &answer {
                if !hit && set.contains(&a.as_str()) {
                    hit = true;
                    inc(&mut self.tp, "amb");
                } else {
                    inc(&mut self.fp, a);
                }
            }
            if !hit {
                inc(&mut self.fn_, "amb");
            }
            if hit && answer.len() == 1 {
                self.exact += 1;
            }
        } else {
            for a in &answer {
                if a == gold {
                    inc(&mut self.tp, a);
                } else {
                    inc(&mut self.fp, a);
                }
            }
            if !answer.iter().any(|a| a == gold) {
                inc(&mut self.fn_, gold);
            }
            if answer.len() == 1 && answer[0] == gold {
                self.exact += 1;
            }
        }
    }

    /// (P, R, F1) per category, macro F1, accuracy.
    fn figures(&self) -> (Vec<(f64, f64, f64)>, f64, f64) {
        let get = |m: &HashMap<String, f64>, k: &str| m.get(k).copied().unwrap_or(0.0);
        let per: Vec<(f64, f64, f64)> = CLASSES
            .iter()
            .map(|c| {
                let (tp, fp, fn_) = (get(&self.tp, c), get(&self.fp, c), get(&self.fn_, c));
                let p = if tp + fp > 0.0 { tp / (tp + fp) } else { 0.0 };
                let r = if tp + fn_ > 0.0 { tp / (tp + fn_) } else { 0.0 };
                let f = if tp > 0.0 {
                    2.0 * tp / (2.0 * tp + fp + fn_)
                } else {
                    0.0
                };
                (p, r, f)
            })
            .collect();
        let macro_f = per.iter().map(|x| x.2).sum::<f64>() / per.len() as f64;
        (per, macro_f, self.exact as f64 / self.n.max(1) as f64)
    }

    fn print(&self, name: &str, per_post_us: f64) {
        let (per, macro_f, accuracy) = self.figures();
        println!("{name}: macro-F1 {macro_f:.3} accuracy {accuracy:.3} ({per_post_us:.1} µs a post)");
        for (c, (p, r, f)) in CLASSES.iter().zip(per) {
            println!("  {c:>4}  P {p:.3}  R {r:.3}  F1 {f:.3}");
        }
    }
}

/// musebot's answer in the task's terms: its language (and a second one), `und` for none.
fn musebot_answer(model: &ngram::Model, text: &str) -> Vec<String> {
    match lang::read_with(model, text) {
        Some(r) => std::iter::once(r.lang.to_string())
            .chain(r.second.map(String::from))
            .collect(),
        None => vec!["und".into()],
    }
}

/// `lang::detect`, what fills a post's missing tag (conservative: whatlang's confident family,
/// the shipped model's split of the Iberian languages; `und` when it says nothing).
fn detect_answer(text: &str) -> Vec<String> {
    vec![lang::detect(text).unwrap_or("und").to_string()]
}

/// The n-gram model alone (no whatlang gate), for comparison.
fn model_answer(model: &ngram::Model, text: &str) -> Vec<String> {
    match model.guess(text) {
        Some(g) => std::iter::once(g.lang.to_string())
            .chain(g.second.map(String::from))
            .collect(),
        None => vec!["und".into()],
    }
}

/// whatlang unrestricted, its ISO 639-3 code mapped to the task's (none → `und`).
fn whatlang_answer(text: &str) -> Vec<String> {
    let code = whatlang::detect(text).map(|i| i.lang().code());
    vec![match code {
        Some("spa") => "es",
        Some("por") => "pt",
        Some("cat") => "ca",
        Some("eng") => "en",
        Some(_) => "other",
        None => "und",
    }
    .into()]
}

/// Authors dealt to folds, the most prolific first, each to the fold with fewest tweets.
fn folds(rows: &[Row]) -> Vec<usize> {
    let mut per_user: BTreeMap<&str, usize> = BTreeMap::new();
    for r in rows {
        *per_user.entry(&r.user).or_default() += 1;
    }
    let mut users: Vec<(&str, usize)> = per_user.into_iter().collect();
    users.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut size = [0usize; FOLDS];
    let mut fold_of: HashMap<&str, usize> = HashMap::new();
    for (u, n) in users {
        let f = (0..FOLDS).min_by_key(|&i| (size[i], i)).unwrap();
        size[f] += n;
        fold_of.insert(u, f);
    }
    rows.iter().map(|r| fold_of[r.user.as_str()]).collect()
}

fn train(rows: &[&Row]) -> ngram::Counts {
    let mut counts = ngram::Counts::default();
    for r in rows {
        counts.add(&r.text, &training_labels(&r.gold));
    }
    counts
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        println!("language_id benchmark: skipped here; run it with `cargo bench --bench language_id`");
        return;
    }
    let path = std::env::var("MUSEBOT_LANGID_DATA").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/data/language-id/tweetlid2014-train.tsv"
        )
        .into()
    });
    let (rows, digest) = read(&path);
    println!("data: {path} ({} tweets, sha256 {})", rows.len(), &digest[..12]);
    if let Some(at) = args.iter().position(|a| a == "--write-model") {
        let out = args.get(at + 1).expect("--write-model PATH");
        let mut counts = train(&rows.iter().collect::<Vec<_>>());
        counts.source = digest;
        let text = counts.to_text(ngram::MIN_COUNT);
        std::fs::write(out, &text).unwrap();
        println!(
            "wrote {out}: {} features, {} KiB",
            text.lines().count() - 2,
            text.len() / 1024
        );
        return;
    }

    let shipped = ngram::Model::shipped();
    let mut ours = Tally::default();
    let mut alone = Tally::default();
    let started = Instant::now();
    let cross_validated = ngram::Model::shipped_source() == digest;
    if cross_validated {
        println!("mode: the shipped model was trained on this file, so musebot is measured by {FOLDS}-fold cross-validation by author (no author in both halves)");
        let fold = folds(&rows);
        let mut train_time = 0.0;
        let mut scored = 0.0;
        for k in 0..FOLDS {
            let t = Instant::now();
            let model = train(
                &rows
                    .iter()
                    .zip(&fold)
                    .filter(|(_, f)| **f != k)
                    .map(|(r, _)| r)
                    .collect::<Vec<_>>(),
            )
            .model();
            train_time += t.elapsed().as_secs_f64();
            let t = Instant::now();
            for (r, _) in rows.iter().zip(&fold).filter(|(_, f)| **f == k) {
                ours.add(&r.gold, &musebot_answer(&model, &r.text));
                alone.add(&r.gold, &model_answer(&model, &r.text));
            }
            scored += t.elapsed().as_secs_f64();
        }
        println!(
            "  (training {train_time:.1} s for {FOLDS} models; scoring {:.1} µs a post)",
            scored * 1e6 / rows.len() as f64
        );
    } else {
        println!("mode: the shipped model, as it ships");
        for r in &rows {
            ours.add(&r.gold, &musebot_answer(shipped, &r.text));
            alone.add(&r.gold, &model_answer(shipped, &r.text));
        }
    }
    let ours_us = started.elapsed().as_secs_f64() * 1e6 / rows.len() as f64;
    let mut theirs = Tally::default();
    let started = Instant::now();
    for r in &rows {
        theirs.add(&r.gold, &whatlang_answer(&r.text));
    }
    let theirs_us = started.elapsed().as_secs_f64() * 1e6 / rows.len() as f64;
    // Time per post of the shipped detector alone (no training in it).
    let started = Instant::now();
    for r in &rows {
        std::hint::black_box(lang::read_with(shipped, &r.text));
    }
    let shipped_us = started.elapsed().as_secs_f64() * 1e6 / rows.len() as f64;
    ours.print("musebot", if cross_validated { shipped_us } else { ours_us });
    alone.print("  (the n-gram model alone, without whatlang's gate)", 0.0);
    let mut filling = Tally::default();
    for r in &rows {
        filling.add(&r.gold, &detect_answer(&r.text));
    }
    filling.print(
        "  (lang::detect, which fills a missing tag: whatlang's confident family, the shipped model's Iberian split)",
        0.0,
    );
    theirs.print("whatlang", theirs_us);
    println!("time per post: musebot {shipped_us:.1} µs (shipped model), whatlang unrestricted {theirs_us:.1} µs");
}
