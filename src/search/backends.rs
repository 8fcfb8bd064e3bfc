//! The six search services' real request and response formats (../shared/design/SEARCH-APIS.md
//! and the services' docs). Keys that travel in a query string (Google, SerpApi) never reach a
//! log: errors are built from reqwest errors `without_url()`.

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{BackendConfig, Hit, SearchError};
use crate::secret::Secret;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendKind {
    /// Google Programmable Search (Custom Search JSON API), `cx` restricted to credible publishers.
    Google,
    Brave,
    /// A self-hosted SearXNG with the `json` format enabled.
    Searxng,
    Serper,
    /// SerpApi's `engine=google`.
    Serpapi,
    Tavily,
    /// The keyless evidence index (`[index]`: followed feeds, searched locally).
    Index,
}

impl BackendKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Google => "google",
            BackendKind::Brave => "brave",
            BackendKind::Searxng => "searxng",
            BackendKind::Serper => "serper",
            BackendKind::Serpapi => "serpapi",
            BackendKind::Tavily => "tavily",
            BackendKind::Index => "index",
        }
    }

    pub fn needs_key(self) -> bool {
        !matches!(self, BackendKind::Searxng | BackendKind::Index)
    }

    fn default_base(self) -> &'static str {
        match self {
            BackendKind::Google => "https://customsearch.googleapis.com",
            BackendKind::Brave => "https://api.search.brave.com",
            BackendKind::Searxng => "",
            BackendKind::Serper => "https://google.serper.dev",
            BackendKind::Serpapi => "https://serpapi.com",
            BackendKind::Tavily => "https://api.tavily.com",
            BackendKind::Index => "",
        }
    }
}

/// What one search asks: the query, the date bound, the query's language (ISO 639-1).
pub struct Ask<'a> {
    pub query: &'a str,
    pub before: Option<DateTime<Utc>>,
    pub language: Option<&'a str>,
}

/// Brave's `search_lang` for an ISO 639-1 code: its own spelling for a few (`jp`, `zh-hans`,
/// `pt-br` — most Portuguese on Mastodon and Bluesky is Brazilian), the code for the rest.
fn brave_lang(code: &str) -> String {
    match code {
        "ja" => "jp",
        "zh" => "zh-hans",
        "pt" => "pt-br",
        "no" => "nb",
        other => other,
    }
    .to_string()
}

/// One request to one backend, parsed into hits. `language`: the post's (ISO 639-1), passed
/// as each service's language parameter (Google `lr`/`hl`, Brave `search_lang`, SearXNG
/// `language`, Serper and SerpApi `hl`; Tavily has none).
pub async fn run(
    http: &reqwest::Client,
    config: &BackendConfig,
    key: Option<&Secret>,
    ask: &Ask<'_>,
    n: usize,
    max_bytes: usize,
) -> Result<Vec<Hit>, SearchError> {
    let (query, before, language) = (ask.query, ask.before, ask.language);
    // The post's language (ISO 639-1), as each service names it; none for an unknown one.
    let lang = language
        .map(str::to_ascii_lowercase)
        .filter(|l| l.len() == 2 && l.chars().all(|c| c.is_ascii_lowercase()));
    let kind = config.kind;
    let name = kind.as_str();
    let base = if config.base_url.is_empty() {
        kind.default_base()
    } else {
        config.base_url.trim_end_matches('/')
    };
    let key = key.map(Secret::expose).unwrap_or("");
    let n = n.clamp(1, 10);
    let req = match kind {
        BackendKind::Google => {
            let mut q = vec![
                ("key", key.to_string()),
                ("cx", config.cx.clone()),
                ("q", query.to_string()),
                ("num", n.to_string()),
            ];
            if let Some(b) = before {
                q.push(("sort", format!("date:r::{}", b.format("%Y%m%d"))));
            }
            if let Some(l) = &lang {
                q.push(("lr", format!("lang_{l}")));
                q.push(("hl", l.clone()));
            }
            http.get(format!("{base}/customsearch/v1")).query(&q)
        }
        BackendKind::Brave => {
            let mut q = vec![("q", query.to_string()), ("count", n.to_string())];
            if let Some(b) = before {
                q.push(("freshness", format!("1970-01-01to{}", b.format("%Y-%m-%d"))));
            }
            if let Some(l) = &lang {
                q.push(("search_lang", brave_lang(l)));
            }
            http.get(format!("{base}/res/v1/web/search"))
                .header("X-Subscription-Token", key)
                .header("Accept", "application/json")
                .query(&q)
        }
        BackendKind::Searxng => {
            let mut q = vec![
                ("q", query.to_string()),
                ("format", "json".into()),
                ("pageno", "1".into()),
            ];
            if let Some(l) = &lang {
                q.push(("language", l.clone()));
            }
            http.get(format!("{base}/search"))
                .header("Accept-Language", "en-US,en;q=0.8")
                .query(&q)
        }
        BackendKind::Serper => {
            let mut body = json!({"q": query, "num": n});
            if let Some(b) = before {
                body["tbs"] = json!(format!("cdr:1,cd_min:,cd_max:{}", b.format("%m/%d/%Y")));
            }
            if let Some(l) = &lang {
                body["hl"] = json!(l);
            }
            http.post(format!("{base}/search")).header("X-API-KEY", key).json(&body)
        }
        BackendKind::Serpapi => {
            let mut q = vec![
                ("engine", "google".to_string()),
                ("q", query.to_string()),
                ("api_key", key.to_string()),
                ("num", n.to_string()),
            ];
            if let Some(b) = before {
                q.push(("tbs", format!("cdr:1,cd_min:,cd_max:{}", b.format("%m/%d/%Y"))));
            }
            if let Some(l) = &lang {
                q.push(("hl", l.clone()));
                q.push(("lr", format!("lang_{l}")));
            }
            http.get(format!("{base}/search.json")).query(&q)
        }
        BackendKind::Tavily => {
            let mut body = json!({"query": query, "max_results": n, "search_depth": "basic"});
            if let Some(b) = before {
                body["end_date"] = json!(b.format("%Y-%m-%d").to_string());
            }
            http.post(format!("{base}/search")).bearer_auth(key).json(&body)
        }
        // Searched in place by `Searcher` (`crate::index`), never over HTTP.
        BackendKind::Index => return Err(SearchError::NoBackend),
    };
    let resp = req.send().await.map_err(|e| SearchError::Network {
        backend: name,
        reason: e.without_url().to_string(),
    })?;
    let status = resp.status();
    if !status.is_success() {
        let retry_after = crate::retry::hinted_wait(status.as_u16(), resp.headers());
        let body = crate::body::error_text(resp).await;
        return Err(SearchError::Status {
            backend: name,
            status: status.as_u16(),
            body,
            retry_after,
        });
    }
    let bytes = crate::body::read_capped(resp, max_bytes)
        .await
        .map_err(|e| SearchError::Decode {
            backend: name,
            reason: e.to_string(),
        })?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| SearchError::Decode {
        backend: name,
        reason: e.to_string(),
    })?;
    parse(kind, &v).map_err(|reason| SearchError::Decode { backend: name, reason })
}

/// Where each service puts its results and their fields (JSON pointers).
struct Fields {
    list: &'static str,
    url: &'static str,
    title: &'static str,
    snippet: &'static str,
    date: &'static str,
}

fn fields(kind: BackendKind) -> Fields {
    let f = |list, url, snippet, date| Fields {
        list,
        url,
        title: "/title",
        snippet,
        date,
    };
    match kind {
        BackendKind::Google => f(
            "/items",
            "/link",
            "/snippet",
            "/pagemap/metatags/0/article:published_time",
        ),
        BackendKind::Brave => f("/web/results", "/url", "/description", "/page_age"),
        BackendKind::Searxng => f("/results", "/url", "/content", "/publishedDate"),
        BackendKind::Serper => f("/organic", "/link", "/snippet", "/date"),
        BackendKind::Serpapi => f("/organic_results", "/link", "/snippet", "/date"),
        BackendKind::Tavily => f("/results", "/url", "/content", "/published_date"),
        BackendKind::Index => f("", "", "", ""),
    }
}

/// Parses a backend's JSON answer. An answer without results is an empty list, not an error.
pub fn parse(kind: BackendKind, v: &Value) -> Result<Vec<Hit>, String> {
    let f = fields(kind);
    let items = v.pointer(f.list).and_then(Value::as_array).cloned().unwrap_or_default();
    match kind {
        BackendKind::Google => {
            if let Some(err) = v.get("error") {
                return Err(format!(
                    "error envelope: {}",
                    err.get("message").and_then(Value::as_str).unwrap_or("?")
                ));
            }
        }
        // "Google hasn't returned any results" is an empty answer; any other error fails.
        BackendKind::Serpapi if items.is_empty() => {
            if let Some(err) = v.get("error").and_then(Value::as_str) {
                if !err.contains("hasn't returned any results") {
                    return Err(err.to_string());
                }
            }
        }
        _ => {}
    }
    let text = |item: &Value, ptr: &str| item.pointer(ptr).and_then(Value::as_str).unwrap_or("").to_string();
    Ok(items
        .iter()
        .map(|i| Hit {
            url: text(i, f.url),
            title: text(i, f.title),
            snippet: text(i, f.snippet),
            published: i.pointer(f.date).and_then(Value::as_str).and_then(parse_date),
        })
        .filter(|h| !h.url.is_empty())
        .collect())
}

/// The date formats the services use: RFC 3339, ISO without zone, RFC 2822, "Jan 15, 2025",
/// "2025-01-15". Relative ages ("2 days ago") are not dates and give `None`.
pub fn parse_date(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    if let Ok(d) = DateTime::parse_from_rfc3339(s) {
        return Some(d.with_timezone(&Utc));
    }
    if let Ok(d) = DateTime::parse_from_rfc2822(s) {
        return Some(d.with_timezone(&Utc));
    }
    for f in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S"] {
        if let Ok(d) = NaiveDateTime::parse_from_str(s, f) {
            return Some(d.and_utc());
        }
    }
    let s = s.replace(" GMT", " +0000");
    if let Ok(d) = DateTime::parse_from_str(&s, "%a, %d %b %Y %H:%M:%S %z") {
        return Some(d.with_timezone(&Utc));
    }
    for f in ["%b %d, %Y", "%B %d, %Y", "%Y-%m-%d", "%d %b %Y"] {
        if let Ok(d) = NaiveDate::parse_from_str(&s, f) {
            return d.and_hms_opt(0, 0, 0).map(|d| d.and_utc());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A backend, its answer, and the (url, date) pairs it must yield.
    type Case = (BackendKind, Value, Vec<(&'static str, Option<&'static str>)>);

    /// Each service's documented answer shape (field names real, values invented).
    #[test]
    fn each_backend_parses_its_format() {
        let cases: Vec<Case> = vec![
            (
                BackendKind::Google,
                json!({"searchInformation":{"totalResults":"1230"},"items":[{"title":"Ex","link":"https://ex.org/a","displayLink":"ex.org","snippet":"s","pagemap":{"metatags":[{"article:published_time":"2025-01-05T10:00:00Z"}]}},{"title":"No date","link":"https://ex.org/b"}]}),
                vec![("https://ex.org/a", Some("2025-01-05")), ("https://ex.org/b", None)],
            ),
            (
                BackendKind::Google,
                json!({"searchInformation":{"totalResults":"0"}}),
                vec![],
            ),
            (
                BackendKind::Brave,
                json!({"type":"search","web":{"results":[{"title":"Ex","url":"https://ex.org/a","description":"d","age":"2 days ago","page_age":"2025-01-15T08:00:00"}]}}),
                vec![("https://ex.org/a", Some("2025-01-15"))],
            ),
            (
                BackendKind::Searxng,
                json!({"query":"x","results":[{"url":"https://ex.org/a","title":"Ex","content":"c","engine":"brave","publishedDate":null},{"url":"https://ex.org/b","title":"B","content":"c","publishedDate":"2024-12-01T00:00:00"}]}),
                vec![("https://ex.org/a", None), ("https://ex.org/b", Some("2024-12-01"))],
            ),
            (
                BackendKind::Serper,
                json!({"searchParameters":{"q":"x"},"organic":[{"title":"Ex","link":"https://ex.org/a","snippet":"s","date":"Jan 15, 2025","position":1},{"title":"R","link":"https://ex.org/r","date":"2 days ago"}]}),
                vec![("https://ex.org/a", Some("2025-01-15")), ("https://ex.org/r", None)],
            ),
            (
                BackendKind::Serpapi,
                json!({"search_metadata":{"status":"Success"},"organic_results":[{"position":1,"title":"Ex","link":"https://ex.org/a","snippet":"s","date":"Mar 3, 2024"}]}),
                vec![("https://ex.org/a", Some("2024-03-03"))],
            ),
            (
                BackendKind::Serpapi,
                json!({"search_metadata":{"status":"Success"},"error":"Google hasn't returned any results for this query."}),
                vec![],
            ),
            (
                BackendKind::Tavily,
                json!({"query":"x","results":[{"title":"Ex","url":"https://ex.org/a","content":"c","score":0.8,"published_date":"Mon, 06 Jan 2025 10:00:00 GMT"}]}),
                vec![("https://ex.org/a", Some("2025-01-06"))],
            ),
        ];
        for (kind, v, want) in cases {
            let hits = parse(kind, &v).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
            let got: Vec<(String, Option<String>)> = hits
                .iter()
                .map(|h| (h.url.clone(), h.published.map(|d| d.format("%Y-%m-%d").to_string())))
                .collect();
            let want: Vec<(String, Option<String>)> = want
                .into_iter()
                .map(|(u, d)| (u.to_string(), d.map(String::from)))
                .collect();
            assert_eq!(got, want, "{kind:?}");
        }
    }

    #[test]
    fn error_answers_are_errors() {
        assert!(parse(
            BackendKind::Google,
            &json!({"error":{"code":429,"message":"Quota exceeded"}})
        )
        .is_err());
        assert!(parse(
            BackendKind::Serpapi,
            &json!({"error":"Your account has run out of searches."})
        )
        .is_err());
    }

    /// Each service is asked in the query's language with its own parameter (Google
    /// `lr=lang_xx`/`hl`, Brave `search_lang` in its spelling, SearXNG `language`, SerpApi
    /// `hl`/`lr`, Serper `hl` in the body); no language, no parameter.
    #[tokio::test]
    async fn the_query_language_reaches_each_service_as_it_names_it() {
        use std::sync::{Arc, Mutex};
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let log = seen.clone();
        let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
            let log = log.clone();
            async move {
                let query = req.uri().query().unwrap_or_default().to_string();
                let body = axum::body::to_bytes(req.into_body(), 1 << 20).await.unwrap_or_default();
                log.lock()
                    .unwrap()
                    .push(format!("{query} {}", String::from_utf8_lossy(&body)));
                axum::Json(json!({}))
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let http = reqwest::Client::new();
        let key = Secret::new("k");
        let cases: &[(BackendKind, Option<&str>, &[&str])] = &[
            (BackendKind::Google, Some("de"), &["lr=lang_de", "hl=de"]),
            (BackendKind::Brave, Some("ja"), &["search_lang=jp"]),
            (BackendKind::Brave, Some("pt"), &["search_lang=pt-br"]),
            (BackendKind::Searxng, Some("es"), &["language=es"]),
            (BackendKind::Serpapi, Some("fr"), &["hl=fr", "lr=lang_fr"]),
            (BackendKind::Serper, Some("it"), &["\"hl\":\"it\""]),
        ];
        for (kind, lang, want) in cases {
            seen.lock().unwrap().clear();
            let config = BackendConfig {
                kind: *kind,
                base_url: format!("http://{addr}"),
                api_key_env: String::new(),
                api_key_file: String::new(),
                cx: "cx".into(),
            };
            let ask = Ask {
                query: "Mond Käse",
                before: None,
                language: *lang,
            };
            let _ = run(&http, &config, Some(&key), &ask, 10, 1 << 20).await;
            let asked = seen.lock().unwrap().join("\n");
            for w in *want {
                assert!(asked.contains(w), "{kind:?}: {w} not in {asked}");
            }
            let plain = Ask {
                query: "moon",
                before: None,
                language: None,
            };
            let _ = run(&http, &config, Some(&key), &plain, 10, 1 << 20).await;
            let plain = seen.lock().unwrap().last().cloned().unwrap_or_default();
            assert!(!plain.contains("lang") && !plain.contains("hl"), "{kind:?}: {plain}");
        }
    }
}
