//! The one configuration tree: `bot-config.toml` deserialised with `serde(default,
//! deny_unknown_fields)`, one `Default`, and [`Config::validate`] that names each bad key with a
//! fix. The shipped `bot-config.toml` is the defaults, documented; a test keeps the two equal.

mod accounts;
mod admin;
mod bluesky;
mod budget;
mod eval;
mod images;
mod labeler;
mod living;
mod moderation;
mod parse;
mod reports;
mod validate;
pub mod watch;

pub use accounts::{Account, AccountConfig};
pub use admin::AdminConfig;
pub use bluesky::{BlueskyConfig, BlueskyMode};
pub use budget::{BudgetConfig, Price};
pub use eval::{EvalConfig, JudgeConfig};
pub use images::{ImagesConfig, VisionConfig};
pub use labeler::{Channel, Confidence, LabelerConfig};
pub use living::{duration, Corrections, LivingConfig};
pub use moderation::ModerationConfig;
pub use reports::{ReportChannel, ReportsConfig};
pub use watch::{BlueskyStream, WatchConfig};

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

/// Where the daemon and the commands read the config unless told otherwise.
pub const DEFAULT_PATH: &str = "/etc/musebot/bot-config.toml";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub daemon: DaemonConfig,
    pub log: LogConfig,
    pub http: HttpConfig,
    pub llm: LlmConfig,
    pub limits: LimitsConfig,
    pub reply: ReplyConfig,
    pub privacy: PrivacyConfig,
    pub verify: VerifyConfig,
    pub search: crate::search::SearchConfig,
    pub factcheck: crate::search::factcheck::FactCheckConfig,
    pub index: crate::index::IndexConfig,
    pub claims: crate::claims::ClaimsConfig,
    pub fetch: crate::fetch::FetchConfig,
    pub relevance: crate::relevance::RelevanceConfig,
    pub credibility: crate::credibility::load::CredibilityConfig,
    pub images: ImagesConfig,
    pub vision: VisionConfig,
    pub mastodon: MastodonConfig,
    pub bluesky: BlueskyConfig,
    pub moderation: ModerationConfig,
    pub budget: BudgetConfig,
    pub admin: AdminConfig,
    pub living: LivingConfig,
    pub watch: WatchConfig,
    pub eval: EvalConfig,
    /// `[[accounts]]`: more accounts served beside the default one (`accounts.rs`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub accounts: Vec<AccountConfig>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DaemonConfig {
    /// Folder of the sled store (created if absent).
    pub state_dir: PathBuf,
    /// Which pipeline answers a post: `muse` (retrieval) or `baseline` (LLM only, no retrieval).
    pub pipeline: PipelineMode,
    /// Jobs processed at the same time.
    pub max_jobs_in_flight: usize,
    /// Capacity of the queue between intake and the workers.
    pub queue_capacity: usize,
    /// Seconds in-flight jobs get to finish after SIGTERM/SIGINT before they are checkpointed.
    pub shutdown_grace_secs: u64,
    /// Days finished jobs and reply records are kept (unfinished jobs are never pruned).
    pub keep_days: u64,
    /// First wait before a job that met a transient failure (an outage, a 5xx) is tried again;
    /// it doubles with each attempt.
    pub retry_base_secs: u64,
    /// Folder with prompt templates overriding the built-in ones (empty = built-in).
    pub prompts_dir: PathBuf,
    /// A file on the host holding the key that signs backups and checks them before a
    /// verify or restore (empty = backups unsigned).
    pub backup_key: PathBuf,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig {
            state_dir: PathBuf::from("/var/lib/musebot"),
            pipeline: PipelineMode::Muse,
            max_jobs_in_flight: 4,
            queue_capacity: 256,
            shutdown_grace_secs: 30,
            retry_base_secs: 5,
            keep_days: 30,
            prompts_dir: PathBuf::new(),
            backup_key: PathBuf::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PipelineMode {
    /// Muse's retrieval pipeline: search, credible pages, verified evidence, references.
    Muse,
    /// Muse's "without retrieval" reply (the paper's GPT-4 baseline), for comparison.
    Baseline,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// `text` or `json`.
    pub format: LogFormat,
    /// Filter used when `RUST_LOG` is not set (tracing-subscriber EnvFilter syntax).
    pub filter: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            format: LogFormat::Text,
            filter: "info".into(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpConfig {
    /// Loopback address of `/healthz` and `/metrics`; empty disables the listener.
    pub listen: String,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            listen: "127.0.0.1:9187".into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    /// Base URL of an OpenAI-compatible API (ends before `/chat/completions`).
    pub base_url: String,
    pub model: String,
    /// Environment variable holding the API key (empty: no key, e.g. a local server).
    pub api_key_env: String,
    /// File holding the API key (wins over `api_key_env` when set).
    pub api_key_file: String,
    /// Timeout of one request, seconds.
    pub timeout_secs: u64,
    /// Retries on 429, 5xx and timeouts (exponential backoff, `Retry-After` honoured).
    pub max_retries: usize,
    pub max_tokens: u32,
    pub temperature: f32,
    /// Price per million prompt tokens, for the cost estimate in traces (0 = free/local).
    pub prompt_price_per_million: f64,
    /// Price per million completion tokens.
    pub completion_price_per_million: f64,
    /// Largest answer read, bytes (a bigger one is an error, not a memory spike).
    pub max_response_bytes: usize,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            base_url: "http://127.0.0.1:8088/v1".into(),
            model: "default".into(),
            api_key_env: "MUSEBOT_LLM_API_KEY".into(),
            api_key_file: String::new(),
            timeout_secs: 120,
            max_retries: 4,
            max_tokens: 400,
            temperature: 0.2,
            prompt_price_per_million: 0.0,
            completion_price_per_million: 0.0,
            max_response_bytes: 4_000_000,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Checks one requester may ask for per hour; past it they get one notice, then silence.
    pub checks_per_requester_per_hour: u32,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            checks_per_requester_per_hour: 5,
        }
    }
}

/// Which drafts a debate checks against their evidence before they are posted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerifyMode {
    Off,
    /// Every reply drafted from evidence.
    All,
    /// Only replies whose verdict is "inaccurate" or "misleading".
    Negative,
}

/// Draft verification by debate (MAD-Sherlock).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VerifyConfig {
    pub mode: VerifyMode,
    /// Agents in a debate (each with its own conversation).
    pub agents: usize,
    /// Debate rounds after the independent opinions, at most.
    pub rounds: usize,
    /// The LLM's reading of a post's stance as a second opinion on an asked-for answer: a
    /// sentence about the post beyond the neutral one is said only when the stance model and
    /// the LLM read it alike (the Muse pipeline's `opinion` room).
    pub stance: bool,
}

impl Default for VerifyConfig {
    fn default() -> Self {
        VerifyConfig {
            mode: VerifyMode::All,
            agents: 2,
            rounds: 3,
            stance: false,
        }
    }
}

/// What the bot may do with posts that are not public.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct PrivacyConfig {
    /// Check followers-only and direct posts (and unknown visibilities, and posts quoting
    /// one): their text and pictures then reach the search APIs, reverse image search, the
    /// vision endpoint and the LLM endpoint. Off: the requester gets a direct message that
    /// says why the post is not checked. Replies about such posts are always direct messages.
    pub check_non_public: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReplyConfig {
    /// `public`, `unlisted`, `private` or `direct`; never wider than the checked post's.
    pub visibility: Visibility,
    /// Number each part "(i/n)" when a reply needs more than one post.
    pub number_parts: bool,
    /// At most this many posts in one reply thread (the text is shortened to fit).
    pub max_parts: usize,
}

impl Default for ReplyConfig {
    fn default() -> Self {
        ReplyConfig {
            visibility: Visibility::Unlisted,
            number_parts: true,
            max_parts: 4,
        }
    }
}

/// Post visibility: a persisted record, defined with the others in [`crate::model`].
pub use crate::model::Visibility;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MastodonConfig {
    pub enabled: bool,
    /// The instance, e.g. `https://mastodon.social`.
    pub base_url: String,
    /// Environment variable holding the bot's access token.
    pub access_token_env: String,
    /// File holding the access token (wins over `access_token_env` when set).
    pub access_token_file: String,
    /// REST requests per 5 minutes (stay below the server's 300).
    pub requests_per_5min: u32,
    /// Posts per 3 hours, paced evenly after a burst of 20 (Mastodon allows an account 300
    /// posts, edits and boosts per 3 hours; at most 280 here, so 20 + this stays below it).
    pub posts_per_3h: u32,
    /// Accounts (`user` or `user@domain`) that may ask even though flagged as bots.
    pub allowed_bots: Vec<String>,
    /// Set the account's bot flag at start-up.
    pub set_bot_flag: bool,
    /// Longest wait between stream reconnects, seconds (exponential backoff up to this).
    pub reconnect_max_secs: u64,
    /// Timeout of one REST request, seconds.
    pub timeout_secs: u64,
    /// Retries of one REST request on 429, 5xx and network errors.
    pub max_retries: usize,
    /// Largest REST answer read, bytes (a bigger one is an error, not a memory spike).
    pub max_response_bytes: usize,
}

impl Default for MastodonConfig {
    fn default() -> Self {
        MastodonConfig {
            enabled: true,
            base_url: String::new(),
            access_token_env: "MUSEBOT_MASTODON_TOKEN".into(),
            access_token_file: String::new(),
            requests_per_5min: 240,
            posts_per_3h: 250,
            allowed_bots: Vec::new(),
            set_bot_flag: true,
            reconnect_max_secs: 60,
            timeout_secs: 30,
            max_retries: 5,
            max_response_bytes: 4_000_000,
        }
    }
}

/// One problem in a config: the key, what is wrong, how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    pub key: String,
    pub problem: String,
    pub fix: String,
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} — {}", self.key, self.problem, self.fix)
    }
}

/// Errors loading a config file; each renders as `key: problem — how to fix`.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read the config file: {reason} — check the path (default: /etc/musebot/bot-config.toml)")]
    Unreadable { path: String, reason: String },
    #[error("{0}")]
    Parse(ConfigProblem),
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Invalid(Vec<ConfigProblem>),
}

impl Config {
    /// Reads, parses and validates a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Unreadable {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        let config = Config::parse(&text)?;
        let problems = config.validate();
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(ConfigError::Invalid(problems))
        }
    }

    /// Parses TOML text without validating it.
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Parse(parse::problem(text, &e)))
    }

    /// Every problem found, empty when the config is usable.
    pub fn validate(&self) -> Vec<ConfigProblem> {
        validate::validate(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_file_equals_defaults() {
        let text = include_str!("../../bot-config.toml");
        let shipped = Config::parse(text).expect("bot-config.toml parses");
        assert_eq!(
            shipped,
            Config::default(),
            "bot-config.toml and Config::default() disagree"
        );
    }

    #[test]
    fn problems_name_the_key() {
        let cases: &[(&str, &str)] = &[
            ("[daemon]\nmax_jobs_in_flight = \"four\"\n", "daemon.max_jobs_in_flight"),
            ("[mastodon]\nbase_ulr = \"https://x\"\n", "mastodon.base_ulr"),
            ("[log]\nformat = \"xml\"\n", "log.format"),
            ("[reply]\nvisibility = \"everyone\"\n", "reply.visibility"),
        ];
        for (text, key) in cases {
            match Config::parse(text) {
                Err(ConfigError::Parse(p)) => assert_eq!(&p.key, key, "{p}"),
                other => panic!("{text:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn validate_names_each_bad_key() {
        let mut c = Config::default();
        c.daemon.pipeline = PipelineMode::Baseline;
        c.mastodon.base_url = "ftp://x".into();
        c.llm.base_url = "not a url".into();
        c.http.listen = "0.0.0.0:9187".into();
        c.daemon.max_jobs_in_flight = 0;
        let keys: Vec<_> = c.validate().into_iter().map(|p| p.key).collect();
        assert_eq!(
            keys,
            [
                "daemon.max_jobs_in_flight",
                "http.listen",
                "llm.base_url",
                "mastodon.base_url"
            ]
        );
    }

    /// Re-checks' share of the budget is at most reports': a larger one is a problem naming the
    /// key and the fix.
    #[test]
    fn the_recheck_share_is_at_most_the_report_share() {
        let mut c = Config::default();
        assert!(c.budget.recheck_share < c.budget.report_share);
        c.budget.report_share = 0.5;
        c.budget.recheck_share = 0.7;
        let problems = c.validate();
        let p = problems
            .iter()
            .find(|p| p.key == "budget.recheck_share")
            .expect("refused");
        assert!(p.to_string().contains("at most budget.report_share"), "{p}");
        c.budget.recheck_share = 0.5;
        assert!(c.validate().iter().all(|p| !p.key.starts_with("budget.")));
        c.budget.recheck_share = 0.0;
        assert!(c.validate().iter().any(|p| p.key == "budget.recheck_share"));
    }

    #[test]
    fn prefilter_first_must_leave_the_evidence_its_passages() {
        let mut c = Config::default();
        c.relevance.prefilter_first = 1;
        let problems = c.validate();
        let p = problems
            .iter()
            .find(|p| p.key == "relevance.prefilter_first")
            .expect("named");
        assert!(p.to_string().contains("max_passages"), "{p}");
        for ok in [0, 2, 3, 5] {
            c.relevance.prefilter_first = ok;
            assert!(
                c.validate().iter().all(|p| p.key != "relevance.prefilter_first"),
                "{ok}"
            );
        }
    }

    #[test]
    fn eval_settings_name_their_key_and_the_fix() {
        let mut c = Config::default();
        c.daemon.pipeline = PipelineMode::Baseline;
        c.mastodon.base_url = "https://mastodon.example".into();
        c.eval.jobs = 0;
        c.eval.judge.base_url = "judge.example".into();
        c.eval.judge.max_tokens = 50;
        let problems = c.validate();
        let keys: Vec<_> = problems.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(keys, ["eval.jobs", "eval.judge.base_url", "eval.judge.max_tokens"]);
        assert!(
            problems[1].to_string().contains("https://api.openai.com/v1"),
            "{}",
            problems[1]
        );
        // Each empty judge key is the bot's model's.
        let j = Config::default().eval.judge.as_llm(&c.llm);
        assert_eq!(
            (j.base_url.as_str(), j.model.as_str(), j.api_key_env.as_str()),
            (c.llm.base_url.as_str(), "default", "MUSEBOT_LLM_API_KEY")
        );
        // A judge at another endpoint never gets the bot's key.
        let mut elsewhere = Config::default().eval.judge;
        elsewhere.base_url = "https://judge.example/v1".into();
        let j = elsewhere.as_llm(&c.llm);
        assert_eq!((j.api_key_env.as_str(), j.api_key_file.as_str()), ("", ""));
    }

    #[test]
    fn a_filled_in_config_is_valid() {
        let mut c = Config::default();
        c.mastodon.base_url = "https://mastodon.example".into();
        c.daemon.pipeline = PipelineMode::Baseline;
        assert_eq!(c.validate(), vec![]);
        c.daemon.pipeline = PipelineMode::Muse;
        let keys: Vec<_> = c.validate().into_iter().map(|p| p.key).collect();
        assert_eq!(
            keys,
            ["relevance.onnxruntime", "relevance.model", "relevance.tokenizer"]
        );
        // Without the index's feeds, a web search backend is needed.
        c.index.feeds.clear();
        let keys: Vec<_> = c.validate().into_iter().map(|p| p.key).collect();
        assert_eq!(keys[0], "search.backends");
    }

    #[test]
    fn report_settings_name_their_key_and_the_fix() {
        let mut c = Config::default();
        c.mastodon.base_url = "https://mastodon.example".into();
        c.daemon.pipeline = PipelineMode::Baseline;
        c.moderation.reports.webhook_listen = "127.0.0.1:8092".into();
        let keys: Vec<_> = c.validate().into_iter().map(|p| p.key).collect();
        assert_eq!(
            keys,
            ["moderation.reports.webhook_listen"],
            "a webhook with reports off"
        );
        c.moderation.reports.enabled = true;
        let problems = c.validate();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].key, "moderation.mastodon_moderators");
        assert!(problems[0].to_string().contains("direct message"), "{}", problems[0]);
        c.moderation.mastodon_moderators = vec!["alice".into()];
        c.moderation.reports.poll_secs = 1;
        let keys: Vec<_> = c.validate().into_iter().map(|p| p.key).collect();
        assert_eq!(keys, ["moderation.reports.poll_secs"]);
    }
}
