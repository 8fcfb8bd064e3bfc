//! `[bluesky]`: the Bluesky account (AT Protocol) the daemon serves beside, or instead of,
//! the Mastodon one.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BlueskyConfig {
    pub enabled: bool,
    /// The account's PDS or entryway (`https://bsky.social` for most accounts). `app.bsky.*`
    /// calls go through it to its AppView.
    pub service: String,
    /// The bot's handle (or DID) to log in with.
    pub identifier: String,
    /// Environment variable holding an app password (Settings → Privacy and security → App
    /// passwords); never the account password.
    pub app_password_env: String,
    /// File holding the app password (wins over `app_password_env` when set).
    pub app_password_file: String,
    /// How mentions are read: "notifications" (`listNotifications`, needs an AppView) or
    /// "firehose" (`subscribeRepos` on the PDS itself, no AppView needed).
    pub mode: BlueskyMode,
    /// Seconds between two notification polls.
    pub poll_secs: u64,
    /// Requests per 5 minutes (Bluesky allows 3,000 per IP).
    pub requests_per_5min: u32,
    /// Write points per hour (Bluesky allows 5,000; a post costs 3).
    pub write_points_per_hour: u32,
    /// Write points per day (Bluesky allows 35,000).
    pub write_points_per_day: u32,
    /// Accounts that may ask even though their profile carries the `bot` self-label: handles
    /// (resolved to their DIDs at start) or DIDs; only the DID is compared.
    pub allowed_bots: Vec<String>,
    /// Put the `bot` self-label on the account's profile at start-up.
    pub set_bot_label: bool,
    /// The PLC directory that resolves `did:plc` identities (`musebot labeler setup` reads
    /// the account's DID document there when its PDS does not return it with the session).
    pub plc_directory: String,
    /// Longest wait between two attempts to reach the service, seconds.
    pub reconnect_max_secs: u64,
    /// Timeout of one request, seconds.
    pub timeout_secs: u64,
    /// Retries of one request on 429, 5xx and network errors.
    pub max_retries: usize,
    /// Largest answer read, bytes.
    pub max_response_bytes: usize,
    /// `[bluesky.labeler]`: verdicts as labels.
    pub labeler: super::LabelerConfig,
}

/// How the daemon learns of mentions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlueskyMode {
    /// `app.bsky.notification.listNotifications`, polled, with a persisted cursor.
    Notifications,
    /// The PDS's repository firehose (`com.atproto.sync.subscribeRepos`), for a PDS without an
    /// AppView: posts are read from the repos, never through `app.bsky.*`.
    Firehose,
}

impl Default for BlueskyConfig {
    fn default() -> Self {
        BlueskyConfig {
            enabled: false,
            service: "https://bsky.social".into(),
            identifier: String::new(),
            app_password_env: "MUSEBOT_BLUESKY_APP_PASSWORD".into(),
            app_password_file: String::new(),
            mode: BlueskyMode::Notifications,
            poll_secs: 5,
            requests_per_5min: 2500,
            write_points_per_hour: 4500,
            write_points_per_day: 30000,
            allowed_bots: Vec::new(),
            set_bot_label: true,
            plc_directory: "https://plc.directory".into(),
            reconnect_max_secs: 60,
            timeout_secs: 30,
            max_retries: 5,
            max_response_bytes: 4_000_000,
            labeler: super::LabelerConfig::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, ConfigError};

    fn problems(toml: &str) -> Vec<String> {
        Config::parse(&format!("[daemon]\npipeline = \"baseline\"\n{toml}"))
            .unwrap()
            .validate()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_bluesky_only_config_is_valid_and_its_mistakes_name_their_keys() {
        let ok = "[mastodon]\nenabled = false\n[bluesky]\nenabled = true\nidentifier = \"factcheck.bsky.social\"\n";
        assert!(problems(ok).is_empty(), "{:?}", problems(ok));
        let bad = "[mastodon]\nenabled = false\n[bluesky]\nenabled = true\nidentifier = \"@factcheck.bsky.social\"\nservice = \"bsky.social\"\nwrite_points_per_hour = 9000\napp_password_env = \"\"\n";
        let p = problems(bad).join("\n");
        for key in [
            "bluesky.identifier: `@factcheck.bsky.social` starts with @",
            "bluesky.service:",
            "bluesky.write_points_per_hour: is 9000",
            "bluesky.app_password_env:",
        ] {
            assert!(p.contains(key), "{key} missing in:\n{p}");
        }
        let none = problems("[mastodon]\nenabled = false\n").join("\n");
        assert!(
            none.contains("mastodon.enabled: is false and no other platform is enabled"),
            "{none}"
        );
        match Config::parse("[bluesky]\nmode = \"jetstream\"\n") {
            Err(ConfigError::Parse(p)) => assert!(p.to_string().starts_with("bluesky.mode"), "{p}"),
            other => panic!("{other:?}"),
        }
    }
}
