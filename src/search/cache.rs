//! The search cache: one web backend's answer to one query, kept in the store's cache tree
//! (`search:<backend>|<before>|<language>|<query>`) stamped with when it was stored, so the
//! same query asked again soon (another post of the same viral claim, a retried job) costs
//! no paid request.
//!
//! An answer is reused within `search.cache_ttl_secs`, an empty one within [`EMPTY_TTL_SECS`]
//! at most: "nothing found" is the answer most likely to change — the reporting on a new claim
//! is often published hours after the claim — and a day-long empty answer would hide it from
//! every check of that claim until it expired. A search asked [`Freshness::Fresh`] (a
//! re-check, which exists to see what was published since the first answer) reads no cached
//! answer at all, and still stores what it found for the searches after it.

use chrono::{DateTime, Utc};

use super::Hit;
use crate::store::Store;

/// Longest time an empty answer is reused, seconds: ten minutes. Long enough that the burst
/// of one viral claim (the same queries from many posts within minutes) or a job retried
/// after a later step failed asks the backend once; short enough that reporting published
/// since is found by the next check that asks, well before the first scheduled re-check.
pub const EMPTY_TTL_SECS: i64 = 600;

/// Whether a search may answer from the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Freshness {
    /// A cached answer still within its time to live is the answer (every first check).
    #[default]
    Cached,
    /// The backends are asked again whatever the cache holds, and their answer is stored (a
    /// re-check looks for what was published since).
    Fresh,
}

/// The cache key of one backend's answer to one query.
pub(super) fn key(backend: &str, before: Option<DateTime<Utc>>, language: Option<&str>, query: &str) -> String {
    format!(
        "{backend}|{}|{}|{query}",
        before.map(|b| b.to_rfc3339()).unwrap_or_default(),
        language.unwrap_or_default(),
    )
}

/// How long an answer stored at `at` is reused, `ttl_secs` being `search.cache_ttl_secs`:
/// an empty one at most [`EMPTY_TTL_SECS`].
fn fresh_at(at: DateTime<Utc>, now: DateTime<Utc>, empty: bool, ttl_secs: u64) -> bool {
    let ttl = i64::try_from(ttl_secs).unwrap_or(i64::MAX);
    let ttl = if empty { ttl.min(EMPTY_TTL_SECS) } else { ttl };
    now - at < chrono::Duration::seconds(ttl)
}

/// The cached answer under `key`, when one is still fresh and `freshness` allows it.
pub(super) fn get(store: Option<&Store>, key: &str, ttl_secs: u64, freshness: Freshness) -> Option<Vec<Hit>> {
    if freshness == Freshness::Fresh {
        return None;
    }
    let (at, hits): (DateTime<Utc>, Vec<Hit>) = store?.cache_get_at("search", key)?;
    fresh_at(at, Utc::now(), hits.is_empty(), ttl_secs).then_some(hits)
}

/// Stores `hits` under `key`, stamped now (a failed write costs only the cache).
pub(super) fn put(store: Option<&Store>, key: &str, hits: &[Hit]) {
    if let Some(store) = store {
        if let Err(e) = store.cache_put("search", key, &hits) {
            tracing::warn!(error = %e, "search cache write failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use super::super::{BackendConfig, BackendKind, SearchConfig, Searcher};
    use super::*;

    /// A SearXNG-format server on loopback answering `results` (a shared, changeable list of
    /// URLs), counting the requests it gets.
    async fn searxng(results: Arc<Mutex<Vec<String>>>, asked: Arc<AtomicUsize>) -> SearchConfig {
        let app = axum::Router::new().route(
            "/search",
            axum::routing::get(move || {
                let (results, asked) = (results.clone(), asked.clone());
                async move {
                    asked.fetch_add(1, Ordering::SeqCst);
                    let list: Vec<serde_json::Value> = results
                        .lock()
                        .unwrap()
                        .iter()
                        .map(|u| serde_json::json!({"url": u, "title": "T", "content": "c"}))
                        .collect();
                    axum::Json(serde_json::json!({"query": "q", "results": list}))
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        SearchConfig {
            backends: vec![BackendConfig {
                kind: BackendKind::Searxng,
                base_url: format!("http://{addr}"),
                api_key_env: String::new(),
                api_key_file: String::new(),
                cx: String::new(),
            }],
            max_retries: 0,
            timeout_secs: 5,
            ..SearchConfig::default()
        }
    }

    /// With the shipped day-long TTL, an answer with results is reused, an empty one only for
    /// [`EMPTY_TTL_SECS`]: older than that, the backend is asked again and its new results are
    /// the answer.
    #[tokio::test]
    async fn an_empty_answer_is_reused_only_briefly() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (results, asked) = (Arc::new(Mutex::new(Vec::new())), Arc::new(AtomicUsize::new(0)));
        let config = searxng(results.clone(), asked.clone()).await;
        assert_eq!(config.cache_ttl_secs, 86_400, "the shipped TTL");
        let searcher = Searcher::new(&config, Some(store.clone())).unwrap();
        assert!(searcher.search("moon cheese", None, None).await.unwrap().is_empty());
        assert!(searcher.search("moon cheese", None, None).await.unwrap().is_empty());
        assert_eq!(asked.load(Ordering::SeqCst), 1, "a fresh empty answer is reused");
        // The empty answer, stored eleven minutes ago; reporting published since.
        let k = key("searxng", None, None, "moon cheese");
        let earlier = Utc::now() - chrono::Duration::seconds(EMPTY_TTL_SECS + 60);
        store.cache_put_at("search", &k, earlier, &Vec::<Hit>::new()).unwrap();
        results.lock().unwrap().push("https://news.example/moon".into());
        let hits = searcher.search("moon cheese", None, None).await.unwrap();
        assert_eq!(asked.load(Ordering::SeqCst), 2, "the backend is asked again");
        assert_eq!(hits.len(), 1);
        // An answer with results of the same age is still within the day.
        store.cache_put_at("search", &k, earlier, &hits).unwrap();
        results.lock().unwrap().clear();
        assert_eq!(searcher.search("moon cheese", None, None).await.unwrap(), hits);
        assert_eq!(asked.load(Ordering::SeqCst), 2);
    }

    /// A fresh search (a re-check's) asks the backend whatever the cache holds, and stores its
    /// answer for the searches after it.
    #[tokio::test]
    async fn a_fresh_search_bypasses_the_cached_answer() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (results, asked) = (
            Arc::new(Mutex::new(vec!["https://news.example/a".to_string()])),
            Arc::new(AtomicUsize::new(0)),
        );
        let config = searxng(results.clone(), asked.clone()).await;
        let searcher = Searcher::new(&config, Some(store)).unwrap();
        let first = searcher.search("moon cheese", None, None).await.unwrap();
        assert_eq!(first.len(), 1);
        results.lock().unwrap().push("https://news.example/b".into());
        let cached = searcher.search("moon cheese", None, None).await.unwrap();
        assert_eq!((cached.len(), asked.load(Ordering::SeqCst)), (1, 1));
        let fresh = searcher
            .search_as("moon cheese", None, None, Freshness::Fresh)
            .await
            .unwrap();
        assert_eq!(asked.load(Ordering::SeqCst), 2, "the backend is asked again");
        assert_eq!(fresh.len(), 2);
        // The fresh answer is what the next cached search reads.
        assert_eq!(searcher.search("moon cheese", None, None).await.unwrap(), fresh);
        assert_eq!(asked.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn an_empty_answer_never_outlives_a_shorter_configured_ttl() {
        let now = Utc::now();
        let ago = |s: i64| now - chrono::Duration::seconds(s);
        assert!(fresh_at(ago(500), now, true, 86_400));
        assert!(!fresh_at(ago(700), now, true, 86_400));
        assert!(fresh_at(ago(700), now, false, 86_400));
        assert!(!fresh_at(ago(120), now, true, 60), "the configured TTL when shorter");
        assert!(!fresh_at(ago(0), now, false, 0), "a TTL of 0 caches nothing");
    }
}
