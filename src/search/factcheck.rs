//! Google Fact Check Tools (`[factcheck]`, its own key): professional fact-checks of a claim
//! (`GET /v1alpha1/claims:search?query=`) and of a picture (`claims:imageSearch?imageUri=`),
//! in the post's language when one is set (`languageCode`). Both answer claims, each with its
//! claim reviews (publisher name and site, URL, title, textual rating, review date,
//! language); pages are followed with `nextPageToken` up to `max_pages`. Each review becomes a
//! [`ClaimReview`] (`ReviewSource::Api`) and its page a search candidate, read through the
//! same guard, extraction, credibility rule and relevance as any page. Errors — a refused key
//! (403), the quota (429 `RESOURCE_EXHAUSTED`), a bad request — cost only this source: the
//! web search goes on.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Hit, SearchError};
use crate::model::ClaimReview;
use crate::secret::{self, Secret};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FactCheckConfig {
    /// Where the API key is (environment variable or file); neither set: the source is off.
    pub api_key_env: String,
    pub api_key_file: String,
    /// The API's root ("" = https://factchecktools.googleapis.com).
    pub base_url: String,
    /// Claims asked per page (`pageSize`) and pages read per query at most.
    pub page_size: usize,
    pub max_pages: usize,
    /// Only reviews of the last this many days (`maxAgeDays`; 0 = any age).
    pub max_age_days: u32,
}

impl Default for FactCheckConfig {
    fn default() -> Self {
        FactCheckConfig {
            api_key_env: String::new(),
            api_key_file: String::new(),
            base_url: String::new(),
            page_size: 10,
            max_pages: 2,
            max_age_days: 0,
        }
    }
}

pub struct FactChecker {
    http: reqwest::Client,
    base: String,
    key: Secret,
    config: FactCheckConfig,
    max_response_bytes: usize,
}

const BACKEND: &str = "factcheck";

impl FactChecker {
    /// The configured source, or `None` when no key is configured.
    pub fn new(
        config: &FactCheckConfig,
        search: &super::SearchConfig,
    ) -> Result<Option<FactChecker>, secret::SecretError> {
        let Some(key) = secret::resolve("factcheck.api_key", &config.api_key_env, &config.api_key_file, false)? else {
            return Ok(None);
        };
        let base = if config.base_url.is_empty() {
            "https://factchecktools.googleapis.com"
        } else {
            config.base_url.as_str()
        };
        Ok(Some(FactChecker {
            http: super::client(search),
            base: base.trim_end_matches('/').to_string(),
            key,
            config: config.clone(),
            max_response_bytes: search.max_response_bytes,
        }))
    }

    /// Reviews of claims matching `query` (in `language`, a BCP-47 code, when known).
    pub async fn search(&self, query: &str, language: Option<&str>) -> Result<Vec<ClaimReview>, SearchError> {
        self.pages("claims:search", ("query", query), language).await
    }

    /// Reviews of claims that used the picture at `image_url` (a public URL).
    pub async fn image_search(&self, image_url: &str, language: Option<&str>) -> Result<Vec<ClaimReview>, SearchError> {
        self.pages("claims:imageSearch", ("imageUri", image_url), language)
            .await
    }

    async fn pages(
        &self,
        method: &str,
        what: (&str, &str),
        language: Option<&str>,
    ) -> Result<Vec<ClaimReview>, SearchError> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..self.config.max_pages.max(1) {
            let mut q: Vec<(&str, String)> = vec![
                (what.0, what.1.to_string()),
                ("pageSize", self.config.page_size.to_string()),
                ("key", self.key.expose().to_string()),
            ];
            if let Some(l) = language.filter(|l| !l.is_empty()) {
                q.push(("languageCode", l.to_string()));
            }
            if self.config.max_age_days > 0 {
                q.push(("maxAgeDays", self.config.max_age_days.to_string()));
            }
            if let Some(t) = &token {
                q.push(("pageToken", t.clone()));
            }
            let resp = self
                .http
                .get(format!("{}/v1alpha1/{method}", self.base))
                .query(&q)
                .send()
                .await;
            let page = super::read_json(BACKEND, resp, self.max_response_bytes).await?;
            out.extend(reviews_of(&page));
            token = page["nextPageToken"]
                .as_str()
                .filter(|t| !t.is_empty())
                .map(str::to_string);
            if token.is_none() {
                break;
            }
        }
        Ok(out)
    }
}

/// The claim reviews of one answer page (`extract::claimreview::api_reviews`).
pub fn reviews_of(page: &Value) -> Vec<ClaimReview> {
    crate::extract::claimreview::api_reviews(page)
}

/// The reviews as search hits: each review's page, titled, its rating as the snippet.
pub fn as_hits(reviews: &[ClaimReview]) -> Vec<Hit> {
    reviews
        .iter()
        .map(|r| Hit {
            title: r.claim.clone(),
            url: r.url.clone(),
            snippet: r.rating.clone(),
            published: r.reviewed,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use axum::extract::Query;
    use axum::routing::get;
    use serde_json::json;

    use super::*;

    /// The API in its documented response format: two pages of `claims:search` (the second
    /// reached with `nextPageToken`), `claims:imageSearch`'s `results[].claim`, and the quota
    /// error as Google words it.
    #[tokio::test]
    async fn both_methods_pages_and_errors_in_the_real_format() {
        let seen: Arc<Mutex<Vec<std::collections::HashMap<String, String>>>> = Arc::default();
        let log = seen.clone();
        let app = axum::Router::new()
            .route(
                "/v1alpha1/claims:search",
                get(move |Query(q): Query<std::collections::HashMap<String, String>>| {
                    let log = log.clone();
                    async move {
                        log.lock().unwrap().push(q.clone());
                        if q.get("query").map(String::as_str) == Some("quota") {
                            return (
                                axum::http::StatusCode::TOO_MANY_REQUESTS,
                                axum::Json(json!({"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}})),
                            );
                        }
                        let page = if q.contains_key("pageToken") {
                            json!({"claims": [{"text": "Cheese moon", "claimReview": [
                                {"publisher": {"name": "Full Fact", "site": "fullfact.org"}, "url": "https://fullfact.org/b", "textualRating": "Incorrect", "reviewDate": "2024-02-01T00:00:00Z", "languageCode": "en"},
                                {"publisher": {"name": "No URL"}, "textualRating": "False"}]}]})
                        } else {
                            json!({"claims": [{"text": "The Moon is made of cheese", "claimant": "A blog", "claimDate": "2024-01-01T00:00:00Z",
                                "claimReview": [{"publisher": {"name": "PolitiFact", "site": "politifact.com"}, "url": "https://www.politifact.com/a",
                                "title": "No, the Moon is not cheese", "reviewDate": "2024-01-05T00:00:00Z", "textualRating": "Pants on Fire", "languageCode": "en"}]}],
                                "nextPageToken": "CAo"})
                        };
                        (axum::http::StatusCode::OK, axum::Json(page))
                    }
                }),
            )
            .route(
                "/v1alpha1/claims:imageSearch",
                get(|| async {
                    axum::Json(json!({"results": [{"claim": {"text": "Photo shows a cheese moon", "claimReview": [
                        {"publisher": {"name": "AFP Fact Check", "site": "factcheck.afp.com"}, "url": "https://factcheck.afp.com/c", "textualRating": "Altered photo"}]}}]}))
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        std::env::set_var("MUSEBOT_TEST_FACTCHECK_KEY", "k3y");
        let config = FactCheckConfig {
            api_key_env: "MUSEBOT_TEST_FACTCHECK_KEY".into(),
            base_url: format!("http://{addr}"),
            ..FactCheckConfig::default()
        };
        let fc = FactChecker::new(&config, &crate::search::SearchConfig::default())
            .unwrap()
            .unwrap();
        let found = fc.search("moon cheese", Some("en")).await.unwrap();
        let got: Vec<(&str, &str, &str)> = found
            .iter()
            .map(|r| (r.publisher.as_str(), r.rating.as_str(), r.url.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("PolitiFact", "Pants on Fire", "https://www.politifact.com/a"),
                ("Full Fact", "Incorrect", "https://fullfact.org/b")
            ]
        );
        assert_eq!(found[0].claimant.as_deref(), Some("A blog"));
        assert_eq!(found[0].reviewed.unwrap().format("%Y-%m-%d").to_string(), "2024-01-05");
        let asked = seen.lock().unwrap().clone();
        assert_eq!(asked.len(), 2, "the second page through nextPageToken");
        assert_eq!(asked[0].get("languageCode").map(String::as_str), Some("en"));
        assert_eq!(asked[0].get("key").map(String::as_str), Some("k3y"));
        assert_eq!(asked[1].get("pageToken").map(String::as_str), Some("CAo"));
        let images = fc.image_search("https://img.example/moon.jpg", None).await.unwrap();
        assert_eq!(images[0].publisher, "AFP Fact Check");
        let err = fc.search("quota", None).await.unwrap_err();
        assert!(
            err.to_string().contains("429") && err.to_string().contains("RESOURCE_EXHAUSTED"),
            "{err}"
        );
        assert!(!err.to_string().contains("k3y"), "the key is never in an error: {err}");
        // No key configured: no source.
        assert!(
            FactChecker::new(&FactCheckConfig::default(), &crate::search::SearchConfig::default())
                .unwrap()
                .is_none()
        );
    }
}
