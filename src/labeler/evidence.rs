//! The public evidence pages behind the labels (`[bluesky.labeler] evidence_listen`, named by
//! `evidence_url` in every label's description): `GET /labels` explains and asks for a post
//! link; `GET /labels?post=<bsky.app link or at:// URI>` shows, for a post the bot labelled,
//! the label, the verdict in the bot's words, the fact-checks it named, the evidence URLs and
//! when. Read-only from the kept answers, no session, no JavaScript, every value escaped
//! (minijinja autoescape). Meant to sit behind the operator's TLS proxy.
//!
//! **A page answers only for the post it names.** The link's author and record key together
//! name one post, `at://<did>/app.bsky.feed.post/<rkey>`, and only the kept answer about
//! exactly that post is shown (`target:` index): a link by DID is compared as it is; a link
//! by handle is resolved to its DID first (`com.atproto.identity.resolveHandle`, [`Resolve`]),
//! and only when some kept answer has that record key at all (`rkey:` index) — so a made-up
//! link costs no resolution. A handle that does not resolve, another author's handle with a
//! labelled post's record key, a post without the bot's label: 404. No request scans the kept
//! answers, and every store read runs on the blocking pool, off the async workers.
//!
//! **Limits** ([`guard`]): each client (its address; behind the proxy, the address the proxy
//! saw) has its own allowance under one ceiling for everyone (HTTP 429 past either), and a
//! handle's resolution costs it more than a page; resolutions are remembered a few minutes.

mod guard;

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{ConnectInfo, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures_util::future::BoxFuture;
use minijinja::Environment;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::model::{Kept, PlatformKind, Verdict};
use crate::platform::{Platform, PlatformError, Platforms};
use crate::store::{Store, StoreError};

/// How long a handle's resolution may take before the page says to try again.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// What a handle resolved to.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved {
    Did(String),
    /// No such handle (or not one the network knows): nothing to show.
    Unknown,
    /// The resolver could not say now (network, rate limit): try again later.
    Unavailable,
}

/// Resolves a (lowercased, well-formed) handle to its DID.
pub type Resolve = Arc<dyn Fn(String) -> BoxFuture<'static, Resolved> + Send + Sync>;

/// The bot's Bluesky client as the pages' handle resolver; none without Bluesky (then a link
/// by handle finds nothing, and one by DID or an at:// URI still does).
pub fn resolver(platforms: &Platforms) -> Option<Resolve> {
    let Some(Platform::Bluesky(bluesky)) = platforms.get(PlatformKind::Bluesky) else {
        return None;
    };
    let bluesky = bluesky.clone();
    Some(Arc::new(move |handle: String| {
        let bluesky = bluesky.clone();
        Box::pin(async move {
            match bluesky.resolve_did(&handle).await {
                Ok(did) if did.starts_with("did:") && !did.contains('/') => Resolved::Did(did),
                Ok(_) | Err(PlatformError::Gone(_) | PlatformError::Fatal(_) | PlatformError::TooLong(_)) => {
                    Resolved::Unknown
                }
                Err(e @ (PlatformError::Transient(_) | PlatformError::RateLimited { .. })) => {
                    tracing::warn!(handle, error = %e, "evidence pages: a handle could not be resolved now");
                    Resolved::Unavailable
                }
            }
        })
    }))
}

pub struct Evidence {
    store: Store,
    templates: Environment<'static>,
    limits: guard::Limits,
    handles: guard::Handles,
    resolve: Option<Resolve>,
    /// Whether a loopback request without `X-Forwarded-For` was logged (once).
    unforwarded: AtomicBool,
}

/// What a request for a post found.
enum Found {
    Page(Box<Kept>),
    Nothing,
    /// The client spent its allowance on the way (a handle's resolution).
    Limited,
    /// The store or the resolver failed: try again.
    Unavailable,
}

impl Evidence {
    pub fn new(store: Store, resolve: Option<Resolve>) -> Evidence {
        let mut templates = Environment::new();
        templates
            .add_template("evidence.html", include_str!("templates/evidence.html"))
            .expect("the evidence template compiles");
        Evidence {
            store,
            templates,
            limits: guard::Limits::new(guard::client_quota()),
            handles: guard::Handles::default(),
            resolve,
            unforwarded: AtomicBool::new(false),
        }
    }

    /// The labelled, open kept answer about exactly the post `asked` names.
    async fn find(&self, client: IpAddr, asked: &str) -> Found {
        let Some((repo, rkey)) = crate::platform::bluesky::records::parse_post_ref(asked) else {
            return Found::Nothing;
        };
        let did = if repo.starts_with("did:") {
            repo
        } else {
            let r = rkey.clone();
            match read(&self.store, move |s| s.kept_ids_by_rkey(&r, 1)).await {
                Some(ids) if ids.is_empty() => return Found::Nothing,
                Some(_) => {}
                None => return Found::Unavailable,
            }
            match self.resolve(client, &repo).await {
                Ok(Resolved::Did(did)) => did,
                Ok(Resolved::Unknown) => return Found::Nothing,
                Ok(Resolved::Unavailable) => return Found::Unavailable,
                Err(Limited) => return Found::Limited,
            }
        };
        let uri = format!("at://{did}/app.bsky.feed.post/{rkey}");
        let target = uri.clone();
        match read(&self.store, move |s| s.kept_by_target(PlatformKind::Bluesky, &target)).await {
            Some(Some(k))
                if k.platform == PlatformKind::Bluesky
                    && k.target_id == uri
                    && k.label.is_some()
                    && k.gone.is_none() =>
            {
                Found::Page(Box::new(k))
            }
            Some(_) => Found::Nothing,
            None => Found::Unavailable,
        }
    }

    /// A handle's DID: remembered, else asked (which costs the client).
    async fn resolve(&self, client: IpAddr, repo: &str) -> Result<Resolved, Limited> {
        let Some(handle) = guard::handle(repo) else {
            return Ok(Resolved::Unknown);
        };
        if let Some(known) = self.handles.get(&handle) {
            return Ok(known);
        }
        let Some(resolve) = &self.resolve else {
            return Ok(Resolved::Unknown);
        };
        if !self.limits.charge(client, guard::RESOLVE_COST) {
            return Err(Limited);
        }
        let resolved = tokio::time::timeout(RESOLVE_TIMEOUT, resolve(handle.clone()))
            .await
            .unwrap_or(Resolved::Unavailable);
        self.handles.put(&handle, &resolved);
        Ok(resolved)
    }

    /// The response to `client` asking with `query`.
    async fn answer(&self, client: IpAddr, query: Option<&str>) -> Response {
        if !self.limits.admit(client) {
            return (StatusCode::TOO_MANY_REQUESTS, "too many requests").into_response();
        }
        let asked = asked(query);
        if asked.is_empty() {
            return self.render(StatusCode::OK, json!({ "lang": "en", "asked": "" }));
        }
        let kept = match self.find(client, &asked).await {
            Found::Page(k) => k,
            Found::Nothing => return self.render(StatusCode::NOT_FOUND, json!({ "lang": "en", "asked": asked })),
            Found::Limited => return (StatusCode::TOO_MANY_REQUESTS, "too many requests").into_response(),
            Found::Unavailable => {
                return (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "cannot look this up now; try again in a minute",
                )
                    .into_response()
            }
        };
        let Some((value, _)) = kept.label.clone() else {
            return self.render(StatusCode::NOT_FOUND, json!({ "lang": "en", "asked": asked }));
        };
        let lang = crate::words::language(kept.language.as_deref());
        let name = crate::words::say(lang, &format!("{}_name", value.key()), ());
        let english = crate::words::say("en", &format!("{}_name", value.key()), ());
        let verdict = kept
            .verdict
            .map(|v: Verdict| crate::words::say(lang, v.key(), ()))
            .unwrap_or_default();
        let (repo, rkey) = crate::platform::bluesky::records::parse_post_ref(&kept.target_id).unwrap_or_default();
        let at = |t: chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%d %H:%M UTC").to_string();
        self.render(
            StatusCode::OK,
            json!({
                "lang": lang,
                "asked": asked,
                "post_url": format!("https://bsky.app/profile/{repo}/post/{rkey}"),
                "label": { "value": value.as_str(), "name": name, "english": (english != name).then_some(english) },
                "verdict": verdict,
                "named": kept.named,
                "evidence": kept.evidence,
                "checked": at(kept.kept_at),
                "updated": kept.updates.last().map(|u| at(u.at)),
            }),
        )
    }

    fn render(&self, status: StatusCode, ctx: serde_json::Value) -> Response {
        match self.templates.get_template("evidence.html").and_then(|t| t.render(ctx)) {
            Ok(html) => page(status, html),
            Err(e) => {
                tracing::error!(error = %e, "evidence page template failed");
                page(StatusCode::INTERNAL_SERVER_ERROR, "template error".into())
            }
        }
    }
}

/// A client out of allowance.
struct Limited;

/// Runs a store read on the blocking pool; none when it failed (logged).
async fn read<T: Send + 'static>(
    store: &Store,
    f: impl FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
) -> Option<T> {
    let store = store.clone();
    match tokio::task::spawn_blocking(move || f(&store)).await {
        Ok(Ok(v)) => Some(v),
        Ok(Err(e)) => {
            tracing::error!(error = %e, "evidence pages: the store could not be read");
            None
        }
        Err(e) => {
            tracing::error!(error = %e, "evidence pages: a store read stopped");
            None
        }
    }
}

/// The `post` parameter of a query string (form-encoded).
fn asked(query: Option<&str>) -> String {
    let post = url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .find(|(k, _)| k == "post")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    post.trim().chars().filter(|c| !c.is_control()).take(500).collect()
}

async fn labels(
    State(e): State<Arc<Evidence>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    if peer.ip().is_loopback()
        && !headers.contains_key("x-forwarded-for")
        && !e.unforwarded.swap(true, Ordering::Relaxed)
    {
        tracing::info!(
            "evidence pages: a request from loopback without X-Forwarded-For; if a proxy serves the pages, have it set the header, or every visitor shares one client's allowance"
        );
    }
    e.answer(guard::client(peer, &headers), query.as_deref()).await
}

fn page(status: StatusCode, html: String) -> Response {
    let mut r = (status, html).into_response();
    let h = r.headers_mut();
    for (k, v) in [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CACHE_CONTROL, "public, max-age=60"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    ] {
        h.insert(k, HeaderValue::from_static(v));
    }
    r
}

/// Serves the pages until `shutdown`; first indexes by record key the answers kept before that
/// index existed (once per start, on the blocking pool).
pub async fn serve(
    listener: tokio::net::TcpListener,
    evidence: Arc<Evidence>,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    if let Some(n) = read(&evidence.store, |s| s.index_rkeys()).await {
        tracing::debug!(answers = n, "evidence pages: kept answers indexed by record key");
    }
    let app = Router::new()
        .route("/labels", get(labels))
        .route("/labels/", get(labels))
        .with_state(evidence);
    axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
}

#[cfg(test)]
mod tests;
