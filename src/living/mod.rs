//! Living replies: an answer's life after it is posted. A room of its own on the one
//! stage machine — every re-check is a job (`Cause::Recheck`) run by the same worker, and what
//! this room adds are the records and the tasks that make those jobs:
//!
//! - [`keep`]: a finished answer becomes a [`Kept`] post (its claim, vector, verdict, evidence,
//!   thread) with timers for a "could not verify" answer (`living.recheck_after`);
//! - [`schedule`]: due timers become re-check jobs, exactly once, a few at a time;
//! - [`follow`]: kept posts looked at again — deleted → the bot's answer deleted, edited → a
//!   re-check;
//! - [`rematch`]: when the fact-check corpus grows, kept claims are matched again, and a new
//!   deciding review → a re-check.
//!
//! The re-check's stages are in `worker/recheck.rs`; claim memory is the pipeline's `recall`
//! step (`pipeline/muse/recall.rs`).

pub mod follow;
pub mod rematch;
pub mod schedule;

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use crate::config::LivingConfig;
use crate::model::{Cause, Job, Kept, Outcome, Post, RecheckWhy, Status, Trigger, Verdict};
use crate::store::{Store, StoreError};

/// The digest a kept post's text is compared by (an edit changes it): the text, the images'
/// alt text and the quoted post's text.
pub fn digest(post: &Post) -> String {
    let mut h = Sha256::new();
    h.update(post.text.as_bytes());
    for m in &post.media {
        h.update([0]);
        h.update(m.alt.as_deref().unwrap_or("").as_bytes());
    }
    if let Some(q) = &post.quote {
        h.update([1]);
        h.update(q.text.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The digest of a kept post's words: [`digest`] over the text, alt texts and quoted text
/// lower-cased, with every run of spacing one space. It keeps every character the stance
/// reads (`crate::stance`: punctuation, quote marks, signs, emoji; not case), so an edit that
/// could change what the bot says about the post re-checks it; one that fixes spacing or case
/// alone does not.
pub fn words(post: &Post) -> String {
    let norm = |t: &str| -> String {
        t.split_whitespace()
            .flat_map(|w| [" ".to_string(), w.to_lowercase()])
            .skip(1)
            .collect()
    };
    let mut h = Sha256::new();
    h.update(norm(&post.text).as_bytes());
    for m in &post.media {
        h.update([0]);
        h.update(norm(m.alt.as_deref().unwrap_or("")).as_bytes());
    }
    if let Some(q) = &post.quote {
        h.update([1]);
        h.update(norm(&q.text).as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether an answer says it could not tell (so is looked at again on a timer).
pub fn undecided(outcome: Outcome, verdict: Option<Verdict>) -> bool {
    outcome == Outcome::Insufficient || verdict.is_none_or(|v| v == Verdict::Unverifiable)
}

/// The one rule for an answer that is not settled, so is re-checked on its timers (when kept)
/// and once when its post is seen again (the follower): it could not tell, and it is not a
/// reply naming checks of a claim the post does not assert (no verdict, yet settled).
pub fn unsettled(outcome: Outcome, verdict: Option<Verdict>, stance: bool) -> bool {
    undecided(outcome, verdict) && !stance
}

/// [`unsettled`] for a kept answer.
pub fn kept_unsettled(k: &Kept) -> bool {
    let outcome = if k.outcome == Outcome::Insufficient.as_str() {
        Outcome::Insufficient
    } else {
        Outcome::Reply
    };
    unsettled(outcome, k.verdict, k.stance.is_some())
}

/// Keeps a finished answer for re-checking (idempotent: an answer kept already is left as it
/// is). Only answers the pipeline wrote and the bot posted (or put on as a label): a verdict or "could not verify",
/// not notices, commands or re-checks (those update the kept post they re-check).
pub fn keep(store: &Store, config: &LivingConfig, job: &Job, now: DateTime<Utc>) -> Result<Option<Kept>, StoreError> {
    let labelled = job.label.as_ref().filter(|l| l.sent_at.is_some());
    if !config.enabled || job.status != Status::Done || (job.posted.is_empty() && labelled.is_none()) {
        return Ok(None);
    }
    if matches!(job.trigger.cause, Cause::Command { .. } | Cause::Recheck { .. }) {
        return Ok(None);
    }
    let (Some(draft), Some(target)) = (&job.draft, &job.target) else {
        return Ok(None);
    };
    if !matches!(draft.outcome, Outcome::Reply | Outcome::Insufficient) {
        return Ok(None);
    }
    if let Some(kept) = store.kept(&job.id)? {
        return Ok(Some(kept));
    }
    let named: Vec<String> = match &job.retrieval {
        Some(r) if draft.outcome == Outcome::Reply => r.deciding_reviews().into_iter().map(|c| c.url).collect(),
        _ => Vec::new(),
    };
    // Every same-claim review the answer saw counts as weighed: a later match of one of them
    // is no news.
    let mut reviews = named.clone();
    for m in job.retrieval.iter().flat_map(|r| r.matches.iter().flatten()) {
        if m.review.same_claim && !reviews.contains(&m.review.url) {
            reviews.push(m.review.url.clone());
        }
    }
    // A reply naming checks of a claim the post does not assert has no verdict, yet is settled.
    let delays = if unsettled(draft.outcome, draft.verdict, draft.stance.is_some()) {
        config.recheck_delays()
    } else {
        Vec::new()
    };
    let mut kept = Kept {
        job_id: job.id.clone(),
        platform: job.trigger.platform,
        trigger: job.trigger.clone(),
        target_id: target.id.clone(),
        claim: target.text.clone(),
        language: target.language.clone(),
        vector: job.retrieval.as_ref().and_then(|r| r.claim_vector.clone()),
        verdict: draft.verdict,
        stance: draft.stance.as_ref().map(|s| s.stance),
        outcome: draft.outcome.as_str().into(),
        evidence: draft.urls.clone(),
        reviews,
        named,
        parts: job.posted.clone(),
        first_url: job.first_url.clone(),
        digest: digest(target),
        words: words(target),
        kept_at: now,
        until: now + config.keep(),
        timers: 0,
        next_recheck: None,
        updates: Vec::new(),
        gone: None,
        matched_generation: 0,
        label: labelled.and_then(|l| l.create.first().map(|v| (*v, l.cid.clone()))),
        hidden: None,
        pending: None,
        last_asked: None,
        idle_rechecks: 0,
    };
    // Timers first, then the record that counts them: a crash between leaves a timer whose
    // job finds no kept post and ends (`Unchanged`), never a kept post with a lost timer.
    for d in delays {
        let at = now + d;
        store.add_timer(at, &kept.job_id, kept.timers, &RecheckWhy::Scheduled)?;
        kept.timers += 1;
        kept.next_recheck = Some(kept.next_recheck.map_or(at, |n: DateTime<Utc>| n.min(at)));
    }
    if let Some(existing) = store.create_kept(&kept)? {
        return Ok(Some(existing));
    }
    if let Some(v) = &kept.vector {
        // Claim memory answers from verdicts only, not from "could not verify".
        if !undecided(draft.outcome, draft.verdict) {
            store.save_vector(&kept.job_id, v, kept.until)?;
        }
    }
    tracing::info!(job = %kept.job_id, timers = kept.timers, verdict = ?kept.verdict, "answer kept for re-checking");
    Ok(Some(kept))
}

/// What asking for a re-check did. Closed: the log, the command's acknowledgement and the
/// tests name each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecheckSet {
    /// A re-check is due now.
    Set,
    /// The thread takes no more updates: deleted, withdrawn, hidden from the bot, or it had
    /// `max_updates`.
    Closed,
    /// A re-check of this answer is already waiting: one at a time.
    Waiting,
    /// A re-check its asker set ran less than `recheck_cooldown` ago: not before then.
    Cooling(DateTime<Utc>),
    /// `max_idle_rechecks` re-checks found nothing new: no more asked or edited ones.
    Spent,
}

/// Who asks for a re-check: a moderator is held only to one at a time and the thread's
/// bounds, not to the cooldown or the idle bound (the cooldown holds asked re-checks, the idle
/// bound asked and edited ones). `Seen`: the follower, for an unsettled answer whose post was
/// hidden from the bot and is seen again — the author's doing (a block lifted), so held to
/// the cooldown and the idle bound like a person's ask: blocking and unblocking the bot in a
/// loop buys no full run a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asker {
    Moderator,
    Other,
    Seen,
}

/// Sets a re-check of the kept answer `job_id` due now (a new review, an edit, a command),
/// unless the thread is closed to updates, one is already waiting, the asker's last one ran
/// within `recheck_cooldown`, or (asked or edited) `max_idle_rechecks` found nothing new. The timer and the
/// number it takes are written with the record, in one transaction. Returns what was done
/// and the kept answer as it is now.
pub fn recheck_now(
    store: &Store,
    config: &LivingConfig,
    job_id: &str,
    why: RecheckWhy,
    asker: Asker,
) -> Result<(RecheckSet, Option<Kept>), StoreError> {
    recheck_at(store, config, job_id, why, asker, Utc::now())
}

/// [`recheck_now`] as of `now` (the tests run a week of edits in a moment).
pub(crate) fn recheck_at(
    store: &Store,
    config: &LivingConfig,
    job_id: &str,
    why: RecheckWhy,
    asker: Asker,
    now: DateTime<Utc>,
) -> Result<(RecheckSet, Option<Kept>), StoreError> {
    let cooldown = config.cooldown();
    // Whether the re-check set last still waits (its timer, or its job not finished) is read
    // before the transaction: other reads of the store must not run inside one.
    let Some(before) = store.kept(job_id)? else {
        return Ok((RecheckSet::Closed, None));
    };
    let waits = before.pending.filter(|n| {
        let id = recheck_job(&before, *n, RecheckWhy::Scheduled).id;
        let timer = store
            .timers_of(job_id)
            .map(|t| t.iter().any(|t| t.n == *n))
            .unwrap_or(true);
        let job = store
            .job(&id)
            .map(|j| j.is_some_and(|j| j.status == Status::Pending))
            .unwrap_or(true);
        timer || job
    });
    // An edit that changed the post's words is re-checked at once: the author must not
    // outrun the check, and edits are bounded by the idle bound (re-checks that found
    // nothing new) and `max_updates` (those that did). The cooldown paces what people ask.
    let seen = asker == Asker::Seen;
    let paced = (matches!(why, RecheckWhy::Asked(_) | RecheckWhy::Edited) && asker == Asker::Other) || seen;
    let cooled = (matches!(why, RecheckWhy::Asked(_)) && asker == Asker::Other) || seen;
    let changed = store.update_kept_with(job_id, |k| {
        if k.gone.is_some() || k.hidden.is_some() || k.updates.len() as u32 >= config.max_updates {
            return (RecheckSet::Closed, None);
        }
        if k.pending.is_some() && (k.pending == waits || k.pending != before.pending) {
            // The one read above still waits, or another was set since: one at a time.
            return (RecheckSet::Waiting, None);
        }
        // The idle bound holds what a person sets (an edit, an asker's `recheck`), never a new
        // fact-check: the author cannot spend it to keep a new check out of the thread. Past
        // it, the asker's `recheck` and a post seen again stop; an edit is paced by a
        // cooldown that doubles with each idle re-check past the bound, so a claim changed
        // after a flood of rewordings is still re-checked, and an edit a minute for a week
        // costs about ten full runs (a dozen in `keep_days`), not one an hour.
        let spent = paced && k.idle_rechecks >= config.max_idle_rechecks;
        if spent && !matches!(why, RecheckWhy::Edited) {
            return (RecheckSet::Spent, None);
        }
        if let Some(last) = k.last_asked.filter(|_| cooled || spent) {
            let past = if spent {
                k.idle_rechecks - config.max_idle_rechecks
            } else {
                0
            };
            let wait = cooldown * (1i32 << past.min(16));
            if now < last + wait {
                return (RecheckSet::Cooling(last + wait), None);
            }
        }
        let n = k.timers;
        k.timers += 1;
        k.next_recheck = Some(now);
        k.pending = Some(n);
        if matches!(why, RecheckWhy::Asked(_) | RecheckWhy::Edited) || seen {
            k.last_asked = Some(now);
        }
        // An edit's re-check counts as idle when it is set (given back when it posts an
        // update): one that ends any other way — held and rejected, failed — still counts.
        if paced && matches!(why, RecheckWhy::Edited) {
            k.idle_rechecks = k.idle_rechecks.saturating_add(1);
        }
        (RecheckSet::Set, Some((now, n, why.clone())))
    })?;
    let Some((kept, set)) = changed else {
        return Ok((RecheckSet::Closed, None));
    };
    // Said once: only a re-check set is news; the rest is met again at the next round.
    if set == RecheckSet::Set {
        tracing::info!(job = %kept.job_id, why = why.as_str(), "re-check set");
    } else {
        tracing::debug!(job = %kept.job_id, why = why.as_str(), set = ?set, "re-check asked for; not set");
    }
    Ok((set, Some(kept)))
}

/// Why an answer could not be taken down.
#[derive(Debug, thiserror::Error)]
pub enum TakeDownError {
    #[error("{0}")]
    Platform(#[from] crate::platform::PlatformError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Deletes every part of a kept answer (updates included; last first) and closes it: `gone`
/// says why, the post's text and vector are dropped, its timers removed, and the "already
/// answered" record forgotten (a pointer to a deleted answer leads nowhere). Parts already
/// gone count as deleted, so a take-down interrupted halfway finishes on the next try.
pub async fn take_down(
    platform: &crate::platform::Platform,
    store: &Store,
    kept: &mut Kept,
    why: String,
) -> Result<(), TakeDownError> {
    for part in kept.parts.iter().rev() {
        platform.delete(part).await?;
    }
    let closed = store.update_kept(&kept.job_id, |k| {
        k.gone.get_or_insert_with(|| why.clone());
        k.claim.clear();
        k.vector = None;
        k.next_recheck = None;
        k.label = None;
    })?;
    if let Some((now, ())) = closed {
        // An update recorded while the parts above were deleted: its parts go too (an update
        // recorded after the close sees it and deletes its own).
        for part in now.parts.iter().rev().filter(|p| !kept.parts.contains(p)) {
            platform.delete(part).await?;
        }
        *kept = now;
    }
    for t in store.timers_of(&kept.job_id)? {
        store.remove_timer(&t.key)?;
    }
    store.forget_vector(&kept.job_id)?;
    store.forget_reply(&format!("{}:{}", kept.platform.as_str(), kept.target_id))?;
    tracing::info!(job = %kept.job_id, parts = kept.parts.len(), why, "answer deleted");
    Ok(())
}

/// The re-check job of `kept` for timer `n`: the answered trigger again (the same target, the
/// same requester — or nobody, for a hashtag hit), with its own id, so the timer's job is
/// stored once however often the timer fires.
pub fn recheck_job(kept: &Kept, n: u32, why: RecheckWhy) -> Job {
    let asked = kept.trigger.requester().is_some();
    let trigger = Trigger {
        cause: Cause::Recheck {
            of: kept.job_id.clone(),
            n,
            why,
            asked,
        },
        ..kept.trigger.clone()
    };
    Job::new(trigger)
}
