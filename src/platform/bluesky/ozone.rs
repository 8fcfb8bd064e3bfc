//! The bot's labeler's Ozone as a moderators' desk: the reported posts in its queue
//! (`tools.ozone.moderation.queryStatuses`, open records that are posts, latest report first),
//! who reported a post first (`queryEvents`, `#modEventReport`), whether every report on it
//! may be closed (read again just before an acknowledgement), and the finding written back on
//! the subject (`emitEvent`: a comment, an acknowledgement or an escalation). Every call goes
//! through the bot's PDS to the labeler its DID document names, as the labels do
//! ([`super::labels`]): the daemon acts in Ozone only as itself.
//!
//! An event carries the finding item's key as Ozone's `externalId`: Ozone refuses a second event
//! of the same type and key on the subject (`DuplicateExternalId`), so a delivery repeated after a
//! crash is the first one, not a second comment.

use serde::Deserialize;
use serde_json::json;

use super::xrpc::{Xrpc, XrpcError};
use super::{Bluesky, POST};
use crate::model::NoteItem;
use crate::platform::PlatformError;

const DEFS: &str = "tools.ozone.moderation.defs";

/// One open subject of the queue, as the reports source reads it.
#[derive(Debug, Clone)]
pub struct Subject {
    /// The reported post.
    pub uri: String,
    /// When it was last reported (RFC 3339).
    pub last_reported_at: String,
}

#[derive(Deserialize)]
struct Statuses {
    #[serde(default)]
    cursor: Option<String>,
    #[serde(rename = "subjectStatuses", default)]
    subject_statuses: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
struct Events {
    #[serde(default)]
    cursor: Option<String>,
    #[serde(default)]
    events: Vec<serde_json::Value>,
}

/// Pages of 100 report events read before an acknowledgement; a subject with more is left to
/// a person.
const MAX_REPORT_PAGES: usize = 5;

/// The labeler's proxy header value for an account: its own DID's `#atproto_labeler` service.
pub fn labeler_proxy(did: &str) -> String {
    format!("{did}#atproto_labeler")
}

/// One page of open reported posts, newest report first. (Not `reportedAfter`: Ozone 0.4
/// compares it with `lastReviewedAt`, which a subject nobody reviewed yet does not have, so the
/// caller stops paging at its own floor instead.)
pub async fn open_reports(
    xrpc: &Xrpc,
    did: &str,
    cursor: Option<String>,
) -> Result<(Vec<Subject>, Option<String>), XrpcError> {
    let mut params = vec![
        ("reviewState", format!("{DEFS}#reviewOpen")),
        ("subjectType", "record".to_string()),
        ("collections", POST.to_string()),
        ("sortField", "lastReportedAt".to_string()),
        ("sortDirection", "desc".to_string()),
        ("limit", "100".to_string()),
    ];
    params.extend(cursor.map(|c| ("cursor", c)));
    let page: Statuses = xrpc
        .query_via(
            "queryStatuses",
            "tools.ozone.moderation.queryStatuses",
            &params,
            &labeler_proxy(did),
        )
        .await?;
    let subjects = page
        .subject_statuses
        .iter()
        .filter_map(|s| {
            let uri = s["subject"]["uri"].as_str()?;
            // Only posts: an account or another record is not a claim to check.
            if !uri.starts_with("at://") || !uri.contains(&format!("/{POST}/")) {
                return None;
            }
            Some(Subject {
                uri: uri.to_string(),
                last_reported_at: s["lastReportedAt"].as_str()?.to_string(),
            })
        })
        .collect();
    Ok((subjects, page.cursor))
}

/// One page of the report events on `uri` (oldest first when `ascending`), after `cursor`.
async fn report_events(
    xrpc: &Xrpc,
    did: &str,
    uri: &str,
    ascending: bool,
    cursor: Option<String>,
) -> Result<Events, XrpcError> {
    let mut params = vec![
        ("subject", uri.to_string()),
        ("types", format!("{DEFS}#modEventReport")),
        ("limit", "100".to_string()),
    ];
    if ascending {
        params.push(("sortDirection", "asc".to_string()));
    }
    params.extend(cursor.map(|c| ("cursor", c)));
    xrpc.query_via(
        "queryEvents",
        "tools.ozone.moderation.queryEvents",
        &params,
        &labeler_proxy(did),
    )
    .await
}

/// The first report on `uri` (its event id and the reporter's DID) and the short reasons of
/// the reports on it (up to 100, `crate::model::short_reason`). `None` when the
/// subject carries no report event (a moderator opened it by hand).
pub async fn first_report(
    xrpc: &Xrpc,
    did: &str,
    uri: &str,
) -> Result<Option<(String, String, Vec<String>)>, XrpcError> {
    let page = report_events(xrpc, did, uri, true, None).await?;
    let mut reasons: Vec<String> = page
        .events
        .iter()
        .filter_map(|e| e["event"]["reportType"].as_str())
        .map(crate::model::short_reason)
        .collect();
    reasons.sort();
    reasons.dedup();
    Ok(page.events.first().and_then(|e| {
        let id = e["id"].as_i64()?.to_string();
        let by = e["createdBy"].as_str()?.to_string();
        Some((id, by, reasons))
    }))
}

/// Whether the bot may close the subject `uri` (an acknowledgement closes every report on it,
/// those filed after the bot read them included): every report on it, read now, asks what a
/// fact-check judges (`crate::model::judgeable`), and none was filed after `since` (when the
/// job that judged it began). A report without a reason or a time, or more reports than
/// [`MAX_REPORT_PAGES`] pages, keeps the subject open.
pub async fn closable(
    xrpc: &Xrpc,
    did: &str,
    uri: &str,
    since: chrono::DateTime<chrono::Utc>,
) -> Result<bool, XrpcError> {
    let mut reasons = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_REPORT_PAGES {
        let page = report_events(xrpc, did, uri, false, cursor.take()).await?;
        for e in &page.events {
            let filed = e["createdAt"]
                .as_str()
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok());
            let (Some(reason), Some(filed)) = (e["event"]["reportType"].as_str(), filed) else {
                return Ok(false);
            };
            if filed > since {
                return Ok(false);
            }
            reasons.push(crate::model::short_reason(reason));
        }
        match page.cursor {
            Some(c) if !page.events.is_empty() => cursor = Some(c),
            _ => return Ok(crate::model::judgeable(&reasons)),
        }
    }
    Ok(false)
}

impl Bluesky {
    /// Whether the bot may acknowledge (close) the reported post `uri` now ([`closable`]).
    pub async fn may_close(&self, uri: &str, since: chrono::DateTime<chrono::Utc>) -> Result<bool, PlatformError> {
        Ok(closable(&self.xrpc, &self.bot.did, uri, since).await?)
    }

    /// Writes one item of a report's finding on the reported post in Ozone and returns the
    /// event's id (the key, when Ozone already holds the event from an earlier try).
    pub async fn ozone_event(&self, item: &NoteItem, uri: &str, cid: &str, key: &str) -> Result<String, PlatformError> {
        let event = match item {
            NoteItem::Comment(text) => json!({"$type": format!("{DEFS}#modEventComment"), "comment": text}),
            NoteItem::Acknowledge(text) => json!({"$type": format!("{DEFS}#modEventAcknowledge"), "comment": text}),
            NoteItem::Escalate(text) => json!({"$type": format!("{DEFS}#modEventEscalate"), "comment": text}),
            NoteItem::Message(_) => {
                return Err(PlatformError::Fatal("Ozone takes events, not direct messages".into()));
            }
        };
        let cid = if cid.is_empty() {
            self.cid_of(uri).await?
        } else {
            cid.to_string()
        };
        let body = json!({
            "event": event,
            "subject": { "$type": "com.atproto.repo.strongRef", "uri": uri, "cid": cid },
            "createdBy": self.bot.did,
            "externalId": key,
            "modTool": { "name": "musebot" },
        });
        let sent: Result<serde_json::Value, _> = self
            .xrpc
            .procedure_via(
                "emitEvent",
                "tools.ozone.moderation.emitEvent",
                &body,
                &labeler_proxy(&self.bot.did),
            )
            .await;
        match sent {
            Ok(view) => Ok(view["id"].as_i64().map_or_else(|| key.to_string(), |id| id.to_string())),
            Err(e) if e.name() == Some("DuplicateExternalId") => Ok(key.to_string()),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::http::{Method, StatusCode, Uri};
    use axum::response::IntoResponse;
    use serde_json::json;

    use super::*;

    /// An Ozone behind the bot's PDS: a login, and the report events of five subjects — two
    /// pages of misleading reports; two pages, the second's report later than the job;
    /// misleading and "other"; a misleading report and a later one; a scam.
    async fn ozone() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let app = axum::Router::new().fallback(|method: Method, uri: Uri| async move {
            let path = uri.path_and_query().map(|p| p.to_string()).unwrap_or_default();
            if method == Method::POST && path == "/xrpc/com.atproto.server.createSession" {
                let session = json!({"accessJwt": "a", "refreshJwt": "r", "did": "did:plc:bot", "handle": "bot.test"});
                return session.to_string().into_response();
            }
            if !path.starts_with("/xrpc/tools.ozone.moderation.queryEvents?") {
                return StatusCode::NOT_FOUND.into_response();
            }
            let report = |reason: &str, at: &str| {
                json!({"id": 1, "createdBy": "did:plc:someone", "createdAt": at,
                    "event": {"$type": "tools.ozone.moderation.defs#modEventReport",
                        "reportType": format!("com.atproto.moderation.defs#reason{reason}")}})
            };
            let page = if path.contains("post%2Fpaged") && path.contains("cursor=2") {
                json!({"events": [report("MisleadingOther", "2026-01-02T00:00:00Z")]})
            } else if path.contains("post%2Fpaged") {
                json!({"cursor": "2", "events": [report("Misleading", "2026-01-01T00:00:00Z")]})
            } else if path.contains("post%2Fsecond") && path.contains("cursor=2") {
                json!({"events": [report("Misleading", "2026-06-01T00:00:00Z")]})
            } else if path.contains("post%2Fsecond") {
                json!({"cursor": "2", "events": [report("Misleading", "2026-01-01T00:00:00Z")]})
            } else if path.contains("post%2Fother") {
                json!({"events": [report("Misleading", "2026-01-01T00:00:00Z"), report("Other", "2026-01-01T01:00:00Z")]})
            } else if path.contains("post%2Flater") {
                json!({"events": [report("Misleading", "2026-01-01T00:00:00Z"), report("Misleading", "2026-06-01T00:00:00Z")]})
            } else {
                json!({"events": [report("MisleadingScam", "2026-01-01T00:00:00Z")]})
            };
            page.to_string().into_response()
        });
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        base
    }

    /// The subject is closed only when every report on it, read again (every page), asks
    /// whether the post misleads and none came after the job began.
    #[tokio::test]
    async fn a_subject_is_closable_only_when_every_report_is_misleading_and_none_is_newer() {
        let base = ozone().await;
        let config = crate::config::BlueskyConfig {
            service: base,
            max_retries: 0,
            ..Default::default()
        };
        let xrpc = Xrpc::new(&config, crate::secret::Secret::new("pw"), None).unwrap();
        let since = chrono::DateTime::parse_from_rfc3339("2026-03-01T00:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let at = |rkey: &str| format!("at://did:plc:author/{POST}/{rkey}");
        let closable = |rkey: &str| {
            let (xrpc, uri) = (&xrpc, at(rkey));
            async move { closable(xrpc, "did:plc:bot", &uri, since).await.unwrap() }
        };
        assert!(closable("paged").await, "misleading, on two pages");
        assert!(!closable("second").await, "a later report on the second page");
        assert!(
            !closable("other").await,
            "\"other\" is read in a comment the bot never reads"
        );
        assert!(!closable("later").await, "a report filed after the job began");
        assert!(!closable("scam").await, "a scam is a person's to judge");
    }
}
