//! Living replies in the stage machine: a re-check is a job like any other
//! (`Cause::Recheck`), and this file is what its stages do differently —
//!
//! - **resolve**: the kept answer must still be open (kept, not deleted, under `max_updates`;
//!   a hashtag auto-reply's not paused);
//!   the post is read again; no quota (the asker already asked); past `budget.recheck_share`
//!   (or the hashtag share, where lower) it waits for the next UTC day, before reported posts
//!   do; claim memory is off (a re-check searches afresh).
//! - **compose**: the new answer against what the thread says — a different verdict, or a
//!   deciding professional fact-check the thread does not name yet, makes an update ("Update:
//!   …" in the post's language, under the bot's last part; or, Mastodon with `corrections =
//!   "edit"`, the first part edited); anything else ends as `Unchanged`, posting nothing. An
//!   update already posted (same verdict, same reviews) is never posted twice. A watched
//!   answer's update follows the watch's rules (held, `label_ratings`, `auto_label`).
//! - **post**: the kept answer looked at again before the first part, then the update recorded
//!   in it (also after a crash between the last part and the job's save).
//!
//! And the commands that steer a kept answer: `recheck` (the asker or a moderator) and
//! `withdraw` (a moderator: every part deleted, its label negated, the reason logged), and
//! `label` / `unlabel` (a moderator: the answer's verdict put on as a label, or negated). In
//! labeler mode a changed verdict also changes the label (old value negated, new created; a
//! label-only answer's update is its label's, `label.rs`).

use super::{Run, StageError, StageOutcome};
use crate::config::Corrections;
use crate::model::{
    Cause, Draft, Job, JobLabel, Kept, LabelValue, Outcome, Plan, Recalled, RecheckWhy, Retrieval, SkipReason, Stance,
    UpdateRecord, Usage, Verdict,
};
use crate::platform::PlatformError;

/// The verdict an answer settles on (`unverifiable` and "could not verify" settle nothing).
fn settled(v: Option<Verdict>) -> Option<Verdict> {
    v.filter(|v| *v != Verdict::Unverifiable)
}

/// The answering job a re-check is of.
pub(super) fn of(job: &Job) -> Option<&str> {
    match &job.trigger.cause {
        Cause::Recheck { of, .. } => Some(of),
        _ => None,
    }
}

impl Run<'_> {
    /// The kept answer this re-check is of, if it can still be updated; else why not.
    fn open_kept(&self, job: &Job) -> Result<Result<Kept, SkipReason>, StageError> {
        let Some(of) = of(job) else {
            return Ok(Err(SkipReason::Unchanged("not a re-check".into())));
        };
        let Some(kept) = self.worker.store.kept(of)? else {
            return Ok(Err(SkipReason::Unchanged("the answer is no longer kept".into())));
        };
        if let Some(why) = &kept.gone {
            return Ok(Err(SkipReason::Unchanged(format!("the answer was deleted ({why})"))));
        }
        if let Some(why) = &kept.hidden {
            return Ok(Err(SkipReason::Unchanged(format!(
                "the post is hidden from the bot ({why})"
            ))));
        }
        if kept.updates.len() as u32 >= self.worker.living.max_updates {
            return Ok(Err(SkipReason::Unchanged("the thread has had its updates".into())));
        }
        // An update of a hashtag auto-reply is an auto-reply: a moderator's pause stops it too.
        let hit = matches!(kept.trigger.cause, Cause::HashtagHit { .. });
        if hit && self.worker.moderation.store.paused(kept.platform) {
            return Ok(Err(SkipReason::Policy("auto-replies are paused".into())));
        }
        Ok(Ok(kept))
    }

    /// The resolve stage of a re-check.
    pub(super) async fn resolve_recheck(&self, job: &mut Job) -> Result<StageOutcome, StageError> {
        if let Err(reason) = self.open_kept(job)? {
            return Ok(StageOutcome::Skip(reason));
        }
        if let Some(reason) = self.worker.moderation.triage(&job.trigger) {
            return Ok(StageOutcome::Skip(reason));
        }
        let mut target = match self.platform.resolve(&job.trigger).await {
            Ok(t) => t,
            // Gone: skipped here; the follower deletes the answer of a deleted post.
            Err(e) => return super::unresolved(e),
        };
        target.language = crate::lang::of(target.language.as_deref(), &target.text);
        if let Some(reason) = self.skip_reason(job, &target) {
            return Ok(StageOutcome::Skip(reason));
        }
        if let Some(outcome) = self.spend_gate(job)? {
            return outcome;
        }
        job.target = Some(target);
        // A re-check searches afresh: claim memory would answer it from itself, and the search
        // cache with what the first answer found.
        job.retrieval = Some(Retrieval {
            recalled: Some(Recalled {
                from: None,
                cosine: 0.0,
            }),
            fresh: true,
            ..Retrieval::default()
        });
        Ok(StageOutcome::Next(Usage::default()))
    }

    /// The compose stage of a re-check: an update when the answer changed, else `Unchanged`.
    pub(super) fn compose_recheck(&self, job: &mut Job) -> Result<StageOutcome, StageError> {
        let kept = match self.open_kept(job)? {
            Ok(k) => k,
            Err(reason) => return Ok(StageOutcome::Skip(reason)),
        };
        let draft = job.draft.clone().expect("compose runs after draft");
        let reviews = named_reviews(job);
        let new_reviews: Vec<&String> = reviews.iter().filter(|r| !kept.named.contains(r)).collect();
        let verdict = settled(draft.verdict).filter(|_| draft.outcome == Outcome::Reply);
        if news(&kept, &draft, &reviews) == News::Nothing {
            let what = verdict.map_or(draft.outcome.as_str(), Verdict::as_str);
            tracing::info!(now = what, was = ?kept.verdict, "re-check: nothing new; nothing is posted");
            self.idle(job, &kept)?;
            return Ok(StageOutcome::Skip(SkipReason::Unchanged(format!(
                "the re-check found nothing new ({what})"
            ))));
        }
        let digest = UpdateRecord::digest(verdict, &reviews);
        if kept.has_update(&digest) {
            self.idle(job, &kept)?;
            return Ok(StageOutcome::Skip(SkipReason::Unchanged(
                "this update was posted already".into(),
            )));
        }
        // An answer nobody asked for (the watch's) is re-checked under its first answer's
        // rules: only the rating classes `watch.label_ratings` names are labelled, and the
        // update is held for a moderator unless `watch.auto_label` lets a label go at once.
        let watched = super::watch::answers_watch(job);
        let allowed = |v: Option<Verdict>| !watched || v.is_some_and(|v| self.worker.watch_label_verdicts.contains(&v));
        // Labeler mode: the label the answer put on follows the verdict — the old value
        // negated, the new one (when sure enough) created, in one event, on the version of
        // the post the re-check read.
        let read = job.target.as_ref().and_then(|t| t.version.clone());
        let label = kept.label.as_ref().and_then(|(old, cid)| {
            let new = crate::labeler::value(&self.worker.labeler, job).filter(|_| allowed(draft.verdict));
            (new != Some(*old)).then(|| JobLabel {
                uri: kept.target_id.clone(),
                cid: read.clone().unwrap_or_else(|| cid.clone()),
                create: new.into_iter().collect(),
                negate: vec![*old],
                expires: crate::labeler::expiry(&self.worker.labeler, chrono::Utc::now()),
                asked_at: None,
                sent_at: None,
            })
        });
        let Some(last) = kept.last_part().map(str::to_string) else {
            if label.is_none() {
                return Ok(StageOutcome::Skip(SkipReason::Unchanged(
                    "the answer has no part to update".into(),
                )));
            }
            // A label-only answer: its update is the label's.
            tracing::info!(verdict = ?verdict, was = ?kept.verdict, "re-check: the answer changed; its label follows");
            job.label = label;
            if watched && !self.worker.watch_auto_label {
                job.review = Some(crate::model::Review::now());
            }
            let target = job.target.as_ref().expect("compose runs after resolve");
            job.plan = Some(Plan {
                reply_to: self.platform.reply_anchor(&job.trigger, target),
                visibility: self.visibility(job),
                parts: Vec::new(),
                as_written: false,
                shrink: 0,
                edit: false,
            });
            return Ok(StageOutcome::Next(Usage::default()));
        };
        job.label = label;
        let lang = crate::words::language(job.target.as_ref().and_then(|t| t.language.as_deref()));
        let lead = crate::words::say(lang, "update_lead", ());
        // The thread's last update says the bot stops following the post: no stance sentence
        // is left standing beside words it will never read.
        let mut text = format!("{lead} {}", draft.text);
        if kept.updates.len() as u32 + 1 >= self.worker.living.max_updates {
            text = format!("{text}\n\n{}", crate::words::say(lang, "update_last", ()));
        }
        let update = Draft { text, ..draft };
        job.draft = Some(update);
        let mut parts = self.thread(job, self.platform.limits());
        let visibility = self.visibility(job);
        // An edit replaces the first part in place, when it fits in one.
        let edit = self.worker.living.corrections == Corrections::Edit && self.platform.can_edit() && parts.len() == 1;
        let reply_to = if edit { kept.parts[0].clone() } else { last };
        if edit {
            parts.truncate(1);
        }
        job.plan = Some(Plan {
            reply_to,
            visibility,
            parts,
            as_written: false,
            shrink: 0,
            edit,
        });
        tracing::info!(verdict = ?verdict, was = ?kept.verdict, new_reviews = new_reviews.len(), edit, "re-check: the answer changed; an update is composed");
        if self.worker.moderation.needs_review(&job.trigger.cause) || watched {
            job.review = Some(crate::model::Review::now());
        }
        Ok(StageOutcome::Next(Usage::default()))
    }

    /// A re-check that found nothing new counts against `living.max_idle_rechecks` — an
    /// edit's was counted when it was set ([`crate::living::recheck_now`]), so it ends
    /// counted however it ends.
    fn idle(&self, job: &Job, kept: &Kept) -> Result<(), StageError> {
        let edited = matches!(
            &job.trigger.cause,
            crate::model::Cause::Recheck {
                why: RecheckWhy::Edited,
                ..
            }
        );
        if edited {
            return Ok(());
        }
        self.worker
            .store
            .update_kept(&kept.job_id, |k| k.idle_rechecks = k.idle_rechecks.saturating_add(1))?;
        Ok(())
    }

    /// Before a re-check's first part: the kept answer still open, this update not posted yet.
    pub(super) fn recheck_still_wanted(&self, job: &Job) -> Result<Option<SkipReason>, StageError> {
        let kept = match self.open_kept(job)? {
            Ok(k) => k,
            Err(reason) => return Ok(Some(reason)),
        };
        let verdict = job.draft.as_ref().and_then(|d| settled(d.verdict));
        let digest = UpdateRecord::digest(verdict, &named_reviews(job));
        Ok(kept
            .has_update(&digest)
            .then(|| SkipReason::Unchanged("this update was posted already".into())))
    }

    /// An edit in place of a follow-up (Mastodon, `corrections = "edit"`).
    pub(super) async fn post_edit(&self, job: &mut Job) -> Result<StageOutcome, StageError> {
        let plan = job.plan.clone().expect("post runs after compose");
        match self
            .platform
            .edit(&plan.reply_to, &plan.parts[0], super::words_language(job))
            .await
        {
            Ok(()) => {
                job.posted = vec![plan.reply_to.clone()];
                self.worker.store.save(job)?;
                Ok(StageOutcome::Next(Usage::default()))
            }
            Err(PlatformError::RateLimited { until, message }) => Err(StageError::Parked { until, message }),
            Err(PlatformError::Transient(e)) => Err(StageError::Transient(e)),
            Err(PlatformError::Gone(e)) => Ok(StageOutcome::Skip(SkipReason::TargetUnavailable(e))),
            Err(e) => Err(StageError::Fatal(e.to_string())),
        }
    }

    /// A re-check's update, once every part is posted: recorded in the kept answer (once; a
    /// deletion that came meanwhile deletes these parts too).
    pub(super) async fn record_update(&self, job: &Job) -> Result<(), StageError> {
        let Some(of) = of(job) else { return Ok(()) };
        let edit = job.plan.as_ref().is_some_and(|p| p.edit);
        let ids: Vec<String> = if edit { Vec::new() } else { job.posted.clone() };
        let verdict = job.draft.as_ref().and_then(|d| settled(d.verdict));
        let stance = job.draft.as_ref().and_then(|d| d.stance.as_ref()).map(|s| s.stance);
        let reviews = named_reviews(job);
        let urls: Vec<String> = job.draft.iter().flat_map(|d| d.urls.iter().cloned()).collect();
        let at = chrono::Utc::now();
        // One change of the kept answer, on the record as it is now: this update's own fields.
        let recorded = self.worker.store.update_kept(of, |kept| {
            if kept.updates.iter().any(|u| u.job_id == job.id) {
                return false;
            }
            kept.updates.push(UpdateRecord {
                job_id: job.id.clone(),
                at,
                verdict,
                digest: UpdateRecord::digest(verdict, &reviews),
                ids: ids.clone(),
            });
            // The thread's verdict is the update's: none when the checks it names disagree or
            // rate without a class (the earlier verdict no longer stands unqualified).
            kept.verdict = verdict;
            kept.stance = stance;
            for r in &reviews {
                if !kept.reviews.contains(r) {
                    kept.reviews.push(r.clone());
                }
                if !kept.named.contains(r) {
                    kept.named.push(r.clone());
                }
            }
            kept.evidence.extend(urls.iter().cloned());
            kept.evidence.sort();
            kept.evidence.dedup();
            kept.parts.extend(ids.iter().cloned());
            // An edit's re-check was counted idle when set: it found something, so it is not.
            if matches!(
                &job.trigger.cause,
                crate::model::Cause::Recheck {
                    why: RecheckWhy::Edited,
                    ..
                }
            ) {
                kept.idle_rechecks = kept.idle_rechecks.saturating_sub(1);
            }
            true
        })?;
        let Some((kept, true)) = recorded else {
            return Ok(());
        };
        if kept.gone.is_some() {
            // Closed meanwhile (a withdrawal, the post deleted): these parts go too.
            for id in &ids {
                if let Err(e) = self.platform.delete(id).await {
                    tracing::warn!(part = %id, error = %e, "an update posted while its answer was deleted could not be deleted");
                }
            }
        }
        // The re-check's own reading of the claim (the post may have been edited since the
        // answer), else the answer's.
        let vector = job
            .retrieval
            .as_ref()
            .and_then(|r| r.claim_vector.clone())
            .or_else(|| kept.vector.clone());
        if let (Some(v), Some(_), None) = (&vector, verdict, &kept.gone) {
            // A settled verdict: claim memory may answer the same claim from this update.
            self.worker.store.save_vector(&kept.job_id, v, kept.until)?;
            self.worker.store.update_kept(of, |k| k.vector = Some(v.clone()))?;
        }
        self.worker.metrics.living("update");
        tracing::info!(of, verdict = ?verdict, edit, "update posted");
        Ok(())
    }

    /// `recheck`, given under the bot's answer or the checked post: by the asker (the same
    /// account, by key) or a moderator; anyone else is ignored like a moderator's command.
    /// Where the bot has no answer, nothing is said (a stranger's `recheck` under any post
    /// must not make the bot post). The asker is held to one waiting re-check, the cooldown
    /// and the idle bound (`living::recheck_now`); past the last two, nothing is said either.
    pub(super) fn recheck_command(&self, job: &Job, lang: &str) -> Result<Result<String, SkipReason>, StageError> {
        let t = &job.trigger;
        let Some(kept) = self.kept_here(job)? else {
            tracing::info!(author = %t.author.handle, "a recheck where the bot has no answer; nothing is said");
            return Ok(Err(SkipReason::Policy("no answer here to re-check".into())));
        };
        let by = t.author.key();
        // The asker by account id (a handle only where an older record has no id).
        let asker = kept.trigger.requester().is_some_and(|a| a.same_account(&t.author));
        let moderator = self
            .worker
            .moderation
            .is_moderator(t.platform, &t.author.handle, t.author.id.as_deref());
        if !asker && !moderator {
            tracing::warn!(author = %t.author.handle, "a recheck from someone who neither asked nor moderates; ignored");
            return Ok(Err(SkipReason::NotModerator));
        }
        let who = if moderator {
            crate::living::Asker::Moderator
        } else {
            crate::living::Asker::Other
        };
        let (set, now) = crate::living::recheck_now(
            &self.worker.store,
            &self.worker.living,
            &kept.job_id,
            RecheckWhy::Asked(by),
            who,
        )?;
        use crate::living::RecheckSet;
        match set {
            RecheckSet::Set | RecheckSet::Waiting => Ok(Ok(crate::moderation::ack::recheck(lang, None))),
            RecheckSet::Closed => {
                let gone = now.as_ref().unwrap_or(&kept).gone.is_some();
                Ok(Ok(crate::moderation::ack::recheck(lang, Some(gone))))
            }
            RecheckSet::Cooling(until) => Ok(Err(SkipReason::Policy(format!(
                "re-checked recently; not again before {until}"
            )))),
            RecheckSet::Spent => Ok(Err(SkipReason::Policy(
                "re-checks of this answer found nothing new too often".into(),
            ))),
        }
    }

    /// `withdraw[: reason]` (a moderator, under the answer): every part deleted, the reason
    /// logged, the kept answer closed.
    pub(super) async fn withdraw_command(
        &self,
        job: &Job,
        reason: &str,
        lang: &str,
    ) -> Result<Result<String, SkipReason>, StageError> {
        // Intake skips it already; the stage that deletes looks again.
        if !self.by_moderator(job) {
            return Ok(Err(SkipReason::NotModerator));
        }
        let Some(mut kept) = self.kept_here(job)? else {
            return Ok(Ok(crate::moderation::ack::no_answer_here(lang)));
        };
        let by = job.trigger.author.handle.clone();
        let why = if reason.is_empty() {
            format!("withdrawn by {by}")
        } else {
            format!("withdrawn by {by}: {reason}")
        };
        tracing::warn!(of = %kept.job_id, moderator = %by, reason, "answer withdrawn");
        if let Some((value, cid)) = kept.label.clone() {
            self.unlabel(&kept, value, cid).await?;
            kept.label = None;
        }
        let parts = kept.parts.len();
        match crate::living::take_down(self.platform, &self.worker.store, &mut kept, why).await {
            Ok(()) => {}
            Err(crate::living::TakeDownError::Platform(PlatformError::Transient(e))) => {
                return Err(StageError::Transient(e))
            }
            Err(crate::living::TakeDownError::Platform(PlatformError::RateLimited { until, message })) => {
                return Err(StageError::Parked { until, message })
            }
            Err(crate::living::TakeDownError::Platform(e)) => return Err(StageError::Fatal(e.to_string())),
            Err(crate::living::TakeDownError::Store(e)) => return Err(StageError::Store(e)),
        }
        self.worker.metrics.living("withdrawn");
        Ok(Ok(crate::moderation::ack::withdrawn(lang, parts)))
    }

    /// `label` / `unlabel` (a moderator, under the answer or the checked post): the answer's
    /// verdict put on as the bot's label, whatever the policy said — or the bot's label
    /// negated, any reply kept. Re-emitting is harmless (the labeler keeps one label per
    /// value), so a crash here repeats at most one event.
    pub(super) async fn label_command(
        &self,
        job: &Job,
        put: bool,
        lang: &str,
    ) -> Result<Result<String, SkipReason>, StageError> {
        let t = &job.trigger;
        if !self.by_moderator(job) {
            return Ok(Err(SkipReason::NotModerator));
        }
        if !self.worker.labeler.enabled || !self.platform.has_labels() {
            return Ok(Ok(crate::moderation::ack::labels_off(lang)));
        }
        let Some(kept) = self.kept_here(job)? else {
            return Ok(Ok(crate::moderation::ack::no_answer_here(lang)));
        };
        if kept.gone.is_some() {
            // Withdrawn or deleted: no label goes on an answer that is no longer up.
            return Ok(Ok(crate::moderation::ack::no_answer_here(lang)));
        }
        if !put {
            let Some((value, cid)) = kept.label.clone() else {
                return Ok(Ok(crate::moderation::ack::unlabelled(lang, false)));
            };
            self.unlabel(&kept, value, cid).await?;
            self.worker.store.update_kept(&kept.job_id, |k| {
                if k.label.as_ref().is_some_and(|(v, _)| *v == value) {
                    k.label = None;
                }
            })?;
            return Ok(Ok(crate::moderation::ack::unlabelled(lang, true)));
        }
        let Some(value) = kept.verdict.and_then(LabelValue::of) else {
            return Ok(Ok(crate::moderation::ack::label_none(lang)));
        };
        let cid = match &kept.label {
            Some((_, cid)) => cid.clone(),
            None => self.platform.cid_of(&kept.target_id).await.map_err(|e| match e {
                PlatformError::RateLimited { until, message } => StageError::Parked { until, message },
                PlatformError::Transient(e) => StageError::Transient(e),
                other => StageError::Fatal(other.to_string()),
            })?,
        };
        let old: Vec<LabelValue> = kept.label.iter().map(|l| l.0).filter(|v| *v != value).collect();
        let event = JobLabel {
            uri: kept.target_id.clone(),
            cid: cid.clone(),
            create: vec![value],
            negate: old,
            expires: crate::labeler::expiry(&self.worker.labeler, chrono::Utc::now()),
            asked_at: None,
            sent_at: None,
        };
        self.emit(&event).await?;
        tracing::info!(uri = %kept.target_id, value = value.as_str(), moderator = %t.author.handle, "labelled by a moderator");
        let label = Some((value, cid));
        self.worker
            .store
            .update_kept(&kept.job_id, |k| k.label = label.clone())?;
        Ok(Ok(crate::moderation::ack::labelled(lang, value)))
    }

    /// One label event outside the label stage (a command's).
    async fn emit(&self, event: &JobLabel) -> Result<(), StageError> {
        match self.platform.emit_label(event).await {
            Ok(()) => Ok(()),
            Err(PlatformError::RateLimited { until, message }) => Err(StageError::Parked { until, message }),
            Err(PlatformError::Fatal(e)) => Err(StageError::Fatal(e)),
            Err(e) => Err(StageError::Transient(e.to_string())),
        }
    }

    /// Negates the label a kept answer put on (a withdrawal; negating twice is harmless).
    async fn unlabel(&self, kept: &Kept, value: LabelValue, cid: String) -> Result<(), StageError> {
        let negation = JobLabel {
            uri: kept.target_id.clone(),
            cid,
            create: Vec::new(),
            negate: vec![value],
            expires: None,
            asked_at: None,
            sent_at: None,
        };
        self.emit(&negation).await?;
        tracing::info!(uri = %kept.target_id, value = value.as_str(), "label negated");
        Ok(())
    }

    /// Whether the command's author is a moderator (by stable id where the platform has one).
    fn by_moderator(&self, job: &Job) -> bool {
        let t = &job.trigger;
        self.worker
            .moderation
            .is_moderator(t.platform, &t.author.handle, t.author.id.as_deref())
    }

    /// The kept answer a command was given under: the bot's part it replies to, else the
    /// checked post's answer.
    fn kept_here(&self, job: &Job) -> Result<Option<Kept>, StageError> {
        let t = &job.trigger;
        let Some(parent) = t.in_reply_to_id.as_deref() else {
            return Ok(None);
        };
        if let Some(k) = self.worker.store.kept_by_part(t.platform, parent)? {
            return Ok(Some(k));
        }
        Ok(self.worker.store.kept_by_target(t.platform, parent)?)
    }
}

/// What a re-check's answer tells the thread's readers that the thread does not say yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum News {
    Nothing,
    /// Another settled verdict than the thread's.
    Verdict,
    /// A professional fact-check the thread does not name yet — whether it settles the same
    /// verdict, disagrees with the thread (the reply says fact-checkers now disagree and
    /// states no verdict) or has a rating without a class (quoted as it is).
    NewCheck,
    /// The post (edited) now asserts the checked claim where it did not, or no longer does:
    /// the thread's verdict about it, and any label, no longer fit.
    Stance,
}

/// The one rule for whether a re-check's answer is an update: a settled verdict other than the
/// thread's, or a named check the thread did not name. "Could not verify" again is nothing.
fn news(kept: &Kept, draft: &Draft, named: &[String]) -> News {
    if draft.outcome != Outcome::Reply {
        return News::Nothing;
    }
    if named.iter().any(|r| !kept.named.contains(r)) {
        return News::NewCheck;
    }
    // No stance (no check named, or an older record): the verdict is about the post itself.
    let asserts = |s: Option<Stance>| s.is_none_or(|s| s == Stance::Asserts);
    if asserts(kept.stance) != asserts(draft.stance.as_ref().map(|s| s.stance)) {
        return News::Stance;
    }
    match settled(draft.verdict) {
        Some(v) if Some(v) != settled(kept.verdict) => News::Verdict,
        _ => News::Nothing,
    }
}

/// The professional reviews a (re-)check's reply names.
fn named_reviews(job: &Job) -> Vec<String> {
    if job.draft.as_ref().is_none_or(|d| d.outcome != Outcome::Reply) {
        return Vec::new();
    }
    job.retrieval
        .as_ref()
        .map(|r| r.deciding_reviews().into_iter().map(|c| c.url).collect())
        .unwrap_or_default()
}

#[cfg(test)]
#[path = "recheck_tests.rs"]
mod tests;
