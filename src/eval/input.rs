//! The posts `musebot eval` runs: JSONL (`{"id", "text", "images", "time", "language"}` per
//! line), CSV with those columns (`images` separated by spaces), or Muse's own `posts.csv`
//! (`post_tweet_id, post_text, response_type, response_text`: one row per reply, read as
//! they are — each post once, its replies kept as references, its time taken from the tweet
//! id). A folder is read as Muse's: `posts.csv` inside it, expert ratings in `ratings/`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// One post to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalPost {
    pub id: String,
    pub text: String,
    /// Image URLs or local paths, as `musebot check --image` takes them.
    #[serde(default)]
    pub images: Vec<String>,
    /// When it was posted: retrieval uses only what was published before.
    #[serde(default)]
    pub time: Option<DateTime<Utc>>,
    #[serde(default)]
    pub language: Option<String>,
    /// Replies the input file carries (Muse's `muse`, `gpt-4`, `human-high`…), by kind.
    #[serde(default)]
    pub references: BTreeMap<String, String>,
}

/// The posts, and the folder of expert ratings when the input has one.
#[derive(Debug)]
pub struct Input {
    pub posts: Vec<EvalPost>,
    pub ratings: Option<PathBuf>,
}

/// Reads `path` (a `.jsonl`, a `.csv`, or a Muse folder). Each unusable row is an error that
/// names its line: an evaluation silently run on fewer posts would mislead.
pub fn load(path: &Path) -> anyhow::Result<Input> {
    if path.is_dir() {
        let posts = read_csv(&path.join("posts.csv"))?;
        let ratings = path.join("ratings");
        return Ok(Input {
            posts,
            ratings: ratings.is_dir().then_some(ratings),
        });
    }
    let posts = match path.extension().and_then(|e| e.to_str()) {
        Some("jsonl") | Some("json") => read_jsonl(path)?,
        Some("csv") => read_csv(path)?,
        _ => anyhow::bail!(
            "{}: give a .jsonl or .csv file of posts, or a folder holding Muse's posts.csv",
            path.display()
        ),
    };
    // Muse's layout: ratings/ beside posts.csv.
    let ratings = path
        .parent()
        .map(|p| p.join("ratings"))
        .filter(|r| r.join("tweetid_postid.csv").is_file());
    Ok(Input { posts, ratings })
}

fn read_jsonl(path: &Path) -> anyhow::Result<Vec<EvalPost>> {
    let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let mut posts = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let post: EvalPost = serde_json::from_str(line).map_err(|e| {
            anyhow::anyhow!(
                "{} line {}: {e} — each line is {{\"id\": …, \"text\": …}} with optional images, time (RFC 3339), language",
                path.display(),
                n + 1
            )
        })?;
        posts.push(post);
    }
    check(path, posts)
}

fn read_csv(path: &Path) -> anyhow::Result<Vec<EvalPost>> {
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
        let row = row.map_err(|e| anyhow::anyhow!("{} row {}: {e}", path.display(), n + 2))?;
        let get = |i: Option<usize>| i.and_then(|i| row.get(i)).map(str::trim).filter(|s| !s.is_empty());
        let post_id = get(Some(id)).unwrap_or_default().to_string();
        let i = match at.get(&post_id) {
            // Muse's file has a row per reply: a post's id repeats.
            Some(&i) if muse => i,
            Some(_) => anyhow::bail!("{} row {}: id `{post_id}` is given twice", path.display(), n + 2),
            None => {
                let time = match get(time) {
                    Some(t) => Some(
                        DateTime::parse_from_rfc3339(t)
                            .map_err(|e| {
                                anyhow::anyhow!("{} row {}: time `{t}`: {e} — use RFC 3339", path.display(), n + 2)
                            })?
                            .with_timezone(&Utc),
                    ),
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
                });
                at.insert(post_id, posts.len() - 1);
                posts.len() - 1
            }
        };
        if let (Some(k), Some(r)) = (get(kind), get(reply)) {
            posts[i].references.insert(k.to_string(), r.to_string());
        }
    }
    check(path, posts)
}

/// Ids present and unique, texts or images present.
fn check(path: &Path, posts: Vec<EvalPost>) -> anyhow::Result<Vec<EvalPost>> {
    let mut seen = std::collections::HashSet::new();
    for p in &posts {
        if p.id.is_empty() {
            anyhow::bail!(
                "{}: a post has no id — give every post an id (results are resumed by it)",
                path.display()
            );
        }
        if !seen.insert(p.id.as_str()) {
            anyhow::bail!("{}: id `{}` is given twice", path.display(), p.id);
        }
        if p.text.trim().is_empty() && p.images.is_empty() {
            anyhow::bail!("{}: post `{}` has neither text nor images", path.display(), p.id);
        }
    }
    if posts.is_empty() {
        anyhow::bail!("{}: no posts", path.display());
    }
    Ok(posts)
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
        let csv = dir.path().join("posts.csv");
        std::fs::write(
            &csv,
            "id,text,images,time,language\na,The moon is cheese.,,2024-01-02T03:04:05Z,en\nb,,x.png,,\n",
        )
        .unwrap();
        let c = load(&csv).unwrap().posts;
        assert_eq!(j, c);
        assert_eq!(j[1].images, vec!["x.png".to_string()]);
        std::fs::write(&jsonl, "{\"id\": \"a\", \"text\": \"x\"}\n{\"text\": 3}\n").unwrap();
        let e = load(&jsonl).unwrap_err().to_string();
        assert!(e.contains("line 2"), "{e}");
        std::fs::write(&csv, "id,text\na,x\na,y\n").unwrap();
        assert!(load(&csv).unwrap_err().to_string().contains("twice"));
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
