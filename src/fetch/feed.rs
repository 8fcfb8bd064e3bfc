//! Feeds (RSS, Atom, JSON Feed) fetched through the same guard, redirects, time limit and
//! size cap as a page, as conditional GETs: the validators of the last answer (`ETag`,
//! `Last-Modified`) go back as `If-None-Match` / `If-Modified-Since`, and a 304 costs no body.
//! A feed that never ends is cut by the size cap or the time limit, whichever comes first.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue, ETAG, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED};
use serde::{Deserialize, Serialize};
use url::Url;

use super::{FetchError, Fetcher};

/// What a server said about the version of a feed it sent, to be sent back next time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Validators {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

/// A feed's answer.
#[derive(Debug)]
pub enum FeedAnswer {
    /// 304: the feed has not changed since `known`.
    NotModified,
    /// The feed's bytes, from `url` (after redirects), and its new validators.
    Fresh {
        url: Url,
        body: Vec<u8>,
        validators: Validators,
    },
}

/// Content types a feed is served with (many servers use the generic XML or text ones).
fn maybe_feed(mime: &str) -> bool {
    mime.is_empty()
        || matches!(
            mime,
            "application/rss+xml"
                | "application/atom+xml"
                | "application/rdf+xml"
                | "application/xml"
                | "text/xml"
                | "application/feed+json"
                | "application/json"
                | "text/plain"
                | "application/octet-stream"
        )
}

impl Fetcher {
    /// One conditional GET of the feed at `url`, at most `max_bytes`.
    pub async fn fetch_feed(&self, url: &str, known: &Validators, max_bytes: usize) -> Result<FeedAnswer, FetchError> {
        let mut headers = HeaderMap::new();
        let header = |v: &Option<String>| v.as_deref().and_then(|v| HeaderValue::from_str(v).ok());
        if let Some(v) = header(&known.etag) {
            headers.insert(IF_NONE_MATCH, v);
        }
        if let Some(v) = header(&known.last_modified) {
            headers.insert(IF_MODIFIED_SINCE, v);
        }
        let timeout = Duration::from_secs(self.config.timeout_secs);
        let got = tokio::time::timeout(
            timeout,
            self.fetch_body(url, &headers, maybe_feed, max_bytes, FetchError::NotFeed),
        )
        .await
        .unwrap_or(Err(FetchError::Timeout))?;
        if got.not_modified {
            return Ok(FeedAnswer::NotModified);
        }
        let value = |name| {
            got.headers
                .get(name)
                .and_then(|v: &HeaderValue| v.to_str().ok())
                .map(str::to_string)
        };
        Ok(FeedAnswer::Fresh {
            validators: Validators {
                etag: value(ETAG),
                last_modified: value(LAST_MODIFIED),
            },
            url: got.url,
            body: got.body,
        })
    }
}
