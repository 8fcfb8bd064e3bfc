//! The watch's Bluesky sources over the whole network: Jetstream (its JSON over WebSocket,
//! `wantedCollections=app.bsky.feed.post`; the cursor `bluesky:jetstream` is the last event's
//! `time_us`, and Jetstream replays from it inclusively, which the watch's job ids make
//! harmless) and a relay's `com.atproto.sync.subscribeRepos` (the firehose decoder, every new
//! post; the cursor `bluesky:relay` is the `seq`). Each new post goes to the watch's queue as a
//! [`Seen`]; the watch moves the cursor once it is decided. Reconnects back off up to
//! `reconnect_max` and resume from the cursor; a first start begins live.

use std::time::Duration;

use futures_util::StreamExt;
use serde::Deserialize;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

use crate::intake::Intake;
use crate::metrics::ConnState;
use crate::model::{PlatformKind, Seen};

/// Largest message read (Jetstream's events are small; a relay's commit frames ≤ 2 MB).
const MAX_MESSAGE: usize = 4 << 20;

/// Which stream, and where.
#[derive(Debug, Clone)]
pub enum Stream {
    /// Jetstream's `…/subscribe` endpoint.
    Jetstream(String),
    /// A relay's (or PDS's) base URL (`wss://…`).
    Relay(String),
}

impl Stream {
    pub fn cursor_name(&self) -> &'static str {
        match self {
            Stream::Jetstream(_) => "bluesky:jetstream",
            Stream::Relay(_) => "bluesky:relay",
        }
    }
}

pub struct NetworkWatch {
    pub stream: Stream,
    pub reconnect_max: Duration,
}

impl NetworkWatch {
    /// The stream `[watch]` names (`watch.bluesky`), if any; a relay left empty is the PDS at
    /// `service` (the account's own).
    pub fn configured(
        config: &crate::config::WatchConfig,
        service: &str,
        reconnect_max: Duration,
    ) -> Option<NetworkWatch> {
        use crate::config::BlueskyStream;
        let stream = match config.bluesky {
            BlueskyStream::Off => return None,
            BlueskyStream::Jetstream => Stream::Jetstream(config.jetstream_url.clone()),
            BlueskyStream::Relay if config.relay_url.is_empty() => Stream::Relay(
                service
                    .replacen("https://", "wss://", 1)
                    .replacen("http://", "ws://", 1),
            ),
            BlueskyStream::Relay => Stream::Relay(config.relay_url.clone()),
        };
        Some(NetworkWatch { stream, reconnect_max })
    }

    /// Reads the stream into `out` until `stop`; every failure is a reconnect from the cursor.
    pub async fn run(self, intake: Intake, out: mpsc::Sender<Seen>, stop: CancellationToken) {
        let mut wait = Duration::from_secs(1);
        let health = format!("watch:{}", self.stream.cursor_name());
        loop {
            intake.metrics().set_connection(&health, ConnState::Connecting);
            let started = std::time::Instant::now();
            let result = tokio::select! {
                _ = stop.cancelled() => return,
                r = self.follow(&intake, &out, &health) => r,
            };
            intake.metrics().set_connection(&health, ConnState::Disconnected);
            // A connection that held a while starts the back-off over.
            if started.elapsed() > Duration::from_secs(60) {
                wait = Duration::from_secs(1);
            }
            if out.is_closed() {
                return;
            }
            match result {
                Ok(()) => tracing::info!(
                    stream = self.stream.cursor_name(),
                    "network stream closed; reconnecting"
                ),
                Err(e) => {
                    tracing::warn!(stream = self.stream.cursor_name(), error = %e, wait_s = wait.as_secs(), "network stream failed; reconnecting")
                }
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(wait) => {}
            }
            wait = (wait * 2).min(self.reconnect_max);
        }
    }

    async fn follow(&self, intake: &Intake, out: &mpsc::Sender<Seen>, health: &str) -> anyhow::Result<()> {
        let name = self.stream.cursor_name();
        let cursor = intake.cursor(name)?;
        let url = match (&self.stream, &cursor) {
            (Stream::Jetstream(base), c) => {
                let mut u = url::Url::parse(base)?;
                u.query_pairs_mut()
                    .append_pair("wantedCollections", "app.bsky.feed.post");
                if let Some(c) = c {
                    u.query_pairs_mut().append_pair("cursor", c);
                }
                u.to_string()
            }
            (Stream::Relay(base), c) => {
                let base = base.trim_end_matches('/');
                match c {
                    Some(c) => format!("{base}/xrpc/com.atproto.sync.subscribeRepos?cursor={c}"),
                    None => format!("{base}/xrpc/com.atproto.sync.subscribeRepos"),
                }
            }
        };
        let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE))
            .max_frame_size(Some(MAX_MESSAGE));
        let (mut socket, _) = tokio_tungstenite::connect_async_with_config(url.as_str(), Some(config), false)
            .await
            .map_err(|e| anyhow::anyhow!("connect: {e}"))?;
        tracing::info!(
            stream = name,
            cursor = cursor.as_deref().unwrap_or("live"),
            "network stream connected"
        );
        intake.metrics().set_connection(health, ConnState::Connected);
        // The last event is recorded once a second at most: the firehose sends hundreds.
        let mut said: Option<std::time::Instant> = None;
        while let Some(msg) = socket.next().await {
            if said.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                intake.metrics().heard(health);
                said = Some(std::time::Instant::now());
            }
            let posts = match msg.map_err(|e| anyhow::anyhow!("read: {e}"))? {
                Message::Text(t) if matches!(self.stream, Stream::Jetstream(_)) => match jetstream_event(t.as_str()) {
                    Ok(seen) => seen.into_iter().collect(),
                    Err(reason) => {
                        tracing::warn!(reason, "jetstream event skipped");
                        Vec::new()
                    }
                },
                Message::Binary(b) if matches!(self.stream, Stream::Relay(_)) => relay_frame(&b)?,
                Message::Close(_) => return Ok(()),
                _ => continue,
            };
            for seen in posts {
                if out.send(seen).await.is_err() {
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}

#[derive(Deserialize)]
struct JetEvent {
    did: String,
    time_us: i64,
    kind: String,
    #[serde(default)]
    commit: Option<JetCommit>,
}

#[derive(Deserialize)]
struct JetCommit {
    operation: String,
    collection: String,
    rkey: String,
    #[serde(default)]
    record: Option<serde_json::Value>,
    #[serde(default)]
    cid: Option<String>,
}

/// One Jetstream event: a new post as a post seen, anything else (an update, a delete, a like,
/// an identity or account event) as a cursor move only. A malformed event is an error.
pub fn jetstream_event(text: &str) -> Result<Option<Seen>, String> {
    let e: JetEvent = serde_json::from_str(text).map_err(|e| format!("unreadable event: {e}"))?;
    let cursor = Some(("bluesky:jetstream".to_string(), e.time_us.to_string()));
    let post = match (&e.kind[..], &e.commit) {
        ("commit", Some(c)) if c.operation == "create" && c.collection == "app.bsky.feed.post" => c,
        _ => return Ok(Some(Seen::cursor_only(PlatformKind::Bluesky, "", cursor))),
    };
    let uri = format!("at://{}/app.bsky.feed.post/{}", e.did, post.rkey);
    let record = post.record.as_ref().ok_or("a created post without its record")?;
    Ok(Some(seen_of_record(&uri, &e.did, post.cid.clone(), record, cursor)))
}

/// A relay frame's new posts (every one, not only those naming the bot); an error frame ends
/// the connection.
fn relay_frame(bytes: &[u8]) -> anyhow::Result<Vec<Seen>> {
    use super::firehose::{decode_with, Decoded, FrameError};
    match decode_with(bytes, &|_| Some("post")) {
        Ok(Decoded::Other(seq)) => Ok(seq
            .map(|s| Seen::cursor_only(PlatformKind::Bluesky, "", Some(("bluesky:relay".into(), s.to_string()))))
            .into_iter()
            .collect()),
        Ok(Decoded::Commit(c)) => {
            let cursor = Some(("bluesky:relay".to_string(), c.seq.to_string()));
            let mut out: Vec<Seen> = c
                .posts
                .iter()
                .map(|p| seen_of_record(&p.uri, &c.repo, p.cid.clone(), &p.record, None))
                .collect();
            // The commit's cursor rides on its last item.
            out.push(Seen::cursor_only(PlatformKind::Bluesky, "", cursor));
            Ok(out)
        }
        Err(FrameError::Fatal(e)) => anyhow::bail!(e),
        Err(FrameError::Skip(reason)) => {
            tracing::warn!(reason, "relay frame skipped");
            Ok(Vec::new())
        }
    }
}

/// A post record (the AT Protocol's JSON form) as a post seen.
fn seen_of_record(
    uri: &str,
    did: &str,
    cid: Option<String>,
    record: &serde_json::Value,
    cursor: Option<(String, String)>,
) -> Seen {
    let created_at = record["createdAt"]
        .as_str()
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .map_or_else(chrono::Utc::now, |t| t.with_timezone(&chrono::Utc));
    Seen {
        platform: PlatformKind::Bluesky,
        id: uri.to_string(),
        cid,
        author_id: did.to_string(),
        author_handle: None,
        author_is_bot: false,
        author_nobot: false,
        text: Seen::kept_text(record["text"].as_str().unwrap_or_default()),
        langs: record["langs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|l| l.as_str().map(str::to_string))
            .collect(),
        created_at,
        is_reply: record.get("reply").is_some_and(|r| !r.is_null()),
        public: true,
        cursor,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tests/fixtures/jetstream/stream.jsonl`: events in Jetstream's wire format (see its
    /// README for where the format comes from).
    const FIXTURE: &str = include_str!("../../../tests/fixtures/jetstream/stream.jsonl");

    #[test]
    fn jetstream_events_become_posts_seen_or_cursor_moves() {
        let mut posts = Vec::new();
        let mut last = 0i64;
        for line in FIXTURE.lines().filter(|l| !l.trim().is_empty()) {
            let seen = jetstream_event(line).unwrap().unwrap();
            let (name, value) = seen.cursor.clone().unwrap();
            assert_eq!(name, "bluesky:jetstream");
            last = last.max(value.parse().unwrap());
            if !seen.id.is_empty() {
                posts.push(seen);
            }
        }
        assert!(last > 1_764_900_000_000_000);
        let asserter = posts.iter().find(|p| p.author_id == "did:plc:watchasserter").unwrap();
        assert_eq!(
            asserter.text,
            "The Great Wall of China is visible from the Moon with the naked eye"
        );
        assert!(asserter
            .id
            .starts_with("at://did:plc:watchasserter/app.bsky.feed.post/"));
        assert_eq!(asserter.langs, ["en"]);
        assert!(asserter.cid.is_some());
        // Likes, updates, deletes, identity and account events are no posts.
        assert!(posts.iter().all(|p| p.id.contains("/app.bsky.feed.post/")));
        assert!(posts.iter().any(|p| p.is_reply));
        assert!(jetstream_event("{not json").is_err());
    }
}
