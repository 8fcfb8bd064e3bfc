//! The one configuration tree: `bot-config.toml` deserialised with `serde(default,
//! deny_unknown_fields)`, one `Default`, and [`Config::validate`] that names each bad key with a
//! fix. The shipped `bot-config.toml` is the defaults, documented; a test keeps the two equal.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub daemon: DaemonConfig,
    pub log: LogConfig,
    pub http: HttpConfig,
    pub llm: LlmConfig,
    pub limits: LimitsConfig,
    pub reply: ReplyConfig,
    pub search: crate::search::SearchConfig,
    pub fetch: crate::fetch::FetchConfig,
    pub relevance: crate::relevance::RelevanceConfig,
    pub credibility: crate::credibility::load::CredibilityConfig,
    pub mastodon: MastodonConfig,
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
    /// Folder with prompt templates overriding the built-in ones (empty = built-in).
    pub prompts_dir: PathBuf,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig {
            state_dir: PathBuf::from("/var/lib/musebot"),
            pipeline: PipelineMode::Muse,
            max_jobs_in_flight: 4,
            queue_capacity: 256,
            shutdown_grace_secs: 30,
            prompts_dir: PathBuf::new(),
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    Public,
    Unlisted,
    Private,
    Direct,
}

impl Visibility {
    pub fn as_str(self) -> &'static str {
        match self {
            Visibility::Public => "public",
            Visibility::Unlisted => "unlisted",
            Visibility::Private => "private",
            Visibility::Direct => "direct",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "public" => Some(Visibility::Public),
            "unlisted" => Some(Visibility::Unlisted),
            "private" => Some(Visibility::Private),
            "direct" => Some(Visibility::Direct),
            _ => None,
        }
    }
}

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
}

impl Default for MastodonConfig {
    fn default() -> Self {
        MastodonConfig {
            enabled: true,
            base_url: String::new(),
            access_token_env: "MUSEBOT_MASTODON_TOKEN".into(),
            access_token_file: String::new(),
            requests_per_5min: 240,
            allowed_bots: Vec::new(),
            set_bot_flag: true,
            reconnect_max_secs: 60,
            timeout_secs: 30,
            max_retries: 5,
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
        toml::from_str(text).map_err(|e| ConfigError::Parse(parse_problem(text, &e)))
    }

    /// Every problem found, empty when the config is usable.
    pub fn validate(&self) -> Vec<ConfigProblem> {
        let mut out = Vec::new();
        let mut bad = |key: &str, problem: String, fix: &str| {
            out.push(ConfigProblem {
                key: key.into(),
                problem,
                fix: fix.into(),
            })
        };
        if self.daemon.state_dir.as_os_str().is_empty() {
            bad(
                "daemon.state_dir",
                "is empty".into(),
                "set a writable folder, e.g. /var/lib/musebot",
            );
        }
        if self.daemon.max_jobs_in_flight == 0 || self.daemon.max_jobs_in_flight > 64 {
            bad(
                "daemon.max_jobs_in_flight",
                format!("is {}", self.daemon.max_jobs_in_flight),
                "use a number from 1 to 64",
            );
        }
        if self.daemon.queue_capacity == 0 || self.daemon.queue_capacity > 100_000 {
            bad(
                "daemon.queue_capacity",
                format!("is {}", self.daemon.queue_capacity),
                "use a number from 1 to 100000",
            );
        }
        if !self.http.listen.is_empty() {
            match self.http.listen.parse::<std::net::SocketAddr>() {
                Ok(a) if a.ip().is_loopback() => {}
                Ok(a) => bad(
                    "http.listen",
                    format!("`{a}` is not a loopback address"),
                    "use 127.0.0.1:PORT or [::1]:PORT (metrics are not for the internet)",
                ),
                Err(_) => bad(
                    "http.listen",
                    format!("`{}` is not an address", self.http.listen),
                    "write IP:PORT, e.g. 127.0.0.1:9187, or \"\" to disable",
                ),
            }
        }
        check_url(
            &mut bad,
            "llm.base_url",
            &self.llm.base_url,
            "write the API root, e.g. http://127.0.0.1:8088/v1 or https://api.openai.com/v1",
        );
        if self.llm.model.trim().is_empty() {
            bad(
                "llm.model",
                "is empty".into(),
                "name the model the endpoint serves, e.g. gpt-4o-mini",
            );
        }
        if self.llm.timeout_secs == 0 {
            bad(
                "llm.timeout_secs",
                "is 0".into(),
                "use a positive number of seconds, e.g. 120",
            );
        }
        if self.llm.max_tokens == 0 {
            bad("llm.max_tokens", "is 0".into(), "use a positive number, e.g. 400");
        }
        if !(0.0..=2.0).contains(&self.llm.temperature) {
            bad(
                "llm.temperature",
                format!("is {}", self.llm.temperature),
                "use a value from 0.0 to 2.0",
            );
        }
        if self.limits.checks_per_requester_per_hour == 0 {
            bad(
                "limits.checks_per_requester_per_hour",
                "is 0".into(),
                "use a positive number, e.g. 5",
            );
        }
        if self.reply.max_parts == 0 || self.reply.max_parts > 20 {
            bad(
                "reply.max_parts",
                format!("is {}", self.reply.max_parts),
                "use a number from 1 to 20",
            );
        }
        let f = &self.fetch;
        if f.timeout_secs == 0 {
            bad(
                "fetch.timeout_secs",
                "is 0".into(),
                "use a positive number of seconds, e.g. 15",
            );
        }
        if f.max_body_bytes < 10_000 {
            bad(
                "fetch.max_body_bytes",
                format!("is {}", f.max_body_bytes),
                "use at least 10000 (pages are often 1–3 MB)",
            );
        }
        if f.per_host_concurrency == 0 {
            bad(
                "fetch.per_host_concurrency",
                "is 0".into(),
                "use a positive number, e.g. 2",
            );
        }
        if !f.proxy.is_empty() && reqwest::Proxy::all(&f.proxy).is_err() {
            bad(
                "fetch.proxy",
                format!("`{}` is not a proxy URL", f.proxy),
                "write e.g. http://127.0.0.1:3128 or \"\"",
            );
        }
        for a in &f.test_allow_addrs {
            if a.parse::<std::net::SocketAddr>().is_err() {
                bad(
                    "fetch.test_allow_addrs",
                    format!("`{a}` is not IP:port"),
                    "write e.g. \"127.0.0.1:8080\" (tests only)",
                );
            }
        }
        if self.daemon.pipeline == PipelineMode::Muse {
            if self.search.backends.is_empty() {
                bad("search.backends", "is empty but daemon.pipeline = \"muse\" needs one".into(), "add a backend (e.g. { kind = \"brave\", api_key_env = \"BRAVE_API_KEY\" }) or set daemon.pipeline = \"baseline\"");
            }
            for (key, value) in [
                ("relevance.onnxruntime", &self.relevance.onnxruntime),
                ("relevance.model", &self.relevance.model),
                ("relevance.tokenizer", &self.relevance.tokenizer),
            ] {
                if value.is_empty() {
                    bad(key, "is empty but daemon.pipeline = \"muse\" needs it".into(), "run scripts/setup-sandbox.sh and use the paths it prints in sandbox.env, or set daemon.pipeline = \"baseline\"");
                }
            }
        }
        for (i, b) in self.search.backends.iter().enumerate() {
            if b.kind == crate::search::BackendKind::Searxng && b.base_url.is_empty() {
                bad(
                    &format!("search.backends[{i}].base_url"),
                    "is empty for searxng".into(),
                    "set your SearXNG instance's URL",
                );
            }
            if b.kind == crate::search::BackendKind::Google && b.cx.is_empty() {
                bad(
                    &format!("search.backends[{i}].cx"),
                    "is empty for google".into(),
                    "set your Programmable Search Engine id",
                );
            }
            if b.kind.needs_key() && b.api_key_env.is_empty() && b.api_key_file.is_empty() {
                bad(
                    &format!("search.backends[{i}].api_key_env"),
                    "and api_key_file are both empty".into(),
                    "name the environment variable or file holding the API key",
                );
            }
        }
        if !self.search.before.is_empty() && chrono::DateTime::parse_from_rfc3339(&self.search.before).is_err() {
            bad(
                "search.before",
                format!("`{}` is not an RFC 3339 time", self.search.before),
                "write e.g. 2024-01-31T00:00:00Z or \"\"",
            );
        }
        if self.relevance.threads == 0 || self.relevance.threads > 64 {
            bad(
                "relevance.threads",
                format!("is {}", self.relevance.threads),
                "use a number from 1 to 64 (at most your CPU count)",
            );
        }
        let r = &self.relevance;
        if r.passage_words < 10 {
            bad(
                "relevance.passage_words",
                format!("is {}", r.passage_words),
                "use at least 10 (60 is calibrated)",
            );
        }
        if r.max_passages == 0 || (r.prefilter != 0 && r.prefilter < r.max_passages) {
            bad(
                "relevance.max_passages",
                format!("is {} with prefilter {}", r.max_passages, r.prefilter),
                "use at least 1, and no more than relevance.prefilter (or prefilter = 0, no prefilter)",
            );
        }
        if r.max_pages == 0 {
            bad(
                "relevance.max_pages",
                "is 0".into(),
                "use at least 1 (6 is the default)",
            );
        }
        if !(0.0..=1.0).contains(&self.relevance.threshold) {
            bad(
                "relevance.threshold",
                format!("is {}", self.relevance.threshold),
                "use a cosine between 0 and 1",
            );
        }
        let cuts = self.credibility.pc1_cuts;
        if !(cuts[0] >= cuts[1] && cuts[1] >= cuts[2] && cuts[2] >= 0.0 && cuts[0] <= 1.0) {
            bad(
                "credibility.pc1_cuts",
                format!("{cuts:?} is not descending within [0, 1]"),
                "write [high, medium, low], e.g. [0.90, 0.75, 0.60]",
            );
        }
        for (i, f) in self.credibility.files.iter().enumerate() {
            if f.format == crate::credibility::load::FileFormat::TierList && f.tier.is_none() {
                bad(
                    &format!("credibility.files[{i}].tier"),
                    "is missing for a tier_list file".into(),
                    "add tier = \"high\" | \"medium\" | \"low\"",
                );
            }
        }
        let m = &self.mastodon;
        if !m.enabled {
            bad(
                "mastodon.enabled",
                "is false and no other platform is enabled".into(),
                "set mastodon.enabled = true",
            );
        } else {
            if m.base_url.is_empty() {
                bad(
                    "mastodon.base_url",
                    "is empty".into(),
                    "set it to your instance, e.g. https://mastodon.social",
                );
            } else {
                check_url(
                    &mut bad,
                    "mastodon.base_url",
                    &m.base_url,
                    "set it to your instance, e.g. https://mastodon.social",
                );
            }
            if m.access_token_env.is_empty() && m.access_token_file.is_empty() {
                bad(
                    "mastodon.access_token_env",
                    "and mastodon.access_token_file are both empty".into(),
                    "name the environment variable or file that holds the bot's token",
                );
            }
            if m.requests_per_5min == 0 || m.requests_per_5min > 1500 {
                bad(
                    "mastodon.requests_per_5min",
                    format!("is {}", m.requests_per_5min),
                    "use a number from 1 to 1500 (Mastodon allows 300)",
                );
            }
            if m.reconnect_max_secs == 0 {
                bad(
                    "mastodon.reconnect_max_secs",
                    "is 0".into(),
                    "use a positive number, e.g. 60",
                );
            }
            if m.timeout_secs == 0 {
                bad("mastodon.timeout_secs", "is 0".into(), "use a positive number, e.g. 30");
            }
        }
        out
    }
}

fn check_url(bad: &mut impl FnMut(&str, String, &str), key: &str, value: &str, fix: &str) {
    match url::Url::parse(value) {
        Ok(u) if u.scheme() == "http" || u.scheme() == "https" => {}
        Ok(u) => bad(key, format!("scheme `{}` is not http or https", u.scheme()), fix),
        Err(e) => bad(key, format!("`{value}` is not a URL ({e})"), fix),
    }
}

/// Turns a TOML error into `key: problem — fix`, naming the key on the offending line.
fn parse_problem(text: &str, err: &toml::de::Error) -> ConfigProblem {
    let message = err.message().to_string();
    let (line_no, key) = match err.span() {
        Some(span) => {
            let line_start = text[..span.start.min(text.len())].rfind('\n').map_or(0, |i| i + 1);
            let line_no = text[..line_start].matches('\n').count() + 1;
            let line = text[line_start..].lines().next().unwrap_or("");
            let section = text[..line_start]
                .lines()
                .rev()
                .find_map(|l| {
                    let l = l.trim();
                    (l.starts_with('[') && l.ends_with(']')).then(|| l.trim_matches(['[', ']']).trim().to_string())
                })
                .unwrap_or_default();
            let key = line
                .split('=')
                .next()
                .unwrap_or("")
                .trim()
                .trim_matches('"')
                .to_string();
            let full = match (section.is_empty(), key.is_empty() || key.starts_with('[')) {
                (_, true) => {
                    if section.is_empty() {
                        "config".to_string()
                    } else {
                        section
                    }
                }
                (true, false) => key,
                (false, false) => format!("{section}.{key}"),
            };
            (line_no, full)
        }
        None => (0, "config".to_string()),
    };
    let fix = if message.contains("unknown field") {
        "remove or rename it; bot-config.toml lists every key with its default".to_string()
    } else if message.contains("unknown variant") {
        "use one of the values the message lists".to_string()
    } else {
        "fix the value's type or syntax; bot-config.toml shows the expected form".to_string()
    };
    ConfigProblem {
        key,
        problem: format!("{} (line {line_no})", message.trim()),
        fix,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_file_equals_defaults() {
        let text = include_str!("../bot-config.toml");
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
            [
                "search.backends",
                "relevance.onnxruntime",
                "relevance.model",
                "relevance.tokenizer"
            ]
        );
    }
}
