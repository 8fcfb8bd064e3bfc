//! The operator's admin page (`[admin] listen`, loopback only): server-rendered HTML
//! (minijinja, autoescaped, no JavaScript), behind a token read from the environment or a
//! file. `GET /` shows the sign-in form until a session exists, then the dashboard
//! ([`view::dashboard`]); `POST /login`, `POST /logout`, `POST /drafts/approve` and
//! `POST /drafts/reject` change state. Every form post needs a live session, the session's
//! CSRF token and an own-origin `Origin` ([`auth`]); the token is never in a URL or a log.

pub mod auth;
pub mod view;

use std::sync::Arc;

use axum::extract::{Form, Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use chrono::Utc;
use minijinja::Environment;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::model::ReviewDecision;
use crate::moderation::Moderation;
use crate::secret::Secret;

pub struct Admin {
    pub moderation: Moderation,
    pub token: Secret,
    pub recent: usize,
    sessions: auth::Sessions,
    templates: Environment<'static>,
}

impl Admin {
    pub fn new(moderation: Moderation, token: Secret, recent: usize) -> Admin {
        let mut templates = Environment::new();
        for (name, text) in [
            ("base.html", include_str!("templates/base.html")),
            ("login.html", include_str!("templates/login.html")),
            ("dashboard.html", include_str!("templates/dashboard.html")),
            ("refused.html", include_str!("templates/refused.html")),
        ] {
            templates.add_template(name, text).expect("the admin templates compile");
        }
        Admin {
            moderation,
            token,
            recent,
            sessions: auth::Sessions::default(),
            templates,
        }
    }

    fn render(&self, status: StatusCode, name: &str, ctx: serde_json::Value) -> Response {
        match self.templates.get_template(name).and_then(|t| t.render(ctx)) {
            Ok(html) => page(status, html),
            Err(e) => {
                tracing::error!(error = %e, "admin page template failed");
                page(StatusCode::INTERNAL_SERVER_ERROR, "template error".into())
            }
        }
    }

    fn refused(&self, status: StatusCode, why: &str) -> Response {
        tracing::warn!(why, "admin request refused");
        self.render(status, "refused.html", serde_json::json!({ "why": why }))
    }

    /// The live session's (id, CSRF token) of a request.
    fn session(&self, headers: &HeaderMap) -> Option<(String, String)> {
        let id = auth::session_cookie(headers.get(header::COOKIE).and_then(|v| v.to_str().ok()))?;
        let csrf = self.sessions.csrf(&id)?;
        Some((id, csrf))
    }

    /// A state-changing form post's checks: own origin, live session, its CSRF token.
    fn check_post(&self, headers: &HeaderMap, csrf: &str) -> Result<String, Box<Response>> {
        if !own_origin(headers) {
            return Err(Box::new(
                self.refused(StatusCode::FORBIDDEN, "a form posted from another site"),
            ));
        }
        let Some((id, expected)) = self.session(headers) else {
            return Err(Box::new(self.refused(StatusCode::UNAUTHORIZED, "not signed in")));
        };
        if !auth::token_matches(csrf, &expected) {
            return Err(Box::new(
                self.refused(StatusCode::FORBIDDEN, "the form's CSRF token is missing or wrong"),
            ));
        }
        Ok(id)
    }
}

fn own_origin(headers: &HeaderMap) -> bool {
    let h = |name| headers.get(name).and_then(|v: &HeaderValue| v.to_str().ok());
    auth::same_origin(h(header::ORIGIN), h(header::REFERER), h(header::HOST))
}

fn page(status: StatusCode, html: String) -> Response {
    let mut r = (status, html).into_response();
    let h = r.headers_mut();
    for (k, v) in [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CACHE_CONTROL, "no-store"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "same-origin"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    ] {
        h.insert(k, HeaderValue::from_static(v));
    }
    r
}

fn see_other(cookie: Option<String>) -> Response {
    let mut r = (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response();
    if let Some(c) = cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        r.headers_mut().insert(header::SET_COOKIE, c);
    }
    r
}

pub async fn serve(
    listener: tokio::net::TcpListener,
    admin: Arc<Admin>,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let app = Router::new()
        .route("/", get(index))
        .route("/login", post(login))
        .route("/logout", post(logout))
        .route("/drafts/{action}", post(decide))
        .with_state(admin);
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
}

async fn index(State(a): State<Arc<Admin>>, headers: HeaderMap) -> Response {
    let Some((_, csrf)) = a.session(&headers) else {
        return a.render(StatusCode::OK, "login.html", serde_json::json!({}));
    };
    let m = a.moderation.clone();
    let recent = a.recent;
    let data = tokio::task::spawn_blocking(move || view::dashboard(&m, recent)).await;
    match data {
        Ok(Ok(mut ctx)) => {
            ctx["csrf"] = serde_json::json!(csrf);
            a.render(StatusCode::OK, "dashboard.html", ctx)
        }
        Ok(Err(e)) => a.refused(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("the state store failed: {e}"),
        ),
        Err(e) => a.refused(StatusCode::INTERNAL_SERVER_ERROR, &format!("the page failed: {e}")),
    }
}

#[derive(Deserialize)]
struct LoginForm {
    #[serde(default)]
    token: String,
}

async fn login(State(a): State<Arc<Admin>>, headers: HeaderMap, Form(f): Form<LoginForm>) -> Response {
    if !own_origin(&headers) {
        return a.refused(StatusCode::FORBIDDEN, "a form posted from another site");
    }
    if !auth::token_matches(&f.token, a.token.expose()) {
        tracing::warn!("admin sign-in with a wrong token");
        return a.render(
            StatusCode::UNAUTHORIZED,
            "login.html",
            serde_json::json!({ "error": "Wrong token." }),
        );
    }
    let id = a.sessions.open();
    tracing::info!("admin signed in");
    let ttl = auth::SESSION_TTL.as_secs();
    see_other(Some(format!(
        "{}={id}; HttpOnly; SameSite=Strict; Path=/; Max-Age={ttl}",
        auth::COOKIE
    )))
}

#[derive(Deserialize)]
struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

async fn logout(State(a): State<Arc<Admin>>, headers: HeaderMap, Form(f): Form<CsrfForm>) -> Response {
    match a.check_post(&headers, &f.csrf) {
        Ok(id) => {
            a.sessions.close(&id);
            see_other(Some(format!(
                "{}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0",
                auth::COOKIE
            )))
        }
        Err(r) => *r,
    }
}

#[derive(Deserialize)]
struct DecideForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    id: String,
}

async fn decide(
    State(a): State<Arc<Admin>>,
    Path(action): Path<String>,
    headers: HeaderMap,
    Form(f): Form<DecideForm>,
) -> Response {
    if let Err(r) = a.check_post(&headers, &f.csrf) {
        return *r;
    }
    let d = match action.as_str() {
        "approve" => ReviewDecision::Approved {
            by: "admin page".into(),
            at: Utc::now(),
        },
        "reject" => ReviewDecision::Rejected {
            by: "admin page".into(),
            at: Utc::now(),
            note: "rejected on the admin page".into(),
        },
        _ => return a.refused(StatusCode::NOT_FOUND, "no such action"),
    };
    let m = a.moderation.clone();
    let id = f.id.clone();
    match tokio::task::spawn_blocking(move || m.decide_on(None, &id, d)).await {
        Ok(Ok(words)) => {
            tracing::info!(job = %f.id, action, result = %words, "admin page decision");
            see_other(None)
        }
        Ok(Err(e)) => a.refused(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("the state store failed: {e}"),
        ),
        Err(e) => a.refused(StatusCode::INTERNAL_SERVER_ERROR, &format!("the decision failed: {e}")),
    }
}
