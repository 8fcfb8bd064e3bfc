//! The network watch: posts passing on the network (Bluesky's Jetstream or a relay's firehose,
//! a Mastodon instance's local timeline — the sources in `platform/`) that repeat a claim the
//! fact-check corpus holds, found with nobody tagging the bot. A room of its own in front of the
//! one stage machine: sources send every post they see ([`Seen`]) into one bounded queue; the
//! watch takes them in batches through the cheap path ([`cheap::decide`]: language, length,
//! words, then one embedding run and one vector scan per batch, then the post's stance), and
//! only a post that asserts a matched claim, within the caps ([`caps`]), becomes a job
//! (`Cause::Watch`) through intake — which labels it on Bluesky or holds it for the moderators
//! on Mastodon (`worker/watch.rs`). Everything else costs a cursor move.
//!
//! Exactly once: a post's job id is its own (`watch_job_id`), so a stream replayed after a
//! restart finds the job and labels nothing twice; each batch's cursors move through intake
//! only after its jobs are stored.

pub mod caps;
pub mod cheap;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::claims::matcher::Matcher;
use crate::config::WatchConfig;
use crate::intake::{CursorMove, Event, Intake};
use crate::model::{Account, Cause, Seen, Trigger, Visibility};
use crate::store::Store;
use caps::Caps;
use cheap::Fate;

/// A stream the watch reads, each run until the stop, sending what it sees into the queue.
pub enum WatchSource {
    Bluesky(crate::platform::bluesky::jetstream::NetworkWatch),
    Mastodon(crate::platform::mastodon::public::PublicWatch),
}

/// Starts the watch and its `sources` on `background`; without a corpus to match against
/// (claims off, no relevance model) it says so and watches nothing.
pub fn start(
    config: &WatchConfig,
    matcher: Option<Arc<Matcher>>,
    intake: &Intake,
    store: &Store,
    sources: Vec<WatchSource>,
    background: &mut tokio::task::JoinSet<()>,
    stop: &CancellationToken,
) {
    let Some(matcher) = matcher else {
        tracing::warn!("watch.enabled: no fact-check corpus is open (claims.enabled, a relevance model): the network is not watched");
        return;
    };
    let watch = Watch::new(config.clone(), matcher, intake.clone(), store.clone());
    let (tx, rx) = watch.queue();
    for source in &sources {
        // Every fate of a watched platform is counted from 0: a stream that delivers nothing
        // from the start still trips the alert on its count not growing.
        let platform = match source {
            WatchSource::Bluesky(_) => crate::model::PlatformKind::Bluesky,
            WatchSource::Mastodon(_) => crate::model::PlatformKind::Mastodon,
        };
        intake.metrics().watching(platform.as_str());
    }
    for source in sources {
        match source {
            WatchSource::Bluesky(w) => {
                background.spawn(w.run(intake.clone(), tx.clone(), stop.clone()).in_current_span())
            }
            WatchSource::Mastodon(w) => {
                background.spawn(w.run(intake.clone(), tx.clone(), stop.clone()).in_current_span())
            }
        };
    }
    drop(tx);
    tracing::info!(
        bluesky = config.bluesky.as_str(),
        mastodon = config.mastodon,
        "the network watch is on"
    );
    background.spawn(watch.run(rx, stop.clone()).in_current_span());
}

/// How often a failing batch is tried (waits of 1, 2, 4, 8 s between).
const BATCH_TRIES: u32 = 5;

/// Posts waiting for the watch, as batches (a slow corpus slows the sources, never memory).
pub const QUEUE_BATCHES: usize = 4;

pub struct Watch {
    pub config: WatchConfig,
    pub matcher: Arc<Matcher>,
    pub intake: Intake,
    caps: Caps,
}

impl Watch {
    pub fn new(config: WatchConfig, matcher: Arc<Matcher>, intake: Intake, store: Store) -> Watch {
        let caps = Caps::new(store, &config);
        Watch {
            config,
            matcher,
            intake,
            caps,
        }
    }

    /// The queue the sources send into.
    pub fn queue(&self) -> (mpsc::Sender<Seen>, mpsc::Receiver<Seen>) {
        mpsc::channel(self.config.batch.max(1) * QUEUE_BATCHES)
    }

    /// Takes batches from `posts` until `stop` (or every source is gone).
    pub async fn run(self, mut posts: mpsc::Receiver<Seen>, stop: CancellationToken) {
        let linger = Duration::from_millis(self.config.linger_ms);
        let size = self.config.batch.max(1);
        loop {
            let first = tokio::select! {
                _ = stop.cancelled() => return,
                p = posts.recv() => match p { Some(p) => p, None => return },
            };
            let mut batch = vec![first];
            let deadline = tokio::time::Instant::now() + linger;
            while batch.len() < size {
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline) => break,
                    p = posts.recv() => match p { Some(p) => batch.push(p), None => break },
                }
            }
            self.decide_retrying(batch, &stop).await;
        }
    }

    /// One batch, tried again with backoff when it fails (a model or store error): the next
    /// batch would move the cursors past it, so it is not given up lightly. After
    /// `BATCH_TRIES` its posts are passed over, each logged and counted (`failed`).
    async fn decide_retrying(&self, batch: Vec<Seen>, stop: &CancellationToken) {
        let mut wait = Duration::from_secs(1);
        for attempt in 1..=BATCH_TRIES {
            let span = tracing::info_span!("watch_batch", posts = batch.len(), attempt);
            let Err(e) = self.batch(batch.clone()).instrument(span).await else {
                return;
            };
            tracing::warn!(error = %e, attempt, wait_s = wait.as_secs(), "a watch batch failed; trying it again");
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(wait) => {}
            }
            wait *= 2;
        }
        for post in &batch {
            tracing::error!(post = %post.id, "a watched post could not be decided; passed over");
            self.intake.metrics().watch(post.platform.as_str(), "failed", 1);
        }
    }

    /// One batch: decided on a blocking thread, the asserting matches taken up, then the
    /// batch's cursors moved.
    async fn batch(&self, batch: Vec<Seen>) -> anyhow::Result<()> {
        let (matcher, config) = (self.matcher.clone(), self.config.clone());
        let (batch, fates) = tokio::task::spawn_blocking(move || {
            let fates = cheap::decide(&matcher, &config, &batch, chrono::Utc::now());
            (batch, fates)
        })
        .await?;
        let fates = fates?;
        let mut counts: BTreeMap<(&'static str, &'static str), u64> = BTreeMap::new();
        let mut cursors: Vec<CursorMove> = Vec::new();
        for (post, fate) in batch.iter().zip(&fates) {
            let mut what = fate.as_str();
            if let Fate::Asserts { review, cosine, .. } = fate {
                what = self.take(post, review, *cosine).await?;
            }
            *counts.entry((post.platform.as_str(), what)).or_default() += 1;
            if let Some((name, value)) = &post.cursor {
                match cursors.iter_mut().find(|c| &c.name == name) {
                    Some(c) => c.value = value.clone(),
                    None => cursors.push(CursorMove {
                        name: name.clone(),
                        value: value.clone(),
                    }),
                }
            }
        }
        for ((platform, fate), n) in counts {
            self.intake.metrics().watch(platform, fate, n);
        }
        for cursor in cursors {
            self.intake
                .accept(Event {
                    trigger: None,
                    cursor: Some(cursor),
                })
                .await?;
        }
        Ok(())
    }

    /// An asserting match: exempt accounts and the caps first, then a job through intake.
    /// Returns the fate counted.
    async fn take(&self, post: &Seen, review: &str, cosine: f32) -> anyhow::Result<&'static str> {
        let job_id = crate::model::watch_job_id(post.platform, &post.id);
        if self.config.exempt_accounts.iter().any(|a| a == &post.author_id) {
            return Ok("exempt");
        }
        if self.intake.holds_job(&job_id)? {
            return Ok("seen_before");
        }
        let now = chrono::Utc::now();
        if let Some(capped) = self.caps.admit(post.platform.as_str(), &post.author_id, &job_id, now)? {
            tracing::info!(cap = capped.as_str(), "a watched match is past a cap; not taken up");
            return Ok("capped");
        }
        self.caps.pace().await;
        tracing::info!(post = %post.id, review, cosine, "a watched post asserts a checked claim");
        self.intake
            .accept(Event {
                trigger: Some(trigger_of(post, review)),
                cursor: None,
            })
            .await?;
        Ok("taken")
    }
}

/// The job's trigger: nobody asked; the author is the post's, by its stable id.
pub fn trigger_of(post: &Seen, review: &str) -> Trigger {
    Trigger {
        platform: post.platform,
        cause: Cause::Watch {
            review: review.to_string(),
        },
        event_id: post.id.clone(),
        status_id: post.id.clone(),
        in_reply_to_id: None,
        quote_of: None,
        asked_in_text: false,
        author: Account {
            handle: post.author_handle.clone().unwrap_or_else(|| post.author_id.clone()),
            is_bot: post.author_is_bot,
            is_self: false,
            nobot: post.author_nobot,
            id: Some(post.author_id.clone()),
        },
        visibility: if post.public {
            Visibility::Public
        } else {
            Visibility::Unlisted
        },
        created_at: post.created_at,
        text: post.text.clone(),
        language: post.langs.first().cloned(),
    }
}
