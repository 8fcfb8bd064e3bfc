//! The bot's labeler's Ozone as a moderators' desk: the reported posts in its queue
//! (`tools.ozone.moderation.queryStatuses`, open records that are posts, latest report first),
//! who reported a post first (`queryEvents`, `#modEventReport`), and the finding written back on
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
    events: Vec<serde_json::Value>,
}

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

/// The first report on `uri` (its event id and the reporter's DID) and the short reasons of
/// the reports on it (up to 100, `crate::model::short_reason`). `None` when the
/// subject carries no report event (a moderator opened it by hand).
pub async fn first_report(
    xrpc: &Xrpc,
    did: &str,
    uri: &str,
) -> Result<Option<(String, String, Vec<String>)>, XrpcError> {
    let params = [
        ("subject", uri.to_string()),
        ("types", format!("{DEFS}#modEventReport")),
        ("sortDirection", "asc".to_string()),
        ("limit", "100".to_string()),
    ];
    let page: Events = xrpc
        .query_via(
            "queryEvents",
            "tools.ozone.moderation.queryEvents",
            &params,
            &labeler_proxy(did),
        )
        .await?;
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

impl Bluesky {
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
