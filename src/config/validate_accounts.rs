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

/// What two accounts must not share: a listening address, a Bluesky account.
fn shared(c: &Config, p: &mut Problems) {
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
