//! The Mastodon calls of identity and absence against a scripted server that answers as
//! Mastodon's documentation and source say it does (mastodon-mock models neither blocks nor
//! servers closed to logged-out readers): a status whose author blocks the viewer is a 404 to
//! that viewer (`StatusPolicy#show?`) and a 200 to a logged-out reader; a deleted one is a 404
//! to everyone; a server with `DISALLOW_UNAUTHENTICATED_API_ACCESS` answers logged-out readers
//! 401. `accounts/lookup` reads only accounts the server holds (404 otherwise); `v2/search`
//! with `resolve=true` fetches others.

use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::IntoResponse;
use serde_json::json;

use super::client::MastodonClient;
use super::Mastodon;
use crate::platform::{Absence, PlatformError};

/// Every request seen: (path and query, whether it carried the bot's token).
type Seen = Arc<Mutex<Vec<(String, bool)>>>;

async fn server() -> (Mastodon, Seen) {
    let seen: Seen = Arc::default();
    let s = seen.clone();
    let app = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap| {
        let seen = s.clone();
        async move {
            let path = uri.path_and_query().map(|p| p.to_string()).unwrap_or_default();
            let signed = headers
                .get("authorization")
                .is_some_and(|v| v.as_bytes() == b"Bearer tok-bot");
            seen.lock().unwrap().push((path.clone(), signed));
            let not_found = || (StatusCode::NOT_FOUND, r#"{"error":"Record not found"}"#).into_response();
            let account = |id: &str, acct: &str| json!({"id": id, "username": acct, "acct": acct}).to_string();
            match (path.as_str(), signed) {
                ("/api/v1/statuses/blocked", false) => json!({
                    "id": "blocked", "created_at": "2026-12-01T10:00:00.000Z", "content": "<p>The Moon is cheese</p>",
                    "account": {"id": "7", "acct": "carol@else.example"}})
                .to_string()
                .into_response(),
                ("/api/v1/statuses/closed", false) => (
                    StatusCode::UNAUTHORIZED,
                    r#"{"error":"This API requires an authenticated user"}"#,
                )
                    .into_response(),
                ("/api/v1/accounts/lookup?acct=alice", true) => account("111", "alice").into_response(),
                (p, true) if p.starts_with("/api/v2/search?") && p.contains("other.example") => json!({"accounts": [
                    serde_json::from_str::<serde_json::Value>(&account("333", "mod@other.example.evil")).unwrap(),
                    serde_json::from_str::<serde_json::Value>(&account("222", "mod@other.example")).unwrap()]})
                .to_string()
                .into_response(),
                (p, true) if p.starts_with("/api/v2/search?") => r#"{"accounts":[]}"#.into_response(),
                _ => not_found(),
            }
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let config = crate::config::MastodonConfig {
        base_url: base,
        max_retries: 0,
        ..Default::default()
    };
    let client = MastodonClient::new(&config, crate::secret::Secret::new("tok-bot")).unwrap();
    let mastodon = Mastodon {
        client,
        limits: crate::compose::TextLimits {
            max_chars: 500,
            chars_per_url: 23,
        },
        bot_acct: "musebot".into(),
        bot_account_id: "1".into(),
        account_domain: None,
    };
    (mastodon, seen)
}

/// A post the bot's own read misses is asked of the server as a logged-out reader: shown →
/// hidden from the bot (a block), 404 → deleted, 401 → the server cannot tell.
#[tokio::test]
async fn a_block_is_told_from_a_deletion_by_a_logged_out_read() {
    let (m, seen) = server().await;
    for id in ["blocked", "deleted", "closed"] {
        assert!(matches!(
            m.client.status(id).await.map_err(PlatformError::from),
            Err(PlatformError::Gone(_))
        ));
    }
    assert!(matches!(m.confirm_deleted("blocked").await, Ok(Absence::Hidden(_))));
    assert_eq!(m.confirm_deleted("deleted").await.unwrap(), Absence::Deleted);
    assert!(matches!(m.confirm_deleted("closed").await, Ok(Absence::Unknown(_))));
    let seen = seen.lock().unwrap().clone();
    let unsigned: Vec<&str> = seen.iter().filter(|(_, s)| !s).map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        unsigned,
        [
            "/api/v1/statuses/blocked",
            "/api/v1/statuses/deleted",
            "/api/v1/statuses/closed"
        ],
        "the confirmations, and only they, go without the token"
    );
}

/// Moderators are looked up to account ids: a local `acct` by lookup, another server's by
/// search when the server has not seen it (an exact `acct` only), an unknown one is an error.
#[tokio::test]
async fn moderators_are_looked_up_to_their_account_ids() {
    let (m, _) = server().await;
    assert_eq!(m.account_id("alice").await.unwrap(), "111");
    assert_eq!(m.account_id("mod@other.example").await.unwrap(), "222");
    assert!(matches!(m.account_id("ghost").await, Err(PlatformError::Gone(_))));
    assert!(matches!(
        m.account_id("ghost@far.example").await,
        Err(PlatformError::Gone(_))
    ));
}
