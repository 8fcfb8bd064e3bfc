//! The public evidence pages behind the labels (issue 31, item 3; `[bluesky.labeler]
//! evidence_listen`, named by `evidence_url` in every label's description): `GET /labels`
//! explains and asks for a post link; `GET /labels?post=<bsky.app link or at:// URI>` shows,
//! for a post the bot labelled, the label, the verdict in the bot's words, the fact-checks it
//! named, the evidence URLs and when. Read-only from the kept answers, no session, no
//! JavaScript, every value escaped (minijinja autoescape), one global rate limit (HTTP 429
//! past it). Meant to sit behind the operator's TLS proxy.

use std::num::NonZeroU32;
use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use minijinja::Environment;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::model::{Kept, PlatformKind, Verdict};
use crate::store::Store;

/// Requests a second over every client together (burst twice that).
const PER_SECOND: u32 = 20;
/// Kept answers looked through for a link that names the author by handle.
const SCAN: usize = 20_000;

pub struct Evidence {
    store: Store,
    templates: Environment<'static>,
    limiter: DefaultDirectRateLimiter,
}

impl Evidence {
    pub fn new(store: Store) -> Evidence {
        let mut templates = Environment::new();
        templates
            .add_template("evidence.html", include_str!("templates/evidence.html"))
            .expect("the evidence template compiles");
        let per = NonZeroU32::new(PER_SECOND).expect("non-zero");
        Evidence {
            store,
            templates,
            limiter: RateLimiter::direct(
                Quota::per_second(per).allow_burst(per.saturating_mul(NonZeroU32::new(2).expect("two"))),
            ),
        }
    }

    /// The kept answer that labelled the post a link or URI names.
    fn find(&self, asked: &str) -> Option<Kept> {
        let (repo, rkey) = crate::platform::bluesky::records::parse_post_ref(asked)?;
        if repo.starts_with("did:") {
            let uri = format!("at://{repo}/app.bsky.feed.post/{rkey}");
            return self.store.kept_by_target(PlatformKind::Bluesky, &uri).ok().flatten();
        }
        // A link by handle: the record key (a TID) picks the post among the kept ones.
        let tail = format!("/app.bsky.feed.post/{rkey}");
        self.store
            .kept_all(SCAN)
            .ok()?
            .into_iter()
            .find(|k| k.platform == PlatformKind::Bluesky && k.target_id.ends_with(&tail))
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

/// The `post` parameter of a query string (form-encoded).
fn asked(query: Option<&str>) -> String {
    let post = url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .find(|(k, _)| k == "post")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    post.trim().chars().filter(|c| !c.is_control()).take(500).collect()
}

async fn labels(State(e): State<Arc<Evidence>>, RawQuery(query): RawQuery) -> Response {
    if e.limiter.check().is_err() {
        return (StatusCode::TOO_MANY_REQUESTS, "too many requests").into_response();
    }
    let asked = asked(query.as_deref());
    if asked.is_empty() {
        return e.render(StatusCode::OK, json!({ "lang": "en", "asked": "" }));
    }
    let Some(kept) = e.find(&asked).filter(|k| k.label.is_some() && k.gone.is_none()) else {
        return e.render(StatusCode::NOT_FOUND, json!({ "lang": "en", "asked": asked }));
    };
    let (value, _) = kept.label.expect("filtered");
    let lang = crate::words::language(kept.language.as_deref());
    let name = crate::words::say(lang, &format!("{}_name", value.key()), ());
    let english = crate::words::say("en", &format!("{}_name", value.key()), ());
    let verdict = kept
        .verdict
        .map(|v: Verdict| crate::words::say(lang, v.key(), ()))
        .unwrap_or_default();
    let (repo, rkey) = crate::platform::bluesky::records::parse_post_ref(&kept.target_id).unwrap_or_default();
    let at = |t: chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%d %H:%M UTC").to_string();
    e.render(
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

/// Serves the pages until `shutdown`.
pub async fn serve(
    listener: tokio::net::TcpListener,
    evidence: Arc<Evidence>,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let app = Router::new()
        .route("/labels", get(labels))
        .route("/labels/", get(labels))
        .with_state(evidence);
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
}
