//! Web search behind one interface: backends tried in the configured order with fallback
//! (Google Programmable Search, Brave, SearXNG, Serper, SerpApi, Tavily — each with its real
//! request and response format, in its own file), results cached in the store with a TTL (an
//! empty answer briefly, a re-check's search not at all: `cache.rs`), and an optional
//! "published before" bound passed to the engines that support one. The keyless
//! evidence index (`crate::index`) is a backend searched in place (`kind = "index"`), and the
//! last fallback of every search when `[index]` follows feeds.

mod backends;
mod cache;
pub mod factcheck;
pub mod reverse;

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::metrics::SharedMetrics;
use crate::retry::{self, Transient};
use crate::secret::{self, Secret};
use crate::store::Store;

pub use backends::BackendKind;
pub use cache::{Freshness, EMPTY_TTL_SECS};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchConfig {
    /// Backends in order of preference; the next is tried when one fails.
    pub backends: Vec<BackendConfig>,
    /// Results asked of a backend per query.
    pub results_per_query: usize,
    /// Largest search answer read, bytes (a bigger one is an error, not a memory spike).
    pub max_response_bytes: usize,
    /// How long a cached result list stays fresh, seconds (an empty one at most
    /// [`EMPTY_TTL_SECS`]; a re-check's search reads none).
    pub cache_ttl_secs: u64,
    /// Seconds for one search request.
    pub timeout_secs: u64,
    /// Retries of one search request on 429/5xx/network errors.
    pub max_retries: usize,
    /// Only pages published before this moment (RFC 3339; "" = no bound): the paper's
    /// fair-comparison setting. `musebot check --before` overrides it.
    pub before: String,
    /// Reverse image search engines, in order (`reverse.rs`).
    pub reverse_backends: Vec<reverse::ReverseBackendConfig>,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            backends: Vec::new(),
            results_per_query: 10,
            max_response_bytes: 2_000_000,
            cache_ttl_secs: 86_400,
            timeout_secs: 20,
            max_retries: 2,
            before: String::new(),
            reverse_backends: vec![reverse::ReverseBackendConfig {
                kind: reverse::ReverseKind::Local,
                base_url: String::new(),
                api_key_env: String::new(),
                api_key_file: String::new(),
            }],
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackendConfig {
    pub kind: BackendKind,
    /// API root; empty = the service's public endpoint (required for SearXNG).
    #[serde(default)]
    pub base_url: String,
    /// Environment variable holding the API key.
    #[serde(default)]
    pub api_key_env: String,
    /// File holding the API key (wins over `api_key_env`).
    #[serde(default)]
    pub api_key_file: String,
    /// Google only: the Programmable Search Engine id (`cx`), restricted to credible publishers.
    #[serde(default)]
    pub cx: String,
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    pub url: String,
    pub title: String,
    pub snippet: String,
    /// The engine's date for the page, when it gives one.
    pub published: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum SearchError {
    #[error("{backend}: HTTP {status}: {body}")]
    Status {
        backend: &'static str,
        status: u16,
        body: String,
        retry_after: Option<Duration>,
    },
    #[error("{backend}: unreachable: {reason}")]
    Network { backend: &'static str, reason: String },
    #[error("{backend}: unreadable answer: {reason}")]
    Decode { backend: &'static str, reason: String },
    #[error("no search backend configured — add one under [search] backends")]
    NoBackend,
    #[error("every search backend failed; last: {0}")]
    AllFailed(Box<SearchError>),
}

impl Transient for SearchError {
    fn is_transient(&self) -> bool {
        match self {
            SearchError::Status { status, .. } => *status == 429 || *status >= 500,
            SearchError::Network { .. } => true,
            _ => false,
        }
    }
    fn retry_after(&self) -> Option<Duration> {
        match self {
            SearchError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// A configured backend with its key.
struct Backend {
    config: BackendConfig,
    key: Option<Secret>,
}

pub struct Searcher {
    http: reqwest::Client,
    backends: Vec<Backend>,
    config: SearchConfig,
    store: Option<Store>,
    /// Failures by backend and kind, and backends that keep failing (`/healthz`).
    metrics: Option<SharedMetrics>,
    /// The evidence index, for `kind = "index"` backends.
    index: Option<std::sync::Arc<crate::index::EvidenceIndex>>,
}

impl SearchError {
    /// The failure's kind, for metrics: `network`, `rate_limited`, `server`, `refused` (a bad
    /// key or quota: 401/403), `http_4xx`, `decode`.
    pub fn kind(&self) -> &'static str {
        match self {
            SearchError::Status { status: 429, .. } => "rate_limited",
            SearchError::Status { status: 401 | 403, .. } => "refused",
            SearchError::Status { status, .. } if *status >= 500 => "server",
            SearchError::Status { .. } => "http_4xx",
            SearchError::Network { .. } => "network",
            SearchError::Decode { .. } => "decode",
            SearchError::NoBackend => "no_backend",
            SearchError::AllFailed(e) => e.kind(),
        }
    }
}

impl Searcher {
    /// Resolves every backend's key; a missing key names its config key.
    pub fn new(config: &SearchConfig, store: Option<Store>) -> Result<Searcher, secret::SecretError> {
        let mut backends = Vec::new();
        for (i, b) in config.backends.iter().enumerate() {
            let key = secret::resolve(
                &format!("search.backends[{i}].api_key"),
                &b.api_key_env,
                &b.api_key_file,
                b.kind.needs_key(),
            )?;
            backends.push(Backend { config: b.clone(), key });
        }
        let http = client(config);
        Ok(Searcher {
            http,
            backends,
            config: config.clone(),
            store,
            metrics: None,
            index: None,
        })
    }

    /// Searches `index` where a `kind = "index"` backend is listed, and after every listed
    /// backend when none is (the fallback when they fail or none is configured).
    pub fn with_index(mut self, index: Option<std::sync::Arc<crate::index::EvidenceIndex>>) -> Searcher {
        if index.is_some() && !self.backends.iter().any(|b| b.config.kind == BackendKind::Index) {
            self.backends.push(Backend {
                config: BackendConfig {
                    kind: BackendKind::Index,
                    base_url: String::new(),
                    api_key_env: String::new(),
                    api_key_file: String::new(),
                    cx: String::new(),
                },
                key: None,
            });
        }
        self.index = index;
        self
    }

    /// Reports failures and recoveries to `metrics`.
    pub fn with_metrics(mut self, metrics: Option<SharedMetrics>) -> Searcher {
        self.metrics = metrics;
        self
    }

    /// Results for `query`, from the cache or the first backend that answers.
    /// `language`: the post's (ISO 639-1), for the backends' language parameters.
    pub async fn search(
        &self,
        query: &str,
        before: Option<DateTime<Utc>>,
        language: Option<&str>,
    ) -> Result<Vec<Hit>, SearchError> {
        self.search_as(query, before, language, Freshness::Cached).await
    }

    /// [`Searcher::search`], reading the cache only when `freshness` allows it (a re-check's
    /// search asks the backends again); the answer is cached either way.
    pub async fn search_as(
        &self,
        query: &str,
        before: Option<DateTime<Utc>>,
        language: Option<&str>,
        freshness: Freshness,
    ) -> Result<Vec<Hit>, SearchError> {
        if self.backends.is_empty() {
            return Err(SearchError::NoBackend);
        }
        let mut last = None;
        let mut index_empty = false;
        for backend in &self.backends {
            let kind = backend.config.kind;
            if kind == BackendKind::Index {
                match self.search_index(query, before).await {
                    Ok(hits) if !hits.is_empty() => return Ok(hits),
                    // The index holds only what a few feeds published: finding nothing there
                    // is no answer, so the next backend is asked — and after a web backend's
                    // failure it leaves that failure standing (an outage, retried later, not
                    // "nothing found").
                    Ok(_) => index_empty = true,
                    Err(e) => {
                        tracing::warn!(backend = "index", error = %e, "search backend failed; trying the next");
                        last = Some(e);
                    }
                }
                continue;
            }
            let cache_key = cache::key(kind.as_str(), before, language, query);
            if let Some(hits) = cache::get(self.store.as_ref(), &cache_key, self.config.cache_ttl_secs, freshness) {
                return Ok(hits);
            }
            let ask = backends::Ask {
                query,
                before,
                language,
            };
            let result = retry::with_retries(self.config.max_retries, "search", || {
                backends::run(
                    &self.http,
                    &backend.config,
                    backend.key.as_ref(),
                    &ask,
                    self.config.results_per_query,
                    self.config.max_response_bytes,
                )
            })
            .await;
            if let Some(m) = &self.metrics {
                match &result {
                    Ok(_) => m.search_ok(kind.as_str()),
                    Err(e) => m.search_failed(kind.as_str(), e.kind()),
                }
            }
            match result {
                Ok(mut hits) => {
                    hits.retain(|h| {
                        url::Url::parse(&h.url).is_ok_and(|u| u.scheme() == "http" || u.scheme() == "https")
                    });
                    hits.truncate(self.config.results_per_query);
                    if let Some(b) = before {
                        hits.retain(|h| h.published.is_none_or(|p| p < b));
                    }
                    cache::put(self.store.as_ref(), &cache_key, &hits);
                    return Ok(hits);
                }
                Err(e) => {
                    tracing::warn!(backend = kind.as_str(), error = %e, "search backend failed; trying the next");
                    last = Some(e);
                }
            }
        }
        match last {
            Some(e) => Err(SearchError::AllFailed(Box::new(e))),
            // Only the index answered, and with nothing.
            None if index_empty => Ok(Vec::new()),
            None => Err(SearchError::NoBackend),
        }
    }

    /// The evidence index's answer (not cached: it is local and changes with every refresh).
    async fn search_index(&self, query: &str, before: Option<DateTime<Utc>>) -> Result<Vec<Hit>, SearchError> {
        let failed = |reason: String| SearchError::Network {
            backend: "index",
            reason,
        };
        let index = self
            .index
            .clone()
            .ok_or_else(|| failed("no index: [index] follows no feeds, or `musebot index refresh` never ran".into()))?;
        let (q, n) = (query.to_string(), self.config.results_per_query);
        let result = tokio::task::spawn_blocking(move || index.search(&q, before, n))
            .await
            .map_err(|e| failed(e.to_string()))?
            .map_err(|e| failed(e.to_string()))
            .map(|found| {
                found
                    .into_iter()
                    .map(|f| Hit {
                        url: f.url,
                        title: f.title,
                        snippet: f.snippet,
                        published: f.published,
                    })
                    .collect::<Vec<_>>()
            });
        if let Some(m) = &self.metrics {
            match &result {
                Ok(_) => m.search_ok("index"),
                Err(e) => m.search_failed("index", e.kind()),
            }
        }
        result
    }
}

/// A JSON answer of a search-like API (`backend` names it in errors): a non-2xx status is an
/// error with the server's hint of when to come back; the body is capped.
pub(crate) async fn read_json(
    backend: &'static str,
    resp: reqwest::Result<reqwest::Response>,
    max_bytes: usize,
) -> Result<serde_json::Value, SearchError> {
    let resp = resp.map_err(|e| SearchError::Network {
        backend,
        reason: e.without_url().to_string(),
    })?;
    let status = resp.status();
    if !status.is_success() {
        let retry_after = retry::hinted_wait(status.as_u16(), resp.headers());
        return Err(SearchError::Status {
            backend,
            status: status.as_u16(),
            body: crate::body::error_text(resp).await,
            retry_after,
        });
    }
    let bytes = crate::body::read_capped(resp, max_bytes)
        .await
        .map_err(|e| SearchError::Decode {
            backend,
            reason: e.to_string(),
        })?;
    serde_json::from_slice(&bytes).map_err(|e| SearchError::Decode {
        backend,
        reason: e.to_string(),
    })
}

/// The HTTP client of the search, reverse-image and Fact Check backends
/// (`search.timeout_secs`). It follows no redirect: a search service that answers 3xx could
/// otherwise bounce the bot to any address, internal ones included, past the fetch guard
/// (a 3xx is then that backend's failure).
pub(crate) fn client(config: &SearchConfig) -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(crate::USER_AGENT)
        .timeout(Duration::from_secs(config.timeout_secs))
        .build()
        .expect("static client config")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::refresh::Refresher;

    /// The backends' client follows no redirect: a search service answering 302 to
    /// an internal address gets no request there.
    #[tokio::test]
    async fn the_backends_client_follows_no_redirect() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let hits = std::sync::Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        let tripwire = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let internal = tripwire.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((_s, _)) = tripwire.accept().await {
                h.fetch_add(1, Ordering::SeqCst);
            }
        });
        let location = format!("http://{internal}/latest/meta-data/");
        let app = axum::Router::new().route(
            "/search",
            axum::routing::get(move || {
                let l = location.clone();
                async move { (axum::http::StatusCode::FOUND, [("location", l)], "") }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let answer = client(&SearchConfig::default())
            .get(format!("http://{addr}/search?q=x"))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 302);
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert_eq!(hits.load(Ordering::SeqCst), 0, "the redirect was not followed");
    }

    /// The index after a web backend: its hits stand in for a failed web search, but finding
    /// nothing there leaves the failure standing (an outage, retried later — not "nothing
    /// found"); an empty index listed first passes to the next backend.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_index_answers_for_a_failed_web_search_but_never_hides_the_outage() {
        let dir = tempfile::tempdir().unwrap();
        let index_config = crate::index::IndexConfig::default();
        let mut writer =
            Refresher::open(&index_config, dir.path(), &crate::fetch::FetchConfig::default(), None).unwrap();
        let web = BackendConfig {
            kind: BackendKind::Searxng,
            // Nothing listens on the discard port: a network failure.
            base_url: "http://127.0.0.1:9".into(),
            api_key_env: String::new(),
            api_key_file: String::new(),
            cx: String::new(),
        };
        let config = SearchConfig {
            backends: vec![web.clone()],
            max_retries: 0,
            timeout_secs: 2,
            ..SearchConfig::default()
        };
        let open = || {
            Some(std::sync::Arc::new(
                crate::index::EvidenceIndex::open(dir.path()).unwrap(),
            ))
        };
        let searcher = Searcher::new(&config, None).unwrap().with_index(open());
        let err = searcher.search("great wall moon", None, None).await.unwrap_err();
        assert!(matches!(err, SearchError::AllFailed(_)), "{err}");
        writer
            .add(&crate::index::Item {
                url: "https://checker.example/wall",
                link: "https://checker.example/wall",
                title: "The Great Wall is not visible from the Moon",
                text: "Astronauts say no structure can be seen from the Moon.",
                claims: vec![],
                published: None,
                feed: "https://checker.example/feed",
            })
            .unwrap();
        writer.commit().unwrap();
        let hits = searcher.search("great wall moon", None, None).await.unwrap();
        assert_eq!(hits[0].url, "https://checker.example/wall");
        // Listed first and finding nothing: the web backend is asked (and fails here).
        let first = SearchConfig {
            backends: vec![
                BackendConfig {
                    kind: BackendKind::Index,
                    ..web.clone()
                },
                web,
            ],
            ..config
        };
        let searcher = Searcher::new(&first, None).unwrap().with_index(open());
        assert!(searcher.search("zzzz unrelated", None, None).await.is_err());
        assert_eq!(searcher.search("great wall", None, None).await.unwrap().len(), 1);
    }
}
