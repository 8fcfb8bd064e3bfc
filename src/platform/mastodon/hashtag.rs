//! Mastodon hashtag watch: every `moderation.hashtag_poll_secs`, each hashtag a moderator
//! watches is read from its REST tag timeline (`GET /api/v1/timelines/tag/:tag`) forward from
//! its own cursor (`mastodon:tag:<tag>`), in id order, so no post is missed across restarts or
//! outages and none becomes two jobs (the job id is the status id, whatever the tag). A tag
//! without a cursor (just watched) starts from its newest page: posts from before the watch
//! are left to the policy (`TagWatch::since`). Hits go to intake as `Cause::HashtagHit`
//! triggers; the policy (paused, replies, bots, `#nobot`, age, per-day and per-author caps)
//! is applied by intake and the resolve stage, not here.
//!
//! Polling, not the hashtag stream: the REST timeline is the catch-up a stream would need
//! anyway, and one request per tag per poll is well within the 300 per 5 minutes budget.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::api::Status;
use super::client::MastodonClient;
use super::stream::BotIdentity;
use super::text::html_to_text;
use crate::intake::{CursorMove, Event, Intake};
use crate::model::{id_less, Account, Cause, PlatformKind, TagWatch, Trigger, Visibility};

const PAGE: u32 = 40;

pub struct HashtagWatch {
    pub client: MastodonClient,
    pub bot: BotIdentity,
    pub every: Duration,
}

/// The cursor of one watched tag.
pub fn cursor_name(tag: &str) -> String {
    format!("mastodon:tag:{tag}")
}

impl HashtagWatch {
    /// Runs until `shutdown`; a failed read is logged and tried again at the next poll.
    pub async fn run(self, intake: Intake, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(self.every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            for watch in intake.watches(PlatformKind::Mastodon) {
                if shutdown.is_cancelled() {
                    return;
                }
                if let Err(e) = self.read_tag(&intake, &watch).await {
                    intake.metrics().error("hashtag");
                    tracing::warn!(tag = %watch.tag, error = %e, "hashtag timeline read failed; trying again at the next poll");
                }
            }
        }
    }

    /// Pages the tag's timeline forward from its cursor, accepting every post in id order.
    async fn read_tag(
        &self,
        intake: &Intake,
        watch: &TagWatch,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let tag = watch.tag.as_str();
        let name = cursor_name(tag);
        let mut cursor = intake.cursor(&name)?;
        let mut seen = 0usize;
        loop {
            let mut page = self.client.tag_timeline(tag, cursor.as_deref(), PAGE).await?;
            page.sort_by(|a, b| {
                if id_less(&a.id, &b.id) {
                    std::cmp::Ordering::Less
                } else {
                    std::cmp::Ordering::Greater
                }
            });
            let first_read = cursor.is_none();
            let mut progressed = false;
            for status in page {
                if cursor.as_ref().is_some_and(|c| !id_less(c, &status.id)) {
                    continue;
                }
                cursor = Some(status.id.clone());
                progressed = true;
                seen += 1;
                // The first page read holds history: only what came after the watch counts.
                let fresh = !first_read || status.created_at >= watch.since;
                let event = Event {
                    trigger: hit(status, tag, &self.bot).filter(|_| fresh),
                    cursor: Some(CursorMove {
                        name: name.clone(),
                        value: cursor.clone().unwrap_or_default(),
                    }),
                };
                intake.accept(event).await?;
            }
            if first_read {
                // The newest page only: older posts are history, not hits.
                if cursor.is_none() {
                    intake.start_cursor(&name, "0")?;
                }
                break;
            }
            if !progressed {
                break;
            }
        }
        if seen > 0 {
            tracing::info!(tag, seen, "hashtag timeline read");
        }
        Ok(())
    }
}

/// A tagged post as a trigger; `None` (logged) for a boost, which is someone else's post.
pub fn hit(status: Status, tag: &str, bot: &BotIdentity) -> Option<Trigger> {
    if status.reblog.is_some() {
        tracing::debug!(status = %status.id, "a boost on a watched tag; skipped");
        return None;
    }
    let mut text = html_to_text(&status.content);
    if !status.spoiler_text.is_empty() {
        text = format!("{}\n\n{}", status.spoiler_text, text);
    }
    Some(Trigger {
        platform: PlatformKind::Mastodon,
        cause: Cause::HashtagHit { tag: tag.to_string() },
        event_id: status.id.clone(),
        status_id: status.id,
        in_reply_to_id: status.in_reply_to_id,
        // The tagged post itself is checked, not a post it quotes.
        quote_of: None,
        asked_in_text: true,
        author: Account {
            handle: status.account.acct.clone(),
            is_bot: status.account.bot,
            is_self: status.account.id == bot.account_id,
            nobot: status.account.opted_out(),
        },
        visibility: Visibility::from_server(&status.visibility),
        created_at: status.created_at,
        text,
    })
}
