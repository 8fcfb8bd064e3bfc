//! `[[accounts]]`: more accounts served by the same daemon beside the one `[mastodon]` and
//! `[bluesky]` describe (the *default* account, which keeps today's single-account configs
//! working unchanged). Each entry names the account and gives its own platform sections; the
//! sections it leaves out are shared with the default account where sharing is harmless
//! (`[reply]`, `[limits]`, `[budget]`: same settings, counted apart) and off where sharing
//! would hand one account's rights or streams to another (`[moderation]`'s moderators and
//! hashtags, `[admin]`, `[watch]`). [`Config::accounts`] turns the file into one [`Config`]
//! per account, which the daemon runs side by side over one store, one set of models, one
//! evidence index and one claim memory.

use serde::{Deserialize, Serialize};

use super::{
    AdminConfig, BlueskyConfig, BudgetConfig, Config, LimitsConfig, MastodonConfig, ModerationConfig, ReplyConfig,
    WatchConfig,
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct AccountConfig {
    /// The account's name in logs, metrics (`account="…"`), `/healthz` and its state:
    /// lowercase letters, digits, `-` and `_`; unique; never changed once it has state.
    pub name: String,
    /// `[accounts.mastodon]`: the account's Mastodon side (its own server and token).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mastodon: Option<MastodonConfig>,
    /// `[accounts.bluesky]`: the account's Bluesky side (its own PDS, app password, labeler).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bluesky: Option<BlueskyConfig>,
    /// `[accounts.moderation]`: the account's moderators, hashtags, blocks and reports
    /// (absent: none of its own — no moderator has rights on it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moderation: Option<ModerationConfig>,
    /// `[accounts.admin]`: the account's own admin page and token (absent: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin: Option<AdminConfig>,
    /// `[accounts.watch]`: the network watch run by this account (absent: off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watch: Option<WatchConfig>,
    /// `[accounts.reply]` (absent: `[reply]`'s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply: Option<ReplyConfig>,
    /// `[accounts.limits]` (absent: `[limits]`'s, counted for this account alone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<LimitsConfig>,
    /// `[accounts.budget]`: the account's share of the LLM budget (absent: `[budget]`'s
    /// limits, counted for this account alone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetConfig>,
}

/// One account as the daemon runs it: its name (`""` for the default account) and the whole
/// config as that account sees it.
#[derive(Debug, Clone)]
pub struct Account {
    pub name: String,
    pub config: Config,
}

impl Account {
    /// The account's label in logs and `/healthz` (`default` for the unnamed one).
    pub fn label(&self) -> &str {
        if self.name.is_empty() {
            "default"
        } else {
            &self.name
        }
    }

    /// A key of this account's config as an error names it: `mastodon.base_url` for the
    /// default account, `accounts.es.mastodon.base_url` for a named one.
    pub fn key(&self, key: &str) -> String {
        account_key(&self.name, key)
    }
}

pub(super) fn account_key(name: &str, key: &str) -> String {
    if name.is_empty() {
        key.to_string()
    } else {
        format!("accounts.{name}.{key}")
    }
}

impl Config {
    /// Every account the daemon serves: the default one (when `[mastodon]` or `[bluesky]` is
    /// enabled) first, then each `[[accounts]]` entry, each as a whole config.
    pub fn accounts(&self) -> Vec<Account> {
        let mut out = Vec::new();
        if self.mastodon.enabled || self.bluesky.enabled {
            let mut config = self.clone();
            config.accounts = Vec::new();
            out.push(Account {
                name: String::new(),
                config,
            });
        }
        for a in &self.accounts {
            out.push(Account {
                name: a.name.clone(),
                config: self.derive(a),
            });
        }
        out
    }

    /// The config as the named account `a` sees it.
    pub(super) fn derive(&self, a: &AccountConfig) -> Config {
        let mut c = self.clone();
        c.accounts = Vec::new();
        c.mastodon = a.mastodon.clone().unwrap_or(MastodonConfig {
            enabled: false,
            ..MastodonConfig::default()
        });
        c.bluesky = a.bluesky.clone().unwrap_or_default();
        c.moderation = a.moderation.clone().unwrap_or_else(|| ModerationConfig {
            // The evidence is shared: its blocked domains are the daemon's.
            blocked_domains: self.moderation.blocked_domains.clone(),
            ..ModerationConfig::default()
        });
        c.admin = a.admin.clone().unwrap_or_default();
        c.watch = a.watch.clone().unwrap_or_default();
        if let Some(r) = &a.reply {
            c.reply = r.clone();
        }
        if let Some(l) = &a.limits {
            c.limits = l.clone();
        }
        if let Some(b) = &a.budget {
            c.budget = b.clone();
        }
        // One health and metrics listener for the daemon, opened by the shared part.
        c.http.listen = String::new();
        c
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    const BASE: &str = r#"
[daemon]
pipeline = "baseline"
[mastodon]
base_url = "https://en.example"
[moderation]
mastodon_moderators = ["alice"]
blocked_domains = ["spam.example"]
[admin]
listen = "127.0.0.1:8091"
"#;

    fn problems(extra: &str) -> String {
        let c = Config::parse(&format!("{BASE}{extra}")).unwrap();
        c.validate()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn a_config_without_accounts_is_one_default_account_as_before() {
        let c = Config::parse(BASE).unwrap();
        let accounts = c.accounts();
        assert_eq!(accounts.len(), 1);
        assert_eq!(accounts[0].label(), "default");
        assert_eq!(accounts[0].key("mastodon.base_url"), "mastodon.base_url");
        assert_eq!(accounts[0].config.mastodon, c.mastodon);
        assert!(problems("").is_empty(), "{}", problems(""));
    }

    #[test]
    fn a_named_account_has_its_own_platforms_and_rights_and_shares_the_rest() {
        let extra = r#"
[reply]
max_parts = 3
[[accounts]]
name = "es"
[accounts.mastodon]
base_url = "https://es.example"
access_token_env = "ES_TOKEN"
[accounts.bluesky]
enabled = true
identifier = "es.bsky.social"
app_password_env = "ES_BSKY"
"#;
        let c = Config::parse(&format!("{BASE}{extra}")).unwrap();
        assert!(c.validate().is_empty(), "{:?}", c.validate());
        let accounts = c.accounts();
        assert_eq!(accounts.len(), 2);
        let es = &accounts[1];
        assert_eq!(es.label(), "es");
        assert_eq!(es.key("mastodon.base_url"), "accounts.es.mastodon.base_url");
        let k = &es.config;
        assert_eq!(k.mastodon.base_url, "https://es.example");
        assert!(k.bluesky.enabled);
        // No moderator, admin page or watch of the default account's: rights are not shared.
        assert!(k.moderation.mastodon_moderators.is_empty());
        assert!(k.admin.listen.is_empty());
        assert!(!k.watch.enabled);
        // Shared: the reply settings, the evidence's blocked domains, the models and the store.
        assert_eq!(k.reply.max_parts, 3);
        assert_eq!(k.moderation.blocked_domains, ["spam.example"]);
        assert_eq!(k.relevance, c.relevance);
        assert_eq!(k.daemon.state_dir, c.daemon.state_dir);
        assert!(k.http.listen.is_empty(), "one health listener, the daemon's");
        assert!(k.accounts.is_empty());
    }

    #[test]
    fn a_mistake_in_an_account_is_named_by_account_and_key() {
        let p = problems(
            r#"
[[accounts]]
name = "es"
[accounts.mastodon]
base_url = "es.example"
[accounts.admin]
listen = "127.0.0.1:8091"
[accounts.moderation]
blocked_domains = ["other.example"]
[[accounts]]
name = "es"
[[accounts]]
name = "Labels!"
[[accounts]]
name = "nothing"
"#,
        );
        for want in [
            "accounts.es.mastodon.base_url:",
            "accounts.es.admin.listen: is `127.0.0.1:8091`, which admin.listen listens on too",
            "accounts.es.moderation.blocked_domains: differs from [moderation].blocked_domains",
            "accounts: two entries are named `es`",
            "accounts: an entry is named `Labels!`",
            "accounts.nothing.mastodon.enabled: is false and no other platform is enabled",
        ] {
            assert!(p.contains(want), "{want} missing in:\n{p}");
        }
        // The default account's own sections are not reported again under the account.
        assert!(!p.contains("accounts.es.relevance"), "{p}");
        assert!(!p.contains("accounts.es.reply"), "{p}");
    }

    /// The book's example parses as written: three accounts, each with its own platform.
    #[test]
    fn the_books_example_is_a_config() {
        let chapter = include_str!("../../docs/src/accounts.md");
        let example = chapter
            .split("```toml\n")
            .nth(1)
            .and_then(|b| b.split("```").next())
            .unwrap();
        let c = Config::parse(example).unwrap();
        let names: Vec<String> = c.accounts().iter().map(|a| a.label().to_string()).collect();
        assert_eq!(names, ["default", "es", "labels"]);
        let labels = &c.accounts()[2].config;
        assert!(labels.bluesky.labeler.enabled && labels.watch.enabled && !labels.mastodon.enabled);
        assert!(!c.accounts()[0].config.watch.enabled);
        // Its held labels can be approved: the entry has moderators or an admin page.
        let p: Vec<String> = c.validate().iter().map(ToString::to_string).collect();
        assert!(!p.iter().any(|p| p.contains("watch.auto_label")), "{p:?}");
    }

    /// A watch whose finds wait for a moderator, on an account with none and no admin page.
    #[test]
    fn a_held_watch_nobody_can_approve_is_refused() {
        let watch = "[accounts.watch]\nenabled = true\nbluesky = \"off\"\nmastodon = true\n";
        let p = problems(&format!(
            "[claims]\nenabled = true\n[[accounts]]\nname = \"es\"\n[accounts.mastodon]\nbase_url = \"https://es.example\"\n{watch}"
        ));
        assert!(p.contains("accounts.es.watch.auto_label: is false"), "{p}");
        let p = problems(&format!(
            "[claims]\nenabled = true\n[[accounts]]\nname = \"es\"\n[accounts.mastodon]\nbase_url = \"https://es.example\"\n[accounts.moderation]\nmastodon_moderators = [\"carla\"]\n{watch}"
        ));
        assert!(!p.contains("watch.auto_label"), "{p}");
    }

    #[test]
    fn only_named_accounts_is_a_valid_config() {
        let c = Config::parse(
            "[daemon]\npipeline = \"baseline\"\n[mastodon]\nenabled = false\n[[accounts]]\nname = \"es\"\n[accounts.mastodon]\nbase_url = \"https://es.example\"\naccess_token_env = \"ES_TOKEN\"\n",
        )
        .unwrap();
        assert!(c.validate().is_empty(), "{:?}", c.validate());
        let accounts = c.accounts();
        assert_eq!(accounts.len(), 1);
        assert_eq!(accounts[0].name, "es");
    }

    #[test]
    fn a_named_account_never_reads_another_accounts_secrets() {
        let p = problems(
            r#"
[[accounts]]
name = "es"
[accounts.mastodon]
base_url = "https://es.example"
[accounts.admin]
listen = "127.0.0.1:8092"
[[accounts]]
name = "fr"
[accounts.mastodon]
base_url = "https://fr.example"
access_token_file = "/etc/musebot/fr.token"
[[accounts]]
name = "de"
[accounts.mastodon]
base_url = "https://de.example"
access_token_file = "/etc/musebot/fr.token"
"#,
        );
        for want in [
            "accounts.es.mastodon.access_token_env: is left at the built-in `MUSEBOT_MASTODON_TOKEN`, the default account's",
            "accounts.es.admin.token_env: is left at the built-in `MUSEBOT_ADMIN_TOKEN`, the default account's",
            "accounts.de.mastodon.access_token_env: reads `/etc/musebot/fr.token`, which accounts.fr.mastodon.access_token_env reads too",
        ] {
            assert!(p.contains(want), "{want} missing in:\n{p}");
        }
        assert!(
            !p.lines().any(|l| l.starts_with("accounts.fr.")),
            "fr's secret is its own: {p}"
        );
    }

    #[test]
    fn a_parse_error_inside_an_entry_names_the_entry_and_its_section() {
        let named = |extra: &str| match Config::parse(&format!("{BASE}{extra}")) {
            Err(crate::config::ConfigError::Parse(p)) => p.key,
            other => panic!("{other:?}"),
        };
        let entries = r#"
[[accounts]]
name = "es"
[accounts.mastodon]
base_url = "https://es.example"
[[accounts]]
name = "fr"
[accounts.mastodon]
base_url = "https://fr.example"
acess_token_file = "/etc/musebot/fr.token"
[[accounts]]
name = "de"
[accounts.mastodon]
base_url = "https://de.example"
"#;
        assert_eq!(named(entries), "accounts.fr.mastodon.acess_token_file");
        let llm = r#"
[[accounts]]
name = "labels"
[accounts.bluesky]
enabled = true
[accounts.bluesky.labeler]
enabled = true
[accounts.llm]
model = "x"
"#;
        assert_eq!(named(llm), "accounts.labels.llm");
    }
}
