//! The post being checked, as every platform describes it: text, author, time, visibility,
//! language, and what later stages need — media with alt text, the links it carries (full
//! URLs, never the shortened display text) and the post it quotes.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Which platform a job came from. A new platform is a new variant (and a compile error
/// everywhere it matters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlatformKind {
    Mastodon,
    Bluesky,
}

impl PlatformKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PlatformKind::Mastodon => "mastodon",
            PlatformKind::Bluesky => "bluesky",
        }
    }
}

/// Who may read a post, narrowest last (so `max` picks the more private of two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    Public,
    Unlisted,
    Private,
    Direct,
}

impl Visibility {
    pub fn as_str(self) -> &'static str {
        match self {
            Visibility::Public => "public",
            Visibility::Unlisted => "unlisted",
            Visibility::Private => "private",
            Visibility::Direct => "direct",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "public" => Some(Visibility::Public),
            "unlisted" => Some(Visibility::Unlisted),
            "private" => Some(Visibility::Private),
            "direct" => Some(Visibility::Direct),
            _ => None,
        }
    }

    /// A server's visibility word, failing closed: anything this build does not know
    /// (`limited`, `local`, `mutuals_only`, …) is treated as the most private.
    pub fn from_server(s: &str) -> Self {
        Self::parse(s).unwrap_or(Visibility::Direct)
    }

    /// Whether anyone may read the post (public or unlisted).
    pub fn is_public(self) -> bool {
        matches!(self, Visibility::Public | Visibility::Unlisted)
    }
}

/// What kind of attachment a post carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MediaKind {
    Image,
    /// A looping silent video (Mastodon's `gifv`).
    Gifv,
    Video,
    Audio,
    /// The thumbnail of a link's preview card (Mastodon `card.image`, Bluesky
    /// `embed.external.thumb`): read like an image of the post.
    LinkPreview,
    Unknown,
}

impl MediaKind {
    /// A still picture the bot reads (an attached image or a link preview's thumbnail).
    pub fn is_picture(self) -> bool {
        matches!(self, MediaKind::Image | MediaKind::LinkPreview)
    }

    /// Mastodon's attachment `type` (unknown types parse as `Unknown`).
    pub fn parse(s: &str) -> MediaKind {
        match s {
            "image" => MediaKind::Image,
            "gifv" => MediaKind::Gifv,
            "video" => MediaKind::Video,
            "audio" => MediaKind::Audio,
            _ => MediaKind::Unknown,
        }
    }
}

/// One attachment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Media {
    pub kind: MediaKind,
    /// The full-size file.
    pub url: String,
    /// A smaller rendition, where the server offers one.
    #[serde(default)]
    pub preview_url: Option<String>,
    /// The author's description (alt text).
    #[serde(default)]
    pub alt: Option<String>,
}

/// The post being checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Post {
    pub id: String,
    pub url: Option<String>,
    pub author: String,
    /// The author's stable id where the platform has one (the DID on Bluesky); see
    /// [`crate::model::Account::key`].
    #[serde(default)]
    pub author_id: Option<String>,
    pub author_display_name: String,
    pub author_is_bot: bool,
    pub author_nobot: bool,
    pub text: String,
    pub created_at: DateTime<Utc>,
    pub visibility: Visibility,
    pub language: Option<String>,
    #[serde(default)]
    pub media: Vec<Media>,
    /// The links in the post, as full URLs (mentions and hashtags are not links).
    #[serde(default)]
    pub links: Vec<String>,
    /// The accounts the post mentions (`user` or `user@domain`).
    #[serde(default)]
    pub mentions: Vec<String>,
    /// The post this one quotes, when the quote is visible (accepted).
    #[serde(default)]
    pub quote: Option<Box<Post>>,
    /// The version of the post that was read, where the platform names one (Bluesky: the
    /// record's CID): a label goes on the content that was checked, not on a later version.
    #[serde(default)]
    pub version: Option<String>,
}

impl Post {
    /// What the author's rights and memory are keyed by ([`crate::model::Account::key`]).
    pub fn author_key(&self) -> String {
        account_key(&self.author, self.author_id.as_deref())
    }

    /// A post with only the fields every source knows; media, links and quote empty.
    pub fn text_only(id: &str, author: &str, text: &str, created_at: DateTime<Utc>, visibility: Visibility) -> Post {
        Post {
            id: id.into(),
            url: None,
            author: author.into(),
            author_id: None,
            author_display_name: author.into(),
            author_is_bot: false,
            author_nobot: false,
            version: None,
            text: text.into(),
            created_at,
            visibility,
            language: None,
            media: Vec::new(),
            links: Vec::new(),
            mentions: Vec::new(),
            quote: None,
        }
    }
}

/// The key of an account known by `handle` and, where the platform has one, its stable `id`.
pub fn account_key(handle: &str, id: Option<&str>) -> String {
    match id.filter(|i| !i.is_empty()) {
        Some(id) => id.to_string(),
        None => handle.trim().trim_start_matches('@').to_lowercase(),
    }
}
