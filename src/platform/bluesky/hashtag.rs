//! Bluesky hashtag watch: every `moderation.hashtag_poll_secs`, each hashtag moderators watch
//! on Bluesky is searched (`app.bsky.feed.searchPosts`, `q=#tag`, `sort=latest`, newest
//! first), paging back until [`super::source::LOOKBACK`] behind the tag's cursor (`bluesky:tag:<tag>`, the
//! same `{indexedAt µs} {uri}` order as notifications) or the watch's start; posts that carry
//! the tag (a tag facet, or `#tag` in the text) go to intake oldest first as
//! `Cause::HashtagHit`. Intake dedupes by the post's URI, so the lookback re-reads without
//! doubling and a late-indexed post is not lost. Needs an AppView (`bluesky.mode =
//! "notifications"`); the policy is applied by intake and the resolve stage.

use std::time::Duration;

use atrium_api::app::bsky::feed::defs::PostView;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::records::{self, BotId};
use super::source::{key_at, lookback_floor, page_back};
use super::xrpc::Xrpc;
use crate::intake::{CursorMove, Event, Intake};
use crate::model::{PlatformKind, TagWatch};

/// Pages read per tag and poll at most — as on Mastodon ([`PAGES_PER_POLL`]): watches share
/// the request budget with mentions and posting. A tag busier than that between two polls loses
/// its oldest posts (logged); the policy would skip most of them as too old anyway.
const MAX_PAGES: usize = crate::platform::mastodon::hashtag::PAGES_PER_POLL;

pub struct BlueskyHashtags {
    pub xrpc: Xrpc,
    pub bot: BotId,
    pub every: Duration,
}

#[derive(Deserialize)]
struct Page {
    #[serde(default)]
    cursor: Option<String>,
    #[serde(default)]
    posts: Vec<serde_json::Value>,
}

impl BlueskyHashtags {
    /// Runs until `stop`; a failed search is logged and tried again at the next poll.
    pub async fn run(self, intake: Intake, stop: CancellationToken) {
        let mut tick = tokio::time::interval(self.every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            for watch in intake.watches(PlatformKind::Bluesky) {
                if stop.is_cancelled() {
                    return;
                }
                if let Err(e) = self.read_tag(&intake, &watch).await {
                    intake.metrics().error("hashtag");
                    tracing::warn!(tag = %watch.tag, error = %e, "bluesky hashtag search failed; trying again at the next poll");
                }
            }
        }
    }

    async fn read_tag(&self, intake: &Intake, watch: &TagWatch) -> anyhow::Result<()> {
        let name = format!("bluesky:tag:{}", watch.tag);
        let start = key_at(watch.since, "");
        let mark = intake.cursor(&name)?.unwrap_or_else(|| start.clone());
        let floor = lookback_floor(&mark).max(start);
        let what = format!("#{}", watch.tag);
        let items = page_back(&floor, MAX_PAGES, &what, |cursor| {
            let mut params = vec![
                ("q", what.clone()),
                ("sort", "latest".to_string()),
                ("limit", "100".to_string()),
            ];
            params.extend(cursor.map(|c| ("cursor", c)));
            async move {
                let page: Page = self
                    .xrpc
                    .query("searchPosts", "app.bsky.feed.searchPosts", &params)
                    .await?;
                Ok((page.posts, page.cursor))
            }
        })
        .await?;
        let mut seen = 0usize;
        for (key, item) in items {
            let trigger = match serde_json::from_value::<PostView>(item.clone())
                .map_err(|e| format!("unreadable post view: {e}"))
                .and_then(|v| records::hit_of(&v, &watch.tag, &self.bot))
            {
                Ok(t) => t,
                Err(reason) => {
                    let uri = item.get("uri").and_then(|u| u.as_str()).unwrap_or("?");
                    tracing::warn!(uri, reason, "a post on a watched tag skipped");
                    None
                }
            };
            seen += usize::from(trigger.is_some());
            intake
                .accept(Event {
                    trigger,
                    cursor: Some(CursorMove {
                        name: name.clone(),
                        value: key,
                    }),
                })
                .await?;
        }
        if seen > 0 {
            tracing::debug!(tag = %watch.tag, seen, "bluesky hashtag search read");
        }
        Ok(())
    }
}
