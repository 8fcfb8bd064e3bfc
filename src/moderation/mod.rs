//! Moderators' and users' controls (issue: moderators and operators): who may command the
//! bot, the operator's blocklists, opt-outs, and the policy of watched hashtags. Intake asks
//! [`Moderation::triage`] about every new trigger (rules that need no request); the resolve
//! stage asks [`Moderation::admit_hit`] before a hashtag hit is answered (per-day and
//! per-author counters, charged only for hits that go on) and [`Moderation::execute`] for a
//! command. State lives in the store (`moderation` tree); the rules live here.

pub mod ack;
pub mod budget;

use chrono::Utc;

use crate::config::ModerationConfig;
use crate::model::{Cause, Command, OptOut, PlatformKind, ReviewDecision, SkipReason, TagWatch, Trigger};
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
/// `bad.example`).
pub fn domain_blocked(domains: &[String], url: &str) -> bool {
    let Some(host) = url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_lowercase))
    else {
        return false;
    };
    let host = host.trim_start_matches("www.");
    domains.iter().any(|d| {
        let d = d.trim().trim_start_matches("www.").to_lowercase();
        !d.is_empty() && (host == d || host.ends_with(&format!(".{d}")))
    })
}

#[derive(Clone)]
pub struct Moderation {
    pub config: ModerationConfig,
    pub store: Store,
    /// The day's LLM budget (no limit unless [`Moderation::with_budget`]).
    pub budget: budget::Budget,
    /// The bot's Mastodon server: `alice@that.server` in the config is the local `alice`.
    pub local_domain: Option<String>,
}

impl Moderation {
    pub fn new(config: ModerationConfig, store: Store) -> Moderation {
        let budget = budget::Budget {
            config: Default::default(),
            model: String::new(),
            store: store.clone(),
        };
        Moderation {
            config,
            store,
            budget,
            local_domain: None,
        }
    }

    /// Names the bot's own Mastodon server (the host of `mastodon.base_url`), whose accounts
    /// Mastodon writes without a domain.
    pub fn with_local_domain(mut self, domain: Option<String>) -> Moderation {
        self.local_domain = domain.map(|d| d.to_lowercase());
        self
    }

    /// A handle as compared: lower case, no leading `@`, no `@` + the bot's own server.
    fn norm(&self, handle: &str) -> String {
        let h = handle.trim().trim_start_matches('@').to_lowercase();
        match &self.local_domain {
            Some(d) => h.strip_suffix(&format!("@{d}")).map(str::to_string).unwrap_or(h),
            None => h,
        }
    }

    /// Counts spend against `config` at `model`'s price.
    pub fn with_budget(mut self, config: crate::config::BudgetConfig, model: &str) -> Moderation {
        self.budget.config = config;
        self.budget.model = model.to_string();
        self
    }

    /// Whether `handle` may give moderator commands on `platform`.
    pub fn is_moderator(&self, platform: PlatformKind, handle: &str) -> bool {
        let list = match platform {
            PlatformKind::Mastodon => &self.config.mastodon_moderators,
            PlatformKind::Bluesky => &self.config.bluesky_moderators,
        };
        let handle = self.norm(handle);
        list.iter().any(|m| self.norm(m) == handle)
    }

    /// Whether the operator blocked this account, or (Mastodon) its server.
    pub fn blocked_account(&self, handle: &str) -> bool {
        let handle = self.norm(handle);
        let domain = handle.split_once('@').map(|(_, d)| d);
        self.config.blocked_accounts.iter().any(|b| self.norm(b) == handle)
            || domain.is_some_and(|d| {
                self.config
                    .blocked_instances
                    .iter()
                    .any(|i| d == i.to_lowercase() || d.ends_with(&format!(".{}", i.to_lowercase())))
            })
    }

    /// Whether `handle` opted out on `platform` (`stop`, until `start`).
    pub fn opted_out(&self, platform: PlatformKind, handle: &str) -> bool {
        self.store.opted_out(platform, handle)
    }

    /// The skip rules intake applies to a new trigger before any request: a command from
    /// someone who may not give it, a blocked or opted-out author (their `start` excepted),
    /// and a hashtag hit the tag's policy refuses (paused, a reply, a bot, `#nobot`, too old,
    /// a tag no longer watched).
    pub fn triage(&self, t: &Trigger) -> Option<SkipReason> {
        let handle = &t.author.handle;
        if let Cause::Command { command } = &t.cause {
            if command.for_moderators() && !self.is_moderator(t.platform, handle) {
                tracing::warn!(author = %handle, command = command.as_str(), "a command from someone who is not a moderator; ignored");
                return Some(SkipReason::NotModerator);
            }
            if matches!(command, Command::Start | Command::Stop) {
                return None;
            }
        }
        if self.blocked_account(handle) {
            return Some(SkipReason::Blocked);
        }
        if self.opted_out(t.platform, handle) {
            return Some(SkipReason::OptedOut);
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

    /// Charges a hashtag hit that is about to be answered to its tag's day and its author's
    /// window; the reason when either is spent. Re-charging the same job is free.
    pub fn admit_hit(&self, t: &Trigger, job_id: &str, author: &str) -> Result<Option<SkipReason>, StoreError> {
        let Cause::HashtagHit { tag } = &t.cause else {
            return Ok(None);
        };
        let policy = self.policy_of(t.platform, tag);
        let (author_key, day_key) = hit_keys(t, tag, author, &policy);
        // Both looked at before either is charged: a full day does not spend the author's slot.
        let full = |key: &str, limit: u32| {
            let charged = self.store.charged(key);
            !charged.iter().any(|j| j == job_id) && charged.len() >= limit as usize
        };
        if full(&author_key, 1) {
            return Ok(Some(SkipReason::Policy(format!(
                "already answered this author in the last {} hours",
                policy.author_window_hours
            ))));
        }
        if full(&day_key, policy.replies_per_day) {
            return Ok(Some(SkipReason::Policy(format!(
                "#{tag} had its {} replies today",
                policy.replies_per_day
            ))));
        }
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

    /// Frees a hit's slots when it ends with nothing posted (no verdict to give).
    pub fn release_hit(&self, t: &Trigger, job_id: &str, author: &str) -> Result<(), StoreError> {
        let Cause::HashtagHit { tag } = &t.cause else {
            return Ok(());
        };
        let policy = self.policy_of(t.platform, tag);
        let (author_key, day_key) = hit_keys(t, tag, author, &policy);
        self.store.uncharge(&author_key, job_id)?;
        self.store.uncharge(&day_key, job_id)
    }

    /// Carries out a command (the `check` command's post is enqueued by the caller) and
    /// returns the acknowledgement's text.
    pub fn execute(&self, platform: PlatformKind, by: &str, command: &Command) -> Result<String, StoreError> {
        let text = match command {
            Command::Watch(tag) => {
                let new = self.store.watch(&TagWatch {
                    platform,
                    tag: tag.clone(),
                    policy: self.config.tag_policy.clone(),
                    by: by.to_string(),
                    since: Utc::now(),
                })?;
                ack::watch(tag, new, &self.policy_of(platform, tag))
            }
            Command::Unwatch(tag) => ack::unwatch(tag, self.store.unwatch(platform, tag)?),
            Command::Pause => ack::pause(self.store.set_paused(platform, true)?),
            Command::Resume => ack::resume(self.store.set_paused(platform, false)?),
            Command::Status => ack::status(
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
            ),
            Command::Stop => {
                let out = OptOut {
                    platform,
                    handle: by.to_lowercase(),
                    since: Utc::now(),
                };
                self.store.set_opt_out(platform, by, Some(&out))?;
                ack::stop()
            }
            Command::Start => {
                self.store.set_opt_out(platform, by, None)?;
                ack::start()
            }
            Command::Check(url) => ack::check(url),
            Command::Unclear(verb) => ack::usage(verb),
            Command::Approve(id) => self.decide(
                platform,
                id,
                ReviewDecision::Approved {
                    by: by.into(),
                    at: Utc::now(),
                },
            )?,
            Command::Reject(id) => self.decide(
                platform,
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
    fn decide(&self, platform: PlatformKind, id: &str, d: ReviewDecision) -> Result<String, StoreError> {
        self.decide_on(Some(platform), id, d)
    }

    /// A decision on a held draft of `platform` (any platform for the operator's admin page);
    /// returns the acknowledgement's words.
    pub fn decide_on(&self, platform: Option<PlatformKind>, id: &str, d: ReviewDecision) -> Result<String, StoreError> {
        let held = self.store.job(id)?.filter(|j| {
            platform.is_none_or(|p| j.trigger.platform == p)
                && j.status == crate::model::Status::Pending
                && j.review.as_ref().is_some_and(|r| r.decision.is_none())
        });
        if held.is_none() {
            return Ok(ack::no_such_draft(id));
        }
        if !self.store.decide(id, &d)? {
            return Ok(ack::already_decided(id));
        }
        tracing::info!(job = id, decision = ?d, "review decided");
        Ok(match d {
            ReviewDecision::Approved { .. } => ack::approved(id),
            ReviewDecision::Rejected { .. } => ack::rejected(id),
        })
    }

    /// Whether a reply to this trigger waits for a moderator (`moderation.review`).
    pub fn needs_review(&self, cause: &Cause) -> bool {
        let kind = match cause {
            Cause::Mention => "mention",
            Cause::HashtagHit { .. } => "hashtag",
            Cause::ModeratorFlag { .. } => "moderator",
            Cause::Command { .. } => return false,
        };
        self.config.review.iter().any(|k| k == kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Account, Visibility};

    fn moderation() -> Moderation {
        let config = ModerationConfig {
            mastodon_moderators: vec!["alice".into(), "@mod@other.example".into()],
            blocked_accounts: vec!["spam@junk.example".into()],
            blocked_instances: vec!["bad.example".into()],
            ..Default::default()
        };
        Moderation::new(config, Store::open_temporary().unwrap())
    }

    fn hit(tag: &str, author: &str) -> Trigger {
        Trigger {
            platform: PlatformKind::Mastodon,
            cause: Cause::HashtagHit { tag: tag.into() },
            event_id: "7".into(),
            status_id: "7".into(),
            in_reply_to_id: None,
            quote_of: None,
            asked_in_text: true,
            author: Account {
                handle: author.into(),
                is_bot: false,
                is_self: false,
                nobot: false,
            },
            visibility: Visibility::Public,
            created_at: Utc::now(),
            text: "a claim #tag".into(),
        }
    }

    #[test]
    fn moderators_blocklists_and_domains() {
        let m = moderation();
        assert!(m.is_moderator(PlatformKind::Mastodon, "Alice"));
        assert!(m.is_moderator(PlatformKind::Mastodon, "mod@other.example"));
        assert!(!m.is_moderator(PlatformKind::Bluesky, "alice"));
        assert!(!m.is_moderator(PlatformKind::Mastodon, "bob"));
        // The bot's own server: Mastodon writes its accounts without the domain.
        let mut local = m.clone().with_local_domain(Some("Bots.Example".into()));
        local.config.mastodon_moderators = vec!["carol@bots.example".into()];
        assert!(local.is_moderator(PlatformKind::Mastodon, "carol"));
        assert!(local.is_moderator(PlatformKind::Mastodon, "@Carol@bots.example"));
        assert!(!local.is_moderator(PlatformKind::Mastodon, "carol@elsewhere.example"));
        assert!(m.blocked_account("Spam@junk.example"));
        assert!(m.blocked_account("anyone@bad.example") && m.blocked_account("x@eu.bad.example"));
        assert!(!m.blocked_account("anyone@notbad.example") && !m.blocked_account("bob"));
        let domains = vec!["badnews.example".to_string()];
        assert!(domain_blocked(&domains, "https://www.badnews.example/a"));
        assert!(domain_blocked(&domains, "https://eu.badnews.example/a"));
        assert!(!domain_blocked(&domains, "https://goodbadnews.example/a"));
        assert!(!domain_blocked(&domains, "not a url"));
    }

    #[test]
    fn a_hashtag_policy_skips_what_it_must() {
        let m = moderation();
        let why = |t: &Trigger| m.triage(t).map(|r| format!("{r:?}"));
        assert!(why(&hit("vote", "bob")).unwrap().contains("no longer watched"));
        m.execute(PlatformKind::Mastodon, "alice", &Command::Watch("vote".into()))
            .unwrap();
        let mut t = hit("vote", "bob");
        assert_eq!(why(&t), None);
        t.in_reply_to_id = Some("1".into());
        assert!(why(&t).unwrap().contains("a reply"));
        let mut t = hit("vote", "bob");
        t.created_at = Utc::now() - chrono::Duration::hours(7);
        assert!(why(&t).unwrap().contains("before the tag was watched"));
        let mut t = hit("vote", "bob");
        t.author.nobot = true;
        assert_eq!(m.triage(&t), Some(SkipReason::NoBot));
        assert_eq!(m.triage(&hit("vote", "x@bad.example")), Some(SkipReason::Blocked));
        m.execute(PlatformKind::Mastodon, "alice", &Command::Pause).unwrap();
        assert!(why(&hit("vote", "bob")).unwrap().contains("paused"));
        m.execute(PlatformKind::Mastodon, "alice", &Command::Resume).unwrap();
        // One reply per author per window; the same job again is free.
        let t = hit("vote", "bob");
        assert_eq!(m.admit_hit(&t, "j1", "bob").unwrap(), None);
        assert_eq!(m.admit_hit(&t, "j1", "bob").unwrap(), None);
        assert!(m.admit_hit(&t, "j2", "Bob").unwrap().is_some());
        // The hourly prune keeps the counters (their keys end in their window's first hour).
        let retention = crate::store::Retention {
            jobs: chrono::Duration::days(30),
            cache: chrono::Duration::days(1),
            quota: chrono::Duration::days(2),
        };
        m.store.prune(&retention, Utc::now()).unwrap();
        assert!(m.admit_hit(&t, "j2", "bob").unwrap().is_some(), "pruned too early");
        assert_eq!(m.admit_hit(&t, "j3", "carol").unwrap(), None);
        // Opt-out: stop silences the author, start restores them; both pass triage.
        m.execute(PlatformKind::Mastodon, "carol", &Command::Stop).unwrap();
        assert_eq!(m.triage(&hit("vote", "carol")), Some(SkipReason::OptedOut));
        let mut start = hit("vote", "carol");
        start.cause = Cause::Command {
            command: Command::Start,
        };
        assert_eq!(m.triage(&start), None);
        m.execute(PlatformKind::Mastodon, "carol", &Command::Start).unwrap();
        assert_eq!(m.triage(&hit("vote", "carol")), None);
        // A non-moderator's moderator command is refused; their stop is not.
        let mut cmd = hit("vote", "bob");
        cmd.cause = Cause::Command {
            command: Command::Pause,
        };
        assert_eq!(m.triage(&cmd), Some(SkipReason::NotModerator));
        cmd.cause = Cause::Command { command: Command::Stop };
        assert_eq!(m.triage(&cmd), None);
    }
}
