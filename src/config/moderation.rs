//! `[moderation]`: who may command the bot (per platform), how watched hashtags are followed
//! and answered (the policy a `watch #tag` starts with), and the operator's blocklists.

use serde::{Deserialize, Serialize};

use crate::model::TagPolicy;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModerationConfig {
    /// Mastodon accounts whose commands the bot obeys: `user` (the bot's server) or
    /// `user@domain`, as Mastodon's `acct` writes them.
    pub mastodon_moderators: Vec<String>,
    /// Bluesky accounts whose commands the bot obeys: handles (`alice.bsky.social`, resolved
    /// to DIDs at start) or DIDs. Rights follow the DID.
    pub bluesky_moderators: Vec<String>,
    /// Seconds between two catch-up reads of each watched hashtag's timeline (Mastodon also
    /// streams each tag live; Bluesky's search runs at this interval).
    pub hashtag_poll_secs: u64,
    /// Hashtags watched at most at once on each platform: every tag costs a stream and a REST
    /// read every `hashtag_poll_secs`, out of the same request budget as mentions and posting.
    pub max_watched_tags: usize,
    /// The policy a newly watched hashtag gets.
    pub tag_policy: TagPolicy,
    /// Accounts never checked, answered or cited (`user@domain` on Mastodon, handles or DIDs
    /// on Bluesky; handles are resolved to DIDs at start).
    pub blocked_accounts: Vec<String>,
    /// Mastodon servers (domains) whose accounts are never checked or answered.
    pub blocked_instances: Vec<String>,
    /// Web domains (and their subdomains) never read or cited as evidence.
    pub blocked_domains: Vec<String>,
    /// Which triggers' replies wait for a moderator's `approve` before they are posted:
    /// any of "mention", "hashtag", "moderator".
    pub review: Vec<String>,
    /// Seconds a held draft waits for a decision before it is dropped.
    pub review_expiry_secs: u64,
    /// `[moderation.reports]`: the posts people report to moderators, checked for them.
    pub reports: super::ReportsConfig,
}

impl Default for ModerationConfig {
    fn default() -> Self {
        ModerationConfig {
            mastodon_moderators: Vec::new(),
            bluesky_moderators: Vec::new(),
            hashtag_poll_secs: 20,
            max_watched_tags: 10,
            tag_policy: TagPolicy::default(),
            blocked_accounts: Vec::new(),
            blocked_instances: Vec::new(),
            blocked_domains: Vec::new(),
            review: Vec::new(),
            review_expiry_secs: 86_400,
            reports: super::ReportsConfig::default(),
        }
    }
}
