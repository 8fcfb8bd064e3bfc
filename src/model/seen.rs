//! A post seen passing on the network (the watch's sources: Bluesky's Jetstream or relay
//! firehose, a Mastodon instance's local timeline), with only what the cheap path reads before
//! anything is stored: most such posts are looked at once and forgotten.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::post::PlatformKind;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Seen {
    pub platform: PlatformKind,
    /// The post's id on its platform: the `at://` URI on Bluesky, the status id on Mastodon.
    pub id: String,
    /// The record's CID (Bluesky), when the stream gave it.
    pub cid: Option<String>,
    /// The author's stable id: the DID on Bluesky, the account id on Mastodon.
    pub author_id: String,
    /// The author's handle or `acct`, when the stream gave it (never a key).
    pub author_handle: Option<String>,
    /// The author's account is marked a bot, or its profile says `#nobot` (where the stream
    /// carries the account, as Mastodon's does).
    pub author_is_bot: bool,
    pub author_nobot: bool,
    /// The post's plain text.
    pub text: String,
    /// The languages its author tagged it with.
    pub langs: Vec<String>,
    pub created_at: DateTime<Utc>,
    /// It replies to another post.
    pub is_reply: bool,
    /// It is public (a Mastodon status may be unlisted or private; Bluesky posts are public).
    pub public: bool,
    /// Where the source's cursor stands once this post is decided (name, value); `None` for a
    /// stream event that moves no cursor.
    pub cursor: Option<(String, String)>,
}

/// Characters of a post's text the watch keeps: more than any platform's post allows (Bluesky
/// 300 graphemes, Mastodon 500 by default and a few thousand on some servers), so a frame of
/// megabytes queues as a few kilobytes.
pub const SEEN_MAX_CHARS: usize = 5_000;

impl Seen {
    /// A post's text as the watch keeps it: its first [`SEEN_MAX_CHARS`] characters.
    pub fn kept_text(text: &str) -> String {
        text.chars().take(SEEN_MAX_CHARS).collect()
    }

    /// An event that is no post to decide but still moves the source's cursor (the watch
    /// passes it over at once): a deletion, an unreadable frame, a status nobody may see.
    pub fn cursor_only(platform: PlatformKind, id: &str, cursor: Option<(String, String)>) -> Seen {
        Seen {
            platform,
            id: id.to_string(),
            cid: None,
            author_id: String::new(),
            author_handle: None,
            author_is_bot: false,
            author_nobot: false,
            text: String::new(),
            langs: Vec::new(),
            created_at: Utc::now(),
            is_reply: false,
            public: false,
            cursor,
        }
    }
}
