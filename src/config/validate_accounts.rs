//! Validation of `[[accounts]]`: each entry's name, each account's own sections checked by the
//! same functions as the default account's (a problem named `accounts.<name>.<key>`), and
//! what accounts must not share: a listener's address, a Bluesky identity.

use super::super::accounts::{account_key, AccountConfig};
use super::super::Config;
use super::Problems;

/// The sections a named account always has of its own (the others it may inherit).
const OWN: [&str; 5] = ["mastodon.", "bluesky.", "moderation.", "admin.", "watch."];

pub(super) fn accounts(c: &Config, p: &mut Problems) {
    let mut names: Vec<&str> = Vec::new();
    for a in &c.accounts {
        let n = a.name.as_str();
        let well_formed = !n.is_empty()
            && n.len() <= 32
            && n.chars()
                .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '-' || ch == '_');
        if !well_formed || n == "default" {
            p.bad(
                "accounts",
                format!("an entry is named `{n}`"),
                "give each [[accounts]] entry a name of 1 to 32 lowercase letters, digits, - or _ (not `default`, the unnamed account's)",
            );
            continue;
        }
        if names.contains(&n) {
            p.bad(
                "accounts",
                format!("two entries are named `{n}`"),
                "give each [[accounts]] entry its own name",
            );
            continue;
        }
        names.push(n);
        own_sections(c, a, p);
    }
    shared(c, p);
}

/// Each account's own sections, by the default account's rules.
fn own_sections(c: &Config, a: &AccountConfig, p: &mut Problems) {
    let derived = c.derive(a);
    let inherited = |key: &str| {
        (key.starts_with("reply.") && a.reply.is_none())
            || (key.starts_with("limits.") && a.limits.is_none())
            || (key.starts_with("budget.") && a.budget.is_none())
    };
    for problem in super::validate(&derived) {
        let own = OWN.iter().any(|s| problem.key.starts_with(s));
        let overridden = ["reply.", "limits.", "budget."]
            .iter()
            .any(|s| problem.key.starts_with(s));
        if own || (overridden && !inherited(&problem.key)) {
            p.bad(&account_key(&a.name, &problem.key), problem.problem, &problem.fix);
        }
    }
    if let Some(m) = &a.moderation {
        if !m.blocked_domains.is_empty() && m.blocked_domains != c.moderation.blocked_domains {
            p.bad(
                &account_key(&a.name, "moderation.blocked_domains"),
                "differs from [moderation].blocked_domains".into(),
                "list blocked evidence domains in [moderation].blocked_domains: every account cites the same evidence",
            );
        }
    }
}

/// The secrets an account reads: (key of its `*_env`, the source — `file:PATH` or `env:NAME`,
/// what the built-in name is).
fn secrets(k: &Config) -> Vec<(&'static str, String, String)> {
    let source = |env: &str, file: &str| {
        if file.trim().is_empty() {
            format!("env:{}", env.trim())
        } else {
            format!("file:{}", file.trim())
        }
    };
    let d = Config::default();
    let mut out = Vec::new();
    if k.mastodon.enabled {
        out.push((
            "mastodon.access_token_env",
            source(&k.mastodon.access_token_env, &k.mastodon.access_token_file),
            format!("env:{}", d.mastodon.access_token_env),
        ));
    }
    if k.bluesky.enabled {
        out.push((
            "bluesky.app_password_env",
            source(&k.bluesky.app_password_env, &k.bluesky.app_password_file),
            format!("env:{}", d.bluesky.app_password_env),
        ));
    }
    if !k.admin.listen.is_empty() {
        out.push((
            "admin.token_env",
            source(&k.admin.token_env, &k.admin.token_file),
            format!("env:{}", d.admin.token_env),
        ));
    }
    let r = &k.moderation.reports;
    if k.mastodon.enabled && r.enabled && !r.webhook_listen.is_empty() {
        out.push((
            "moderation.reports.webhook_secret_env",
            source(&r.webhook_secret_env, &r.webhook_secret_file),
            format!("env:{}", d.moderation.reports.webhook_secret_env),
        ));
    }
    out
}

/// What two accounts must not share: a listening address, a Bluesky account, a secret.
fn shared(c: &Config, p: &mut Problems) {
    // A named account's secrets are its own: never the built-in names (the default account's)
    // and never another account's, or one account's token (with its rights) reaches the
    // other's server and one admin token opens both pages.
    let mut sources: Vec<(String, String)> = Vec::new();
    for account in c.accounts() {
        for (key, source, built_in) in secrets(&account.config) {
            let named = account_key(&account.name, key);
            let what = source.split_once(':').map_or(source.as_str(), |(_, v)| v);
            if !account.name.is_empty() && source == built_in {
                p.bad(
                    &named,
                    format!("is left at the built-in `{what}`, the default account's"),
                    "give the named account a secret of its own: set this key (or its *_file twin) to a variable or file only it reads",
                );
            } else if let Some((other, _)) = sources.iter().find(|(_, s)| *s == source) {
                p.bad(
                    &named,
                    format!("reads `{what}`, which {other} reads too"),
                    "give each account its own secret: another variable or file for this one",
                );
            } else {
                sources.push((named, source));
            }
        }
    }
    let mut listeners: Vec<(String, String)> = Vec::new();
    if !c.http.listen.is_empty() {
        listeners.push(("http.listen".into(), c.http.listen.clone()));
    }
    let mut identities: Vec<(String, String)> = Vec::new();
    for account in c.accounts() {
        let k = account.config;
        let mut mine = vec![("admin.listen", k.admin.listen.clone())];
        if k.bluesky.enabled && k.bluesky.labeler.enabled {
            mine.push((
                "bluesky.labeler.evidence_listen",
                k.bluesky.labeler.evidence_listen.clone(),
            ));
        }
        if k.mastodon.enabled && k.moderation.reports.enabled {
            mine.push((
                "moderation.reports.webhook_listen",
                k.moderation.reports.webhook_listen.clone(),
            ));
        }
        for (key, addr) in mine.into_iter().filter(|(_, a)| !a.is_empty()) {
            let key = account_key(&account.name, key);
            match listeners.iter().find(|(_, a)| *a == addr) {
                Some((other, _)) => p.bad(
                    &key,
                    format!("is `{addr}`, which {other} listens on too"),
                    "give each listener of each account its own port",
                ),
                None => listeners.push((key, addr)),
            }
        }
        if k.bluesky.enabled && !k.bluesky.identifier.is_empty() {
            let who = k.bluesky.identifier.trim().to_lowercase();
            let key = account_key(&account.name, "bluesky.identifier");
            match identities.iter().find(|(_, w)| *w == who) {
                Some((other, _)) => p.bad(
                    &key,
                    format!("is `{who}`, which {other} names too"),
                    "serve each Bluesky account from one entry only",
                ),
                None => identities.push((key, who)),
            }
        }
    }
}
