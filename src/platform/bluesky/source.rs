//! Mentions from `app.bsky.notification.listNotifications`, polled.
//!
//! Notifications come newest first and sort by the AppView's `indexedAt` (which a client can
//! push back by back-dating `createdAt`). Each poll pages back from the newest until it is
//! [`LOOKBACK`] behind the cursor, and offers every item newer than the first start to intake
//! oldest first: items at or behind the cursor are already jobs (intake finds them by id), so a
//! late-indexed or back-dated mention within the lookback is not lost and nothing is answered
//! twice. The cursor (`{indexedAt, µs} {uri}`, ordered as text) moves only through intake.
//! `updateSeen` follows once the poll's jobs are stored.

use std::time::Duration;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::records::{self, BotId};
use super::xrpc::Xrpc;
use crate::intake::{CursorMove, Event, Intake};
use crate::metrics::ConnState;

/// How far behind the cursor each poll looks again.
pub const LOOKBACK: chrono::Duration = chrono::Duration::minutes(15);
/// Pages read in one poll at most (100 notifications each).
const MAX_PAGES: usize = 20;

pub struct BlueskySource {
    pub xrpc: Xrpc,
    pub bot: BotId,
    pub poll: Duration,
    pub reconnect_max: Duration,
}

#[derive(Deserialize)]
struct Page {
    #[serde(default)]
    cursor: Option<String>,
    #[serde(default)]
    notifications: Vec<serde_json::Value>,
}

impl BlueskySource {
    fn cursor_name(&self) -> String {
        format!("bluesky:{}:notifications", self.bot.did)
    }

    fn since_name(&self) -> String {
        format!("bluesky:{}:since", self.bot.did)
    }

    /// Polls until `stop`; a failed poll is retried with a growing wait, never an error.
    pub async fn run(self, intake: Intake, stop: CancellationToken) {
        let mut wait = self.poll;
        loop {
            match self.poll_once(&intake).await {
                Ok(()) => {
                    intake.metrics().set_connection("bluesky", ConnState::Connected);
                    intake.metrics().heard("bluesky");
                    wait = self.poll;
                }
                Err(e) => {
                    intake.metrics().set_connection("bluesky", ConnState::Disconnected);
                    tracing::warn!(error = %e, wait_s = wait.as_secs(), "bluesky notifications unavailable; polling again later");
                    wait = (wait * 2).min(self.reconnect_max).max(self.poll);
                }
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// One poll: read back to the lookback mark, hand new items to intake oldest first.
    pub async fn poll_once(&self, intake: &Intake) -> anyhow::Result<()> {
        let name = self.cursor_name();
        let Some(mark) = intake.cursor(&name)? else {
            // First start: answer from now on, not the account's history.
            let page = self.page(None, 1).await?;
            let newest = page
                .notifications
                .iter()
                .filter_map(sort_key)
                .max()
                .unwrap_or_else(|| key_at(chrono::Utc::now(), ""));
            intake.start_cursor(&self.since_name(), &newest)?;
            intake.start_cursor(&name, &newest)?;
            tracing::info!(cursor = %newest, "bluesky notifications: starting from now");
            return Ok(());
        };
        let since = intake.cursor(&self.since_name())?.unwrap_or_default();
        let floor = lookback_floor(&mark).max(since.clone());
        let items = page_back(&floor, MAX_PAGES, "notifications", |cursor| async move {
            let page = self.page(cursor.as_deref(), 100).await?;
            Ok((page.notifications, page.cursor))
        })
        .await?;
        let mut newest_seen = None;
        for (key, item) in items {
            let is_new = key > mark;
            let trigger = match records::trigger_of(&item, &self.bot) {
                Ok(t) => t,
                Err(reason) => {
                    if is_new {
                        let uri = item.get("uri").and_then(|u| u.as_str()).unwrap_or("?");
                        tracing::warn!(uri, reason, "bluesky notification skipped");
                    }
                    None
                }
            };
            if is_new {
                newest_seen = item.get("indexedAt").and_then(|v| v.as_str()).map(str::to_string);
            }
            intake
                .accept(Event {
                    trigger,
                    cursor: Some(CursorMove {
                        name: name.clone(),
                        value: key,
                    }),
                })
                .await?;
        }
        if let Some(seen_at) = newest_seen {
            let body = serde_json::json!({ "seenAt": seen_at });
            let seen: Result<serde_json::Value, _> = self
                .xrpc
                .procedure("updateSeen", "app.bsky.notification.updateSeen", &body, 0)
                .await;
            if let Err(e) = seen {
                tracing::debug!(error = %e, "updateSeen failed (harmless)");
            }
        }
        Ok(())
    }

    async fn page(&self, cursor: Option<&str>, limit: u32) -> anyhow::Result<Page> {
        let mut params = vec![("limit", limit.to_string())];
        if let Some(c) = cursor {
            params.push(("cursor", c.to_string()));
        }
        Ok(self
            .xrpc
            .query("listNotifications", "app.bsky.notification.listNotifications", &params)
            .await?)
    }
}

/// Pages a newest-first listing back (`fetch(cursor)` → one page and the next cursor) until an
/// item at or behind `floor`, the last page, or `max_pages`; returns the items past `floor`
/// with their keys, oldest first. Shared by notifications and the hashtag search.
pub(super) async fn page_back<F, Fut>(
    floor: &str,
    max_pages: usize,
    what: &str,
    mut fetch: F,
) -> anyhow::Result<Vec<(String, serde_json::Value)>>
where
    F: FnMut(Option<String>) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<(Vec<serde_json::Value>, Option<String>)>>,
{
    let mut items = Vec::new();
    let mut cursor = None;
    for pages in 1.. {
        let (page, next) = fetch(cursor).await?;
        let mut reached = page.is_empty();
        for item in page {
            match sort_key(&item) {
                Some(k) if k.as_str() <= floor => reached = true,
                Some(k) => items.push((k, item)),
                None => tracing::warn!(what, "an item without uri or indexedAt skipped"),
            }
        }
        cursor = next;
        if reached || cursor.is_none() {
            break;
        }
        if pages >= max_pages {
            tracing::warn!(
                what,
                pages,
                "more new items than one poll reads; the oldest wait or are lost"
            );
            break;
        }
    }
    items.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(items)
}

/// An item's place in the cursor order: `{indexedAt in µs, UTC} {uri}`.
pub(super) fn sort_key(item: &serde_json::Value) -> Option<String> {
    let uri = item.get("uri")?.as_str()?;
    let at = chrono::DateTime::parse_from_rfc3339(item.get("indexedAt")?.as_str()?).ok()?;
    Some(key_at(at.with_timezone(&chrono::Utc), uri))
}

pub(super) fn key_at(at: chrono::DateTime<chrono::Utc>, uri: &str) -> String {
    format!("{} {uri}", at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true))
}

/// The key [`LOOKBACK`] before a cursor's time (the cursor itself when unreadable).
pub(super) fn lookback_floor(mark: &str) -> String {
    let time = mark.split(' ').next().unwrap_or_default();
    match chrono::DateTime::parse_from_rfc3339(time) {
        Ok(t) => key_at(t.with_timezone(&chrono::Utc) - LOOKBACK, ""),
        Err(_) => mark.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_order_by_time_then_uri() {
        let a = sort_key(&serde_json::json!({"uri":"at://b","indexedAt":"2026-12-01T03:31:47.000Z"})).unwrap();
        let b = sort_key(&serde_json::json!({"uri":"at://a","indexedAt":"2026-12-01T03:31:47.5Z"})).unwrap();
        assert!(a < b);
        assert_eq!(a, "2026-12-01T03:31:47.000000Z at://b");
        assert_eq!(lookback_floor(&a), "2026-12-01T03:16:47.000000Z ");
        assert!(lookback_floor(&a) < a);
        assert!(sort_key(&serde_json::json!({"uri":"at://b"})).is_none());
    }
}
