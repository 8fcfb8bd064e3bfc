//! Mastodon hashtag watch, live with catch-up. Each hashtag a moderator watches gets its own
//! streaming WebSocket (`stream=hashtag&tag=<tag>`: one channel per socket is what every
//! server, mastodon-mock included, accepts), opened within [`SYNC_EVERY`] of the `watch`
//! and closed after the `unwatch`; its `update` events become hits at once and move no cursor.
//! Every `moderation.hashtag_poll_secs` the REST tag timeline (`GET /api/v1/timelines/tag/:tag`)
//! is read forward from the tag's own cursor (`mastodon:tag:<tag>`) in id order — the catch-up
//! that closes any gap a disconnect or restart left — so no post is missed and none becomes two
//! jobs (the job id is the status id, whatever the tag). A tag without a cursor (just watched)
//! starts from its newest page, keeping only posts after the watch. One loop polls every tag,
//! at most [`PAGES_PER_POLL`] pages of each per poll, and `moderation.max_watched_tags` bounds
//! the tags, so watches cannot starve mentions and posting of the shared request budget. Hits go to intake as
//! `Cause::HashtagHit`; the policy (paused, replies, bots, `#nobot`, age, per-day and
//! per-author caps) is applied by intake and the resolve stage, not here.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

use super::api::{Status, StreamFrame};
use super::client::MastodonClient;
use super::stream::{open_socket, BotIdentity};
use super::text::status_text;
use crate::intake::{CursorMove, Event, Intake};
use crate::model::{id_less, Account, Cause, PlatformKind, TagWatch, Trigger, Visibility};

const PAGE: u32 = 40;
/// Pages of one tag read at one poll: a flooded tag is read on at the next poll from its
/// cursor, so it cannot spend the request budget that mentions and posting share.
pub const PAGES_PER_POLL: usize = 3;
/// How often the set of watched tags is compared with the open streams.
pub const SYNC_EVERY: Duration = Duration::from_secs(2);
const PING_EVERY: Duration = Duration::from_secs(30);
const SILENCE_LIMIT: Duration = Duration::from_secs(75);

pub struct HashtagWatch {
    pub client: MastodonClient,
    pub bot: BotIdentity,
    /// The REST catch-up's interval (`moderation.hashtag_poll_secs`).
    pub every: Duration,
    /// The streaming API's base (`wss://…`).
    pub streaming_base: String,
    pub reconnect_max: Duration,
}

/// The cursor of one watched tag.
pub fn cursor_name(tag: &str) -> String {
    format!("mastodon:tag:{tag}")
}

impl HashtagWatch {
    /// Runs until `shutdown`; a failed read is logged and tried again at the next poll.
    pub async fn run(self, intake: Intake, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(self.every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut sync = tokio::time::interval(SYNC_EVERY);
        let mut streams: HashMap<String, CancellationToken> = HashMap::new();
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = sync.tick() => {
                    self.sync_streams(&intake, &shutdown, &mut streams);
                    continue;
                }
                _ = tick.tick() => {}
            }
            for watch in intake.watches(PlatformKind::Mastodon) {
                if shutdown.is_cancelled() {
                    return;
                }
                if let Err(e) = self.read_tag(&intake, &watch).await {
                    intake.metrics().error("hashtag");
                    tracing::warn!(tag = %watch.tag, error = %e, "hashtag timeline read failed; trying again at the next poll");
                }
            }
        }
    }

    /// Opens a stream for each newly watched tag, closes those of unwatched ones.
    fn sync_streams(
        &self,
        intake: &Intake,
        shutdown: &CancellationToken,
        streams: &mut HashMap<String, CancellationToken>,
    ) {
        let watched: Vec<TagWatch> = intake.watches(PlatformKind::Mastodon);
        streams.retain(|tag, stop| {
            let keep = watched.iter().any(|w| &w.tag == tag);
            if !keep {
                stop.cancel();
            }
            keep
        });
        for w in watched {
            if streams.contains_key(&w.tag) {
                continue;
            }
            let stop = shutdown.child_token();
            streams.insert(w.tag.clone(), stop.clone());
            let tag_stream = TagStream {
                client: self.client.clone(),
                bot: self.bot.clone(),
                streaming_base: self.streaming_base.clone(),
                reconnect_max: self.reconnect_max,
                tag: w.tag,
            };
            tokio::spawn(tag_stream.run(intake.clone(), stop));
        }
    }

    /// Pages the tag's timeline forward from its cursor, accepting every post in id order.
    async fn read_tag(
        &self,
        intake: &Intake,
        watch: &TagWatch,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let tag = watch.tag.as_str();
        let name = cursor_name(tag);
        let mut cursor = intake.cursor(&name)?;
        let mut seen = 0usize;
        for _ in 0..PAGES_PER_POLL {
            let mut page = self.client.tag_timeline(tag, cursor.as_deref(), PAGE).await?;
            page.sort_by(|a, b| {
                if id_less(&a.id, &b.id) {
                    std::cmp::Ordering::Less
                } else {
                    std::cmp::Ordering::Greater
                }
            });
            let first_read = cursor.is_none();
            let mut progressed = false;
            for status in page {
                if cursor.as_ref().is_some_and(|c| !id_less(c, &status.id)) {
                    continue;
                }
                cursor = Some(status.id.clone());
                progressed = true;
                seen += 1;
                // The first page read holds history: only what came after the watch counts.
                let fresh = !first_read || status.created_at >= watch.since;
                let event = Event {
                    trigger: hit(status, tag, &self.bot).filter(|_| fresh),
                    cursor: Some(CursorMove {
                        name: name.clone(),
                        value: cursor.clone().unwrap_or_default(),
                    }),
                };
                intake.accept(event).await?;
            }
            if first_read {
                // The newest page only: older posts are history, not hits.
                if cursor.is_none() {
                    intake.start_cursor(&name, "0")?;
                }
                break;
            }
            if !progressed {
                break;
            }
        }
        if seen > 0 {
            tracing::info!(tag, seen, "hashtag timeline read");
        }
        Ok(())
    }
}

/// A tagged post as a trigger; `None` (logged) for a boost, which is someone else's post.
pub fn hit(status: Status, tag: &str, bot: &BotIdentity) -> Option<Trigger> {
    if status.reblog.is_some() {
        tracing::debug!(status = %status.id, "a boost on a watched tag; skipped");
        return None;
    }
    let text = status_text(&status.content, &status.spoiler_text);
    Some(Trigger {
        language: status.language.clone(),
        platform: PlatformKind::Mastodon,
        cause: Cause::HashtagHit { tag: tag.to_string() },
        event_id: status.id.clone(),
        status_id: status.id,
        in_reply_to_id: status.in_reply_to_id,
        // The tagged post itself is checked, not a post it quotes.
        quote_of: None,
        asked_in_text: true,
        author: Account {
            handle: status.account.acct.clone(),
            is_bot: status.account.bot,
            is_self: status.account.id == bot.account_id,
            nobot: status.account.opted_out(),
            // Rights and memory key on the account's id: an `acct` can change hands.
            id: Some(status.account.id.clone()).filter(|i| !i.is_empty()),
        },
        visibility: Visibility::from_server(&status.visibility),
        created_at: status.created_at,
        text,
    })
}

/// One watched tag's live stream, reconnecting with a growing wait until its watch ends.
struct TagStream {
    client: MastodonClient,
    bot: BotIdentity,
    streaming_base: String,
    reconnect_max: Duration,
    tag: String,
}

impl TagStream {
    async fn run(self, intake: Intake, stop: CancellationToken) {
        let mut backoff = Duration::from_secs(1);
        while !stop.is_cancelled() {
            let started = Instant::now();
            match self.connect_once(&intake, &stop).await {
                Ok(()) if stop.is_cancelled() => break,
                Ok(()) => tracing::info!(tag = %self.tag, "hashtag stream closed by the server; reconnecting"),
                Err(e) => {
                    intake.metrics().error("hashtag_stream");
                    tracing::warn!(tag = %self.tag, error = %e, wait_s = backoff.as_secs(), "hashtag stream failed; reconnecting (the timeline catch-up covers the gap)");
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
        tracing::info!(tag = %self.tag, "hashtag stream stopped");
    }

    async fn connect_once(&self, intake: &Intake, stop: &CancellationToken) -> Result<(), String> {
        let query = format!(
            "stream=hashtag&tag={}",
            url::form_urlencoded::byte_serialize(self.tag.as_bytes()).collect::<String>()
        );
        let mut ws = open_socket(&self.client, &self.streaming_base, &query).await?;
        tracing::info!(tag = %self.tag, "hashtag stream connected");
        let mut ping = tokio::time::interval(PING_EVERY);
        ping.tick().await;
        let mut last_frame = Instant::now();
        loop {
            tokio::select! {
                _ = stop.cancelled() => {
                    let _ = ws.close(None).await;
                    return Ok(());
                }
                _ = ping.tick() => {
                    if last_frame.elapsed() > SILENCE_LIMIT {
                        return Err("no frame for 75 s".into());
                    }
                    ws.send(Message::Ping(Vec::new().into())).await.map_err(|e| e.to_string())?;
                }
                frame = ws.next() => {
                    last_frame = Instant::now();
                    match frame {
                        None | Some(Ok(Message::Close(_))) => return Ok(()),
                        Some(Err(e)) => return Err(e.to_string().replace(self.client.token().expose(), "[redacted]")),
                        Some(Ok(Message::Text(text))) => self.on_frame(intake, text.as_str()).await?,
                        Some(Ok(_)) => {}
                    }
                }
            }
        }
    }

    /// An `update` (a new status on the tag) becomes a hit; it moves no cursor (the REST
    /// catch-up does, in order).
    async fn on_frame(&self, intake: &Intake, text: &str) -> Result<(), String> {
        let Ok(frame) = serde_json::from_str::<StreamFrame>(text) else {
            tracing::warn!("skipping an unreadable hashtag stream frame");
            return Ok(());
        };
        if let Some(err) = frame.error {
            return Err(format!("server error frame: {err}"));
        }
        if frame.event.as_deref() != Some("update") {
            return Ok(());
        }
        let Some(payload) = frame.payload else { return Ok(()) };
        match serde_json::from_str::<Status>(&payload) {
            Ok(status) => {
                let event = Event {
                    trigger: hit(status, &self.tag, &self.bot),
                    cursor: None,
                };
                intake.accept(event).await.map_err(|e| e.to_string())
            }
            Err(e) => {
                tracing::warn!(error = %e, "skipping an unreadable status on a hashtag stream");
                Ok(())
            }
        }
    }
}
