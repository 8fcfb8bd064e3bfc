//! Mastodon's `report.created` webhook, when an operator registers one
//! (`moderation.reports.webhook_listen`): a POST whose body is signed with the webhook's
//! secret (`X-Hub-Signature: sha256=<hex HMAC-SHA256 of the body>`). A correctly signed
//! `report.created` only wakes the report watch ([`crate::platform::mastodon::reports`]),
//! which reads the report from the server's API: the body itself decides nothing, so a replayed
//! or forged-but-signed body can at most cause one extra read. Anything unsigned or wrongly
//! signed is refused (401) and logged without its content.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::metrics::SharedMetrics;
use crate::secret::Secret;

/// Bodies larger than this are refused before they are read whole (a report event is a few KiB).
const MAX_BODY: usize = 1 << 20;

#[derive(Clone)]
struct Hook {
    secret: Secret,
    wake: Arc<Notify>,
    metrics: SharedMetrics,
}

/// Serves the webhook on `listener` (any path) until `shutdown`.
pub async fn serve(
    listener: tokio::net::TcpListener,
    secret: Secret,
    wake: Arc<Notify>,
    metrics: SharedMetrics,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let hook = Hook { secret, wake, metrics };
    let app = Router::new()
        .fallback(post(receive))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(hook);
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
}

async fn receive(State(hook): State<Hook>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let signature = headers.get("x-hub-signature").and_then(|v| v.to_str().ok());
    if !signed(hook.secret.expose().as_bytes(), &body, signature) {
        hook.metrics.report("mastodon", "webhook_refused");
        tracing::warn!(bytes = body.len(), "a webhook call without a valid signature refused");
        return StatusCode::UNAUTHORIZED;
    }
    let event = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["event"].as_str().map(str::to_string));
    if event.as_deref() == Some("report.created") {
        hook.metrics.report("mastodon", "webhook");
        hook.wake.notify_one();
    } else {
        tracing::debug!(
            event = event.as_deref().unwrap_or("?"),
            "a webhook event other than report.created ignored"
        );
    }
    StatusCode::OK
}

/// Whether `header` (`sha256=<hex>`) is the HMAC-SHA256 of `body` under `secret`, compared in
/// constant time.
pub fn signed(secret: &[u8], body: &[u8], header: Option<&str>) -> bool {
    let Some(hex) = header.and_then(|h| h.trim().strip_prefix("sha256=")) else {
        return false;
    };
    let Some(expected) = decode_hex(hex) else { return false };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        return false;
    };
    mac.update(body);
    mac.verify_slice(&expected).is_ok()
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if hex.len() % 2 != 0 {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Mastodon's documented signing: `X-Hub-Signature: sha256=` + hex(HMAC-SHA256(secret, body)).
    /// The expected value is computed independently (Python: hmac.new(b"s3cret", body, "sha256")).
    #[test]
    fn a_signature_is_checked_against_the_body() {
        let body = br#"{"event":"report.created","created_at":"2026-12-05T08:00:00.000Z","object":{"id":"9"}}"#;
        let right = "sha256=c14442cd9edb475c7edc95ddb70badfde2c0328d22b99a70508e02abc899cb33";
        let other = "sha256=a3c6b8a3f9f20d1a1b6a0f48d1ec0e8c55d5b0c0b0c3b1d9c2d8c1e7e1d7f0a1";
        assert!(signed(b"s3cret", body, Some(right)));
        assert!(!signed(b"s3cret", body, Some(other)), "another digest");
        assert!(!signed(b"other", body, Some(right)), "another secret");
        assert!(!signed(b"s3cret", b"{}", Some(right)), "another body");
        assert!(!signed(b"s3cret", body, None));
        assert!(!signed(b"s3cret", body, Some(right.trim_start_matches("sha256="))));
    }
}
