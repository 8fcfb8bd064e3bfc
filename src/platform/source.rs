//! Sources: what listens for triggers (Mastodon's mention stream and its watched hashtags'
//! timelines, Bluesky's notifications or firehose). Every source speaks the one shape intake understands —
//! [`crate::intake::Event`]: an optional trigger and the cursor position it reached — and
//! reads its cursor through intake. Only intake moves cursors; sources never touch the store.

use tokio_util::sync::CancellationToken;

use crate::intake::Intake;
use crate::model::PlatformKind;
use crate::platform::bluesky::hashtag::BlueskyHashtags;
use crate::platform::bluesky::Listener;
use crate::platform::mastodon::hashtag::HashtagWatch;
use crate::platform::mastodon::stream::MastodonSource;

/// A running listener. Closed: a new source is a new variant.
pub enum Source {
    /// Mentions over the streaming API, with REST catch-up from the cursor.
    Mastodon(MastodonSource),
    /// Watched hashtags' timelines, each read forward from its cursor.
    MastodonHashtags(HashtagWatch),
    /// Mentions and replies from Bluesky's notifications (polled) or its firehose.
    Bluesky(Listener),
    /// Watched hashtags, searched on the AppView.
    BlueskyHashtags(BlueskyHashtags),
}

impl Source {
    pub fn kind(&self) -> PlatformKind {
        match self {
            Source::Mastodon(_) | Source::MastodonHashtags(_) => PlatformKind::Mastodon,
            Source::Bluesky(_) | Source::BlueskyHashtags(_) => PlatformKind::Bluesky,
        }
    }

    /// Runs until `stop`; every failure becomes a reconnect, never an error.
    pub async fn run(self, intake: Intake, stop: CancellationToken) {
        match self {
            Source::Mastodon(s) => s.run(intake, stop).await,
            Source::MastodonHashtags(s) => s.run(intake, stop).await,
            Source::Bluesky(s) => s.run(intake, stop).await,
            Source::BlueskyHashtags(s) => s.run(intake, stop).await,
        }
    }
}
