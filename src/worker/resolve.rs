//! The resolve stage: a command is carried out and acknowledged ([`crate::moderation`]);
//! otherwise fetch the post a trigger asks about, then decide whether and how to answer it, in
//! this order — the bot's own post (never), a mention only inherited from a parent that
//! already mentions the bot (nobody asked), a `#nobot`, opted-out or blocked author, a post
//! that is not public (a direct message says why, unless `privacy.check_non_public`), a post
//! already answered (a pointer to the first reply) — the requester's quota charged before
//! either notice, so every post the bot makes for an asker counts (in the store). A hashtag hit gets no notice: a private or
//! answered post is skipped, and the tag's day and the author's window are charged instead of
//! a quota.

use minijinja::context;

use super::{is_hit, Run, StageError, StageOutcome};
use crate::intake::trigger_as_post;
use crate::model::{Account, Cause, Command, Draft, Job, Outcome, Post, SkipReason, Trigger, Usage};
use crate::platform::PlatformError;

impl Run<'_> {
    pub(super) async fn resolve(&self, job: &mut Job) -> Result<StageOutcome, StageError> {
        if let Cause::Command { command } = job.trigger.cause.clone() {
            return self.command(job, &command).await;
        }
        if super::recheck::of(job).is_some() {
            return self.resolve_recheck(job).await;
        }
        if super::is_report(job) {
            return self.resolve_report(job).await;
        }
        if super::watch::is_watch(job) {
            return self.resolve_watch(job).await;
        }
        // Intake's rules again: a pause, an unwatch or an opt-out may have come since.
        if let Some(reason) = self.worker.moderation.triage(&job.trigger) {
            return Ok(StageOutcome::Skip(reason));
        }
        // A hit whose tag's day or author's window is already spent costs no request.
        if is_hit(job) {
            let author = job.trigger.author.key();
            if let Some(reason) = self.worker.moderation.hit_refused(&job.trigger, &job.id, &author) {
                tracing::info!(why = ?reason, "the tag's policy declines this post before reading it");
                return Ok(StageOutcome::Skip(reason));
            }
        }
        let mut target = match self.platform.resolve(&job.trigger).await {
            Ok(t) => t,
            Err(e) => return super::unresolved(e),
        };
        // The platform's language tag, unless the text plainly reads otherwise (kept in the
        // job, shown by `check`).
        target.language = crate::lang::of(target.language.as_deref(), &target.text);
        if let Some(reason) = self.skip_reason(job, &target) {
            return Ok(StageOutcome::Skip(reason));
        }
        if let Some(outcome) = self.spend_gate(job)? {
            return outcome;
        }
        if is_hit(job) {
            return self.admit_hit(job, target);
        }
        // Every mention the bot answers is charged to its asker — the notices below too: a
        // stranger's flood under an answered or a private post must not make the bot post
        // without limit.
        if let Some(outcome) = self.charge_quota(job)? {
            return outcome;
        }
        // A quoted post is judged like the target: its text would reach the same parties.
        let visibility = target
            .quote
            .as_ref()
            .map_or(target.visibility, |q| q.visibility.max(target.visibility));
        if !visibility.is_public() && !self.worker.privacy.check_non_public {
            tracing::info!(
                visibility = visibility.as_str(),
                "target is not public; telling the requester"
            );
            return self.notice(
                job,
                Outcome::NotPublic,
                "notice_not_public",
                context! {},
                Vec::new(),
                target.language.as_deref(),
            );
        }
        if let Some(earlier) = self.worker.store.reply_for(&job.target_key(&target.id))? {
            let url = earlier.first_url.unwrap_or_default();
            let ctx = context! { url => url.clone() };
            return self.notice(
                job,
                Outcome::AlreadyAnswered,
                "notice_already_answered",
                ctx,
                vec![url],
                target.language.as_deref(),
            );
        }
        tracing::info!(target = %target.id, author = %target.author, "target resolved");
        job.target = Some(target);
        Ok(StageOutcome::Next(Usage::default()))
    }

    /// Why the target is not answered at all, if it is not.
    pub(super) fn skip_reason(&self, job: &Job, target: &Post) -> Option<SkipReason> {
        if self.platform.is_self(&target.author) {
            // Replies to the bot's own reply ("thanks", "wrong!") are never a new check.
            return Some(SkipReason::TargetIsOwnPost);
        }
        if job.trigger.may_be_inherited() && target.mentions.iter().any(|m| self.platform.is_self(m)) {
            tracing::info!("the bot's handle was only inherited from a parent that mentions it");
            return Some(SkipReason::NotAsked);
        }
        if target.author_nobot {
            return Some(SkipReason::NoBot);
        }
        let moderation = &self.worker.moderation;
        let (platform, id) = (job.trigger.platform, target.author_id.as_deref());
        if moderation.blocked_account(platform, &target.author, id) {
            return Some(SkipReason::Blocked);
        }
        if moderation.opted_out(platform, &target.author, id) {
            tracing::info!(author = %target.author, "the post's author opted out");
            return Some(SkipReason::OptedOut);
        }
        None
    }

    /// The day's budget: past its hashtag share, hits stop; past its re-check share (or the
    /// hashtag share, where lower), re-checks wait for the next UTC day — before reports do:
    /// that share is at most theirs; spent,
    /// everything stops, and a requester gets one notice a day, then silence. `None`: go on.
    pub(super) fn spend_gate(&self, job: &mut Job) -> Result<Option<Result<StageOutcome, StageError>>, StageError> {
        use crate::moderation::budget::{Budget, BudgetState};
        let budget = &self.worker.moderation.budget;
        let state = budget.state();
        let skip = |why: &str| Ok(Some(Ok(StageOutcome::Skip(SkipReason::Policy(why.into())))));
        if super::recheck::of(job).is_some() && state != BudgetState::Spent {
            let used = budget.used();
            if used > 0.0 && used >= budget.config.recheck_share.min(budget.config.hashtag_share) {
                let until = next_utc_day();
                tracing::info!(until = %until, "the day's budget share for re-checks is spent; the re-check waits");
                return Ok(Some(Ok(StageOutcome::Wait(until))));
            }
            return Ok(None);
        }
        match state {
            BudgetState::Open => Ok(None),
            BudgetState::HashtagsStopped if is_hit(job) => {
                skip("the day's budget: hashtag auto-replies stopped until tomorrow (UTC)")
            }
            BudgetState::HashtagsStopped => Ok(None),
            BudgetState::Spent => {
                let Some(requester) = job.trigger.requester().cloned() else {
                    return skip("the day's budget is spent");
                };
                let key = Budget::notice_key(job.trigger.platform.as_str(), &requester.key());
                if !self.worker.store.set_once(&key)? {
                    return skip("the day's budget is spent; the requester was told");
                }
                tracing::warn!("the day's LLM budget is spent; telling the requester");
                Ok(Some(self.notice(
                    job,
                    Outcome::BudgetNotice,
                    "notice_budget",
                    context! {},
                    Vec::new(),
                    None,
                )))
            }
        }
    }

    /// A hashtag hit goes on only about a public post not answered yet, within the tag's day
    /// and the author's window (charged here, once per job).
    fn admit_hit(&self, job: &mut Job, target: Post) -> Result<StageOutcome, StageError> {
        let quote_private = target.quote.as_ref().is_some_and(|q| !q.visibility.is_public());
        if !target.visibility.is_public() || quote_private {
            return Ok(StageOutcome::Skip(SkipReason::Policy("not public".into())));
        }
        if self.worker.store.reply_for(&job.target_key(&target.id))?.is_some() {
            return Ok(StageOutcome::Skip(SkipReason::Policy("already answered".into())));
        }
        if let Some(reason) = self
            .worker
            .moderation
            .admit_hit(&job.trigger, &job.id, &target.author_key())?
        {
            tracing::info!(why = ?reason, "the tag's policy declines this post");
            return Ok(StageOutcome::Skip(reason));
        }
        tracing::info!(target = %target.id, author = %target.author, "hashtag hit admitted");
        job.target = Some(target);
        Ok(StageOutcome::Next(Usage::default()))
    }

    /// Carries out a command and answers its post with a direct acknowledgement. `check`
    /// finds the post and records a moderator's flag job for it (picked up by the sweep).
    async fn command(&self, job: &mut Job, command: &Command) -> Result<StageOutcome, StageError> {
        let t = job.trigger.clone();
        let by = t.author.handle.clone();
        let lang = asker_language(job, None);
        if !self
            .worker
            .moderation
            .is_moderator(t.platform, &by, t.author.id.as_deref())
            && !self.charge_command(job)?
        {
            // Past the asker's window: silence. An opt-out is still carried out — nobody's
            // `stop` may depend on a quota — but not acknowledged.
            if matches!(command, Command::Stop) {
                self.worker
                    .moderation
                    .execute(t.platform, &by, t.author.id.as_deref(), command, lang)?;
            }
            tracing::info!(
                command = command.as_str(),
                "a command past the asker's hourly window; nothing is said"
            );
            return Ok(StageOutcome::Skip(SkipReason::OverQuotaSilenced));
        }
        let (text, urls) = match command {
            Command::Check(url) => match self.platform.post_at_url(url).await {
                Ok(post) => {
                    let flag = Job::new(Trigger {
                        language: t.language.clone(),
                        platform: t.platform,
                        cause: Cause::ModeratorFlag { moderator: by.clone() },
                        event_id: t.event_id.clone(),
                        status_id: post.id.clone(),
                        in_reply_to_id: None,
                        quote_of: None,
                        asked_in_text: true,
                        author: Account {
                            handle: by.clone(),
                            is_bot: false,
                            is_self: false,
                            nobot: false,
                            id: t.author.id.clone(),
                        },
                        visibility: post.visibility,
                        created_at: t.created_at,
                        text: String::new(),
                    });
                    self.worker.store.enqueue(&flag, None)?;
                    tracing::info!(job = %flag.id, "moderator's check queued");
                    (crate::moderation::ack::check(lang, url), vec![url.clone()])
                }
                Err(PlatformError::Transient(e)) => return Err(StageError::Transient(e)),
                Err(e) => {
                    tracing::info!(url = %url, error = %e, "a moderator's check names no post the bot can read");
                    let gone = matches!(e, PlatformError::Gone(_));
                    (crate::moderation::ack::not_found(lang, url, gone), vec![url.clone()])
                }
            },
            Command::Recheck => match self.recheck_command(job, lang)? {
                Ok(text) => (text, Vec::new()),
                Err(reason) => return Ok(StageOutcome::Skip(reason)),
            },
            Command::Withdraw(reason) => match self.withdraw_command(job, reason, lang).await? {
                Ok(text) => (text, Vec::new()),
                Err(reason) => return Ok(StageOutcome::Skip(reason)),
            },
            Command::Label | Command::Unlabel => {
                let put = matches!(command, Command::Label);
                match self.label_command(job, put, lang).await? {
                    Ok(text) => (text, Vec::new()),
                    Err(reason) => return Ok(StageOutcome::Skip(reason)),
                }
            }
            other => (
                self.worker
                    .moderation
                    .execute(t.platform, &by, t.author.id.as_deref(), other, lang)?,
                Vec::new(),
            ),
        };
        job.draft = Some(Draft {
            outcome: Outcome::Acknowledged,
            text,
            urls,
            verdict: None,
            stance: None,
        });
        // The acknowledgement is tagged with the language of its words.
        job.target = Some(trigger_as_post(&job.trigger, lang));
        Ok(StageOutcome::Next(Usage::default()))
    }

    /// Charges the requester's quota (`per_hour` in any sliding hour); `Some` (a notice, once a
    /// clock hour, or silence) when it is spent.
    /// A trigger nobody asked for has no requester and no quota.
    fn charge_quota(&self, job: &mut Job) -> Result<Option<Result<StageOutcome, StageError>>, StageError> {
        let Some(requester) = job.trigger.requester() else {
            return Ok(None);
        };
        let per_hour = self.worker.limits.checks_per_requester_per_hour;
        let who = format!("{}:{}", job.trigger.platform.as_str(), requester.key());
        // A sliding hour: a flood across the clock hour still gets `per_hour`.
        let now = chrono::Utc::now();
        let window = now.format("%Y%m%d%H");
        if self.worker.store.charge_window(
            &format!("rate:checks:{who}"),
            &job.id,
            per_hour,
            chrono::Duration::hours(1),
            now,
        )? {
            return Ok(None);
        }
        if !self.worker.store.set_once(&format!("notice:{who}:{window}"))? {
            return Ok(Some(Ok(StageOutcome::Skip(SkipReason::OverQuotaSilenced))));
        }
        let ctx = context! { per_hour => per_hour };
        Ok(Some(self.notice(
            job,
            Outcome::QuotaNotice,
            "notice_quota",
            ctx,
            Vec::new(),
            None,
        )))
    }

    /// Charges a non-moderator's command to the asker's sliding hour, the window their checks
    /// are charged to (`limits.checks_per_requester_per_hour`): `false` once it is spent.
    fn charge_command(&self, job: &Job) -> Result<bool, StageError> {
        let who = format!("{}:{}", job.trigger.platform.as_str(), job.trigger.author.key());
        Ok(self.worker.store.charge_window(
            &format!("rate:checks:{who}"),
            &job.id,
            self.worker.limits.checks_per_requester_per_hour,
            chrono::Duration::hours(1),
            chrono::Utc::now(),
        )?)
    }

    /// A short notice that answers the trigger's own post (not the target).
    pub(super) fn notice(
        &self,
        job: &mut Job,
        outcome: Outcome,
        key: &str,
        ctx: minijinja::Value,
        urls: Vec<String>,
        about: Option<&str>,
    ) -> Result<StageOutcome, StageError> {
        let lang = asker_language(job, about);
        let text = crate::words::say(lang, key, ctx);
        job.draft = Some(Draft {
            outcome,
            text,
            urls,
            verdict: None,
            stance: None,
        });
        job.target = Some(trigger_as_post(&job.trigger, lang));
        Ok(StageOutcome::Next(Usage::default()))
    }
}

/// The language the bot answers the asker in: the tag of the post that asked, else a
/// confident guess from its text (handles and links left out), else the checked post's
/// language (`about`, else the job's target's), else English — always one the bot has words
/// in ([`crate::words::language`]).
pub(super) fn asker_language(job: &Job, about: Option<&str>) -> &'static str {
    let t = &job.trigger;
    let own: String = t
        .text
        .split_whitespace()
        .filter(|w| !w.starts_with(['@', '＠']) && !w.contains("://"))
        .collect::<Vec<_>>()
        .join(" ");
    if let Some(l) = crate::lang::of(t.language.as_deref(), &own) {
        return crate::words::language(Some(&l));
    }
    crate::words::language(about.or_else(|| job.target.as_ref().and_then(|p| p.language.as_deref())))
}

/// Midnight UTC at the start of the next day: when the day's budget starts again.
pub(super) fn next_utc_day() -> chrono::DateTime<chrono::Utc> {
    (chrono::Utc::now() + chrono::Duration::days(1))
        .date_naive()
        .and_hms_opt(0, 0, 0)
        .expect("midnight exists")
        .and_utc()
}
