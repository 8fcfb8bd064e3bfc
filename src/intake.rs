//! Intake: turns a source's [`Event`] into a persisted job (exactly once per event id; a
//! report job that ended on its reporter before the post was read is taken over by another
//! reporter's report of the post, [`crate::model::Job::reopened_by`]), reads a
//! mention that is exactly a command as one ([`Command::parse`]), applies the skip rules that
//! need no further request (own posts, bots, `#nobot` requesters, and [`Moderation::triage`]:
//! commands from non-moderators, blocked and opted-out authors, a hashtag's policy), then
//! hands the job id to the workers (the quota is charged by the resolve stage, only for jobs
//! that will be answered; a report's reporter window here, so a spent reporter's job ends
//! unread and another reporter's report takes it over) through bounded queues: mentions and commands ahead of hashtag hits.
//! A full queue drops nothing: the job is already in the store and the dispatcher's sweep picks
//! it up. Intake is the only mover of cursors:
//! sources report how far they read in each event and never touch the store.

use std::sync::Arc;

use tokio::sync::mpsc;

use crate::metrics::SharedMetrics;
use crate::model::{Cause, Command, Job, PlatformKind, Post, SkipReason, Status, TagWatch, Trigger};
use crate::moderation::Moderation;
use crate::store::{Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum IntakeError {
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a source reports: a trigger (or none, for an event that is not one, such as another
/// kind of notification) and the cursor position the source has read through, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub trigger: Option<Trigger>,
    pub cursor: Option<CursorMove>,
}

/// "Everything up to `value` of cursor `name` has been seen."
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorMove {
    pub name: String,
    pub value: String,
}

#[derive(Clone)]
pub struct Intake {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    metrics: SharedMetrics,
    queues: Queues,
    allowed_bots: AllowedBots,
    moderation: Moderation,
    /// `limits.checks_per_requester_per_hour`: a report is charged to its reporter's window
    /// when it comes.
    checks_per_hour: u32,
}

/// Bot accounts whose mentions are answered (`mastodon.allowed_bots`, `bluesky.allowed_bots`),
/// per platform and by account key: `user@domain` on Mastodon, the DID on Bluesky (the
/// config's handles resolved at start, like moderators'), so a handle on one platform allows
/// nothing on the other, and a Bluesky handle taken by another account allows nothing.
#[derive(Debug, Clone, Default)]
pub struct AllowedBots {
    pub mastodon: Vec<String>,
    pub bluesky_dids: Vec<String>,
}

impl AllowedBots {
    fn allows(&self, moderation: &Moderation, t: &crate::model::Trigger) -> bool {
        match t.platform {
            PlatformKind::Mastodon => self
                .mastodon
                .iter()
                .any(|a| moderation.same_mastodon_account(a, &t.author.handle)),
            PlatformKind::Bluesky => t.author.id.as_ref().is_some_and(|d| self.bluesky_dids.contains(d)),
        }
    }
}

/// The bounded queues to the workers: `first` (mentions, commands, flags) is always served
/// before `later` (hashtag hits).
#[derive(Clone)]
pub struct Queues {
    pub first: mpsc::Sender<String>,
    pub later: mpsc::Sender<String>,
}

impl Queues {
    /// Both queues of `capacity`, and their receiving ends (first, later).
    pub fn new(capacity: usize) -> (Queues, mpsc::Receiver<String>, mpsc::Receiver<String>) {
        let (first, first_rx) = mpsc::channel(capacity);
        let (later, later_rx) = mpsc::channel(capacity);
        (Queues { first, later }, first_rx, later_rx)
    }
}

impl Intake {
    pub fn new(
        store: Store,
        metrics: SharedMetrics,
        queues: Queues,
        allowed_bots: AllowedBots,
        moderation: Moderation,
        checks_per_hour: u32,
    ) -> Intake {
        Intake {
            inner: Arc::new(Inner {
                store,
                metrics,
                queues,
                allowed_bots,
                moderation,
                checks_per_hour,
            }),
        }
    }

    /// An intake over `store` with no moderators, no allowed bots and queues nobody reads
    /// (the jobs wait in the store), for tests of the sources.
    #[cfg(test)]
    pub fn for_tests(store: Store) -> Intake {
        let (queues, _, _) = Queues::new(16);
        let moderation = Moderation::new(Default::default(), store.clone());
        Intake::new(
            store,
            crate::metrics::Metrics::new(),
            queues,
            AllowedBots::default(),
            moderation,
            crate::config::LimitsConfig::default().checks_per_requester_per_hour,
        )
    }

    /// The hashtags moderators watch on `platform` (what the hashtag sources read).
    pub fn watches(&self, platform: PlatformKind) -> Vec<TagWatch> {
        self.inner.store.watches(platform)
    }

    pub fn metrics(&self) -> &SharedMetrics {
        &self.inner.metrics
    }

    /// Where a source's cursor stands (`None` before the first start).
    pub fn cursor(&self, name: &str) -> Result<Option<String>, IntakeError> {
        Ok(self.inner.store.cursor(name)?)
    }

    /// Sets a source's first cursor (the newest event at the very first start) durably.
    /// Whether a job of this id is stored (a source may spare a request for what it holds).
    pub fn holds_job(&self, id: &str) -> Result<bool, IntakeError> {
        Ok(self.inner.store.job(id)?.is_some())
    }

    pub fn start_cursor(&self, name: &str, value: &str) -> Result<(), IntakeError> {
        self.inner.store.advance_cursor(name, value)?;
        self.inner.store.flush()?;
        Ok(())
    }

    /// Records an event's trigger as a job (and moves the cursor) durably, then queues it.
    /// Idempotent: a re-delivered event finds its job. An event without a trigger only moves
    /// the cursor.
    pub async fn accept(&self, event: Event) -> Result<(), IntakeError> {
        let inner = &self.inner;
        let cursor = event.cursor.as_ref().map(|c| (c.name.as_str(), c.value.as_str()));
        let Some(mut trigger) = event.trigger else {
            if let Some((name, value)) = cursor {
                inner.store.advance_cursor(name, value)?;
            }
            return Ok(());
        };
        if trigger.cause == Cause::Mention {
            match Command::parse(&trigger.text) {
                // Anyone may ask "@bot check <link>": from someone who is not a moderator it
                // stays an ordinary request about their post.
                Some(Command::Check(_))
                    if !inner.moderation.is_moderator(
                        trigger.platform,
                        &trigger.author.handle,
                        trigger.author.id.as_deref(),
                    ) => {}
                Some(command) => trigger.cause = Cause::Command { command },
                // A moderator's garbled command is answered with how to write it.
                None => {
                    if let Some(verb) = crate::model::attempted_command(&trigger.text) {
                        if inner.moderation.is_moderator(
                            trigger.platform,
                            &trigger.author.handle,
                            trigger.author.id.as_deref(),
                        ) {
                            trigger.cause = Cause::Command {
                                command: Command::Unclear(verb.to_string()),
                            };
                        }
                    }
                }
            }
        }
        let id = trigger.job_id();
        // A report job that ended on its reporter alone is taken over by another reporter's
        // report of the same post; anything else already held is this event again.
        let mut reopen = false;
        if let Some(held) = inner.store.job(&id)? {
            reopen = held.reopened_by(&trigger);
            if !reopen {
                if let Some((name, value)) = cursor {
                    inner.store.advance_cursor(name, value)?;
                }
                return Ok(());
            }
        }
        // A hit whose tag's day or author's window is spent is dropped here, before anything
        // is stored: a flooded tag costs a cursor move, not a job (and an fsync) per post.
        if let Some(reason) = inner.moderation.hit_refused(&trigger, &id, &trigger.author.key()) {
            tracing::info!(job = %id, why = ?reason, "a hashtag hit refused before it is stored");
            inner.metrics.job_finished(reason.as_str());
            if let Some((name, value)) = cursor {
                inner.store.advance_cursor(name, value)?;
            }
            return Ok(());
        }
        let platform = trigger.platform.as_str();
        let cause = trigger.cause.as_str();
        let mut job = Job::new(trigger);
        self.triage(&mut job);
        // A report is charged to its reporter's window now, before anything is decided: a
        // spent reporter's job ends here, unread, so another reporter's report of the post
        // (in the same read, say) takes it over instead of being dropped as a repeat.
        if job.status == Status::Pending
            && matches!(job.trigger.cause, Cause::Report { .. })
            && !crate::worker::charge_report_window(
                &inner.moderation,
                &inner.store,
                &job.trigger,
                &job.id,
                inner.checks_per_hour,
            )?
        {
            job.status = Status::Skipped(SkipReason::OverQuotaSilenced);
        }
        let stored = if reopen {
            let taken = inner
                .store
                .reopen(&job, cursor, |held| held.reopened_by(&job.trigger))?;
            if taken {
                tracing::info!(job = %job.id, "a reported post skipped for its first reporter is reported again; checked for this one");
            }
            taken
        } else {
            inner.store.enqueue(&job, cursor)?
        };
        if !stored {
            return Ok(());
        }
        if job.trigger.cause == Cause::Mention {
            inner.metrics.mention(platform);
        }
        inner.metrics.trigger(platform, cause);
        let requester = job.trigger.requester().map_or("", |a| a.handle.as_str());
        let span = tracing::info_span!("trigger", job = %job.id, platform, cause, requester);
        let _guard = span.enter();
        match &job.status {
            Status::Pending => {
                tracing::info!("trigger queued");
                let queue = match job.trigger.cause {
                    Cause::HashtagHit { .. } | Cause::Report { .. } | Cause::Watch { .. } => &inner.queues.later,
                    _ => &inner.queues.first,
                };
                if queue.try_send(job.id.clone()).is_err() {
                    tracing::warn!("worker queue full; the job waits in the store for the next sweep");
                }
            }
            Status::Skipped(reason) => {
                tracing::info!(reason = reason.as_str(), why = ?reason, "trigger skipped");
                inner.metrics.job_finished(reason.as_str());
            }
            Status::Done | Status::Failed(_) => {}
        }
        Ok(())
    }

    /// Applies the skip rules to a new job.
    fn triage(&self, job: &mut Job) {
        let inner = &self.inner;
        let t = &job.trigger;
        let author = &t.author;
        let allowed_bot = inner.allowed_bots.allows(&inner.moderation, t);
        let skip = if author.is_self {
            Some(SkipReason::OwnPost)
        } else if author.is_bot && !allowed_bot {
            Some(SkipReason::RequesterIsBot)
        } else if author.nobot && !matches!(t.cause, Cause::Command { .. }) {
            Some(SkipReason::NoBot)
        } else {
            inner.moderation.triage(t)
        };
        if let Some(reason) = skip {
            job.status = Status::Skipped(reason);
        }
    }
}

/// The trigger's own post, as the post a notice or an acknowledgement replies to, tagged with
/// `lang`: the language of the bot's words to it (what the status is tagged with).
pub fn trigger_as_post(t: &Trigger, lang: &str) -> Post {
    Post {
        author_is_bot: t.author.is_bot,
        author_nobot: t.author.nobot,
        version: None,
        language: Some(lang.to_string()),
        ..Post::text_only(&t.status_id, &t.author.handle, &t.text, t.created_at, t.visibility)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Trigger;

    /// `allowed_bots`: per platform, by account key — a Mastodon entry allows
    /// nothing on Bluesky, and on Bluesky only the DID counts, whatever the handle says.
    #[test]
    fn allowed_bots_are_per_platform_and_by_stable_id() {
        let store = Store::open_temporary().unwrap();
        let m = Moderation::new(Default::default(), store);
        let allowed = AllowedBots {
            mastodon: vec!["helper@bots.example".into()],
            bluesky_dids: vec!["did:plc:helper".into()],
        };
        let mut t = Trigger::test_mention("1");
        t.author.handle = "@Helper@bots.example".into();
        t.author.is_bot = true;
        assert!(allowed.allows(&m, &t));
        t.author.handle = "other@bots.example".into();
        assert!(!allowed.allows(&m, &t));
        // The same handle on Bluesky, another account: nothing.
        t.platform = PlatformKind::Bluesky;
        t.author.handle = "helper@bots.example".into();
        t.author.id = Some("did:plc:impostor".into());
        assert!(!allowed.allows(&m, &t));
        // The allowed DID under a new handle: still allowed.
        t.author.handle = "renamed.bsky.social".into();
        t.author.id = Some("did:plc:helper".into());
        assert!(allowed.allows(&m, &t));
    }

    /// A hit past its tag's day is dropped before it is stored: no job, no fsync,
    /// only the cursor moves.
    #[tokio::test]
    async fn a_hit_past_its_tags_day_is_not_stored() {
        let store = Store::open_temporary().unwrap();
        let mut config = crate::config::ModerationConfig::default();
        config.tag_policy.replies_per_day = 1;
        let m = Moderation::new(config, store.clone());
        m.execute(
            PlatformKind::Mastodon,
            "moderator",
            None,
            &Command::Watch("moon".into()),
            "en",
        )
        .unwrap();
        let (queues, _first, _later) = Queues::new(16);
        let intake = Intake::new(
            store.clone(),
            crate::metrics::Metrics::new(),
            queues,
            AllowedBots::default(),
            m.clone(),
            5,
        );
        let hit = |id: &str, author: &str| {
            let mut t = Trigger::test_mention(id);
            t.cause = Cause::HashtagHit { tag: "moon".into() };
            t.status_id = id.into();
            t.author.handle = author.into();
            t
        };
        let first = hit("1", "carol");
        assert_eq!(m.admit_hit(&first, &first.job_id(), "carol").unwrap(), None);
        let second = hit("2", "dave");
        intake
            .accept(Event {
                trigger: Some(second.clone()),
                cursor: Some(CursorMove {
                    name: "mastodon:tag:moon".into(),
                    value: "2".into(),
                }),
            })
            .await
            .unwrap();
        assert!(store.job(&second.job_id()).unwrap().is_none(), "not stored");
        assert_eq!(store.cursor("mastodon:tag:moon").unwrap().as_deref(), Some("2"));
    }
}
