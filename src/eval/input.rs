//! The posts `musebot eval` runs: JSONL (`{"id", "text", "images", "time", "language"}` per
//! line), CSV with those columns (`images` separated by spaces), or Muse's own `posts.csv`
//! (`post_tweet_id, post_text, response_type, response_text`: one row per reply, read as
//! they are — each post once, its replies kept as references, its time taken from the tweet
//! id). A folder is read as Muse's: `posts.csv` inside it, expert ratings in `ratings/`.
//! A line or row that cannot be used (bad JSON, a bad time, no id, an id given twice, neither
//! text nor images) is skipped with its reason, which the run prints and the report shows; a
//! file with no usable post is an error. Relative image paths are read from the file's folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// One post to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalPost {
    pub id: String,
    pub text: String,
    /// Image URLs or local paths, as `musebot check --image` takes them (`null` = none).
    #[serde(default, deserialize_with = "none_is_empty")]
    pub images: Vec<String>,
    /// When it was posted: retrieval uses only what was published before.
    #[serde(default)]
    pub time: Option<DateTime<Utc>>,
    #[serde(default)]
    pub language: Option<String>,
    /// Replies the input file carries (Muse's `muse`, `gpt-4`, `human-high`…), by kind.
    #[serde(default)]
    pub references: BTreeMap<String, String>,
    /// Where it is in its file (for messages).
    #[serde(skip)]
    pub line: usize,
}

fn none_is_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(Option::<Vec<String>>::deserialize(d)?.unwrap_or_default())
}

/// The posts, the folder of expert ratings when the input has one, and each line skipped.
#[derive(Debug)]
pub struct Input {
    pub posts: Vec<EvalPost>,
    pub ratings: Option<PathBuf>,
    /// `file line N: why`, for every line or row left out.
    pub skipped: Vec<String>,
}

/// Reads `path` (a `.jsonl`, a `.csv`, or a Muse folder).
pub fn load(path: &Path) -> anyhow::Result<Input> {
    let mut skipped = Vec::new();
    if path.is_dir() {
        let file = path.join("posts.csv");
        let posts = check(&file, read_csv(&file, &mut skipped)?, &mut skipped)?;
        let ratings = path.join("ratings");
        return Ok(Input {
            posts,
            ratings: ratings.is_dir().then_some(ratings),
            skipped,
        });
    }
    let posts = match path.extension().and_then(|e| e.to_str()) {
        Some("jsonl") | Some("json") => read_jsonl(path, &mut skipped)?,
        Some("csv") => read_csv(path, &mut skipped)?,
        _ => anyhow::bail!(
            "{}: give a .jsonl or .csv file of posts, or a folder holding Muse's posts.csv",
            path.display()
        ),
    };
    let posts = check(path, posts, &mut skipped)?;
    // Muse's layout: ratings/ beside posts.csv.
    let ratings = path
        .parent()
        .map(|p| p.join("ratings"))
        .filter(|r| r.join("tweetid_postid.csv").is_file());
    Ok(Input {
        posts,
        ratings,
        skipped,
    })
}

fn read_jsonl(path: &Path, skipped: &mut Vec<String>) -> anyhow::Result<Vec<EvalPost>> {
    let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let mut posts = Vec::new();
    for (n, line) in text.trim_start_matches('\u{feff}').lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<EvalPost>(line) {
            Ok(mut post) => {
                post.line = n + 1;
                posts.push(post);
            }
            Err(e) => skipped.push(format!(
                "{} line {}: {e} — each line is {{\"id\": …, \"text\": …}} with optional images, time (RFC 3339), language",
                path.display(),
                n + 1
            )),
        }
    }
    Ok(posts)
}

fn read_csv(path: &Path, skipped: &mut Vec<String>) -> anyhow::Result<Vec<EvalPost>> {
    let mut reader = csv::Reader::from_path(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let headers = reader.headers()?.clone();
    let col = |name: &str| headers.iter().position(|h| h.trim() == name);
    let muse = col("post_tweet_id").is_some() && col("post_text").is_some();
    let (id, text) = if muse {
        (col("post_tweet_id"), col("post_text"))
    } else {
        (col("id"), col("text"))
    };
    let (Some(id), Some(text)) = (id, text) else {
        anyhow::bail!(
            "{}: no `id` and `text` columns (nor Muse's `post_tweet_id` and `post_text`)",
            path.display()
        );
    };
    let (images, time, language) = (col("images"), col("time"), col("language"));
    let (kind, reply) = (col("response_type"), col("response_text"));
    let mut posts: Vec<EvalPost> = Vec::new();
    let mut at: BTreeMap<String, usize> = BTreeMap::new();
    for (n, row) in reader.records().enumerate() {
        let row = match row {
            Ok(row) => row,
            Err(e) => {
                skipped.push(format!("{} row {}: {e}", path.display(), n + 2));
                continue;
            }
        };
        let get = |i: Option<usize>| i.and_then(|i| row.get(i)).map(str::trim).filter(|s| !s.is_empty());
        let post_id = get(Some(id)).unwrap_or_default().to_string();
        let i = match at.get(&post_id) {
            // Muse's file has a row per reply: a post's id repeats.
            Some(&i) if muse => i,
            // Elsewhere a repeated id is a second post, which `check` skips.
            _ => {
                let time = match get(time) {
                    Some(t) => match DateTime::parse_from_rfc3339(t) {
                        Ok(t) => Some(t.with_timezone(&Utc)),
                        Err(e) => {
                            skipped.push(format!(
                                "{} row {}: time `{t}`: {e} — use RFC 3339",
                                path.display(),
                                n + 2
                            ));
                            continue;
                        }
                    },
                    None if muse => snowflake_time(&post_id),
                    None => None,
                };
                posts.push(EvalPost {
                    id: post_id.clone(),
                    text: get(Some(text)).unwrap_or_default().to_string(),
                    images: get(images)
                        .map(|s| s.split_whitespace().map(String::from).collect())
                        .unwrap_or_default(),
                    time,
                    language: get(language).map(String::from),
                    references: BTreeMap::new(),
                    line: n + 2,
                });
                at.insert(post_id, posts.len() - 1);
                posts.len() - 1
            }
        };
        if let (Some(k), Some(r)) = (get(kind), get(reply)) {
            posts[i].references.insert(k.to_string(), r.to_string());
        }
    }
    Ok(posts)
}

/// Keeps the posts with an id (the first of each), and text or images; relative image paths
/// made relative to the file's folder.
fn check(path: &Path, posts: Vec<EvalPost>, skipped: &mut Vec<String>) -> anyhow::Result<Vec<EvalPost>> {
    let mut seen = std::collections::HashSet::new();
    let mut kept = Vec::new();
    let folder = path.parent().unwrap_or(Path::new("."));
    for mut p in posts {
        let at = format!("{} line {}", path.display(), p.line);
        if p.id.is_empty() {
            skipped.push(format!(
                "{at}: no id — give every post an id (results are resumed by it)"
            ));
        } else if !seen.insert(p.id.clone()) {
            skipped.push(format!("{at}: id `{}` is given again (the first is kept)", p.id));
        } else if p.text.trim().is_empty() && p.images.is_empty() {
            skipped.push(format!("{at}: post `{}` has neither text nor images", p.id));
        } else {
            for i in &mut p.images {
                if !i.contains("://") && Path::new(i.as_str()).is_relative() {
                    *i = folder.join(&*i).display().to_string();
                }
            }
            kept.push(p);
        }
    }
    if kept.is_empty() {
        anyhow::bail!("{}: no usable post ({} lines skipped)", path.display(), skipped.len());
    }
    Ok(kept)
}

/// When a tweet was posted, from its id (Twitter's snowflake: milliseconds since
/// 2010-11-04T01:42:54.657Z in the bits above the 22 lowest). Ids from before snowflakes
/// (2010) give none.
pub fn snowflake_time(id: &str) -> Option<DateTime<Utc>> {
    let id: u64 = id.parse().ok()?;
    if id < 1 << 32 {
        return None;
    }
    DateTime::from_timestamp_millis(((id >> 22) + 1_288_834_974_657) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tweet_id_gives_its_time() {
        // 1625153911525937157 is the first post of Muse's posts.csv (East Palestine, 13 Feb 2023).
        let t = snowflake_time("1625153911525937157").unwrap();
        assert_eq!(t.to_rfc3339(), "2023-02-13T15:24:21.064+00:00");
        assert_eq!(snowflake_time("12345"), None);
        assert_eq!(snowflake_time("not a number"), None);
    }

    #[test]
    fn jsonl_and_csv_read_the_same_posts_and_name_bad_lines() {
        let dir = tempfile::tempdir().unwrap();
        let jsonl = dir.path().join("posts.jsonl");
        std::fs::write(
            &jsonl,
            "{\"id\": \"a\", \"text\": \"The moon is cheese.\", \"time\": \"2024-01-02T03:04:05Z\", \"language\": \"en\"}\n\n{\"id\": \"b\", \"text\": \"\", \"images\": [\"x.png\"]}\n",
        )
        .unwrap();
        let j = load(&jsonl).unwrap().posts;
        let strip = |mut v: Vec<EvalPost>| {
            v.iter_mut().for_each(|p| p.line = 0);
            v
        };
        let csv = dir.path().join("posts.csv");
        std::fs::write(
            &csv,
            "id,text,images,time,language\na,The moon is cheese.,,2024-01-02T03:04:05Z,en\nb,,x.png,,\n",
        )
        .unwrap();
        let c = load(&csv).unwrap().posts;
        assert_eq!(strip(j.clone()), strip(c));
        let image = dir.path().join("x.png").display().to_string();
        assert_eq!(j[1].images, vec![image], "read from the file's folder");
        // Unusable lines are skipped with their reason; the rest run.
        std::fs::write(
            &jsonl,
            "{\"id\": \"a\", \"text\": \"x\"}\n{\"text\": 3}\n{\"id\": \"a\", \"text\": \"y\"}\n",
        )
        .unwrap();
        let input = load(&jsonl).unwrap();
        assert_eq!(input.posts.len(), 1);
        assert_eq!(input.posts[0].text, "x");
        assert_eq!(input.skipped.len(), 2, "{:?}", input.skipped);
        assert!(
            input.skipped[0].contains("line 2")
                && input.skipped[1].contains("line 3")
                && input.skipped[1].contains("again"),
            "{:?}",
            input.skipped
        );
        // A byte-order mark and `"images": null` are read as nothing.
        std::fs::write(&jsonl, "\u{feff}{\"id\": \"a\", \"text\": \"x\", \"images\": null}\n").unwrap();
        let input = load(&jsonl).unwrap();
        assert!(
            input.skipped.is_empty() && input.posts[0].images.is_empty(),
            "{:?}",
            input.skipped
        );
        std::fs::write(&csv, "id,text,time\na,x,yesterday\n").unwrap();
        let e = load(&csv).unwrap_err().to_string();
        assert!(e.contains("no usable post"), "{e}");
        std::fs::write(&csv, "name,body\na,x\n").unwrap();
        assert!(load(&csv)
            .unwrap_err()
            .to_string()
            .contains("no `id` and `text` columns"));
    }

    #[test]
    fn muse_posts_are_read_as_they_are() {
        let Some(data) = crate::eval::shared_data("muse") else {
            return;
        };
        let input = load(&data).unwrap();
        assert_eq!(input.posts.len(), 120, "Muse's 120 posts, each once");
        assert!(input.ratings.is_some());
        let p = &input.posts[0];
        assert!(p.text.contains("Palestine, Ohio"));
        assert!(p.time.is_some());
        assert!(
            p.references.contains_key("muse") && p.references.contains_key("human-high"),
            "{:?}",
            p.references.keys()
        );
    }
}
