//! Sources: what listens for triggers (Mastodon's mention stream and its watched hashtags'
//! timelines and its admin reports, Bluesky's notifications or firehose and its labeler's report queue). Every source speaks the one shape intake understands —
//! [`crate::intake::Event`]: an optional trigger and the cursor position it reached — and
//! reads its cursor through intake. Only intake moves cursors; sources never touch the store.

use tokio_util::sync::CancellationToken;

use crate::intake::Intake;
use crate::model::PlatformKind;
use crate::platform::bluesky::hashtag::BlueskyHashtags;
use crate::platform::bluesky::reports::OzoneReports;
use crate::platform::bluesky::Listener;
use crate::platform::mastodon::hashtag::HashtagWatch;
use crate::platform::mastodon::reports::ReportWatch;
use crate::platform::mastodon::stream::MastodonSource;

/// A running listener. Closed: a new source is a new variant.
pub enum Source {
    /// Mentions over the streaming API, with REST catch-up from the cursor.
    Mastodon(MastodonSource),
    /// Watched hashtags' timelines, each read forward from its cursor.
    MastodonHashtags(HashtagWatch),
    /// The server's open reports, read forward from their cursor.
    MastodonReports(ReportWatch),
    /// Mentions and replies from Bluesky's notifications (polled) or its firehose.
    Bluesky(Listener),
    /// Watched hashtags, searched on the AppView.
    BlueskyHashtags(BlueskyHashtags),
    /// Reported posts in the bot's labeler's Ozone queue.
    BlueskyReports(OzoneReports),
}

impl Source {
    pub fn kind(&self) -> PlatformKind {
        match self {
            Source::Mastodon(_) | Source::MastodonHashtags(_) | Source::MastodonReports(_) => PlatformKind::Mastodon,
            Source::Bluesky(_) | Source::BlueskyHashtags(_) | Source::BlueskyReports(_) => PlatformKind::Bluesky,
        }
    }

    /// Runs until `stop`; every failure becomes a reconnect, never an error.
    pub async fn run(self, intake: Intake, stop: CancellationToken) {
        match self {
            Source::Mastodon(s) => s.run(intake, stop).await,
            Source::MastodonHashtags(s) => s.run(intake, stop).await,
            Source::MastodonReports(s) => s.run(intake, stop).await,
            Source::Bluesky(s) => s.run(intake, stop).await,
            Source::BlueskyHashtags(s) => s.run(intake, stop).await,
            Source::BlueskyReports(s) => s.run(intake, stop).await,
        }
    }
}
