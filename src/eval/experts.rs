//! The Muse paper's expert ratings (`ratings/Q*.csv`: `id, post_id, response_id, username,
//! label, response_text, response_type`, and per reference `response_url_id, url`;
//! `tweetid_postid.csv` maps `post_id` to the tweet id of `posts.csv`): each rated reply as an
//! [`Item`] the judge can rate, and each expert's labels in file order (`id`).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::input::EvalPost;
use super::judge::{clean_url, Rating};
use super::rubric::DIMENSIONS;

/// One rated reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// `post_id/response_id`.
    pub key: String,
    pub tweet_id: String,
    pub post_text: String,
    pub response_type: String,
    pub response_text: String,
    /// The reply's references, as the experts rated them.
    pub urls: Vec<String>,
}

/// Every rated reply and every expert's rating of it.
#[derive(Debug, Default)]
pub struct Experts {
    pub items: Vec<Item>,
    /// By item key: each expert's rating, in the order their ratings were recorded.
    pub ratings: BTreeMap<String, Vec<(String, Rating)>>,
}

/// Reads the ratings folder; `posts` gives each item's post text (items whose post is not
/// among them are left out, and counted in the error only when none is left).
pub fn load(dir: &Path, posts: &[EvalPost]) -> anyhow::Result<Experts> {
    let read = |name: &str| -> anyhow::Result<(csv::StringRecord, Vec<csv::StringRecord>)> {
        let path = dir.join(name);
        let mut r = csv::Reader::from_path(&path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        let h = r.headers()?.clone();
        let rows = r
            .records()
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        Ok((h, rows))
    };
    let col = |h: &csv::StringRecord, name: &str, file: &str| {
        h.iter()
            .position(|c| c == name)
            .ok_or_else(|| anyhow::anyhow!("{file}: no `{name}` column"))
    };
    let (h, rows) = read("tweetid_postid.csv")?;
    let (pi, ti) = (
        col(&h, "post_id", "tweetid_postid.csv")?,
        col(&h, "tweet_id", "tweetid_postid.csv")?,
    );
    let tweet_of: BTreeMap<String, String> = rows.iter().map(|r| (r[pi].to_string(), r[ti].to_string())).collect();
    let text_of: BTreeMap<&str, &str> = posts.iter().map(|p| (p.id.as_str(), p.text.as_str())).collect();

    let mut experts = Experts::default();
    // (key, expert) → (record id, rating), so each expert's labels of one item gather.
    let mut by: BTreeMap<(String, String), (u64, Rating)> = BTreeMap::new();
    let mut items: BTreeMap<String, Item> = BTreeMap::new();
    for d in &DIMENSIONS {
        let file = format!("{}.csv", d.file);
        let (h, rows) = read(&file)?;
        let [id, post, resp, user, label, text, kind] = [
            "id",
            "post_id",
            "response_id",
            "username",
            "label",
            "response_text",
            "response_type",
        ]
        .map(|c| col(&h, c, &file));
        let (id, post, resp, user, label, text, kind) = (id?, post?, resp?, user?, label?, text?, kind?);
        let url = if d.per_reference {
            Some(col(&h, "url", &file)?)
        } else {
            None
        };
        for r in &rows {
            let key = format!("{}/{}", &r[post], &r[resp]);
            let Some(tweet) = tweet_of.get(&r[post]) else { continue };
            let Some(post_text) = text_of.get(tweet.as_str()) else {
                continue;
            };
            let item = items.entry(key.clone()).or_insert_with(|| Item {
                key: key.clone(),
                tweet_id: tweet.clone(),
                post_text: post_text.to_string(),
                response_type: r[kind].to_string(),
                response_text: r[text].to_string(),
                urls: Vec::new(),
            });
            let entry = by
                .entry((key.clone(), r[user].to_string()))
                .or_insert_with(|| (r[id].parse().unwrap_or(u64::MAX), Rating::default()));
            entry.0 = entry.0.min(r[id].parse().unwrap_or(u64::MAX));
            let Some(l) = d.normalize(&r[label]) else { continue };
            match url {
                Some(u) => {
                    let u = clean_url(&r[u]);
                    if !item.urls.contains(&u) {
                        item.urls.push(u.clone());
                    }
                    entry.1.references.entry(u).or_default().insert(d.key.into(), l);
                }
                None => {
                    entry.1.answers.insert(d.key.into(), l);
                }
            }
        }
    }
    if items.is_empty() {
        anyhow::bail!(
            "{}: no rated reply belongs to a post of the input — give Muse's posts.csv with its ratings/",
            dir.display()
        );
    }
    let mut ordered: BTreeMap<String, Vec<(u64, String, Rating)>> = BTreeMap::new();
    for ((key, user), (id, rating)) in by {
        ordered.entry(key).or_default().push((id, user, rating));
    }
    for (key, mut list) in ordered {
        list.sort_by_key(|(id, _, _)| *id);
        experts
            .ratings
            .insert(key, list.into_iter().map(|(_, u, r)| (u, r)).collect());
    }
    experts.items = items.into_values().collect();
    Ok(experts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn muse_ratings_gather_per_reply_and_expert() {
        let Some(data) = crate::eval::shared_data("muse") else {
            return;
        };
        let input = super::super::input::load(&data).unwrap();
        let experts = load(input.ratings.as_ref().unwrap(), &input.posts).unwrap();
        assert!(experts.items.len() > 400, "{}", experts.items.len());
        let twice = experts.ratings.values().filter(|r| r.len() >= 2).count();
        assert!(twice >= 60, "65 replies are rated by two experts: {twice}");
        let (_, first) = &experts.ratings[&experts.items[0].key][0];
        assert!(first.answers.contains_key("overall"), "{first:?}");
        assert!(experts.items.iter().any(|i| !i.urls.is_empty()));
    }
}
