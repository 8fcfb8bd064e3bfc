//! The Mastodon REST client: every request paced by a `governor` limiter below the server's
//! limit, retried on 429/5xx/network errors (waiting for `X-RateLimit-Reset`), and statuses
//! posted with an `Idempotency-Key`. Every Mastodon call the bot makes is here (ARCHITECTURE.md
//! says why megalodon is not used).

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use reqwest::Method;
use serde::de::DeserializeOwned;

use super::api::{Account, AdminReport, Instance, Notification, Status};
use crate::config::MastodonConfig;
use crate::model::Visibility;
use crate::retry::{self, Transient};
use crate::secret::Secret;

#[derive(Debug, thiserror::Error)]
pub enum MastodonError {
    #[error("Mastodon answered HTTP {status} for {what}: {body}")]
    Status {
        status: u16,
        what: &'static str,
        body: String,
        retry_after: Option<Duration>,
    },
    #[error("Mastodon unreachable ({what}): {reason}")]
    Network { what: &'static str, reason: String },
    #[error("Mastodon sent an unreadable answer ({what}): {reason}")]
    Decode { what: &'static str, reason: String },
}

impl MastodonError {
    pub fn status(&self) -> Option<u16> {
        match self {
            MastodonError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

impl Transient for MastodonError {
    fn is_transient(&self) -> bool {
        match self {
            MastodonError::Status { status, .. } => *status == 429 || *status >= 500 || *status == 408,
            MastodonError::Network { .. } => true,
            MastodonError::Decode { .. } => false,
        }
    }
    fn retry_after(&self) -> Option<Duration> {
        match self {
            MastodonError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

#[derive(Clone)]
pub struct MastodonClient {
    http: reqwest::Client,
    base: String,
    token: Secret,
    limiter: Arc<DefaultDirectRateLimiter>,
    /// Posts only, below the 3-hour budget (`posts_per_3h`).
    post_limiter: Arc<DefaultDirectRateLimiter>,
    max_retries: usize,
    max_response_bytes: usize,
    /// Whether the server reads several statuses in one request (Mastodon 4.3+); cleared the
    /// first time it answers that it does not.
    batch_reads: Arc<std::sync::atomic::AtomicBool>,
}

impl MastodonClient {
    pub fn new(config: &MastodonConfig, token: Secret) -> Result<MastodonClient, MastodonError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(config.timeout_secs))
            .connect_timeout(Duration::from_secs(10))
            .user_agent(crate::USER_AGENT)
            .build()
            .map_err(|e| MastodonError::Network {
                what: "client",
                reason: e.to_string(),
            })?;
        Ok(MastodonClient {
            http,
            base: config.base_url.trim_end_matches('/').to_string(),
            token,
            limiter: Arc::new(pacing_limiter(config.requests_per_5min)),
            post_limiter: Arc::new(post_limiter(config.posts_per_3h)),
            max_retries: config.max_retries,
            max_response_bytes: config.max_response_bytes,
            batch_reads: Arc::new(std::sync::atomic::AtomicBool::new(true)),
        })
    }

    pub fn base_url(&self) -> &str {
        &self.base
    }

    pub(crate) fn token(&self) -> &Secret {
        &self.token
    }

    /// Waits for the pacing limiter.
    pub async fn pace(&self) {
        self.limiter.until_ready().await;
    }

    async fn request<T: DeserializeOwned>(
        &self,
        what: &'static str,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        form: Option<&[(&str, String)]>,
        idempotency_key: Option<&str>,
    ) -> Result<T, MastodonError> {
        self.request_as(true, what, method, path, query, form, idempotency_key)
            .await
    }

    /// A request with the bot's token (`signed`), or as anyone (none: what a logged-out
    /// reader of the server is shown).
    #[allow(clippy::too_many_arguments)]
    async fn request_as<T: DeserializeOwned>(
        &self,
        signed: bool,
        what: &'static str,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        form: Option<&[(&str, String)]>,
        idempotency_key: Option<&str>,
    ) -> Result<T, MastodonError> {
        retry::with_retries(self.max_retries, what, || async {
            self.pace().await;
            let mut req = self
                .http
                .request(method.clone(), format!("{}{}", self.base, path))
                .query(query);
            if signed {
                req = req.bearer_auth(self.token.expose());
            }
            if let Some(form) = form {
                req = req.form(form);
            }
            if let Some(key) = idempotency_key {
                req = req.header("Idempotency-Key", key);
            }
            let resp = req.send().await.map_err(|e| MastodonError::Network {
                what,
                reason: e.without_url().to_string(),
            })?;
            let status = resp.status();
            if !status.is_success() {
                let retry_after = retry::hinted_wait(status.as_u16(), resp.headers());
                let body = crate::body::error_text(resp).await;
                return Err(MastodonError::Status {
                    status: status.as_u16(),
                    what,
                    body,
                    retry_after,
                });
            }
            let bytes = crate::body::read_capped(resp, self.max_response_bytes)
                .await
                .map_err(|e| MastodonError::Decode {
                    what,
                    reason: e.to_string(),
                })?;
            serde_json::from_slice::<T>(&bytes).map_err(|e| MastodonError::Decode {
                what,
                reason: e.to_string(),
            })
        })
        .await
    }

    /// The token's own account (checks the token at start-up).
    pub async fn verify_credentials(&self) -> Result<Account, MastodonError> {
        let path = "/api/v1/accounts/verify_credentials";
        self.request("verify_credentials", Method::GET, path, &[], None, None)
            .await
    }

    /// Sets the account's bot flag (form body: JSON bodies are not accepted everywhere) and
    /// returns the updated account.
    pub async fn set_bot_flag(&self) -> Result<Account, MastodonError> {
        let form = [("bot", "true".to_string())];
        let path = "/api/v1/accounts/update_credentials";
        self.request("update_credentials", Method::PATCH, path, &[], Some(&form), None)
            .await
    }

    /// Instance limits and streaming host: v2, falling back to v1.
    pub async fn instance(&self) -> Result<Instance, MastodonError> {
        match self
            .request("instance", Method::GET, "/api/v2/instance", &[], None, None)
            .await
        {
            Ok(i) => Ok(i),
            Err(e) if e.status() == Some(404) => {
                self.request("instance", Method::GET, "/api/v1/instance", &[], None, None)
                    .await
            }
            Err(e) => Err(e),
        }
    }

    /// Public posts on hashtag `tag` (no `#`) newer than `min_id` — the page right after it —
    /// or the newest page when `min_id` is `None`; the server returns them newest first.
    pub async fn tag_timeline(
        &self,
        tag: &str,
        min_id: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Status>, MastodonError> {
        let mut query = vec![("limit", limit.to_string())];
        if let Some(min) = min_id {
            query.push(("min_id", min.to_string()));
        }
        self.request(
            "tag_timeline",
            Method::GET,
            &format!("/api/v1/timelines/tag/{}", path_segment(tag)),
            &query,
            None,
            None,
        )
        .await
    }

    /// The instance's local public posts newer than `min_id` (the page right after it), or
    /// the newest page when `None`; newest first, as the server returns them.
    pub async fn local_timeline(&self, min_id: Option<&str>, limit: u32) -> Result<Vec<Status>, MastodonError> {
        let mut query = vec![("local", "true".to_string()), ("limit", limit.to_string())];
        if let Some(min) = min_id {
            query.push(("min_id", min.to_string()));
        }
        self.request(
            "local_timeline",
            Method::GET,
            "/api/v1/timelines/public",
            &query,
            None,
            None,
        )
        .await
    }

    pub async fn status(&self, id: &str) -> Result<Status, MastodonError> {
        self.request(
            "get_status",
            Method::GET,
            &format!("/api/v1/statuses/{}", path_segment(id)),
            &[],
            None,
            None,
        )
        .await
    }

    /// A status as the server shows it to a reader who is not logged in (no token): blocks
    /// between accounts do not apply to that reader, so a public status the bot's own read
    /// misses is there but hidden from the bot. A server that shows nothing to logged-out
    /// readers answers 401.
    pub async fn status_unsigned(&self, id: &str) -> Result<Status, MastodonError> {
        let path = format!("/api/v1/statuses/{}", path_segment(id));
        self.request_as(false, "get_status_unsigned", Method::GET, &path, &[], None, None)
            .await
    }

    /// The account named `acct` (`user` for the server's own, `user@domain` for another's),
    /// exactly (`GET /api/v1/accounts/lookup`): its id is what the bot knows it by.
    pub async fn lookup_account(&self, acct: &str) -> Result<Account, MastodonError> {
        let query = [("acct", acct.trim().trim_start_matches('@').to_string())];
        self.request(
            "lookup_account",
            Method::GET,
            "/api/v1/accounts/lookup",
            &query,
            None,
            None,
        )
        .await
    }

    /// The account named `acct` as search finds it, fetching it from its own server when this
    /// one has not seen it yet (`resolve=true`, WebFinger): only an exact `acct` counts.
    pub async fn search_account(&self, acct: &str) -> Result<Option<Account>, MastodonError> {
        #[derive(serde::Deserialize)]
        struct Results {
            #[serde(default)]
            accounts: Vec<Account>,
        }
        let acct = acct.trim().trim_start_matches('@');
        let query = [
            ("q", format!("@{acct}")),
            ("resolve", "true".into()),
            ("type", "accounts".into()),
            ("limit", "5".into()),
        ];
        let r: Results = self
            .request("search", Method::GET, "/api/v2/search", &query, None, None)
            .await?;
        Ok(r.accounts.into_iter().find(|a| a.acct.eq_ignore_ascii_case(acct)))
    }

    /// Open reports (`GET /api/v1/admin/reports`: unresolved ones, which is the default) newer
    /// than `min_id` — the page right after it —, or the newest page when `min_id` is `None`.
    /// Needs a role that may manage reports and the `admin:read:reports` scope (else 403).
    pub async fn admin_reports(&self, min_id: Option<&str>, limit: u32) -> Result<Vec<AdminReport>, MastodonError> {
        let mut query = vec![("limit", limit.to_string())];
        if let Some(min) = min_id {
            query.push(("min_id", min.to_string()));
        }
        self.request(
            "admin_reports",
            Method::GET,
            "/api/v1/admin/reports",
            &query,
            None,
            None,
        )
        .await
    }

    /// Mention notifications newer than `min_id` (the page right after it), and the largest id of the whole page (other
    /// notification types included, from servers that ignore `types[]`), so a catch-up can move
    /// past a page with no mention in it.
    pub async fn mentions_page(
        &self,
        min_id: Option<&str>,
        limit: u32,
    ) -> Result<(Vec<Notification>, Option<String>), MastodonError> {
        let mut query = vec![("types[]", "mention".to_string()), ("limit", limit.to_string())];
        if let Some(min) = min_id {
            query.push(("min_id", min.to_string()));
        }
        let list: Vec<Notification> = self
            .request(
                "notifications",
                Method::GET,
                "/api/v1/notifications",
                &query,
                None,
                None,
            )
            .await?;
        let largest = list
            .iter()
            .map(|n| n.id.clone())
            .reduce(|a, b| if crate::model::id_less(&a, &b) { b } else { a });
        Ok((list.into_iter().filter(|n| n.kind == "mention").collect(), largest))
    }

    /// Mention notifications newer than `min_id`, or the newest one when `min_id` is `None`
    /// and `limit` is 1.
    pub async fn mentions(&self, min_id: Option<&str>, limit: u32) -> Result<Vec<Notification>, MastodonError> {
        Ok(self.mentions_page(min_id, limit).await?.0)
    }

    /// Posts one status; a repeat with the same key returns the original (no duplicate).
    pub async fn post_status(
        &self,
        text: &str,
        in_reply_to_id: &str,
        visibility: Visibility,
        idempotency_key: &str,
        language: Option<&str>,
    ) -> Result<Status, MastodonError> {
        let mut form = vec![
            ("status", text.to_string()),
            ("visibility", visibility.as_str().to_string()),
        ];
        // A thread's first part (a direct message to moderators) replies to nothing.
        if !in_reply_to_id.is_empty() {
            form.push(("in_reply_to_id", in_reply_to_id.to_string()));
        }
        // ISO 639: the status's language (servers and clients filter and translate by it).
        if let Some(l) = language.filter(|l| !l.is_empty()) {
            form.push(("language", status_language(l)));
        }
        self.post_limiter.until_ready().await;
        self.request(
            "post_status",
            Method::POST,
            "/api/v1/statuses",
            &[],
            Some(&form),
            Some(idempotency_key),
        )
        .await
    }

    /// Several statuses in one request (`GET /api/v1/statuses?id[]=`, Mastodon 4.3+): those
    /// the bot can still see; `None` when the server has no such endpoint (older servers).
    pub async fn statuses(&self, ids: &[String]) -> Result<Option<Vec<Status>>, MastodonError> {
        use std::sync::atomic::Ordering;
        if !self.batch_reads.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let query: Vec<(&str, String)> = ids.iter().map(|i| ("id[]", i.clone())).collect();
        match self
            .request("get_statuses", Method::GET, "/api/v1/statuses", &query, None, None)
            .await
        {
            Ok(list) => Ok(Some(list)),
            Err(e) if matches!(e.status(), Some(404 | 405)) => {
                tracing::info!("the server reads statuses one at a time (no GET /api/v1/statuses)");
                self.batch_reads.store(false, Ordering::Relaxed);
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Whether several statuses can be read in one request (as far as the server has said).
    pub fn reads_in_batches(&self) -> bool {
        self.batch_reads.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Deletes one of the bot's statuses. One already gone (404) counts as deleted.
    pub async fn delete_status(&self, id: &str) -> Result<(), MastodonError> {
        let path = format!("/api/v1/statuses/{}", path_segment(id));
        match self
            .request::<serde::de::IgnoredAny>("delete_status", Method::DELETE, &path, &[], None, None)
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.status() == Some(404) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Edits one of the bot's statuses (`PUT /api/v1/statuses/:id`): the server keeps the
    /// edit history and notifies those who boosted it.
    pub async fn edit_status(&self, id: &str, text: &str, language: Option<&str>) -> Result<Status, MastodonError> {
        let mut form = vec![("status", text.to_string())];
        if let Some(l) = language.filter(|l| !l.is_empty()) {
            form.push(("language", status_language(l)));
        }
        self.post_limiter.until_ready().await;
        let path = format!("/api/v1/statuses/{}", path_segment(id));
        self.request("edit_status", Method::PUT, &path, &[], Some(&form), None)
            .await
    }

    /// Looks a status up by its public URL (remote posts too). Only a status whose `url` or
    /// `uri` is that URL counts: when the server cannot resolve it, search answers with posts
    /// that merely contain the URL in their text (a command that quotes it, say).
    pub async fn search_status(&self, url: &str) -> Result<Option<Status>, MastodonError> {
        #[derive(serde::Deserialize)]
        struct Results {
            #[serde(default)]
            statuses: Vec<Status>,
        }
        let query = [
            ("q", url.to_string()),
            ("resolve", "true".into()),
            ("type", "statuses".into()),
        ];
        let r: Results = self
            .request("search", Method::GET, "/api/v2/search", &query, None, None)
            .await?;
        let same = |s: &Status| s.uri == url || s.url.as_deref() == Some(url);
        Ok(r.statuses.into_iter().find(same))
    }
}

/// A pacing limiter for `per_5min` requests per 5 minutes, with a small burst.
/// Posts: one every 3 h / `per_3h` after a burst of [`POST_BURST`], so no 3-hour window holds
/// more than `POST_BURST + per_3h` posts.
fn post_limiter(per_3h: u32) -> DefaultDirectRateLimiter {
    let period = Duration::from_secs(3 * 3600) / per_3h.max(1);
    let burst = NonZeroU32::new(POST_BURST).expect("non-zero");
    RateLimiter::direct(Quota::with_period(period).expect("non-zero period").allow_burst(burst))
}

/// Posts allowed at once before the 3-hour pacing applies.
pub const POST_BURST: u32 = 20;

fn pacing_limiter(per_5min: u32) -> DefaultDirectRateLimiter {
    let n = per_5min.max(1);
    let period = Duration::from_secs(300) / n;
    let burst = NonZeroU32::new(n.clamp(1, 20)).expect("clamped to >= 1");
    RateLimiter::direct(Quota::with_period(period).expect("non-zero period").allow_burst(burst))
}

/// Keeps an id from escaping its path segment.
fn path_segment(id: &str) -> String {
    id.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .collect()
}

/// A language as Mastodon takes it: an ISO 639 code, or for Chinese its regional form
/// (`LanguagesHelper::ISO_639_1_REGIONAL`: `zh-CN`, `zh-HK`, `zh-TW`), since a script
/// subtag (`zh-Hant`) is not among the codes a server accepts.
pub fn status_language(lang: &str) -> String {
    match lang {
        "zh-Hant" => "zh-TW".to_string(),
        "zh-Hans" => "zh-CN".to_string(),
        other => other.to_string(),
    }
}
