//! Reverse image search: the pages where a post's picture appears, from the backends in
//! `search.reverse_backends`, in order — the first that answers with any page wins; one that
//! fails or finds nothing passes to the next:
//!
//! - `serpapi_reverse`: SerpApi's `google_reverse_image` (Muse's engine), `image_results[]`,
//!   pages of 10 up to 50 links (Muse);
//! - `serpapi_lens`: SerpApi's `google_lens`, `visual_matches[]` (and `exact_matches[]`);
//! - `google_vision`: Cloud Vision `WEB_DETECTION`, `pagesWithMatchingImages[]` (the image sent
//!   as bytes, so it needs no public URL);
//! - `local`: the store's perceptual-hash index of every picture seen before — in earlier posts
//!   and on fetched pages — within [`crate::image::SAME_PICTURE`] bits; no key, no network.
//!
//! Hits are [`Hit`]s like a web search's, so the same credibility rules, fetch, extraction and
//! relevance follow.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Hit, SearchError};
use crate::retry;
use crate::secret::{self, Secret};
use crate::store::Store;

/// A reverse image search engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReverseKind {
    SerpapiReverse,
    SerpapiLens,
    GoogleVision,
    Local,
}

impl ReverseKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ReverseKind::SerpapiReverse => "serpapi_reverse",
            ReverseKind::SerpapiLens => "serpapi_lens",
            ReverseKind::GoogleVision => "google_vision",
            ReverseKind::Local => "local",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReverseBackendConfig {
    pub kind: ReverseKind,
    /// API root; empty = the service's public endpoint.
    #[serde(default)]
    pub base_url: String,
    #[serde(default)]
    pub api_key_env: String,
    #[serde(default)]
    pub api_key_file: String,
}

/// The picture to look up: its public URL (SerpApi fetches it), its bytes as a JPEG for
/// engines that take content (Vision), and its perceptual hash (the local index).
pub struct ImageQuery<'a> {
    pub url: &'a str,
    pub jpeg_base64: Option<&'a str>,
    pub phash: Option<&'a str>,
}

/// Links read per reverse search, at most (Muse: five pages of ten).
pub const MAX_LINKS: usize = 50;

pub struct ReverseSearcher {
    http: reqwest::Client,
    backends: Vec<(ReverseBackendConfig, Option<Secret>)>,
    store: Option<Store>,
    max_retries: usize,
    max_response_bytes: usize,
}

impl ReverseSearcher {
    pub fn new(config: &super::SearchConfig, store: Option<Store>) -> Result<ReverseSearcher, secret::SecretError> {
        let mut backends = Vec::new();
        for (i, b) in config.reverse_backends.iter().enumerate() {
            let needs_key = b.kind != ReverseKind::Local;
            let key = secret::resolve(
                &format!("search.reverse_backends[{i}].api_key"),
                &b.api_key_env,
                &b.api_key_file,
                needs_key,
            )?;
            backends.push((b.clone(), key));
        }
        let http = super::client(config);
        Ok(ReverseSearcher {
            http,
            backends,
            store,
            max_retries: config.max_retries,
            max_response_bytes: config.max_response_bytes,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.backends.is_empty()
    }

    /// Pages showing the picture, from the first backend that finds any.
    pub async fn search(&self, image: &ImageQuery<'_>) -> Result<Vec<Hit>, SearchError> {
        let mut last = None;
        for (b, key) in &self.backends {
            let result = match b.kind {
                ReverseKind::Local => Ok(self.local(image)),
                _ => {
                    retry::with_retries(self.max_retries, "reverse image search", || {
                        self.remote(b, key.as_ref(), image)
                    })
                    .await
                }
            };
            match result {
                Ok(hits) if !hits.is_empty() => {
                    tracing::info!(backend = b.kind.as_str(), hits = hits.len(), "reverse image search");
                    return Ok(hits);
                }
                Ok(_) => tracing::info!(backend = b.kind.as_str(), "reverse image search found nothing"),
                Err(e) => {
                    tracing::warn!(backend = b.kind.as_str(), error = %e, "reverse image search failed");
                    last = Some(e);
                }
            }
        }
        match last {
            Some(e) => Err(SearchError::AllFailed(Box::new(e))),
            None => Ok(Vec::new()),
        }
    }

    /// Pages of earlier posts and fetched pages whose picture is within `SAME_PICTURE` bits.
    fn local(&self, image: &ImageQuery<'_>) -> Vec<Hit> {
        let (Some(store), Some(phash)) = (&self.store, image.phash) else {
            return Vec::new();
        };
        let mut near: Vec<(u32, String)> = store
            .image_index()
            .into_iter()
            .filter(|(_, url)| url != image.url)
            .filter_map(|(h, url)| {
                crate::image::distance(phash, &h)
                    .filter(|d| *d <= crate::image::SAME_PICTURE)
                    .map(|d| (d, url))
            })
            .collect();
        near.sort();
        near.dedup_by(|a, b| a.1 == b.1);
        near.into_iter()
            .take(MAX_LINKS)
            .map(|(_, url)| Hit {
                title: String::new(),
                url,
                snippet: String::new(),
                published: None,
            })
            .collect()
    }

    async fn remote(
        &self,
        b: &ReverseBackendConfig,
        key: Option<&Secret>,
        image: &ImageQuery<'_>,
    ) -> Result<Vec<Hit>, SearchError> {
        let backend = b.kind.as_str();
        let key = key.map(Secret::expose).unwrap_or_default();
        match b.kind {
            ReverseKind::SerpapiReverse => {
                let base = root(&b.base_url, "https://serpapi.com");
                let mut hits = Vec::new();
                for start in (0..MAX_LINKS).step_by(10) {
                    let q = [
                        ("engine", "google_reverse_image".to_string()),
                        ("image_url", image.url.to_string()),
                        ("start", start.to_string()),
                        ("api_key", key.to_string()),
                    ];
                    let page = self.get_json(backend, &format!("{base}/search.json"), &q).await?;
                    let found = links(&page, &["image_results"]);
                    if found.is_empty() {
                        break;
                    }
                    hits.extend(found);
                }
                Ok(hits)
            }
            ReverseKind::SerpapiLens => {
                let base = root(&b.base_url, "https://serpapi.com");
                let q = [
                    ("engine", "google_lens".to_string()),
                    ("url", image.url.to_string()),
                    ("api_key", key.to_string()),
                ];
                let page = self.get_json(backend, &format!("{base}/search.json"), &q).await?;
                Ok(links(&page, &["exact_matches", "visual_matches"]))
            }
            ReverseKind::GoogleVision => {
                let base = root(&b.base_url, "https://vision.googleapis.com");
                let source = match image.jpeg_base64 {
                    Some(content) => serde_json::json!({ "content": content }),
                    None => serde_json::json!({ "source": { "imageUri": image.url } }),
                };
                let body = serde_json::json!({"requests": [{"image": source, "features": [{"type": "WEB_DETECTION", "maxResults": MAX_LINKS}]}]});
                let resp = self
                    .http
                    .post(format!("{base}/v1/images:annotate"))
                    .query(&[("key", key)])
                    .json(&body)
                    .send()
                    .await;
                let page = super::read_json(backend, resp, self.max_response_bytes).await?;
                vision_pages(&page).map_err(|reason| SearchError::Decode { backend, reason })
            }
            ReverseKind::Local => Ok(Vec::new()),
        }
    }

    async fn get_json(&self, backend: &'static str, url: &str, query: &[(&str, String)]) -> Result<Value, SearchError> {
        let resp = self.http.get(url).query(query).send().await;
        super::read_json(backend, resp, self.max_response_bytes).await
    }
}

fn root(configured: &str, default: &str) -> String {
    if configured.is_empty() { default } else { configured }
        .trim_end_matches('/')
        .to_string()
}

/// `{link, title}` items of the named arrays (SerpApi answers "no results" with an `error`
/// and sometimes with results too: the arrays are read first).
fn links(page: &Value, arrays: &[&str]) -> Vec<Hit> {
    arrays
        .iter()
        .flat_map(|a| page[*a].as_array().into_iter().flatten())
        .filter_map(|r| {
            Some(Hit {
                url: r["link"].as_str()?.to_string(),
                title: r["title"].as_str().unwrap_or_default().to_string(),
                snippet: r["snippet"].as_str().unwrap_or_default().to_string(),
                published: None,
            })
        })
        .take(MAX_LINKS)
        .collect()
}

/// Cloud Vision's `pagesWithMatchingImages` (a per-image `error` is a failure).
fn vision_pages(page: &Value) -> Result<Vec<Hit>, String> {
    let detection = &page["responses"][0];
    if let Some(msg) = detection["error"]["message"].as_str() {
        return Err(msg.to_string());
    }
    Ok(detection["webDetection"]["pagesWithMatchingImages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            Some(Hit {
                url: p["url"].as_str()?.to_string(),
                title: strip_tags(p["pageTitle"].as_str().unwrap_or_default()),
                snippet: String::new(),
                published: None,
            })
        })
        .take(MAX_LINKS)
        .collect())
}

fn strip_tags(s: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in s.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers in the formats of SerpApi's documentation and Cloud Vision's reference.
    #[test]
    fn results_are_read_from_the_real_formats() {
        let reverse: Value = serde_json::from_str(r#"{"search_metadata":{"status":"Success"},"image_results":[{"position":1,"title":"Fake sign","link":"https://www.reuters.com/fact-check/sign","snippet":"A fake notice"}],"inline_images":[{"link":"https://x.example/i","source":"x"}]}"#).unwrap();
        let hits = links(&reverse, &["image_results"]);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].url, "https://www.reuters.com/fact-check/sign");
        let lens: Value = serde_json::from_str(r#"{"search_metadata":{"status":"Success"},"visual_matches":[{"position":1,"title":"Ex","link":"https://ex.org/p","source":"ex.org"}],"exact_matches":[{"position":1,"title":"Ex","link":"https://ex.org/q","date":"2 years ago"}]}"#).unwrap();
        let urls: Vec<String> = links(&lens, &["exact_matches", "visual_matches"])
            .into_iter()
            .map(|h| h.url)
            .collect();
        assert_eq!(urls, ["https://ex.org/q", "https://ex.org/p"]);
        let empty: Value = serde_json::from_str(r#"{"search_metadata":{"status":"Success"},"error":"Google Reverse Image hasn't returned any results for this query."}"#).unwrap();
        assert!(links(&empty, &["image_results"]).is_empty());
        assert_eq!(strip_tags("<b>Eiffel</b> Tower"), "Eiffel Tower");
        let vision: Value = serde_json::from_str(r#"{"responses":[{"webDetection":{"webEntities":[{"entityId":"/m/0x","score":0.9,"description":"Eiffel Tower"}],
 "pagesWithMatchingImages":[{"url":"https://ex.org/a","pageTitle":"<b>Eiffel</b>","fullMatchingImages":[{"url":"https://ex.org/i.jpg"}]}],
 "bestGuessLabels":[{"label":"eiffel tower","languageCode":"en"}]}}]}"#).unwrap();
        let hits = vision_pages(&vision).unwrap();
        assert_eq!(
            (hits[0].url.as_str(), hits[0].title.as_str()),
            ("https://ex.org/a", "Eiffel")
        );
        let failed: Value =
            serde_json::from_str(r#"{"responses":[{"error":{"code":3,"message":"Bad image data."}}]}"#).unwrap();
        assert_eq!(vision_pages(&failed).unwrap_err(), "Bad image data.");
    }
}
