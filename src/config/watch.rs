//! `[watch]`: the network watch — posts passing on Bluesky (Jetstream or a relay's firehose)
//! and on a Mastodon instance's local timeline, matched against the fact-check corpus, so a
//! post repeating a debunked claim gets the labeler's label (Bluesky) or goes to the
//! moderators' review queue (Mastodon) with nobody tagging the bot.

use serde::{Deserialize, Serialize};

/// Bluesky's stream of every post. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlueskyStream {
    /// Not watched.
    Off,
    /// Jetstream's JSON over WebSocket (`wantedCollections=app.bsky.feed.post`).
    Jetstream,
    /// A relay's (or a PDS's) `com.atproto.sync.subscribeRepos`: DAG-CBOR commits.
    Relay,
}

impl BlueskyStream {
    pub fn as_str(self) -> &'static str {
        match self {
            BlueskyStream::Off => "off",
            BlueskyStream::Jetstream => "jetstream",
            BlueskyStream::Relay => "relay",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WatchConfig {
    /// Watch the network for posts repeating a published fact-check's claim.
    pub enabled: bool,
    /// Bluesky's stream: "jetstream", "relay" or "off". Labels need `[bluesky.labeler] enabled`.
    pub bluesky: BlueskyStream,
    /// Jetstream's subscribe endpoint (`wss://…/subscribe`).
    pub jetstream_url: String,
    /// The relay whose `com.atproto.sync.subscribeRepos` is read (`wss://…`); empty: the
    /// account's own PDS.
    pub relay_url: String,
    /// Mastodon: watch the instance's local public timeline (matches go to the review queue).
    pub mastodon: bool,
    /// Languages watched (a post tagged with none of them, or detected as another, is passed
    /// over); the same-claim decision is calibrated per model, so only languages a configured
    /// model reads belong here.
    pub languages: Vec<String>,
    /// Posts shorter than this many characters are passed over (too little to be a claim).
    pub min_chars: usize,
    /// The words-only prefilter: the least summed rarity (IDF) of a post's words found in the
    /// corpus's claims for it to be embedded, in units of the rarest word's (1.0: one word only
    /// one claim holds, or about five common ones).
    pub min_word_score: f32,
    /// Added to the model's `claims.same_claim` threshold for a post nobody asked about, where
    /// the cosine decides "same claim" (posts not in English, another English model, a corpus
    /// under 1,000 reviews; elsewhere the learned head of `claims::same` decides): an unasked
    /// label needs a closer match than an answer someone requested.
    pub same_claim_margin: f32,
    /// Posts embedded and matched together in one run.
    pub batch: usize,
    /// Milliseconds a batch waits to fill before it runs anyway.
    pub linger_ms: u64,
    /// Labels emitted a second at most (Bluesky allows 5).
    pub labels_per_second: u32,
    /// Labels an hour at most (Bluesky allows 5,000).
    pub labels_per_hour: u32,
    /// Labels a day at most (Bluesky allows 50,000).
    pub labels_per_day: u32,
    /// Matches of one author taken up a day at most (labels or review items).
    pub per_author_per_day: u32,
    /// Posts older than this many seconds when seen (a catch-up after a long stop) are passed
    /// over.
    pub max_age_secs: u64,
    /// Bluesky: put a watched post's label at once (true), or hold each match for a moderator's
    /// `approve` (false). The stance model's measured precision on unseen posts is below what
    /// an unreviewed label on someone's post should need (docs: the network watch).
    pub auto_label: bool,
    /// Accounts never labelled (DIDs, Mastodon account ids), beside fact-checkers' own.
    pub exempt_accounts: Vec<String>,
    /// The rating classes of a published check whose repeats the watch takes up: "false",
    /// "misleading", "missing_context", "true". A repeat of a claim rated otherwise is passed
    /// over (the watch exists to mark debunked claims).
    pub label_ratings: Vec<String>,
}

/// The rating classes `watch.label_ratings` may name, with the verdict each is.
pub const LABEL_RATINGS: [(&str, crate::model::Verdict); 4] = [
    ("false", crate::model::Verdict::Inaccurate),
    ("misleading", crate::model::Verdict::Misleading),
    ("missing_context", crate::model::Verdict::MissingContext),
    ("true", crate::model::Verdict::Accurate),
];

impl WatchConfig {
    /// The verdicts `label_ratings` lets the watch put (unknown names are `config check`'s).
    pub fn label_verdicts(&self) -> Vec<crate::model::Verdict> {
        LABEL_RATINGS
            .iter()
            .filter(|(name, _)| self.label_ratings.iter().any(|r| r.eq_ignore_ascii_case(name)))
            .map(|(_, v)| *v)
            .collect()
    }
}

impl Default for WatchConfig {
    fn default() -> Self {
        WatchConfig {
            enabled: false,
            bluesky: BlueskyStream::Jetstream,
            jetstream_url: "wss://jetstream2.us-east.bsky.network/subscribe".into(),
            relay_url: String::new(),
            mastodon: true,
            languages: vec!["en".into()],
            min_chars: 30,
            min_word_score: 2.0,
            same_claim_margin: 0.02,
            batch: 64,
            linger_ms: 250,
            labels_per_second: 2,
            labels_per_hour: 1000,
            labels_per_day: 10_000,
            per_author_per_day: 3,
            max_age_secs: 3600,
            auto_label: false,
            exempt_accounts: Vec::new(),
            label_ratings: vec!["false".into(), "misleading".into()],
        }
    }
}
