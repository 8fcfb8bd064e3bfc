//! The only code that talks to social platforms. [`Platform`] is a closed enum: adding
//! Bluesky is a new variant, and the compiler lists every place that must handle it.

pub mod mastodon;

use crate::compose::TextLimits;
use crate::config::Visibility;
use crate::job::{Mention, PlatformKind, Post};

/// How a platform call failed, as far as the job cares.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PlatformError {
    /// Worth retrying later (network, 429, 5xx).
    #[error("{0}")]
    Transient(String),
    /// The post is gone or hidden (404/410): nothing to answer.
    #[error("{0}")]
    Gone(String),
    /// The server refused a post as too long although it fit the advertised rules.
    #[error("{0}")]
    TooLong(String),
    /// Retrying will not help (bad token, rejected post).
    #[error("{0}")]
    Fatal(String),
}

#[derive(Clone)]
pub enum Platform {
    Mastodon(mastodon::Mastodon),
}

impl Platform {
    pub fn kind(&self) -> PlatformKind {
        match self {
            Platform::Mastodon(_) => PlatformKind::Mastodon,
        }
    }

    pub fn limits(&self) -> TextLimits {
        match self {
            Platform::Mastodon(m) => m.limits,
        }
    }

    pub async fn resolve(&self, mention: &Mention) -> Result<Post, PlatformError> {
        match self {
            Platform::Mastodon(m) => m.resolve(mention).await,
        }
    }

    /// Posts one thread part; returns its id and public URL.
    pub async fn post(
        &self,
        text: &str,
        reply_to: &str,
        visibility: Visibility,
        key: &str,
    ) -> Result<(String, Option<String>), PlatformError> {
        match self {
            Platform::Mastodon(m) => m.post(text, reply_to, visibility, key).await,
        }
    }

    /// The handle a reply addresses (`@user` or `@user@domain`).
    pub fn handle(&self, acct: &str) -> String {
        match self {
            Platform::Mastodon(_) => format!("@{acct}"),
        }
    }

    pub fn is_self(&self, acct: &str) -> bool {
        match self {
            Platform::Mastodon(m) => m.bot_acct.eq_ignore_ascii_case(acct),
        }
    }
}
