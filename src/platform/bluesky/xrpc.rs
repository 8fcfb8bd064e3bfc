//! XRPC over HTTP for the bot's Bluesky account: the session (logged in once with the app
//! password, then refreshed — and kept in the store, so a restart or a crash loop refreshes
//! instead of spending `createSession`'s tight budget; a stored session is used only for
//! `bluesky.identifier`'s DID, so one planted in the store never makes the bot act as another
//! account), every request paced under the
//! service's limits (requests per 5 minutes; write points per hour and per day, a create
//! costing 3), retried on 429/5xx/network errors, and `ratelimit-reset` honoured.
//!
//! Written here rather than taken from `bsky-sdk`'s agent: its session store, retries and
//! limits are not ours to pace, and its default transport pulls OpenSSL. The request and
//! record types are `atrium-api`'s.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use reqwest::Method;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::sync::RwLock;

use crate::config::BlueskyConfig;
use crate::retry::{self, Transient};
use crate::secret::Secret;
use crate::store::Store;

#[derive(Debug, thiserror::Error)]
pub enum XrpcError {
    #[error("Bluesky answered HTTP {status} for {what}: {error}: {message}")]
    Status {
        status: u16,
        what: &'static str,
        /// The XRPC error name (`ExpiredToken`, `InvalidSwap`, `RateLimitExceeded`, …).
        error: String,
        message: String,
        retry_after: Option<Duration>,
    },
    #[error("Bluesky unreachable ({what}): {reason}")]
    Network { what: &'static str, reason: String },
    #[error("Bluesky sent an unreadable answer ({what}): {reason}")]
    Decode { what: &'static str, reason: String },
    #[error("a refreshed Bluesky session is for {got}, not {want}")]
    OtherAccount { want: String, got: String },
}

impl XrpcError {
    pub fn status(&self) -> Option<u16> {
        match self {
            XrpcError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The XRPC error name, when the server sent one.
    pub fn name(&self) -> Option<&str> {
        match self {
            XrpcError::Status { error, .. } => Some(error),
            _ => None,
        }
    }

    fn is_expired_token(&self) -> bool {
        matches!(self.name(), Some("ExpiredToken") | Some("InvalidToken")) || self.status() == Some(401)
    }
}

impl Transient for XrpcError {
    fn is_transient(&self) -> bool {
        match self {
            XrpcError::Status { status, .. } => *status == 429 || *status >= 500 || *status == 408,
            XrpcError::Network { .. } => true,
            XrpcError::Decode { .. } | XrpcError::OtherAccount { .. } => false,
        }
    }
    fn retry_after(&self) -> Option<Duration> {
        match self {
            XrpcError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// A logged-in session. Its tokens are secrets: `Debug` shows only the account.
#[derive(Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub access_jwt: String,
    pub refresh_jwt: String,
    pub did: String,
    pub handle: String,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Session({} {}, tokens redacted)", self.handle, self.did)
    }
}

/// How the session was obtained at start-up (for the log and the tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Login {
    /// A stored session was refreshed: no `createSession` spent.
    Refreshed,
    /// No usable stored session: logged in with the app password.
    Created,
}

#[derive(Clone)]
pub struct Xrpc {
    http: reqwest::Client,
    service: String,
    identifier: String,
    password: Secret,
    session: Arc<RwLock<Option<Session>>>,
    store: Option<Store>,
    limiter: Arc<DefaultDirectRateLimiter>,
    writes_hour: Arc<DefaultDirectRateLimiter>,
    writes_day: Arc<DefaultDirectRateLimiter>,
    max_retries: usize,
    max_response_bytes: usize,
}

/// Write points a create costs (Bluesky's published rate limits).
pub const CREATE_POINTS: u32 = 3;

impl Xrpc {
    pub fn new(config: &BlueskyConfig, password: Secret, store: Option<Store>) -> Result<Xrpc, XrpcError> {
        // XRPC answers are never redirects; following one could take a request (to an author's
        // PDS, named by its DID document) somewhere else.
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(config.timeout_secs))
            .connect_timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(crate::USER_AGENT)
            .build()
            .map_err(|e| XrpcError::Network {
                what: "client",
                reason: e.to_string(),
            })?;
        let per = |n: u32, period: Duration| {
            let n = NonZeroU32::new(n.max(1)).expect("positive");
            Quota::with_period(period / n.get())
                .expect("non-zero period")
                .allow_burst(n.min(NonZeroU32::new(30).expect("30")))
        };
        Ok(Xrpc {
            http,
            service: config.service.trim_end_matches('/').to_string(),
            identifier: config.identifier.trim().to_string(),
            password,
            session: Arc::new(RwLock::new(None)),
            store,
            limiter: Arc::new(RateLimiter::direct(per(
                config.requests_per_5min,
                Duration::from_secs(300),
            ))),
            writes_hour: Arc::new(RateLimiter::direct(per(
                config.write_points_per_hour,
                Duration::from_secs(3600),
            ))),
            writes_day: Arc::new(RateLimiter::direct(per(
                config.write_points_per_day,
                Duration::from_secs(86_400),
            ))),
            max_retries: config.max_retries,
            max_response_bytes: config.max_response_bytes,
        })
    }

    pub fn service(&self) -> &str {
        &self.service
    }

    fn store_key(&self) -> String {
        format!("bluesky:{}:{}", self.service, self.identifier.to_lowercase())
    }

    /// The logged-in account (`did`, `handle`).
    pub async fn account(&self) -> Option<(String, String)> {
        self.session
            .read()
            .await
            .as_ref()
            .map(|s| (s.did.clone(), s.handle.clone()))
    }

    /// Gets a session: refreshes the stored one when there is one and it is the configured
    /// identity's (its DID, and the refreshed session's, that of `bluesky.identifier`), else
    /// logs in with the app password.
    pub async fn login(&self) -> Result<Login, XrpcError> {
        let stored = self
            .store
            .as_ref()
            .and_then(|s| s.session(&self.store_key()).ok().flatten())
            .and_then(|text| serde_json::from_str::<Session>(&text).ok());
        let stored = match stored {
            Some(stored) => match self.own_did().await {
                Ok(did) if did == stored.did => Some(stored),
                Err(e) if e.is_transient() => return Err(e),
                // Another account's session (or a handle that resolves to no one: the app
                // password decides): never refreshed, never used.
                _ => {
                    tracing::warn!(
                        session = %stored.did,
                        identifier = %self.identifier,
                        "the stored Bluesky session is not bluesky.identifier's account; logging in with the app password"
                    );
                    if let Some(store) = &self.store {
                        let _ = store.drop_session(&self.store_key());
                    }
                    None
                }
            },
            None => None,
        };
        if let Some(stored) = stored {
            *self.session.write().await = Some(stored.clone());
            match self.refresh(&stored).await {
                Ok(()) => return Ok(Login::Refreshed),
                Err(e) if e.is_transient() => return Err(e),
                Err(e) => {
                    tracing::warn!(error = %e, "the stored Bluesky session was refused; logging in again");
                    if let Some(store) = &self.store {
                        let _ = store.drop_session(&self.store_key());
                    }
                }
            }
        }
        self.create_session().await?;
        Ok(Login::Created)
    }

    /// The DID of `bluesky.identifier`: itself when it is one, else its handle resolved at the
    /// service (unsigned: this comes before the login).
    async fn own_did(&self) -> Result<String, XrpcError> {
        if self.identifier.starts_with("did:") {
            return Ok(self.identifier.clone());
        }
        let r: Resolved = self
            .query_unsigned(
                &self.service,
                "resolveHandle",
                RESOLVE_HANDLE,
                &handle_param(&self.identifier),
            )
            .await?;
        Ok(r.did)
    }

    /// A handle's DID now (`com.atproto.identity.resolveHandle`, with the session).
    pub async fn resolve_handle(&self, handle: &str) -> Result<String, XrpcError> {
        let r: Resolved = self
            .query("resolveHandle", RESOLVE_HANDLE, &handle_param(handle))
            .await?;
        Ok(r.did)
    }

    async fn create_session(&self) -> Result<(), XrpcError> {
        let body = serde_json::json!({ "identifier": self.identifier, "password": self.password.expose() });
        let session: Session = self
            .send(
                "createSession",
                Method::POST,
                "com.atproto.server.createSession",
                &[],
                Some(&body),
                None,
                None,
            )
            .await?;
        self.keep(session).await;
        Ok(())
    }

    async fn refresh(&self, old: &Session) -> Result<(), XrpcError> {
        let refresh = Secret::new(old.refresh_jwt.clone());
        let session: Session = self
            .send(
                "refreshSession",
                Method::POST,
                "com.atproto.server.refreshSession",
                &[],
                None,
                Some(&refresh),
                None,
            )
            .await?;
        // The refresh token names the account, not the session's `did`: a session whose
        // tokens are another account's is refused, never kept.
        if session.did != old.did {
            return Err(XrpcError::OtherAccount {
                want: old.did.clone(),
                got: session.did,
            });
        }
        self.keep(session).await;
        Ok(())
    }

    async fn keep(&self, session: Session) {
        if let Some(store) = &self.store {
            let text = serde_json::to_string(&session).expect("session serialises");
            if let Err(e) = store.set_session(&self.store_key(), &text) {
                tracing::warn!(error = %e, "could not store the Bluesky session; a restart will log in again");
            }
        }
        *self.session.write().await = Some(session);
    }

    /// A query (`GET /xrpc/{nsid}`), authenticated.
    pub async fn query<T: DeserializeOwned>(
        &self,
        what: &'static str,
        nsid: &str,
        params: &[(&str, String)],
    ) -> Result<T, XrpcError> {
        self.authed(what, Method::GET, nsid, params, None, None).await
    }

    /// A query the PDS forwards to another service of the network (`atproto-proxy:
    /// <did>#<service>`, signed by the PDS for the account): the labeler's Ozone, say.
    pub async fn query_via<T: DeserializeOwned>(
        &self,
        what: &'static str,
        nsid: &str,
        params: &[(&str, String)],
        proxy: &str,
    ) -> Result<T, XrpcError> {
        self.authed(what, Method::GET, nsid, params, None, Some(proxy)).await
    }

    /// A procedure the PDS forwards to another service (see [`Xrpc::query_via`]); no write
    /// points (it writes nothing to the repo).
    pub async fn procedure_via<T: DeserializeOwned>(
        &self,
        what: &'static str,
        nsid: &str,
        body: &serde_json::Value,
        proxy: &str,
    ) -> Result<T, XrpcError> {
        self.authed(what, Method::POST, nsid, &[], Some(body), Some(proxy))
            .await
    }

    /// A procedure (`POST /xrpc/{nsid}` with a JSON body), authenticated; `write_points`
    /// are taken from the hourly and daily write budgets first.
    pub async fn procedure<T: DeserializeOwned>(
        &self,
        what: &'static str,
        nsid: &str,
        body: &serde_json::Value,
        write_points: u32,
    ) -> Result<T, XrpcError> {
        if let Some(n) = NonZeroU32::new(write_points) {
            // `until_n_ready` fails only when n exceeds the burst, which config validation rules out.
            let _ = self.writes_hour.until_n_ready(n).await;
            let _ = self.writes_day.until_n_ready(n).await;
        }
        self.authed(what, Method::POST, nsid, &[], Some(body), None).await
    }

    /// A call with the access token; an expired token is refreshed once and the call repeated.
    async fn authed<T: DeserializeOwned>(
        &self,
        what: &'static str,
        method: Method,
        nsid: &str,
        params: &[(&str, String)],
        body: Option<&serde_json::Value>,
        proxy: Option<&str>,
    ) -> Result<T, XrpcError> {
        for attempt in 0..2 {
            let Some(session) = self.session.read().await.clone() else {
                self.login().await?;
                continue;
            };
            let token = Secret::new(session.access_jwt.clone());
            match self
                .send(what, method.clone(), nsid, params, body, Some(&token), proxy)
                .await
            {
                Err(e) if attempt == 0 && e.is_expired_token() => {
                    tracing::info!("Bluesky access token expired; refreshing the session");
                    if let Err(r) = self.refresh(&session).await {
                        if r.is_transient() {
                            return Err(r);
                        }
                        self.create_session().await?;
                    }
                }
                other => return other,
            }
        }
        Err(XrpcError::Network {
            what,
            reason: "no session after logging in".into(),
        })
    }

    /// A query to another service (an account's own PDS), without the session: what anyone
    /// who is not logged in is answered, with the same pacing, retries and error names.
    pub async fn query_unsigned<T: DeserializeOwned>(
        &self,
        service: &str,
        what: &'static str,
        nsid: &str,
        params: &[(&str, String)],
    ) -> Result<T, XrpcError> {
        let service = service.trim_end_matches('/');
        self.send_to(service, what, Method::GET, nsid, params, None, None, None)
            .await
    }

    #[allow(clippy::too_many_arguments)]
    async fn send<T: DeserializeOwned>(
        &self,
        what: &'static str,
        method: Method,
        nsid: &str,
        params: &[(&str, String)],
        body: Option<&serde_json::Value>,
        token: Option<&Secret>,
        proxy: Option<&str>,
    ) -> Result<T, XrpcError> {
        self.send_to(&self.service, what, method, nsid, params, body, token, proxy)
            .await
    }

    #[allow(clippy::too_many_arguments)]
    async fn send_to<T: DeserializeOwned>(
        &self,
        service: &str,
        what: &'static str,
        method: Method,
        nsid: &str,
        params: &[(&str, String)],
        body: Option<&serde_json::Value>,
        token: Option<&Secret>,
        proxy: Option<&str>,
    ) -> Result<T, XrpcError> {
        let url = format!("{service}/xrpc/{nsid}");
        retry::with_retries(self.max_retries, what, || async {
            self.limiter.until_ready().await;
            let mut req = self.http.request(method.clone(), &url).query(params);
            if let Some(token) = token {
                req = req.bearer_auth(token.expose());
            }
            if let Some(proxy) = proxy {
                req = req.header("atproto-proxy", proxy);
            }
            if let Some(body) = body {
                req = req.json(body);
            }
            let resp = req.send().await.map_err(|e| XrpcError::Network {
                what,
                reason: e.without_url().to_string(),
            })?;
            let status = resp.status();
            if !status.is_success() {
                let retry_after = retry::hinted_wait(status.as_u16(), resp.headers());
                let text = crate::body::error_text(resp).await;
                let parsed = serde_json::from_str::<ErrorBody>(&text).unwrap_or_default();
                return Err(XrpcError::Status {
                    status: status.as_u16(),
                    what,
                    error: parsed.error.unwrap_or_else(|| "Unknown".into()),
                    message: parsed.message.unwrap_or(text),
                    retry_after,
                });
            }
            let bytes = crate::body::read_capped(resp, self.max_response_bytes)
                .await
                .map_err(|e| XrpcError::Decode {
                    what,
                    reason: e.to_string(),
                })?;
            // Procedures without output (`updateSeen`) answer an empty body: read it as null.
            let bytes = if bytes.iter().all(u8::is_ascii_whitespace) {
                b"null".to_vec()
            } else {
                bytes
            };
            serde_json::from_slice::<T>(&bytes).map_err(|e| XrpcError::Decode {
                what,
                reason: e.to_string(),
            })
        })
        .await
    }
}

const RESOLVE_HANDLE: &str = "com.atproto.identity.resolveHandle";

/// `resolveHandle`'s answer.
#[derive(Deserialize)]
struct Resolved {
    did: String,
}

/// `resolveHandle`'s parameter: the handle as given, without its `@`, lower-case.
fn handle_param(handle: &str) -> [(&'static str, String); 1] {
    [("handle", handle.trim().trim_start_matches('@').to_lowercase())]
}

/// An XRPC error body: `{"error": "Name", "message": "…"}`.
#[derive(Default, Deserialize)]
struct ErrorBody {
    error: Option<String>,
    message: Option<String>,
}

#[cfg(test)]
#[path = "xrpc_tests.rs"]
mod tests;
