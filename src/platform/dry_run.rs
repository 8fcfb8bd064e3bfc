//! A platform that resolves posts but never posts: `musebot check` runs the daemon's own stage
//! loop on it. It answers every trigger with one fixed target (a post given as text, the
//! Mastodon status at a URL, or the Bluesky post at a bsky.app link or at:// URI) and "posts" by returning a placeholder id, sending nothing.

use std::sync::Arc;

use crate::compose::TextLimits;
use crate::model::{PlatformKind, Post};
use crate::platform::bluesky::Bluesky;
use crate::platform::mastodon::Mastodon;
use crate::platform::PlatformError;

#[derive(Clone)]
pub struct DryRun {
    pub kind: PlatformKind,
    target: Arc<Target>,
}

enum Target {
    /// A post given as text (no network at all), split under these limits.
    Text(Post, TextLimits),
    /// The status at a URL, read through the Mastodon client.
    Url(Mastodon, String),
    /// The Bluesky post at a bsky.app link or an at:// URI.
    Bluesky(Bluesky, String),
}

impl DryRun {
    pub fn text(post: Post, limits: TextLimits) -> DryRun {
        DryRun {
            kind: PlatformKind::Mastodon,
            target: Arc::new(Target::Text(post, limits)),
        }
    }

    pub fn url(mastodon: Mastodon, url: &str) -> DryRun {
        DryRun {
            kind: PlatformKind::Mastodon,
            target: Arc::new(Target::Url(mastodon, url.to_string())),
        }
    }

    pub fn bluesky(bluesky: Bluesky, reference: &str) -> DryRun {
        DryRun {
            kind: PlatformKind::Bluesky,
            target: Arc::new(Target::Bluesky(bluesky, reference.to_string())),
        }
    }

    pub fn limits(&self) -> TextLimits {
        match &*self.target {
            Target::Text(_, limits) => *limits,
            Target::Url(m, _) => m.limits,
            Target::Bluesky(b, _) => b.limits(),
        }
    }

    pub async fn resolve(&self) -> Result<Post, PlatformError> {
        match &*self.target {
            Target::Text(post, _) => Ok(post.clone()),
            Target::Url(m, url) => m.status_for_url(url).await,
            Target::Bluesky(b, reference) => b.post_at(reference).await,
        }
    }

    /// Sends nothing; the id says what would have been posted.
    pub fn post(&self, key: &str) -> (String, Option<String>) {
        (format!("dry-run:{key}"), None)
    }
}
