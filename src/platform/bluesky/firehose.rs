//! Mentions from the repository firehose (`com.atproto.sync.subscribeRepos`), for operators
//! who run their own PDS without an AppView (`bluesky.mode = "firehose"`): every commit's new
//! posts are read from the commit's CAR blocks, and a post that mentions the bot (a mention
//! facet with its DID) or replies to one of its posts becomes a trigger through the same
//! [`records::trigger_of`] as a notification. The cursor is the firehose `seq`, moved through
//! intake; a reconnect resumes from it, so a restart neither skips nor repeats a mention.
//!
//! Frames are two DAG-CBOR values (a header `{op, t}`, then the body); the CAR v1 framing of
//! `blocks` (varint-prefixed sections of CID + data) is read here, the CBOR by
//! `serde_ipld_dagcbor`.

use std::collections::HashMap;
use std::io::Cursor;
use std::time::Duration;

use futures_util::StreamExt;
use ipld_core::cid::Cid;
use ipld_core::ipld::Ipld;
use serde::Deserialize;
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

use super::records::{self, BotId};
use super::xrpc::Xrpc;
use crate::intake::{CursorMove, Event, Intake};
use crate::metrics::ConnState;

/// Largest frame read (a commit's blocks are small; the PDS caps them at 2 MB).
const MAX_FRAME: usize = 4 << 20;

pub struct FirehoseSource {
    pub xrpc: Xrpc,
    pub bot: BotId,
    pub reconnect_max: Duration,
}

#[derive(Deserialize)]
struct Header {
    op: i64,
    #[serde(default)]
    t: Option<String>,
}

#[derive(Deserialize)]
struct Commit {
    seq: i64,
    repo: String,
    #[serde(default)]
    ops: Vec<Op>,
    #[serde(default)]
    blocks: Option<Ipld>,
    #[serde(default)]
    time: Option<String>,
}

#[derive(Deserialize)]
struct Op {
    action: String,
    path: String,
    #[serde(default)]
    cid: Option<Cid>,
}

#[derive(Deserialize)]
struct Seq {
    #[serde(default)]
    seq: Option<i64>,
}

#[derive(Deserialize)]
struct ErrorFrame {
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

impl FirehoseSource {
    fn cursor_name(&self) -> String {
        format!("bluesky:{}:firehose", self.bot.did)
    }

    /// Reads the firehose until `stop`; every failure becomes a reconnect from the cursor.
    pub async fn run(self, intake: Intake, stop: CancellationToken) {
        let mut wait = Duration::from_secs(1);
        let mut handles = HashMap::new();
        loop {
            let result = tokio::select! {
                _ = stop.cancelled() => return,
                r = self.follow(&intake, &mut handles) => r,
            };
            intake.metrics().set_connection("bluesky", ConnState::Disconnected);
            match result {
                Ok(()) => tracing::info!("bluesky firehose closed; reconnecting"),
                Err(e) => tracing::warn!(error = %e, wait_s = wait.as_secs(), "bluesky firehose failed; reconnecting"),
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(wait) => {}
            }
            wait = (wait * 2).min(self.reconnect_max);
        }
    }

    async fn follow(&self, intake: &Intake, handles: &mut HashMap<String, String>) -> anyhow::Result<()> {
        let name = self.cursor_name();
        let cursor = intake.cursor(&name)?;
        let base = self
            .xrpc
            .service()
            .replacen("https://", "wss://", 1)
            .replacen("http://", "ws://", 1);
        let url = match &cursor {
            Some(seq) => format!("{base}/xrpc/com.atproto.sync.subscribeRepos?cursor={seq}"),
            None => format!("{base}/xrpc/com.atproto.sync.subscribeRepos"),
        };
        let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
            .max_message_size(Some(MAX_FRAME))
            .max_frame_size(Some(MAX_FRAME));
        let (mut socket, _) = tokio_tungstenite::connect_async_with_config(url.as_str(), Some(config), false)
            .await
            .map_err(|e| anyhow::anyhow!("connect: {e}"))?;
        intake.metrics().set_connection("bluesky", ConnState::Connected);
        tracing::info!(
            cursor = cursor.as_deref().unwrap_or("live"),
            "bluesky firehose connected"
        );
        let mut first = cursor.is_none();
        while let Some(msg) = socket.next().await {
            let bytes = match msg.map_err(|e| anyhow::anyhow!("read: {e}"))? {
                Message::Binary(b) => b,
                Message::Close(_) => return Ok(()),
                _ => continue,
            };
            match self.frame(&bytes, handles).await {
                Ok(Some((seq, trigger))) => {
                    if first {
                        // First start: from the first event seen, not the repo's history.
                        intake.start_cursor(&name, &seq.to_string())?;
                        first = false;
                    }
                    let event = Event {
                        trigger,
                        cursor: Some(CursorMove {
                            name: name.clone(),
                            value: seq.to_string(),
                        }),
                    };
                    intake.accept(event).await?;
                }
                Ok(None) => {}
                Err(FrameError::Fatal(e)) => anyhow::bail!(e),
                Err(FrameError::Skip(reason)) => tracing::warn!(reason, "bluesky firehose frame skipped"),
            }
        }
        Ok(())
    }

    /// One frame → its `seq` and, when it is a request to the bot, a trigger.
    async fn frame(
        &self,
        bytes: &[u8],
        handles: &mut HashMap<String, String>,
    ) -> Result<Option<(i64, Option<crate::model::Trigger>)>, FrameError> {
        let (seq, commit) = match decode(bytes, &self.bot.did)? {
            Decoded::Other(seq) => return Ok(seq.map(|s| (s, None))),
            Decoded::Commit(c) => (c.seq, c),
        };
        for post in commit.posts {
            let handle = match handles.get(&commit.repo) {
                Some(h) => h.clone(),
                None => {
                    let h = self.handle_of(&commit.repo).await;
                    handles.insert(commit.repo.clone(), h.clone());
                    h
                }
            };
            // The shape of a notification, so one function reads both.
            let item = serde_json::json!({
                "uri": post.uri,
                "cid": post.cid,
                "author": { "did": commit.repo, "handle": handle },
                "reason": post.reason,
                "record": post.record,
                "isRead": false,
                "indexedAt": commit.time.clone().unwrap_or_else(|| chrono::Utc::now().to_rfc3339()),
            });
            match records::trigger_of(&item, &self.bot) {
                Ok(t) => return Ok(Some((seq, t))),
                Err(reason) => tracing::warn!(uri = %post.uri, reason, "bluesky post skipped"),
            }
        }
        Ok(Some((seq, None)))
    }

    /// An account's handle (`describeRepo` on the PDS); the DID itself when unknown.
    async fn handle_of(&self, did: &str) -> String {
        #[derive(Deserialize)]
        struct Described {
            handle: String,
        }
        self.xrpc
            .query::<Described>(
                "describeRepo",
                "com.atproto.repo.describeRepo",
                &[("repo", did.to_string())],
            )
            .await
            .map(|d| d.handle)
            .unwrap_or_else(|_| did.to_string())
    }
}

/// What one frame holds, decoded without any request (fuzzed by the property tests).
pub(crate) enum Decoded {
    /// Not a commit (identity, account, info…): its `seq`, if it has one.
    Other(Option<i64>),
    Commit(DecodedCommit),
}

pub(crate) struct DecodedCommit {
    pub seq: i64,
    pub repo: String,
    pub time: Option<String>,
    /// The created posts kept (by [`decode`]: those that concern the bot, a mention of it or a
    /// reply to it), in order.
    pub posts: Vec<DecodedPost>,
}

pub(crate) struct DecodedPost {
    pub uri: String,
    pub cid: Option<String>,
    pub reason: &'static str,
    pub record: serde_json::Value,
}

/// Decodes a frame (two DAG-CBOR values: header, body; a commit's CAR blocks) and picks the
/// created posts that concern `bot_did`. Any byte string: an error or a frame, never a panic.
pub(crate) fn decode(bytes: &[u8], bot_did: &str) -> Result<Decoded, FrameError> {
    decode_with(bytes, &|record| reason_for_bot(record, bot_did))
}

/// [`decode`] with the choice of posts given: `keep` says why a created post's record is
/// kept, or `None` to pass it over (the watch keeps every post).
pub(crate) fn decode_with(
    bytes: &[u8],
    keep: &dyn Fn(&serde_json::Value) -> Option<&'static str>,
) -> Result<Decoded, FrameError> {
    let mut reader = Cursor::new(bytes);
    let header: Header = serde_ipld_dagcbor::de::from_reader_once(&mut reader)
        .map_err(|e| FrameError::Skip(format!("unreadable frame header: {e}")))?;
    let body = bytes.get(reader.position() as usize..).unwrap_or(&[]);
    if header.op == -1 {
        let e: ErrorFrame = serde_ipld_dagcbor::from_slice(body).unwrap_or(ErrorFrame {
            error: None,
            message: None,
        });
        return Err(FrameError::Fatal(format!(
            "firehose error {}: {}",
            e.error.unwrap_or_default(),
            e.message.unwrap_or_default()
        )));
    }
    if header.t.as_deref() != Some("#commit") {
        let seq: Seq = serde_ipld_dagcbor::from_slice(body).unwrap_or(Seq { seq: None });
        return Ok(Decoded::Other(seq.seq));
    }
    let commit: Commit =
        serde_ipld_dagcbor::from_slice(body).map_err(|e| FrameError::Skip(format!("unreadable commit: {e}")))?;
    let mut out = DecodedCommit {
        seq: commit.seq,
        repo: commit.repo.clone(),
        time: commit.time.clone(),
        posts: Vec::new(),
    };
    let car = match &commit.blocks {
        Some(Ipld::Bytes(b)) => b.as_slice(),
        _ => &[],
    };
    let blocks = match car_blocks(car) {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(seq = commit.seq, reason = e, "commit blocks unreadable; commit skipped");
            return Ok(Decoded::Commit(out));
        }
    };
    for op in &commit.ops {
        if op.action != "create" || !op.path.starts_with("app.bsky.feed.post/") {
            continue;
        }
        let uri = format!("at://{}/{}", commit.repo, op.path);
        let Some(data) = op.cid.as_ref().and_then(|c| blocks.get(c)) else {
            tracing::warn!(uri, "post block missing from its commit; skipped");
            continue;
        };
        let record = match serde_ipld_dagcbor::from_slice::<Ipld>(data) {
            Ok(r) => ipld_to_json(&r),
            Err(e) => {
                tracing::warn!(uri, reason = %e, "post record unreadable; skipped");
                continue;
            }
        };
        let Some(reason) = keep(&record) else {
            continue;
        };
        out.posts.push(DecodedPost {
            uri,
            cid: op.cid.map(|c| c.to_string()),
            reason,
            record,
        });
    }
    Ok(Decoded::Commit(out))
}

pub(crate) enum FrameError {
    /// The stream itself is wrong (an error frame): reconnect.
    Fatal(String),
    /// Only this frame is unreadable.
    Skip(String),
}

/// Why a post concerns the bot: it mentions the bot (a mention facet with its DID) or replies
/// to one of the bot's posts.
fn reason_for_bot(record: &serde_json::Value, bot_did: &str) -> Option<&'static str> {
    let mentions = record["facets"].as_array().into_iter().flatten().any(|f| {
        f["features"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|x| x["did"].as_str() == Some(bot_did))
    });
    if mentions {
        return Some("mention");
    }
    let parent = record["reply"]["parent"]["uri"].as_str().unwrap_or_default();
    parent.starts_with(&format!("at://{bot_did}/")).then_some("reply")
}

/// The blocks of a CAR v1 file by CID.
pub(crate) fn car_blocks(car: &[u8]) -> Result<HashMap<Cid, Vec<u8>>, String> {
    let mut at = 0;
    let header_len = varint(car, &mut at)?;
    at = at
        .checked_add(header_len)
        .filter(|&a| a <= car.len())
        .ok_or("CAR header overruns")?;
    let mut out = HashMap::new();
    while at < car.len() {
        let len = varint(car, &mut at)?;
        let end = at
            .checked_add(len)
            .filter(|&e| e <= car.len())
            .ok_or("CAR section overruns")?;
        let mut section = Cursor::new(&car[at..end]);
        let cid = Cid::read_bytes(&mut section).map_err(|e| format!("CAR section CID: {e}"))?;
        let data_start = at + section.position() as usize;
        out.insert(cid, car[data_start..end].to_vec());
        at = end;
    }
    Ok(out)
}

/// An unsigned LEB128 varint at `*at`.
pub(crate) fn varint(buf: &[u8], at: &mut usize) -> Result<usize, String> {
    let mut value: u64 = 0;
    for shift in (0..63).step_by(7) {
        let byte = *buf.get(*at).ok_or("varint overruns")?;
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return usize::try_from(value).map_err(|_| "varint too large".to_string());
        }
    }
    Err("varint too long".into())
}

/// DAG-CBOR data in the AT Protocol's JSON form (links as `{"$link"}`, bytes as `{"$bytes"}`
/// omitted: post records carry none).
fn ipld_to_json(v: &Ipld) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Ipld::Null => Value::Null,
        Ipld::Bool(b) => Value::Bool(*b),
        Ipld::Integer(i) => i64::try_from(*i).map_or(Value::Null, Value::from),
        Ipld::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        Ipld::String(s) => Value::String(s.clone()),
        Ipld::Bytes(_) => Value::Null,
        Ipld::List(l) => Value::Array(l.iter().map(ipld_to_json).collect()),
        Ipld::Map(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), ipld_to_json(v))).collect()),
        Ipld::Link(c) => serde_json::json!({ "$link": c.to_string() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_car_framing_are_read_and_bounded() {
        let mut at = 0;
        assert_eq!(varint(&[0xac, 0x02], &mut at), Ok(300));
        assert_eq!(at, 2);
        assert!(varint(&[0x80, 0x80], &mut 0).is_err());
        // A header that claims more bytes than there are.
        assert!(car_blocks(&[0x10, 0x01]).is_err());
        // A header of 1 byte and no sections: no blocks.
        assert_eq!(car_blocks(&[0x01, 0xa0]).unwrap().len(), 0);
    }

    #[test]
    fn only_posts_that_mention_the_bot_or_answer_it_concern_it() {
        let bot = "did:plc:bot";
        let mention = serde_json::json!({"text": "@bot hi", "facets": [{"index": {"byteStart": 0, "byteEnd": 4},
            "features": [{"$type": "app.bsky.richtext.facet#mention", "did": bot}]}]});
        assert_eq!(reason_for_bot(&mention, bot), Some("mention"));
        let reply = serde_json::json!({"text": "thanks", "reply": {"parent": {"uri": "at://did:plc:bot/app.bsky.feed.post/1"}}});
        assert_eq!(reason_for_bot(&reply, bot), Some("reply"));
        let other = serde_json::json!({"text": "@someone", "reply": {"parent": {"uri": "at://did:plc:botnot/app.bsky.feed.post/1"}}});
        assert_eq!(reason_for_bot(&other, bot), None);
    }
}
