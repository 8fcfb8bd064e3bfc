//! The XRPC client's own rules: a session never prints its tokens, expired tokens are
//! recognised, and a stored session is used only for the configured identity's DID.

use super::*;

#[test]
fn a_session_never_prints_its_tokens() {
    let s = Session {
        access_jwt: "eyJ-access-secret".into(),
        refresh_jwt: "eyJ-refresh-secret".into(),
        did: "did:plc:abc".into(),
        handle: "bot.example".into(),
    };
    let shown = format!("{s:?}");
    assert!(!shown.contains("secret"), "{shown}");
    assert!(shown.contains("bot.example"));
}

/// A PDS where `bot.test` is `did:plc:bot` and `other.test` `did:plc:other`: a refresh token
/// `r-<name>` refreshes that account's session; a login is the bot's. Counts the logins.
async fn pds() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use axum::http::{HeaderMap, Method, StatusCode, Uri};
    use axum::response::IntoResponse;
    use std::sync::atomic::Ordering;
    let logins = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = logins.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let session = |name: &str| {
        serde_json::json!({"accessJwt": format!("a-{name}"), "refreshJwt": format!("r-{name}"),
            "did": format!("did:plc:{name}"), "handle": format!("{name}.test")})
        .to_string()
        .into_response()
    };
    let app = axum::Router::new().fallback(move |method: Method, uri: Uri, headers: HeaderMap| {
        let counted = counted.clone();
        async move {
            let path = uri.path_and_query().map(|p| p.to_string()).unwrap_or_default();
            let bearer = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string();
            match (method, path.as_str()) {
                (Method::POST, "/xrpc/com.atproto.server.createSession") => {
                    counted.fetch_add(1, Ordering::SeqCst);
                    session("bot")
                }
                (Method::POST, "/xrpc/com.atproto.server.refreshSession") => match bearer.strip_prefix("Bearer r-") {
                    Some(name) => session(name),
                    None => StatusCode::UNAUTHORIZED.into_response(),
                },
                (Method::GET, "/xrpc/com.atproto.identity.resolveHandle?handle=bot.test") => {
                    r#"{"did":"did:plc:bot"}"#.into_response()
                }
                _ => StatusCode::NOT_FOUND.into_response(),
            }
        }
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (base, logins)
}

/// A stored session is refreshed only when it is the configured identity's: its DID that of
/// the identifier (a DID, or a handle resolved), and the refreshed one's too. Another
/// account's (planted in the store, or a session whose tokens are another's under the
/// bot's DID) is dropped, and the bot logs in with its password as itself.
#[tokio::test]
async fn a_stored_session_is_used_only_for_the_configured_identitys_did() {
    use std::sync::atomic::Ordering;
    let (base, logins) = pds().await;
    let stored = |did: &str, token: &str| {
        serde_json::json!({"accessJwt": "a", "refreshJwt": token, "did": did, "handle": "x.test"}).to_string()
    };
    let cases = [
        ("bot.test", stored("did:plc:bot", "r-bot"), Login::Refreshed),
        ("did:plc:bot", stored("did:plc:bot", "r-bot"), Login::Refreshed),
        ("bot.test", stored("did:plc:other", "r-other"), Login::Created),
        ("did:plc:bot", stored("did:plc:other", "r-other"), Login::Created),
        // The bot's DID written over another account's tokens.
        ("bot.test", stored("did:plc:bot", "r-other"), Login::Created),
    ];
    for (identifier, session, how) in cases {
        let config = BlueskyConfig {
            service: base.clone(),
            identifier: identifier.into(),
            max_retries: 0,
            ..Default::default()
        };
        let store = Store::open_temporary().unwrap();
        let xrpc = Xrpc::new(&config, Secret::new("pw"), Some(store.clone())).unwrap();
        store.set_session(&xrpc.store_key(), &session).unwrap();
        let before = logins.load(Ordering::SeqCst);
        assert_eq!(xrpc.login().await.unwrap(), how, "{identifier} {session}");
        let created = logins.load(Ordering::SeqCst) - before;
        assert_eq!(created, usize::from(how == Login::Created), "{identifier} {session}");
        let (did, _) = xrpc.account().await.unwrap();
        assert_eq!(did, "did:plc:bot", "{identifier} {session}");
        let kept: Session = serde_json::from_str(&store.session(&xrpc.store_key()).unwrap().unwrap()).unwrap();
        assert_eq!(kept.did, "did:plc:bot", "{identifier} {session}");
    }
}

#[test]
fn expired_and_invalid_tokens_are_recognised() {
    let e = |status, name: &str| XrpcError::Status {
        status,
        what: "t",
        error: name.into(),
        message: String::new(),
        retry_after: None,
    };
    assert!(e(400, "ExpiredToken").is_expired_token());
    assert!(e(400, "InvalidToken").is_expired_token());
    assert!(e(401, "AuthMissing").is_expired_token());
    assert!(!e(400, "InvalidSwap").is_expired_token());
    assert!(e(429, "RateLimitExceeded").is_transient());
}
