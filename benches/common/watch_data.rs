//! The watch bench's data: the recorded stream (CheckThat!'s tweets among unrelated real text),
//! CheckThat!'s dev tweets, their Spanish and Portuguese restatements
//! (`tests/data/watch/translated.tsv`), and the project's stance labels of the tweets
//! (`tests/data/stance/`).

use std::path::{Path, PathBuf};

/// A post of the stream: (text, language tag, the fact-check it repeats: its CheckThat! id).
pub type Post = (String, Option<String>, Option<String>);

/// CheckThat!'s held-out dev tweets: (text, the id of the fact-check each repeats).
pub fn dev_tweets(data: &Path) -> (String, Vec<(String, String)>) {
    let (queries, qrels) = super::checkthat::held_out(&data.join("claim-matching"));
    let tweets = super::checkthat::tweets(&queries, &qrels);
    (qrels.display().to_string(), tweets)
}

/// The project's stance labels of CheckThat! tweets (`tests/data/stance/pairs.jsonl`,
/// `tweets.jsonl`), by the tweet's text as the stream carries it: whether the tweet asserts
/// its fact-check's claim, and the label as a reader gave it; and the texts of CheckThat!'s dev
/// split.
#[allow(clippy::type_complexity)]
pub fn our_labels(
    data: &Path,
) -> (
    std::collections::HashMap<String, (bool, String)>,
    std::collections::HashSet<String>,
) {
    let dir = data.join("claim-matching");
    let text_of: std::collections::HashMap<String, String> =
        std::fs::read_to_string(dir.join("CT2022-Task2A-EN-Train-Dev_Queries.tsv"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once('\t').map(|(id, t)| (id.to_string(), t.to_string())))
            .collect();
    let dev = std::fs::read_to_string(dir.join("CT2022-Task2A-EN-Dev_QRELs.tsv"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split('\t').next().and_then(|id| text_of.get(id)).cloned())
        .collect();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/stance");
    let mut asserting = std::collections::HashMap::new();
    for name in ["pairs.jsonl", "tweets.jsonl"] {
        for line in std::fs::read_to_string(repo.join(name)).unwrap_or_default().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
            if let Some(text) = v["iclaim_id"].as_str().and_then(|id| text_of.get(id)) {
                let asserts = v["stance"] == "asserts" && v["same_claim"] != false;
                let label = format!(
                    "{}{}{}",
                    v["stance"].as_str().unwrap_or(""),
                    if v["same_claim"] == false {
                        ", another claim"
                    } else {
                        ""
                    },
                    if v["sure"] == false { ", unsure" } else { "" }
                );
                asserting.insert(text.clone(), (asserts, label));
            }
        }
    }
    (asserting, dev)
}

/// The translated dev tweets (`tests/data/watch/translated.tsv`: id TAB language TAB text):
/// their English originals, and the translations by language, each with its fact-check id.
#[allow(clippy::type_complexity)]
pub fn translated(
    data: &Path,
) -> (
    Vec<(String, Option<String>, String)>,
    std::collections::BTreeMap<String, Vec<(String, Option<String>, String)>>,
) {
    let dir = data.join("claim-matching");
    let read = |p: PathBuf| std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let gold: std::collections::HashMap<String, String> = read(dir.join("CT2022-Task2A-EN-Dev_QRELs.tsv"))
        .lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            Some((
                cols.first()?.to_string(),
                cols.get(2)?.trim_start_matches("vclaim-sno-").to_string(),
            ))
        })
        .collect();
    let texts: std::collections::HashMap<String, String> = read(dir.join("CT2022-Task2A-EN-Train-Dev_Queries.tsv"))
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(id, t)| (id.to_string(), t.to_string()))
        .collect();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/watch/translated.tsv");
    let (mut originals, mut by_lang) = (Vec::new(), std::collections::BTreeMap::new());
    let mut seen_ids = std::collections::HashSet::new();
    for l in read(file).lines() {
        let mut cols = l.splitn(3, '\t');
        let (Some(id), Some(lang), Some(text)) = (cols.next(), cols.next(), cols.next()) else {
            continue;
        };
        let (Some(g), Some(original)) = (gold.get(id), texts.get(id)) else {
            panic!("translated.tsv: {id} is not a dev tweet");
        };
        if seen_ids.insert(id.to_string()) {
            originals.push((original.clone(), Some("en".to_string()), g.clone()));
        }
        by_lang.entry(lang.to_string()).or_insert_with(Vec::new).push((
            text.to_string(),
            Some(lang.to_string()),
            g.clone(),
        ));
    }
    (originals, by_lang)
}

/// The recorded stream.
pub fn stream(data: &Path, n: usize) -> Vec<Post> {
    // Each tweet's fact-check, from the qrels of both splits.
    let mut gold: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    for split in ["Train", "Dev"] {
        let qrels = std::fs::read_to_string(data.join(format!("claim-matching/CT2022-Task2A-EN-{split}_QRELs.tsv")))
            .unwrap_or_default();
        for l in qrels.lines() {
            let cols: Vec<&str> = l.split('\t').collect();
            if let [tweet, _, claim, ..] = cols.as_slice() {
                gold.insert(tweet.to_string(), claim.trim_start_matches("vclaim-sno-").to_string());
            }
        }
    }
    let tweets: Vec<(String, Option<String>)> =
        std::fs::read_to_string(data.join("claim-matching/CT2022-Task2A-EN-Train-Dev_Queries.tsv"))
            .expect("the CheckThat! tweets")
            .lines()
            .filter_map(|l| l.split_once('\t').map(|(id, t)| (t.to_string(), gold.get(id).cloned())))
            .collect();
    let mut unrelated: Vec<(String, Option<String>)> = Vec::new();
    if let Ok(t) = std::fs::read_to_string(data.join("language-id/tweetlid2014-train.tsv")) {
        for l in t.lines().skip(1) {
            let cols: Vec<&str> = l.splitn(4, '\t').collect();
            if cols.len() == 4 {
                unrelated.push((cols[3].to_string(), None));
            }
        }
    }
    if let Ok(t) = std::fs::read_to_string(data.join("extraction/ground-truth.json")) {
        let v: serde_json::Value = serde_json::from_str(&t).unwrap_or_default();
        for article in v.as_object().into_iter().flat_map(|o| o.values()) {
            for s in article["articleBody"].as_str().unwrap_or("").split(". ") {
                if s.len() > 20 {
                    unrelated.push((s.chars().take(300).collect(), Some("en".into())));
                }
            }
        }
    }
    for p in super::common::posts(data, usize::MAX) {
        unrelated.push((p, Some("en".into())));
    }
    let mut rng = fastrand::Rng::with_seed(7);
    let mut out = Vec::with_capacity(n);
    let (mut t, mut u) = (0, 0);
    for i in 0..n {
        if i % 100 == 0 {
            let (text, claim) = tweets[t % tweets.len()].clone();
            out.push((text, Some("en".into()), Some(claim.unwrap_or_default())));
            t += 1;
        } else {
            let (text, lang) = unrelated[u % unrelated.len()].clone();
            out.push((text, lang, None));
            u += 1;
        }
    }
    rng.shuffle(&mut out);
    out
}
