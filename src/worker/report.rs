//! Reported posts (`Cause::Report`) on the one stage machine: the resolve stage's rules for
//! them, the finding the compose stage writes for the moderators, and the `Note` stage that
//! delivers it — a direct message thread to the configured moderators on Mastodon (which has
//! no API for report notes), events on the subject in the labeler's Ozone on Bluesky (a
//! comment; an acknowledgement, which closes the report, only when a matched fact-check decided
//! the verdict and every report's reason is one a fact-check can judge — `misleading` itself or
//! `misleadingOther` —, read again just before, none filed after the job began; an escalation
//! when the bot could not verify it). The finding names the post's stance toward
//! the checked claim and its score. Each item is delivered once: a stable key per item
//! (`Idempotency-Key`, Ozone's `externalId`) and its id saved before the next.
//!
//! Confidential: nothing public says a post was reported or by whom. A public reply (by the
//! `[moderation.reports] channel`) carries only a verdict, worded like a hashtag hit's, with
//! no mention; the reporter is a key for bounds only; the report's comment never reaches the
//! bot (the sources drop it), so it can steer nothing but which post is checked.

use super::{Run, StageError, StageOutcome};
use crate::compose;
use crate::config::ReportChannel;
use crate::model::{Job, Note, NoteItem, Outcome, SkipReason, Usage};

/// Whether the job checks a reported post.
pub(crate) fn is_report(job: &Job) -> bool {
    matches!(job.trigger.cause, crate::model::Cause::Report { .. })
}

impl Run<'_> {
    /// The resolve stage for a reported post: within the day's report share and the
    /// reporter's window (charged once per job, before the post is fetched), readable,
    /// public, not the bot's, not answered yet — else skipped with the reason (counted),
    /// costing nothing more.
    pub(super) async fn resolve_report(&self, job: &mut Job) -> Result<StageOutcome, StageError> {
        let platform = job.trigger.platform.as_str();
        let skip = |reason: SkipReason| {
            self.worker
                .metrics
                .report(platform, &format!("skipped_{}", reason.as_str()));
            tracing::info!(why = ?reason, "a reported post is not checked");
            Ok(StageOutcome::Skip(reason))
        };
        if let Some(reason) = self.worker.moderation.triage(&job.trigger) {
            return skip(reason);
        }
        let budget = &self.worker.moderation.budget;
        let used = budget.used();
        if used > 0.0 && (used >= 1.0 || used >= budget.config.report_share) {
            // A report is the moderators' request: it waits for the next day's budget.
            let tomorrow = super::resolve::next_utc_day();
            tracing::info!(until = %tomorrow, "the day's budget share for reports is spent; the reported post waits");
            return Ok(StageOutcome::Wait(tomorrow));
        }
        // One reporter's flood is bounded by the window mentions use, charged before the
        // post is fetched (a flood of reports spends no request); the post is charged to one
        // reporter only (fifty reports of one post are one job). A job skipped here is taken
        // over by the next report of the post from someone else (intake). The platform's own
        // moderators (trusted flaggers) are bounded by what their reports cost — the day's
        // report share above — not by a window made for strangers.
        // Intake charged it already (the same job again is free): this charges jobs stored
        // before it did, and a job that waited past the hour.
        if !charge_report_window(
            &self.worker.moderation,
            &self.worker.store,
            &job.trigger,
            &job.id,
            self.worker.limits.checks_per_requester_per_hour,
        )? {
            return skip(SkipReason::OverQuotaSilenced);
        }
        let mut target = match self.platform.resolve(&job.trigger).await {
            Ok(t) => t,
            Err(crate::platform::PlatformError::Gone(e)) => return skip(SkipReason::TargetUnavailable(e)),
            Err(e) => return super::unresolved(e),
        };
        target.language = crate::lang::of(target.language.as_deref(), &target.text);
        if let Some(reason) = self.skip_reason(job, &target) {
            // The post's author, not the reporter: another report takes nothing over.
            let reason = match reason {
                SkipReason::OptedOut => SkipReason::Policy("the reported post's author opted out".into()),
                SkipReason::Blocked => SkipReason::Policy("the reported post's author is blocked".into()),
                other => other,
            };
            return skip(reason);
        }
        let quote_private = target.quote.as_ref().is_some_and(|q| !q.visibility.is_public());
        if !target.visibility.is_public() || quote_private {
            return skip(SkipReason::Policy("not public".into()));
        }
        if self.worker.store.reply_for(&job.target_key(&target.id))?.is_some() {
            return skip(SkipReason::Policy("already answered".into()));
        }
        tracing::info!(target = %target.id, "reported post resolved");
        job.target = Some(target);
        Ok(StageOutcome::Next(Usage::default()))
    }

    /// The compose stage for a reported post: the moderators' note always; a public reply,
    /// label or held reply only by the channel and only with a verdict.
    pub(super) fn compose_report(&self, job: &mut Job) -> Result<StageOutcome, StageError> {
        let channel = self.worker.moderation.config.reports.channel;
        let draft = job.draft.clone().expect("compose runs after draft");
        let verdict = draft.outcome == Outcome::Reply && draft.verdict.is_some();
        job.note = Some(Note::new(self.note_items(job)));
        self.worker.metrics.report(job.trigger.platform.as_str(), "checked");
        let mut parts = Vec::new();
        let mut label = None;
        // `label` asks for a label only: where none can be put (Mastodon, or the labeler off),
        // nothing public.
        let labels = self.platform.has_labels() && self.worker.labeler.enabled;
        let public = channel
            .public()
            .filter(|c| *c != crate::config::Channel::Label || labels);
        if let (Some(public), true) = (public, verdict) {
            let decision = crate::labeler::decide(&self.worker.labeler, job, self.platform.has_labels(), Some(public));
            if decision.reply {
                parts = self.thread(job, self.platform.limits());
            }
            label = decision.label;
        }
        let target = job.target.as_ref().expect("compose runs after resolve");
        job.plan = Some(crate::model::Plan {
            reply_to: target.id.clone(),
            visibility: self.worker.reply.visibility.max(target.visibility),
            parts,
            as_written: false,
            shrink: 0,
            edit: false,
        });
        job.label = label;
        let held = channel == ReportChannel::Review && job.plan.as_ref().is_some_and(|p| !p.parts.is_empty());
        if held {
            tracing::info!(job = %job.id, "the reported post's reply is held for a moderator's review");
            job.review = Some(crate::model::Review {
                since: chrono::Utc::now(),
                decision: None,
            });
        }
        Ok(StageOutcome::Next(Usage::default()))
    }

    /// The finding as the platform's moderators receive it, in the language of the bot's
    /// answer: where the post is, which report, then the answer the bot would give (its
    /// verdict, the fact-checks it names, its evidence links).
    fn note_items(&self, job: &Job) -> Vec<NoteItem> {
        let draft = job.draft.as_ref().expect("compose runs after draft");
        let target = job.target.as_ref().expect("compose runs after resolve");
        let lang = super::words_language(job);
        let report = match &job.trigger.cause {
            crate::model::Cause::Report { report, .. } => report.clone(),
            _ => String::new(),
        };
        // The post's address is the remote server's word: every `@` a name could follow is
        // percent-encoded, so nothing in it is a mention — in a direct message a mention is a
        // recipient, and the finding's recipients are the moderators alone.
        let post = compose::at_safe(&target.url.clone().unwrap_or_else(|| target.id.clone()));
        match job.trigger.platform {
            crate::model::PlatformKind::Bluesky => {
                let head = crate::words::say(lang, "note_report", minijinja::context! { post, report => "" });
                // One comment: Ozone keeps it whole (no post length).
                let whole = compose::TextLimits {
                    max_chars: 10_000,
                    chars_per_url: compose::AS_WRITTEN,
                };
                let mut body = compose::compose(draft, "", whole, &self.worker.reply).join("\n");
                if let Some(stance) = stance_line(draft, lang) {
                    body = format!("{body}\n{stance}");
                }
                // The post's address is the server's word: no hidden characters reach Ozone.
                let text = compose::scrub(&format!("musebot: {head}\n{body}"));
                let config = &self.worker.moderation.config.reports;
                // Closed only when a fact-check decided it and every report asked what a
                // fact-check can judge: a harassment report on a post that also repeats a known
                // claim stays open for a person.
                let judgeable = match &job.trigger.cause {
                    crate::model::Cause::Report { reasons, .. } => crate::model::judgeable(reasons),
                    _ => false,
                };
                let decided = judgeable && crate::labeler::confidence(job) == crate::config::Confidence::FactCheck;
                let unverified = draft.outcome != Outcome::Reply || draft.verdict.is_none();
                let item = if unverified && config.escalate {
                    NoteItem::Escalate(text)
                } else if decided && config.acknowledge {
                    NoteItem::Acknowledge(text)
                } else {
                    NoteItem::Comment(text)
                };
                vec![item]
            }
            crate::model::PlatformKind::Mastodon => {
                let link = self.platform.report_link(&report).unwrap_or(report);
                let moderators = self.worker.moderation.mastodon_moderator_accts();
                let lead: String = moderators
                    .iter()
                    .map(|m| format!("{} ", self.platform.handle(m)))
                    .collect();
                let limits = self.platform.limits();
                // The first part fits as written: a server counts an address on a host it does
                // not take for a link character by character, and a remote author's can be
                // longer than a whole message. Cut, it still names the report, which leads
                // to the post.
                let bare = crate::words::say(lang, "note_report", minijinja::context! { post => "", report => link });
                let room = limits
                    .max_chars
                    .saturating_sub(compose::weighted_len(&format!("{lead}{bare}"), limits.as_written()));
                let post = fit_address(&post, room);
                let head = crate::words::say(lang, "note_report", minijinja::context! { post, report => link });
                let inner = compose::TextLimits {
                    max_chars: limits.max_chars.saturating_sub(compose::weighted_len(&lead, limits)),
                    ..limits
                };
                let mut body = compose::compose(draft, "", inner, &self.worker.reply);
                body.extend(stance_line(draft, lang));
                let mut parts = vec![head];
                parts.append(&mut body);
                parts
                    .into_iter()
                    .map(|p| NoteItem::Message(compose::scrub(&format!("{lead}{p}"))))
                    .collect()
            }
        }
    }

    /// The `Note` stage: every item not yet delivered, in order, each id saved before the
    /// next. No moderators configured on Mastodon: the finding stays on the admin page.
    pub(super) async fn note(&self, job: &mut Job) -> Result<StageOutcome, StageError> {
        loop {
            let note = job.note.clone().expect("note runs after compose");
            let i = note.delivered.len();
            let Some(item) = note.items.get(i) else { break };
            if matches!(item, NoteItem::Message(_)) && self.worker.moderation.mastodon_moderator_accts().is_empty() {
                tracing::warn!("no Mastodon moderators configured; the finding is kept for the admin page only");
                if let Some(n) = job.note.as_mut() {
                    n.delivered.push(String::new());
                }
                continue;
            }
            let previous = note.delivered.last().cloned().unwrap_or_default();
            let key = format!("musebot-{}-note{i}", job.id);
            let target = job.target.as_ref().expect("note runs after resolve");
            if let NoteItem::Acknowledge(text) = item {
                // An acknowledgement closes every report on the subject, later ones included:
                // read again now, and where one is not the bot's to judge, or came after the
                // job began, the finding goes as a comment and the subject stays open.
                match self.platform.may_close(target, job.created_at).await {
                    Ok(true) => {}
                    Err(crate::platform::PlatformError::RateLimited { until, message }) => {
                        return Err(StageError::Parked { until, message });
                    }
                    Err(crate::platform::PlatformError::Transient(e)) => return Err(StageError::Transient(e)),
                    other => {
                        tracing::info!(why = ?other.err(), "a report on the subject is not the bot's to close; the finding is a comment");
                        let comment = NoteItem::Comment(text.clone());
                        if let Some(n) = job.note.as_mut() {
                            n.items[i] = comment;
                        }
                        self.worker.store.save(job)?;
                        continue;
                    }
                }
            }
            let id = self
                .platform
                .deliver_note(item, target, &previous, &key, super::words_language(job))
                .await;
            let id = match id {
                Ok(id) => id,
                // The reported post went while its finding was delivered (Ozone needs its CID):
                // nothing is left to tell about it.
                Err(crate::platform::PlatformError::Gone(e)) => {
                    self.worker
                        .metrics
                        .report(job.trigger.platform.as_str(), "skipped_target_unavailable");
                    return Ok(StageOutcome::Skip(SkipReason::TargetUnavailable(e)));
                }
                Err(crate::platform::PlatformError::RateLimited { until, message }) => {
                    return Err(StageError::Parked { until, message });
                }
                Err(crate::platform::PlatformError::Transient(e)) => return Err(StageError::Transient(e)),
                Err(other) => return Err(StageError::Fatal(other.to_string())),
            };
            tracing::info!(item = item.as_str(), n = i, "finding delivered to the moderators");
            if let Some(n) = job.note.as_mut() {
                n.delivered.push(id);
                if !n.pending() {
                    n.done_at = Some(chrono::Utc::now());
                }
            }
            self.worker.store.save(job)?;
        }
        self.worker.metrics.report(job.trigger.platform.as_str(), "noted");
        Ok(StageOutcome::Next(Usage::default()))
    }
}

/// `address` cut to `room` characters as a server counts them written (graphemes), ending in
/// "…" when cut.
fn fit_address(address: &str, room: usize) -> String {
    use unicode_segmentation::UnicodeSegmentation;
    if address.graphemes(true).count() <= room {
        return address.to_string();
    }
    let mut cut: String = address.graphemes(true).take(room.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// The moderators' line on the post's stance toward the checked claim, with its score: why a
/// finding that names a fact-check carries no label (or does).
fn stance_line(draft: &crate::model::Draft, lang: &str) -> Option<String> {
    let s = draft.stance.as_ref()?;
    let stance = crate::words::say(lang, s.stance.name_key(), ());
    let score = format!("{:.2}", s.score);
    Some(crate::words::say(
        lang,
        "note_stance",
        minijinja::context! { stance, score },
    ))
}

/// Charges report job `job_id` to its reporter's sliding hourly window (`per_hour`); `false`
/// once it is spent. A remote server files Flags under any actor it likes: its reporters
/// share one window, keyed by its domain, and none of them is trusted. The platform's own
/// moderators (trusted flaggers) are charged nothing. Intake charges it when a report comes
/// (so a spent reporter's job ends at once and another reporter's report of the post takes
/// it over); the resolve stage again (free for the same job).
pub(crate) fn charge_report_window(
    moderation: &crate::moderation::Moderation,
    store: &crate::store::Store,
    t: &crate::model::Trigger,
    job_id: &str,
    per_hour: u32,
) -> Result<bool, crate::store::StoreError> {
    let platform = t.platform.as_str();
    let author = &t.author;
    let remote = author.handle.split_once('@').map(|(_, domain)| domain.to_lowercase());
    let who = match &remote {
        Some(domain) => format!("{platform}:server:{domain}"),
        None => format!("{platform}:{}", author.key()),
    };
    let trusted = remote.is_none() && moderation.is_moderator(t.platform, &author.handle, author.id.as_deref());
    if trusted {
        return Ok(true);
    }
    store.charge_window(
        &format!("rate:checks:{who}"),
        job_id,
        per_hour,
        chrono::Duration::hours(1),
        chrono::Utc::now(),
    )
}
