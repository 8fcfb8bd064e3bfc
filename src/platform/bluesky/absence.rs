//! Telling a deleted Bluesky post from one hidden from the bot. The AppView leaves a post out
//! of `getPosts` when it is deleted, and also when its author blocks the bot or deactivates
//! the account; only a deletion may take the bot's answer down (a block must not remove the
//! correction while the false post stays up). So the post's record is asked of its author's
//! own repository: `com.atproto.repo.getRecord`, not logged in, on the PDS the author's DID
//! document names (`did:plc` through `bluesky.plc_directory`, `did:web` from its host).
//! Blocks do not apply to repository reads: a record there is a post only hidden from the
//! bot, `RecordNotFound` a deletion — confirmed where the network serves the post (the bot's
//! own PDS, forwarding to the AppView), so a self-hosted PDS cannot take a correction down by
//! denying the bot alone — and a deactivated or taken-down repository cannot tell. A rate
//! limit of the author's server holds back that one post, never the bot's other answers.
//! When the DID document cannot be read, or names a PDS that is not a public `https` host
//! (an address of the bot's own network must not be reachable through a DID document), the
//! bot's own PDS is asked instead: it serves the repositories it hosts and forwards the
//! others to the AppView, whose repository reads ignore blocks too.

use super::{labels, Bluesky};
use crate::platform::{Absence, PlatformError};
use crate::retry::Transient;

impl Bluesky {
    /// Whether the post at `uri`, which the bot can no longer read, is deleted or only hidden
    /// from it, asked of the author's repository.
    pub async fn confirm_deleted(&self, uri: &str) -> Result<Absence, PlatformError> {
        let mut parts = uri.strip_prefix("at://").unwrap_or_default().splitn(3, '/');
        let (Some(did), Some(collection), Some(rkey)) = (parts.next(), parts.next(), parts.next()) else {
            return Ok(Absence::Unknown(format!("{uri} is not a record's at:// URI")));
        };
        let params = [
            ("repo", did.to_string()),
            ("collection", collection.to_string()),
            ("rkey", rkey.to_string()),
        ];
        let (nsid, what) = ("com.atproto.repo.getRecord", "getRecord");
        let author_pds = self.pds_of(did).await;
        let answer: Result<serde_json::Value, _> = match &author_pds {
            Ok(pds) => self.xrpc.query_unsigned(pds, what, nsid, &params).await,
            Err(why) => {
                tracing::info!(did, why, "the author's PDS is not known; asking the bot's own");
                self.xrpc.query(what, nsid, &params).await
            }
        };
        let asked_the_author = author_pds.is_ok_and(|pds| !same_origin(&pds, self.xrpc.service()));
        match answer {
            Ok(_) => Ok(Absence::Hidden(
                "the post is in its author's repository but hidden from the bot (a block)".into(),
            )),
            // The author's own server alone does not decide a deletion: the network's copy
            // (the bot's PDS, which forwards to the AppView) must be gone too.
            Err(e) if e.name() == Some("RecordNotFound") && asked_the_author => {
                let network = self.xrpc.service().to_string();
                match self
                    .xrpc
                    .query_unsigned::<serde_json::Value>(&network, what, nsid, &params)
                    .await
                {
                    Err(n) if n.name() == Some("RecordNotFound") => Ok(Absence::Deleted),
                    Ok(_) => Ok(Absence::Unknown(
                        "the author's server says the post is deleted, the network still serves it".into(),
                    )),
                    Err(n) if n.is_transient() => Err(n.into()),
                    Err(n) => Ok(Absence::Unknown(n.to_string())),
                }
            }
            Err(e) if e.name() == Some("RecordNotFound") => Ok(Absence::Deleted),
            // The author's server rate-limits the bot: that post waits for the next round;
            // the bot's own limits are not touched, and no other answer waits with it.
            Err(e) if e.is_transient() && asked_the_author => Err(PlatformError::Transient(e.to_string())),
            Err(e) if e.is_transient() => Err(e.into()),
            // RepoDeactivated, RepoTakendown, RepoNotFound, …: the post may come back.
            Err(e) => Ok(Absence::Unknown(e.to_string())),
        }
    }

    /// The PDS that holds `did`'s repository, by its DID document; why not, when it cannot
    /// be read or is not a PDS the bot may ask.
    async fn pds_of(&self, did: &str) -> Result<String, String> {
        let doc = labels::did_document(did, &self.plc_directory)
            .await
            .map_err(|e| e.to_string())?;
        let pds = pds_endpoint(did, &doc).ok_or("its DID document names no PDS")?;
        #[cfg(test)]
        if self.loopback_pds {
            return Ok(pds);
        }
        if same_origin(&pds, self.xrpc.service()) {
            Ok(pds)
        } else if public_https(&pds) {
            // A name is not an address: it must resolve to public addresses only (the client
            // follows no redirect, so this is the host the request reaches).
            let host = url::Url::parse(&pds)
                .ok()
                .and_then(|u| u.host_str().map(str::to_string));
            match host {
                Some(h) if resolves_public(&h).await => Ok(pds),
                _ => Err(format!(
                    "its DID document names {pds}, which does not resolve to public addresses only"
                )),
            }
        } else {
            Err(format!("its DID document names {pds}, not a public https host"))
        }
    }
}

/// The `#atproto_pds` service endpoint of a DID document (its id written in either form).
pub fn pds_endpoint(did: &str, doc: &serde_json::Value) -> Option<String> {
    let services = doc.get("service")?.as_array()?;
    services
        .iter()
        .find(|s| {
            let id = s.get("id").and_then(|i| i.as_str()).unwrap_or_default();
            id == "#atproto_pds" || id == format!("{did}#atproto_pds")
        })
        .and_then(|s| s.get("serviceEndpoint")?.as_str())
        .map(|e| e.trim_end_matches('/').to_string())
}

/// Whether two service URLs name the same scheme, host and port.
fn same_origin(a: &str, b: &str) -> bool {
    match (url::Url::parse(a), url::Url::parse(b)) {
        (Ok(a), Ok(b)) => a.origin() == b.origin(),
        _ => false,
    }
}

/// Whether every address `host` resolves to is public (none loopback, private, link-local, …:
/// `fetch::guard::classify`); a name that does not resolve is not.
pub(super) async fn resolves_public(host: &str) -> bool {
    match tokio::net::lookup_host((host, 443)).await {
        Ok(addrs) => {
            let addrs: Vec<std::net::SocketAddr> = addrs.collect();
            !addrs.is_empty() && addrs.iter().all(|a| crate::fetch::guard::classify(a.ip()).is_none())
        }
        Err(_) => false,
    }
}

/// An `https` origin under a domain name (no IP literal, no `localhost`), with nothing after
/// the host that could turn the request into another one.
fn public_https(endpoint: &str) -> bool {
    let Ok(u) = url::Url::parse(endpoint) else {
        return false;
    };
    let plain = u.path() == "/" && u.query().is_none() && u.fragment().is_none() && u.username().is_empty();
    let named =
        matches!(u.host(), Some(url::Host::Domain(d)) if !d.eq_ignore_ascii_case("localhost") && d.contains('.'));
    u.scheme() == "https" && plain && named
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use axum::http::{HeaderMap, StatusCode, Uri};
    use axum::response::IntoResponse;
    use serde_json::json;

    use super::*;
    use crate::platform::bluesky::records::BotId;
    use crate::platform::bluesky::xrpc::Xrpc;

    /// What the scripted peer saw: (path and query, whether it carried an Authorization).
    type Seen = Arc<Mutex<Vec<(String, bool)>>>;

    /// One server playing the PLC directory and the author's PDS as the reference PDS
    /// answers `getRecord` (a record; `RecordNotFound` for a deleted one; `RepoDeactivated`
    /// for a deactivated account), without a login.
    async fn peer() -> (String, Seen) {
        let seen: Seen = Arc::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (s, b) = (seen.clone(), base.clone());
        let app = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap| {
            let (seen, base) = (s.clone(), b.clone());
            async move {
                let path = uri.path_and_query().map(|p| p.to_string()).unwrap_or_default();
                seen.lock().unwrap().push((path.clone(), headers.contains_key("authorization")));
                let error = |name: &str| {
                    let body = json!({"error": name, "message": "scripted"}).to_string();
                    (StatusCode::BAD_REQUEST, body).into_response()
                };
                if path == "/did:plc:author" {
                    let doc = json!({"id": "did:plc:author", "service": [
                        {"id": "#atproto_pds", "type": "AtprotoPersonalDataServer", "serviceEndpoint": base}]});
                    return doc.to_string().into_response();
                }
                if !path.starts_with("/xrpc/com.atproto.repo.getRecord?") {
                    return StatusCode::NOT_FOUND.into_response();
                }
                if path.contains("rkey=blocked") {
                    let record = json!({"uri": "at://did:plc:author/app.bsky.feed.post/blocked", "cid": "bafy",
                        "value": {"$type": "app.bsky.feed.post", "text": "The Moon is cheese.", "createdAt": "2026-12-01T00:00:00Z"}});
                    record.to_string().into_response()
                } else if path.contains("rkey=deleted") {
                    error("RecordNotFound")
                } else {
                    error("RepoDeactivated")
                }
            }
        });
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (base, seen)
    }

    fn bluesky(service: &str, plc: &str) -> Bluesky {
        let config = crate::config::BlueskyConfig {
            service: service.into(),
            max_retries: 0,
            ..Default::default()
        };
        Bluesky {
            xrpc: Xrpc::new(&config, crate::secret::Secret::new("pw"), None).unwrap(),
            bot: BotId {
                did: "did:plc:bot".into(),
                handle: "musebot.test".into(),
            },
            refs: Arc::default(),
            appview: true,
            plc_directory: plc.into(),
            loopback_pds: false,
        }
    }

    /// A post missing from `getPosts` because its author blocks the bot is still in the
    /// author's repository: hidden, not deleted; a deleted record is deleted; a deactivated
    /// account cannot tell. Each asked of the PDS the DID document names, without a login.
    #[tokio::test]
    async fn a_block_is_told_from_a_deletion_by_the_authors_repository() {
        let (base, seen) = peer().await;
        let b = bluesky(&base, &base);
        let at = |rkey: &str| format!("at://did:plc:author/app.bsky.feed.post/{rkey}");
        assert!(matches!(
            b.confirm_deleted(&at("blocked")).await,
            Ok(Absence::Hidden(_))
        ));
        assert_eq!(b.confirm_deleted(&at("deleted")).await.unwrap(), Absence::Deleted);
        assert!(matches!(b.confirm_deleted(&at("away")).await, Ok(Absence::Unknown(_))));
        let seen = seen.lock().unwrap().clone();
        assert!(seen.iter().all(|(_, auth)| !auth), "no login: {seen:?}");
        assert_eq!(
            seen.iter().filter(|(p, _)| p == "/did:plc:author").count(),
            3,
            "{seen:?}"
        );
    }

    /// A self-hosted PDS that answers `RecordNotFound` to the bot alone decides nothing: the
    /// network (the bot's own PDS, forwarding to the AppView) still serves the post, so the
    /// answer stays. Gone from both, it is deleted.
    #[tokio::test]
    async fn the_authors_own_server_alone_does_not_decide_a_deletion() {
        let (author, _) = peer().await;
        // The network: the post the author's server denies is there; the deleted one is not.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let network = format!("http://{}", listener.local_addr().unwrap());
        let app = axum::Router::new().fallback(|uri: Uri| async move {
            let path = uri.path_and_query().map(|p| p.to_string()).unwrap_or_default();
            if path.contains("rkey=deleted-but-up") {
                let record = json!({"uri": "at://did:plc:author/app.bsky.feed.post/deleted-but-up", "cid": "bafy",
                    "value": {"$type": "app.bsky.feed.post", "text": "x", "createdAt": "2026-12-01T00:00:00Z"}});
                record.to_string().into_response()
            } else {
                let body = json!({"error": "RecordNotFound", "message": "scripted"}).to_string();
                (StatusCode::BAD_REQUEST, body).into_response()
            }
        });
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let mut b = bluesky(&network, &author);
        b.loopback_pds = true;
        let at = |rkey: &str| format!("at://did:plc:author/app.bsky.feed.post/{rkey}");
        assert_eq!(b.confirm_deleted(&at("deleted")).await.unwrap(), Absence::Deleted);
        let denied = b.confirm_deleted(&at("deleted-but-up")).await.unwrap();
        assert!(
            matches!(&denied, Absence::Unknown(why) if why.contains("network still serves")),
            "{denied:?}"
        );
    }

    #[test]
    fn only_a_public_https_pds_is_asked() {
        assert!(public_https("https://pds.example.com"));
        assert!(!public_https("http://pds.example.com"));
        assert!(!public_https("https://127.0.0.1"));
        assert!(!public_https("https://localhost"));
        assert!(!public_https("https://pds.example.com/admin#"));
        // A public-looking name that resolves to loopback is not asked.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        assert!(!rt.block_on(resolves_public("localhost")));
        assert!(!rt.block_on(resolves_public("name.invalid")));
        assert!(same_origin("http://127.0.0.1:2583/", "http://127.0.0.1:2583"));
        let doc = json!({"service": [{"id": "did:plc:a#atproto_pds", "serviceEndpoint": "https://pds.example.com/"}]});
        assert_eq!(
            pds_endpoint("did:plc:a", &doc).as_deref(),
            Some("https://pds.example.com")
        );
        assert_eq!(pds_endpoint("did:plc:b", &doc), None);
    }
}
