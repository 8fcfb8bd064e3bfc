//! Moderators' and users' controls: who may command the bot, blocklists, opt-outs, the policy
//! of watched hashtags. Intake asks [`Moderation::triage`] about every new trigger; the resolve
//! stage asks [`Moderation::admit_hit`] before a hashtag hit is answered (per-day and per-author
//! counters, charged only for hits that go on) and [`Moderation::execute`] for a command. State
//! lives in the store (`moderation` tree), the rules here. People are known by
//! [`crate::model::Account::key`]: the DID on Bluesky, the account's id on the bot's Mastodon
//! server (config handles resolved at start), never the handle, which can change hands.

pub mod ack;
pub mod budget;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use chrono::Utc;

use crate::config::ModerationConfig;
use crate::model::{account_key, Cause, Command, OptOut, PlatformKind, ReviewDecision, SkipReason, TagWatch, Trigger};
use crate::store::{Store, StoreError};

/// The counters a hit is charged to now: its author's window and its tag's day. Keys end in
/// their window's first hour (`YYYYMMDDHH`), which is what the store's pruning reads: a counter
/// lives two days past its window's start.
fn hit_keys(t: &Trigger, tag: &str, author: &str, policy: &crate::model::TagPolicy) -> (String, String) {
    let p = t.platform.as_str();
    let now = Utc::now();
    let span = 3600 * i64::from(policy.author_window_hours.max(1));
    let start = chrono::DateTime::from_timestamp(now.timestamp() / span * span, 0).unwrap_or(now);
    (
        format!("tagauthor:{p}:{}:{}", author.to_lowercase(), start.format("%Y%m%d%H")),
        format!("tagday:{p}:{tag}:{}00", now.format("%Y%m%d")),
    )
}

/// Whether `url`'s host is one of `domains` or below one (`news.bad.example` under
/// `bad.example`), both read as [`crate::credibility::normalize_host`] reads hosts (case,
/// IDNA, trailing dots, `www.`).
pub fn domain_blocked(domains: &[String], url: &str) -> bool {
    crate::credibility::domain_listed(domains, url)
}

#[derive(Clone)]
pub struct Moderation {
    pub config: ModerationConfig,
    pub store: Store,
    /// The day's LLM budget (no limit unless [`Moderation::with_budget`]).
    pub budget: budget::Budget,
    /// The bot's Mastodon server under every name it answers to (the account domain, which
    /// may differ from the web host of `mastodon.base_url`): `alice@that.server` in the
    /// config is the local `alice`.
    pub local_domains: Vec<String>,
    /// Bluesky moderators and blocked accounts as DIDs: the config's DIDs, and its handles as
    /// resolved at start ([`Moderation::with_bluesky_dids`]). A handle is never compared.
    bluesky: Arc<std::sync::RwLock<BlueskyDids>>,
    /// Mastodon moderators by account id on the bot's server: the config's `acct`s as looked
    /// up at start ([`Moderation::with_mastodon_ids`]). A trigger that carries an account id
    /// is judged by it alone.
    mastodon_moderator_ids: Arc<HashSet<String>>,
}

/// The Bluesky accounts the config names, by DID.
#[derive(Debug, Default, Clone)]
struct BlueskyDids {
    moderators: HashSet<String>,
    blocked: HashSet<String>,
    /// Blocked accounts written as a handle that did not resolve yet: refused by handle (lower
    /// case) until a retry resolves them — a block fails closed, never open.
    unresolved_blocked: HashSet<String>,
}

/// Whether a config entry names a Bluesky account by handle (a dotted name without `@`).
fn is_bluesky_handle(e: &str) -> bool {
    !is_did(e) && !e.contains('@') && e.contains('.')
}

/// Whether a config entry is a DID (`did:plc:…`, `did:web:…`).
pub fn is_did(entry: &str) -> bool {
    entry.trim().starts_with("did:")
}

impl Moderation {
    pub fn new(config: ModerationConfig, store: Store) -> Moderation {
        let budget = budget::Budget {
            config: Default::default(),
            model: String::new(),
            store: store.clone(),
        };
        let dids = |list: &[String]| {
            list.iter()
                .filter(|e| is_did(e))
                .map(|e| e.trim().to_string())
                .collect()
        };
        let bluesky = Arc::new(std::sync::RwLock::new(BlueskyDids {
            moderators: dids(&config.bluesky_moderators),
            blocked: dids(&config.blocked_accounts),
            unresolved_blocked: HashSet::new(),
        }));
        Moderation {
            config,
            store,
            budget,
            local_domains: Vec::new(),
            bluesky,
            mastodon_moderator_ids: Arc::default(),
        }
    }

    /// Names the bot's own Mastodon server (the host of `mastodon.base_url` and the
    /// instance's account domain), whose accounts Mastodon writes without a domain.
    pub fn with_local_domains(mut self, domains: impl IntoIterator<Item = String>) -> Moderation {
        self.local_domains = domains
            .into_iter()
            .map(|d| d.trim().to_lowercase())
            .filter(|d| !d.is_empty())
            .collect();
        self.local_domains.dedup();
        self
    }

    /// The config's Mastodon moderators as the bot's server looks them up (`user` for its own
    /// accounts, whichever of its names the config wrote; `user@domain` for another server's).
    pub fn mastodon_moderator_accts(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .config
            .mastodon_moderators
            .iter()
            .map(|m| self.norm(m))
            .filter(|m| !m.is_empty())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The account ids the config's Mastodon moderators were looked up as at start: from now
    /// on a Mastodon account is a moderator by its id, so an `acct` renamed and taken by
    /// another account gives that account nothing.
    pub fn with_mastodon_ids(mut self, ids: impl IntoIterator<Item = String>) -> Moderation {
        self.mastodon_moderator_ids = Arc::new(ids.into_iter().filter(|i| !i.is_empty()).collect());
        self
    }

    /// Adds the DIDs the config's Bluesky handles resolved to at start: `resolved` maps a
    /// handle (as written in the config) to its DID.
    pub fn with_bluesky_dids(mut self, resolved: &HashMap<String, String>) -> Moderation {
        let mut dids = self.bluesky.read().unwrap_or_else(|p| p.into_inner()).clone();
        let of = |entry: &String| resolved.get(entry.trim()).cloned();
        dids.moderators
            .extend(self.config.bluesky_moderators.iter().filter_map(of));
        dids.blocked.extend(self.config.blocked_accounts.iter().filter_map(of));
        dids.unresolved_blocked = self
            .config
            .blocked_accounts
            .iter()
            .filter(|e| is_bluesky_handle(e) && !resolved.contains_key(e.trim()))
            .map(|e| e.trim().trim_start_matches('@').to_lowercase())
            .collect();
        self.bluesky = Arc::new(std::sync::RwLock::new(dids));
        self
    }

    /// Blocked Bluesky handles still waiting to be resolved (the daemon retries them).
    pub fn unresolved_blocked(&self) -> Vec<String> {
        let d = self.bluesky.read().unwrap_or_else(|p| p.into_inner());
        let mut out: Vec<String> = d.unresolved_blocked.iter().cloned().collect();
        out.sort();
        out
    }

    /// A blocked handle resolved later: blocked by its DID from now on.
    pub fn blocked_resolved(&self, handle: &str, did: &str) {
        let mut d = self.bluesky.write().unwrap_or_else(|p| p.into_inner());
        d.unresolved_blocked
            .remove(&handle.trim().trim_start_matches('@').to_lowercase());
        d.blocked.insert(did.to_string());
    }

    /// The config's Bluesky handles that need resolving to DIDs at start: the moderators, and
    /// the blocked accounts written as a handle (a dotted name without `@`).
    pub fn bluesky_handles(config: &ModerationConfig) -> Vec<String> {
        let handle = |e: &&String| is_bluesky_handle(e);
        let mut out: Vec<String> = config
            .bluesky_moderators
            .iter()
            .filter(|e| !is_did(e))
            .chain(config.blocked_accounts.iter().filter(handle))
            .map(|e| e.trim().to_string())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// A handle as compared: lower case, no leading `@`, no `@` + the bot's own server.
    /// Whether two Mastodon `acct`s name one account (the bot's own server under either of its
    /// names, case and a leading `@` ignored).
    pub fn same_mastodon_account(&self, a: &str, b: &str) -> bool {
        self.norm(a) == self.norm(b)
    }

    fn norm(&self, handle: &str) -> String {
        let h = handle.trim().trim_start_matches('@').to_lowercase();
        for d in &self.local_domains {
            if let Some(local) = h.strip_suffix(&format!("@{d}")) {
                return local.to_string();
            }
        }
        h
    }

    /// Counts spend against `config` at `model`'s price.
    pub fn with_budget(mut self, config: crate::config::BudgetConfig, model: &str) -> Moderation {
        self.budget.config = config;
        self.budget.model = model.to_string();
        self
    }

    /// Whether the account (`handle`, and `id`, its DID on Bluesky, its account id on
    /// Mastodon) may give moderator commands on `platform`. Only the id counts: whoever holds
    /// a moderator's old handle gets nothing, and a moderator who changes handle keeps the
    /// rights. A Mastodon trigger without an id (written by a build before ids) is judged by
    /// its `acct`, as it was then.
    pub fn is_moderator(&self, platform: PlatformKind, handle: &str, id: Option<&str>) -> bool {
        match platform {
            PlatformKind::Mastodon => match id.filter(|i| !i.is_empty()) {
                Some(id) => self.mastodon_moderator_ids.contains(id),
                None => {
                    let handle = self.norm(handle);
                    self.config.mastodon_moderators.iter().any(|m| self.norm(m) == handle)
                }
            },
            PlatformKind::Bluesky => id.is_some_and(|d| {
                self.bluesky
                    .read()
                    .unwrap_or_else(|p| p.into_inner())
                    .moderators
                    .contains(d)
            }),
        }
    }

    /// Whether the operator blocked this account (by DID on Bluesky), or (Mastodon) its
    /// server.
    pub fn blocked_account(&self, platform: PlatformKind, handle: &str, id: Option<&str>) -> bool {
        if platform == PlatformKind::Bluesky {
            let d = self.bluesky.read().unwrap_or_else(|p| p.into_inner());
            let by_handle = d
                .unresolved_blocked
                .contains(&handle.trim().trim_start_matches('@').to_lowercase());
            return by_handle || id.is_some_and(|i| d.blocked.contains(i));
        }
        let handle = self.norm(handle);
        let domain = handle.split_once('@').map(|(_, d)| d);
        self.config.blocked_accounts.iter().any(|b| self.norm(b) == handle)
            || domain.is_some_and(|d| {
                // Hosts compared as everywhere else (case, IDNA, trailing dots).
                let d = crate::credibility::normalize_host(d);
                self.config.blocked_instances.iter().any(|i| {
                    let i = crate::credibility::normalize_host(i);
                    !i.is_empty() && (d == i || d.ends_with(&format!(".{i}")))
                })
            })
    }

    /// Whether the account opted out on `platform` (`stop`, until `start`): by its key (the
    /// DID on Bluesky, the account id on Mastodon), or by the handle an older build keyed opt-outs by (failing safe: the
    /// bot stays away from whoever shows that handle).
    pub fn opted_out(&self, platform: PlatformKind, handle: &str, id: Option<&str>) -> bool {
        self.store.opted_out(platform, &account_key(handle, id)) || self.store.opted_out(platform, &self.norm(handle))
    }

    /// The skip rules intake applies to a new trigger before any request: a command from
    /// someone who may not give it, a blocked or opted-out author (their `start` excepted),
    /// and a hashtag hit the tag's policy refuses (paused, a reply, a bot, `#nobot`, too old,
    /// a tag no longer watched).
    pub fn triage(&self, t: &Trigger) -> Option<SkipReason> {
        let (handle, id) = (&t.author.handle, t.author.id.as_deref());
        if let Cause::Command { command } = &t.cause {
            if command.for_moderators() && !self.is_moderator(t.platform, handle, id) {
                tracing::warn!(author = %handle, command = command.as_str(), "a command from someone who is not a moderator; ignored");
                return Some(SkipReason::NotModerator);
            }
            if matches!(command, Command::Start | Command::Stop) {
                return None;
            }
        }
        if self.blocked_account(t.platform, handle, id) {
            return Some(SkipReason::Blocked);
        }
        if self.opted_out(t.platform, handle, id) {
            return Some(SkipReason::OptedOut);
        }
        if matches!(t.cause, Cause::Report { .. }) {
            return (!self.reports_on(t.platform)).then(|| SkipReason::Policy("reports are off".into()));
        }
        if matches!(t.cause, Cause::Watch { .. }) {
            // Nobody asked: the moderators' pause holds, and bots and `#nobot` are left alone.
            let paused = self.store.paused(t.platform);
            let why = paused.then(|| SkipReason::Policy("auto-replies are paused".into()));
            let why = why.or(t.author.is_bot.then_some(SkipReason::RequesterIsBot));
            return why.or(t.author.nobot.then_some(SkipReason::NoBot));
        }
        let Cause::HashtagHit { tag } = &t.cause else {
            return None;
        };
        let Some(watch) = self.store.watch_of(t.platform, tag) else {
            return Some(SkipReason::Policy("the tag is no longer watched".into()));
        };
        if self.store.paused(t.platform) {
            return Some(SkipReason::Policy("auto-replies are paused".into()));
        }
        if t.in_reply_to_id.is_some() {
            return Some(SkipReason::Policy("a reply".into()));
        }
        if t.author.is_bot {
            return Some(SkipReason::RequesterIsBot);
        }
        if t.author.nobot {
            return Some(SkipReason::NoBot);
        }
        if t.created_at < watch.since {
            return Some(SkipReason::Policy("posted before the tag was watched".into()));
        }
        let age = Utc::now() - t.created_at;
        if age > chrono::Duration::hours(i64::from(watch.policy.max_age_hours)) {
            return Some(SkipReason::Policy(format!(
                "older than {} hours",
                watch.policy.max_age_hours
            )));
        }
        None
    }

    /// Whether a hashtag hit would be refused by its tag's day or its author's window, looked
    /// at without charging anything (the resolve stage asks before it reads the post, so a
    /// flooded tag costs no request).
    pub fn hit_refused(&self, t: &Trigger, job_id: &str, author: &str) -> Option<SkipReason> {
        let Cause::HashtagHit { tag } = &t.cause else {
            return None;
        };
        let policy = self.policy_of(t.platform, tag);
        let (author_key, day_key) = hit_keys(t, tag, author, &policy);
        let full = |key: &str, limit: u32| {
            let charged = self.store.charged(key);
            !charged.iter().any(|j| j == job_id) && charged.len() >= limit as usize
        };
        if full(&author_key, 1) {
            return Some(SkipReason::Policy(format!(
                "already answered this author in the last {} hours",
                policy.author_window_hours
            )));
        }
        if full(&day_key, policy.replies_per_day) {
            return Some(SkipReason::Policy(format!(
                "#{tag} had its {} replies today",
                policy.replies_per_day
            )));
        }
        None
    }

    /// Charges a hashtag hit that is about to be answered to its tag's day and its author's
    /// window (`author`: the post author's key); the reason when either is spent.
    /// Re-charging the same job is free.
    pub fn admit_hit(&self, t: &Trigger, job_id: &str, author: &str) -> Result<Option<SkipReason>, StoreError> {
        let Cause::HashtagHit { tag } = &t.cause else {
            return Ok(None);
        };
        // Both looked at before either is charged: a full day does not spend the author's slot.
        if let Some(reason) = self.hit_refused(t, job_id, author) {
            return Ok(Some(reason));
        }
        let policy = self.policy_of(t.platform, tag);
        let (author_key, day_key) = hit_keys(t, tag, author, &policy);
        if !self.store.charge(&author_key, job_id, 1)? {
            return Ok(Some(SkipReason::Policy("already answered this author".into())));
        }
        if !self.store.charge(&day_key, job_id, policy.replies_per_day)? {
            self.store.uncharge(&author_key, job_id)?;
            return Ok(Some(SkipReason::Policy(format!("#{tag} had its replies today"))));
        }
        Ok(None)
    }

    /// A watched tag's policy (the configured default once the watch is gone).
    fn policy_of(&self, platform: PlatformKind, tag: &str) -> crate::model::TagPolicy {
        self.store
            .watch_of(platform, tag)
            .map(|w| w.policy)
            .unwrap_or_else(|| self.config.tag_policy.clone())
    }

    /// Frees a hit's slots when it ends with nothing posted (no verdict to give). `author` is
    /// the post author's key ([`crate::model::Post::author_key`]), as charged.
    pub fn release_hit(&self, t: &Trigger, job_id: &str, author: &str) -> Result<(), StoreError> {
        let Cause::HashtagHit { tag } = &t.cause else {
            return Ok(());
        };
        // Released in the windows it was charged to, whichever window it is now.
        let p = t.platform.as_str();
        self.store
            .uncharge_prefix(&format!("tagauthor:{p}:{}:", author.to_lowercase()), job_id)?;
        self.store.uncharge_prefix(&format!("tagday:{p}:{tag}:"), job_id)
    }

    /// Carries out a command (the `check` command's post is enqueued by the caller) and
    /// returns the acknowledgement's text in `lang` (the asker's language). `by` is the handle
    /// it shows; `by_id` its DID on Bluesky.
    pub fn execute(
        &self,
        platform: PlatformKind,
        by: &str,
        by_id: Option<&str>,
        command: &Command,
        lang: &str,
    ) -> Result<String, StoreError> {
        let key = account_key(by, by_id);
        let text = match command {
            Command::Watch(tag) => {
                let watched = self.store.watches(platform);
                let max = self.config.max_watched_tags;
                if watched.len() >= max && !watched.iter().any(|w| &w.tag == tag) {
                    return Ok(ack::too_many_tags(lang, tag, max));
                }
                let new = self.store.watch(&TagWatch {
                    platform,
                    tag: tag.clone(),
                    policy: self.config.tag_policy.clone(),
                    by: by.to_string(),
                    since: Utc::now(),
                    channel: None,
                })?;
                ack::watch(lang, tag, new, &self.policy_of(platform, tag))
            }
            Command::WatchAs(tag, channel) => {
                let watched = self.execute(platform, by, by_id, &Command::Watch(tag.clone()), lang)?;
                if !self.store.watches(platform).iter().any(|w| &w.tag == tag) {
                    return Ok(watched);
                }
                self.store.set_watch_channel(platform, tag, *channel)?;
                format!("{watched} {}", ack::channel(lang, *channel))
            }
            Command::Unwatch(tag) => ack::unwatch(lang, tag, self.store.unwatch(platform, tag)?),
            Command::Reports(on) => {
                self.store.set_reports_off(platform, !on)?;
                ack::reports(lang, self.reports_on(platform))
            }
            Command::Pause => ack::pause(lang, self.store.set_paused(platform, true)?),
            Command::Resume => ack::resume(lang, self.store.set_paused(platform, false)?),
            Command::Status => ack::status(
                lang,
                &self.store.watches(platform),
                &self
                    .store
                    .held_drafts()?
                    .iter()
                    .filter(|j| j.trigger.platform == platform)
                    .map(|j| j.id.clone())
                    .collect::<Vec<_>>(),
                self.store.paused(platform),
                self.store.opt_outs().iter().filter(|o| o.platform == platform).count(),
                // Mastodon's acknowledgement is a direct message; Bluesky's a public reply.
                platform == PlatformKind::Mastodon,
                Some(self.reports_status(platform)?),
            ),
            Command::Stop => {
                let out = OptOut {
                    platform,
                    handle: by.to_lowercase(),
                    since: Utc::now(),
                };
                self.store.set_opt_out(platform, &key, Some(&out))?;
                ack::stop(lang)
            }
            Command::Start => {
                self.store.set_opt_out(platform, &key, None)?;
                // An older build's record under this account's handle (not a Bluesky handle,
                // which moves between DIDs), only when it holds that handle: ids and handles
                // share one keyspace, and a user named "12345" must not clear account 12345's.
                let (legacy, mastodon) = (self.norm(by), platform == PlatformKind::Mastodon);
                let own = self.store.opt_out_at(platform, &legacy).map(|o| self.norm(&o.handle));
                if (by_id.is_none() || mastodon) && legacy != key && own.as_deref() == Some(legacy.as_str()) {
                    self.store.set_opt_out(platform, &legacy, None)?;
                }
                ack::start(lang)
            }
            Command::Check(url) => ack::check(lang, url),
            // Carried out by the worker, which reaches the platform (`worker/recheck.rs`).
            Command::Recheck | Command::Withdraw(_) | Command::Label | Command::Unlabel => {
                ack::usage(lang, command.as_str())
            }
            Command::Unclear(verb) => ack::usage(lang, verb),
            Command::Approve(id) => self.decide(
                platform,
                lang,
                id,
                ReviewDecision::Approved {
                    by: by.into(),
                    at: Utc::now(),
                },
            )?,
            Command::Reject(id) => self.decide(
                platform,
                lang,
                id,
                ReviewDecision::Rejected {
                    by: by.into(),
                    at: Utc::now(),
                    note: format!("rejected by {by}"),
                },
            )?,
        };
        tracing::info!(command = command.as_str(), by, "command carried out");
        Ok(text)
    }

    /// A moderator's decision on a held draft of this platform; the first one stands. The
    /// worker takes it at the draft's next look (within seconds) and posts or drops it.
    fn decide(&self, platform: PlatformKind, lang: &str, id: &str, d: ReviewDecision) -> Result<String, StoreError> {
        self.decide_in(Some(platform), id, d, lang)
    }

    /// A decision on a held draft of `platform` (any platform for the operator's admin page);
    /// returns the acknowledgement's words (in English: the admin page's language).
    pub fn decide_on(&self, platform: Option<PlatformKind>, id: &str, d: ReviewDecision) -> Result<String, StoreError> {
        self.decide_in(platform, id, d, "en")
    }

    fn decide_in(
        &self,
        platform: Option<PlatformKind>,
        id: &str,
        d: ReviewDecision,
        lang: &str,
    ) -> Result<String, StoreError> {
        let held = self.store.job(id)?.filter(|j| {
            platform.is_none_or(|p| j.trigger.platform == p)
                && j.status == crate::model::Status::Pending
                && j.review.as_ref().is_some_and(|r| r.decision.is_none())
        });
        if held.is_none() {
            return Ok(ack::no_such_draft(lang, id));
        }
        if !self.store.decide(id, &d)? {
            return Ok(ack::already_decided(lang, id));
        }
        tracing::info!(job = id, decision = ?d, "review decided");
        Ok(match d {
            ReviewDecision::Approved { .. } => ack::approved(lang, id),
            ReviewDecision::Rejected { .. } => ack::rejected(lang, id),
        })
    }

    /// Reported posts on `platform` whose job is still running, and those of them whose
    /// finding is not yet delivered.
    fn reports_status(&self, platform: PlatformKind) -> Result<ack::ReportsStatus, StoreError> {
        let jobs: Vec<_> = self
            .store
            .pending_jobs()?
            .into_iter()
            .filter(|j| j.trigger.platform == platform && matches!(j.trigger.cause, Cause::Report { .. }))
            .collect();
        Ok(ack::ReportsStatus {
            on: self.reports_on(platform),
            open: jobs.len(),
            pending: jobs
                .iter()
                .filter(|j| j.note.is_none() || j.note.as_ref().is_some_and(|n| n.pending()))
                .count(),
        })
    }

    /// Whether reported posts on `platform` are checked: `[moderation.reports] enabled` and no
    /// moderator's `reports off` since.
    pub fn reports_on(&self, platform: PlatformKind) -> bool {
        self.config.reports.enabled && !self.store.reports_off(platform)
    }

    /// Whether a reply to this trigger waits for a moderator (`moderation.review`).
    pub fn needs_review(&self, cause: &Cause) -> bool {
        let kind = match cause {
            Cause::Mention => "mention",
            Cause::HashtagHit { .. } => "hashtag",
            Cause::ModeratorFlag { .. } => "moderator",
            Cause::Command { .. } => return false,
            // A report's public reply is held by its own channel (`review`), not by this list.
            Cause::Report { .. } => return false,
            Cause::Watch { .. } => return false, // held by the worker (`watch.auto_label`)
            // An update is held like the answer it updates: the asker's like a mention's, a
            // hashtag hit's or a flag's like a hit's.
            Cause::Recheck { asked: true, .. } => "mention",
            Cause::Recheck { .. } => "hashtag",
        };
        self.config.review.iter().any(|k| k == kind)
    }
}

#[cfg(test)]
mod tests;
