//! The watch's Mastodon source: the instance's local public timeline, for an instance's own
//! moderators. The `public:local` stream brings each post at once (moving no cursor); a REST
//! catch-up pages `GET /api/v1/timelines/public?local=true` forward from the cursor
//! `mastodon:public` after every (re)connect and every [`CATCH_UP_EVERY`], in id order, so a
//! post published while disconnected is seen once. Every post goes to the watch's queue as a
//! [`Seen`]; the watch moves the cursor once the post is decided.

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

use super::api::{Status, StreamFrame};
use super::client::MastodonClient;
use super::stream::{open_socket, BotIdentity};
use super::text::status_text;
use crate::intake::Intake;
use crate::metrics::ConnState;
use crate::model::{id_less, PlatformKind, Seen, Visibility};

pub const CURSOR: &str = "mastodon:public";
/// The connection's name in `/healthz` and the last-event gauge.
const HEALTH: &str = "watch:mastodon:public";
const PAGE: u32 = 40;
/// Pages read at most per catch-up (a long stop is not read back further: `watch.max_age_secs`
/// would pass those posts over anyway).
const PAGES: usize = 10;
const CATCH_UP_EVERY: Duration = Duration::from_secs(60);
const PING_EVERY: Duration = Duration::from_secs(30);

pub struct PublicWatch {
    pub client: MastodonClient,
    pub streaming_base: String,
    pub bot: BotIdentity,
    pub reconnect_max: Duration,
}

impl PublicWatch {
    /// Follows the local timeline into `out` until `stop`.
    pub async fn run(self, intake: Intake, out: mpsc::Sender<Seen>, stop: CancellationToken) {
        let mut backoff = Duration::from_secs(1);
        while !stop.is_cancelled() {
            intake.metrics().set_connection(HEALTH, ConnState::Connecting);
            let started = Instant::now();
            if let Err(e) = self.catch_up(&intake, &out).await {
                tracing::warn!(error = %e, "local timeline catch-up failed");
            }
            let result = self.connect_once(&intake, &out, &stop).await;
            intake.metrics().set_connection(HEALTH, ConnState::Disconnected);
            match result {
                Ok(()) if stop.is_cancelled() => break,
                Ok(()) => tracing::info!("local timeline stream closed; reconnecting"),
                Err(e) => {
                    tracing::warn!(error = %e, wait_s = backoff.as_secs(), "local timeline stream failed; reconnecting (the catch-up covers the gap)")
                }
            }
            if started.elapsed() > Duration::from_secs(60) {
                backoff = Duration::from_secs(1);
            }
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(self.reconnect_max);
        }
    }

    async fn connect_once(
        &self,
        intake: &Intake,
        out: &mpsc::Sender<Seen>,
        stop: &CancellationToken,
    ) -> Result<(), String> {
        let mut ws = open_socket(&self.client, &self.streaming_base, "stream=public:local").await?;
        tracing::info!("local timeline stream connected");
        intake.metrics().set_connection(HEALTH, ConnState::Connected);
        let mut ping = tokio::time::interval(PING_EVERY);
        ping.tick().await;
        let mut catch_up = tokio::time::interval(CATCH_UP_EVERY);
        catch_up.tick().await;
        loop {
            tokio::select! {
                _ = stop.cancelled() => {
                    let _ = ws.close(None).await;
                    return Ok(());
                }
                _ = ping.tick() => {
                    ws.send(Message::Ping(Vec::new().into())).await.map_err(|e| e.to_string())?;
                }
                _ = catch_up.tick() => {
                    if let Err(e) = self.catch_up(intake, out).await {
                        tracing::warn!(error = %e, "local timeline catch-up failed");
                    }
                }
                frame = ws.next() => match frame {
                    None | Some(Ok(Message::Close(_))) => return Ok(()),
                    Some(Err(e)) => return Err(e.to_string().replace(self.client.token().expose(), "[redacted]")),
                    Some(Ok(Message::Text(text))) => {
                        intake.metrics().heard(HEALTH);
                        if let Some(seen) = self.on_frame(text.as_str()) {
                            if out.send(seen).await.is_err() {
                                return Ok(());
                            }
                        }
                    }
                    Some(Ok(_)) => {}
                },
            }
        }
    }

    /// An `update` frame as a post seen (no cursor: the catch-up moves it, in order).
    fn on_frame(&self, text: &str) -> Option<Seen> {
        let frame = serde_json::from_str::<StreamFrame>(text).ok()?;
        if frame.event.as_deref() != Some("update") {
            return None;
        }
        match serde_json::from_str::<Status>(&frame.payload?) {
            Ok(status) => seen_of(status, &self.bot, None),
            Err(e) => {
                tracing::warn!(error = %e, "skipping an unreadable status on the local timeline stream");
                None
            }
        }
    }

    /// Pages forward from the cursor; each post carries the cursor past it. The very first
    /// read only sets the cursor to the newest post (history is not watched).
    async fn catch_up(&self, intake: &Intake, out: &mpsc::Sender<Seen>) -> Result<(), String> {
        let mut cursor = intake.cursor(CURSOR).map_err(|e| e.to_string())?;
        for _ in 0..PAGES {
            let mut page = self
                .client
                .local_timeline(cursor.as_deref(), PAGE)
                .await
                .map_err(|e| e.to_string())?;
            page.sort_by(|a, b| {
                if id_less(&a.id, &b.id) {
                    std::cmp::Ordering::Less
                } else {
                    std::cmp::Ordering::Greater
                }
            });
            if cursor.is_none() {
                let newest = page.last().map_or_else(|| "0".to_string(), |s| s.id.clone());
                intake.start_cursor(CURSOR, &newest).map_err(|e| e.to_string())?;
                return Ok(());
            }
            let mut progressed = false;
            for status in page {
                if cursor.as_ref().is_some_and(|c| !id_less(c, &status.id)) {
                    continue;
                }
                cursor = Some(status.id.clone());
                progressed = true;
                let id = status.id.clone();
                let seen = seen_of(status, &self.bot, Some(id.clone())).unwrap_or_else(|| {
                    Seen::cursor_only(PlatformKind::Mastodon, &id, Some((CURSOR.to_string(), id.clone())))
                });
                if out.send(seen).await.is_err() {
                    return Ok(());
                }
            }
            if !progressed {
                break;
            }
        }
        Ok(())
    }
}

/// A status as a post seen; `None` for a boost (someone else's post), the bot's own, or one
/// with no text. `cursor`: the catch-up's position after it.
pub fn seen_of(status: Status, bot: &BotIdentity, cursor: Option<String>) -> Option<Seen> {
    if status.reblog.is_some() || status.account.id == bot.account_id {
        return None;
    }
    let text = status_text(&status.content, &status.spoiler_text);
    if text.trim().is_empty() {
        return None;
    }
    Some(Seen {
        platform: PlatformKind::Mastodon,
        id: status.id,
        cid: None,
        author_id: status.account.id.clone(),
        author_handle: Some(status.account.acct.clone()),
        author_is_bot: status.account.bot,
        author_nobot: status.account.opted_out(),
        text: Seen::kept_text(&text),
        langs: status.language.into_iter().collect(),
        created_at: status.created_at,
        is_reply: status.in_reply_to_id.is_some(),
        public: Visibility::from_server(&status.visibility).is_public() && status.visibility == "public",
        cursor: cursor.map(|c| (CURSOR.to_string(), c)),
    })
}
