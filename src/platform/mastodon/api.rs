//! Mastodon REST types, tolerant of what servers add: unknown notification types and
//! visibilities parse, unknown fields are ignored, optional fields default.

use chrono::{DateTime, Utc};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
pub struct Account {
    pub id: String,
    #[serde(default)]
    pub username: String,
    pub acct: String,
    #[serde(default)]
    pub display_name: String,
    #[serde(default)]
    pub bot: bool,
    #[serde(default)]
    pub note: String,
    /// The profile's metadata fields (`value` is HTML).
    #[serde(default)]
    pub fields: Vec<Field>,
    #[serde(default)]
    pub url: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Field {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub value: String,
}

impl Account {
    /// The community `#nobot` opt-out, in the profile text or a profile field, as the server
    /// renders it (a hashtag link `#<span>nobot</span>`, or plain text).
    pub fn opted_out(&self) -> bool {
        super::text::has_nobot(&self.note)
            || self
                .fields
                .iter()
                .any(|f| super::text::has_nobot(&f.value) || super::text::has_nobot(&f.name))
    }
}

/// A mention in a status (`StatusMention`).
#[derive(Debug, Clone, Deserialize)]
pub struct StatusMention {
    pub id: String,
    #[serde(default)]
    pub username: String,
    pub acct: String,
    #[serde(default)]
    pub url: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Status {
    pub id: String,
    /// The ActivityPub id (`https://server/users/x/statuses/1`).
    #[serde(default)]
    pub uri: String,
    #[serde(default)]
    pub url: Option<String>,
    pub account: Account,
    #[serde(default)]
    pub content: String,
    #[serde(default)]
    pub spoiler_text: String,
    pub created_at: DateTime<Utc>,
    #[serde(default = "default_visibility")]
    pub visibility: String,
    #[serde(default)]
    pub in_reply_to_id: Option<String>,
    #[serde(default)]
    pub language: Option<String>,
    #[serde(default)]
    pub media_attachments: Vec<Attachment>,
    #[serde(default)]
    pub mentions: Vec<StatusMention>,
    /// Mastodon 4.5+: the post this one quotes (`quoted_status`, or only its id when shallow).
    #[serde(default)]
    pub quote: Option<Quote>,
    /// The preview card of the first link (`PreviewCard`).
    #[serde(default)]
    pub card: Option<Card>,
    /// A boost carries the boosted status here (kept opaque: a boost is never a hit).
    #[serde(default)]
    pub reblog: Option<serde_json::Value>,
}

/// A link's preview card: its page, title, and thumbnail (`image`, null when none).
#[derive(Debug, Clone, Deserialize)]
pub struct Card {
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub image: Option<String>,
    #[serde(default)]
    pub image_description: Option<String>,
}

/// A media attachment (`MediaAttachment`); `url` is null while a remote file is not cached.
#[derive(Debug, Clone, Deserialize)]
pub struct Attachment {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub preview_url: Option<String>,
    #[serde(default)]
    pub remote_url: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
}

/// A quote (`Quote` / `ShallowQuote`): `state` is `accepted` when the quoted author allows it.
#[derive(Debug, Clone, Deserialize)]
pub struct Quote {
    #[serde(default)]
    pub state: String,
    #[serde(default)]
    pub quoted_status: Option<Box<Status>>,
    #[serde(default)]
    pub quoted_status_id: Option<String>,
}

impl Quote {
    /// The quoted post's id, when the quote is accepted (visible).
    pub fn accepted_id(&self) -> Option<String> {
        if self.state != "accepted" {
            return None;
        }
        self.quoted_status
            .as_ref()
            .map(|s| s.id.clone())
            .or_else(|| self.quoted_status_id.clone())
    }
}

fn default_visibility() -> String {
    "public".into()
}

#[derive(Debug, Clone, Deserialize)]
pub struct Notification {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub created_at: DateTime<Utc>,
    pub account: Account,
    #[serde(default)]
    pub status: Option<Status>,
}

/// A report as a moderator reads it (`Admin::Report`, `GET /api/v1/admin/reports`). Only what
/// the bot acts on is read: the report's comment, category and rules are untrusted text that
/// decides nothing, so they are not even deserialized.
#[derive(Debug, Clone, Deserialize)]
pub struct AdminReport {
    pub id: String,
    #[serde(default)]
    pub action_taken: bool,
    pub created_at: DateTime<Utc>,
    /// The reporter (an `Admin::Account`): a key for bounds only.
    #[serde(default)]
    pub account: Option<AdminAccount>,
    /// The reported statuses (full `Status` entities); none when an account was reported.
    #[serde(default)]
    pub statuses: Vec<Status>,
}

/// The part of an `Admin::Account` the bot keeps: its id on the server (stable) and its name.
#[derive(Debug, Clone, Deserialize)]
pub struct AdminAccount {
    pub id: String,
    #[serde(default)]
    pub username: String,
    /// The reporter's server when remote (a forwarded report); `null` for a local account.
    #[serde(default)]
    pub domain: Option<String>,
}

impl AdminAccount {
    /// `user` or `user@domain`, as blocks and opt-outs name an account.
    pub fn acct(&self) -> String {
        match self.domain.as_deref().filter(|d| !d.is_empty()) {
            Some(d) => format!("{}@{d}", self.username),
            None => self.username.clone(),
        }
    }
}

/// The parts of `/api/v2/instance` (or v1) the bot needs.
#[derive(Debug, Clone, Deserialize, Default)]
pub struct Instance {
    /// v2: the domain the server's accounts are named under (`LOCAL_DOMAIN`), which may
    /// differ from the host it is reached at (`WEB_DOMAIN`).
    #[serde(default)]
    pub domain: Option<String>,
    /// v1: the same domain, under this name.
    #[serde(default)]
    pub uri: Option<String>,
    #[serde(default)]
    pub configuration: Configuration,
    /// v1 only.
    #[serde(default)]
    pub urls: Option<V1Urls>,
}

#[derive(Debug, Clone, Deserialize, Default)]
pub struct Configuration {
    #[serde(default)]
    pub statuses: StatusLimits,
    #[serde(default)]
    pub urls: Option<V2Urls>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct StatusLimits {
    #[serde(default = "default_max_characters")]
    pub max_characters: usize,
    #[serde(default = "default_url_chars")]
    pub characters_reserved_per_url: usize,
}

impl Default for StatusLimits {
    fn default() -> Self {
        StatusLimits {
            max_characters: default_max_characters(),
            characters_reserved_per_url: default_url_chars(),
        }
    }
}

fn default_max_characters() -> usize {
    500
}
fn default_url_chars() -> usize {
    23
}

#[derive(Debug, Clone, Deserialize)]
pub struct V2Urls {
    #[serde(default)]
    pub streaming: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct V1Urls {
    #[serde(default)]
    pub streaming_api: Option<String>,
}

impl Instance {
    /// The domain accounts on this server are named under (`alice@<it>`), if it says.
    pub fn account_domain(&self) -> Option<String> {
        let d = self.domain.as_deref().or(self.uri.as_deref())?;
        let d = d.trim().trim_start_matches("https://").trim_start_matches("http://");
        let d = d.split('/').next().unwrap_or_default().to_lowercase();
        (!d.is_empty()).then_some(d)
    }

    pub fn streaming_base(&self) -> Option<String> {
        self.configuration
            .urls
            .as_ref()
            .and_then(|u| u.streaming.clone())
            .or_else(|| self.urls.as_ref().and_then(|u| u.streaming_api.clone()))
            .filter(|s| !s.is_empty())
    }
}

/// One frame of the streaming API: `{"stream":[…],"event":"…","payload":"<JSON string>"}`.
#[derive(Debug, Clone, Deserialize)]
pub struct StreamFrame {
    #[serde(default)]
    pub event: Option<String>,
    #[serde(default)]
    pub payload: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
}
