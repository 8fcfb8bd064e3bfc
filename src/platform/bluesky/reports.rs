//! Reported posts on Bluesky: every `moderation.reports.poll_secs`, the open subjects of the
//! bot's labeler's Ozone queue that are posts ([`super::ozone::open_reports`], latest report
//! first) are read back to the cursor (`bluesky:reports`, `{lastReportedAt µs} {uri}`) less
//! [`super::source::LOOKBACK`] — on a first start, `moderation.reports.max_age_hours` (a backlog is not
//! checked at once) — and go to intake oldest first as `Cause::Report`. The event id is the
//! post's URI, so fifty reports of one post, or a post reported again, are one job. The
//! trigger carries the first reporter's DID (a key for bounds) and the first report's event id;
//! never the report's reason text, which nobody trusted wrote.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::ozone::{first_report, open_reports};
use super::records::BotId;
use super::source::{key_at, lookback_floor, page_back};
use super::xrpc::{Xrpc, XrpcError};
use crate::intake::{CursorMove, Event, Intake};
use crate::model::{report_job_id, Account, Cause, PlatformKind, Trigger, Visibility};

/// Pages of 100 subjects read per poll at most.
const MAX_PAGES: usize = 5;
const CURSOR: &str = "bluesky:reports";

pub struct OzoneReports {
    pub xrpc: Xrpc,
    pub bot: BotId,
    pub every: Duration,
    pub max_age: chrono::Duration,
}

impl OzoneReports {
    /// Runs until `stop`; a failed read is logged, shown in `/healthz` and tried again at the
    /// next poll.
    pub async fn run(self, intake: Intake, stop: CancellationToken) {
        let mut tick = tokio::time::interval(self.every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut failures = 0u32;
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            match self.poll_once(&intake).await {
                Ok(()) => {
                    intake.metrics().set_report_reader("bluesky", "following", None);
                    intake.metrics().heard("reports:bluesky");
                    failures = 0;
                }
                Err(e) => {
                    failures += 1;
                    let status = e.downcast_ref::<XrpcError>().and_then(XrpcError::status);
                    let forbidden = matches!(status, Some(401 | 403));
                    let reason = if forbidden {
                        format!("{e}: make the bot's DID a moderator or admin of its labeler's Ozone (OZONE_ADMIN_DIDS, or a member of its team)")
                    } else {
                        e.to_string()
                    };
                    // A passing failure keeps the reader `following` until it repeats.
                    let state = if forbidden {
                        "forbidden"
                    } else if failures < crate::metrics::FAILING_AFTER {
                        "following"
                    } else {
                        "failing"
                    };
                    intake.metrics().set_report_reader("bluesky", state, Some(&reason));
                    tracing::warn!(error = %reason, "the labeler's report queue could not be read; trying again at the next poll");
                }
            }
        }
    }

    /// One poll: the open reported posts past the cursor, to intake oldest first.
    pub async fn poll_once(&self, intake: &Intake) -> anyhow::Result<()> {
        // A first start reads back `max_age`; later polls from the cursor, less a lookback
        // (a report committed a moment late sorts just behind it; intake drops what it holds).
        let stored = intake.cursor(CURSOR)?;
        let floor = match &stored {
            None => key_at(chrono::Utc::now() - self.max_age, ""),
            Some(mark) => lookback_floor(mark),
        };
        let items = page_back(&floor, MAX_PAGES, "reports", |cursor| async move {
            let (subjects, next) = open_reports(&self.xrpc, &self.bot.did, cursor).await?;
            let items = subjects
                .into_iter()
                .map(|s| serde_json::json!({"uri": s.uri, "indexedAt": s.last_reported_at}))
                .collect();
            Ok((items, next))
        })
        .await?;
        tracing::debug!(new = items.len(), "the labeler's report queue read");
        for (key, item) in items {
            let uri = item["uri"].as_str().unwrap_or_default().to_string();
            let at = item["indexedAt"].as_str().unwrap_or_default();
            // Behind the cursor (the lookback): already a job unless intake never took it.
            let behind = stored.as_ref().is_some_and(|m| key.as_str() <= m.as_str());
            if behind && intake.holds_job(&report_job_id(PlatformKind::Bluesky, &uri))? {
                continue;
            }
            intake.metrics().report("bluesky", "seen");
            let trigger = match first_report(&self.xrpc, &self.bot.did, &uri).await? {
                Some((report, reporter, reasons)) => Some(trigger(&uri, at, report, reporter, reasons)),
                None => {
                    tracing::info!(uri, "an open subject without a report event skipped");
                    None
                }
            };
            intake
                .accept(Event {
                    trigger,
                    cursor: Some(CursorMove {
                        name: CURSOR.to_string(),
                        value: key,
                    }),
                })
                .await?;
        }
        Ok(())
    }
}

/// A reported post → a trigger: the post is the target; the first reporter stands as the
/// author only as a key (nobody is addressed).
fn trigger(uri: &str, at: &str, report: String, reporter: String, reasons: Vec<String>) -> Trigger {
    Trigger {
        platform: PlatformKind::Bluesky,
        cause: Cause::Report { report, reasons },
        event_id: uri.to_string(),
        status_id: uri.to_string(),
        in_reply_to_id: None,
        quote_of: None,
        asked_in_text: true,
        author: Account {
            handle: reporter.clone(),
            is_bot: false,
            is_self: false,
            nobot: false,
            id: Some(reporter),
        },
        visibility: Visibility::Public,
        created_at: chrono::DateTime::parse_from_rfc3339(at)
            .map(|t| t.with_timezone(&chrono::Utc))
            .unwrap_or_else(|_| chrono::Utc::now()),
        language: None,
        text: String::new(),
    }
}
