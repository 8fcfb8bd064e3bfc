//! The draft and verify stages: the pipeline writes the answer (Muse's steps checkpointed one
//! by one in the job's retrieval, or the baseline), then the agents debate it against its
//! evidence — a revision is the model's words again (a rating no named check gave dropped, the
//! deciding checks named), a withdrawal the bot's, and never a verdict beside a contrary named
//! check without saying so.

use super::{Run, StageError, StageOutcome};
use crate::model::{Job, Outcome, Retrieval, Verification};

impl Run<'_> {
    pub(super) async fn draft(&self, job: &mut Job) -> Result<StageOutcome, StageError> {
        let target = job.target.clone().expect("draft runs after resolve");
        let mut retrieval = job.retrieval.clone().unwrap_or_default();
        // Each finished retrieval step is saved with the job, so a restart skips it.
        let (store, mut snapshot) = (self.worker.store.clone(), job.clone());
        let mut checkpoint = move |r: &Retrieval| {
            snapshot.retrieval = Some(r.clone());
            if let Err(e) = store.save(&snapshot) {
                tracing::warn!(error = %e, "checkpoint failed; the step may be repeated after a crash");
            }
        };
        let result = if super::watch::answers_watch(job) {
            // A watched post's own job rests only on the review its match named; that review is
            // the post's claim (the watch decided it) for the job and for its re-checks (the
            // watch's job, read back, names it).
            let only = match &job.trigger.cause {
                crate::model::Cause::Watch { review } => Some(review.clone()),
                _ => None,
            };
            let watched = match &job.trigger.cause {
                crate::model::Cause::Recheck { of, .. } => match self.worker.store.job(of) {
                    Ok(Some(first)) => match first.trigger.cause {
                        crate::model::Cause::Watch { review } => Some(review),
                        _ => None,
                    },
                    Ok(None) => None,
                    // Says less, never more: without the watch's review the re-check decides
                    // the post's claim by its cosine, as a mention would.
                    Err(e) => {
                        tracing::warn!(error = %e, job = %of, "the re-checked answer's first job could not be read; its claim is matched again");
                        None
                    }
                },
                _ => only.clone(),
            };
            self.worker
                .pipeline
                .draft_known(&target, &mut retrieval, only.as_deref(), watched.as_deref())
                .await
        } else {
            self.worker
                .pipeline
                .draft(&target, &mut retrieval, &mut checkpoint)
                .await
        };
        if self.worker.pipeline.muse.is_some() {
            job.retrieval = Some(retrieval);
        }
        match result {
            Ok((draft, usage)) => {
                if let Some(r) = &job.retrieval {
                    let mut found: Vec<(&str, &str)> = r
                        .fact_checks
                        .iter()
                        .map(|c| (c.url.as_str(), c.claim.as_str()))
                        .collect();
                    found.extend(
                        r.pages
                            .iter()
                            .flatten()
                            .flat_map(|p| p.claim_reviews.iter())
                            .map(|c| (c.url.as_str(), c.claim.as_str())),
                    );
                    found.sort();
                    found.dedup();
                    // Named in the reply (the checks it rests on).
                    let deciding = r.deciding_reviews();
                    let named = if draft.outcome == Outcome::Reply {
                        deciding.len()
                    } else {
                        0
                    };
                    self.worker.metrics.fact_checks(found.len(), named);
                    if r.recalled.as_ref().is_some_and(|x| x.from.is_some()) {
                        self.worker.metrics.living("memory");
                    }
                    let matched = r.matches.iter().flatten().filter(|m| m.decides).count();
                    if matched > 0 && draft.outcome == Outcome::Reply {
                        self.worker.metrics.claim_matches_used(matched);
                    }
                }
                job.draft = Some(draft);
                Ok(StageOutcome::Next(usage))
            }
            Err(e) => Err(self.pipeline_error(e)),
        }
    }

    /// A debate checks the draft against its evidence; it may be revised or withdrawn.
    pub(super) async fn verify(&self, job: &mut Job) -> Result<StageOutcome, StageError> {
        if super::watch::answers_watch(job) {
            // A watched post's verdict is the published fact-checks', worded by the bot: no
            // words of a model to debate.
            job.verification = Some(Verification {
                outcome: Some(crate::model::Verified::NotNeeded),
                ..Verification::default()
            });
            return Ok(StageOutcome::Next(crate::model::Usage::default()));
        }
        let target = job.target.clone().expect("verify runs after resolve");
        let draft = job.draft.clone().expect("verify runs after draft");
        let evidence = job.retrieval.as_ref().map(Retrieval::all_evidence).unwrap_or_default();
        // Fact-checks the draft names whose rating contradicts its verdict: debated, and said.
        let checks = job
            .retrieval
            .as_ref()
            .map(crate::pipeline::muse::contest::checks)
            .unwrap_or_default();
        let against = crate::pipeline::muse::contest::against(&draft, &checks);
        let contested = crate::pipeline::muse::contest::lines(&draft, &against);
        let mut verification = job.verification.clone().unwrap_or_default();
        // Each debate turn is saved with the job, so a restart resumes at the turn it lost.
        let (store, mut snapshot) = (self.worker.store.clone(), job.clone());
        let mut checkpoint = move |v: &Verification| {
            snapshot.verification = Some(v.clone());
            if let Err(e) = store.save(&snapshot) {
                tracing::warn!(error = %e, "checkpoint failed; the turn may be repeated after a crash");
            }
        };
        let result = crate::pipeline::verify::run(
            &self.worker.pipeline,
            &target,
            &draft,
            &evidence,
            &contested,
            &mut verification,
            &mut checkpoint,
        )
        .await;
        let outcome = verification.outcome;
        job.verification = Some(verification);
        match result {
            Ok((replacement, usage)) => {
                if let Some(o) = outcome.filter(|o| *o != crate::model::Verified::NotNeeded) {
                    self.worker.metrics.verification(o.as_str());
                }
                let deciding = job
                    .retrieval
                    .as_ref()
                    .map(Retrieval::deciding_reviews)
                    .unwrap_or_default();
                let mut d = match replacement {
                    // A revision is the model's words, a withdrawal the bot's: the check the
                    // draft named is named again.
                    // The revision is the model's words too: a rating no named check gave is
                    // dropped from it as from the first draft (nothing left: the draft stands).
                    Some(mut d) => {
                        let unnamed = job.retrieval.as_ref().map(crate::pipeline::muse::unnamed::Unnamed::of);
                        d.text = unnamed.map_or(d.text.clone(), |u| u.drop_from(&d.text));
                        if d.text.trim().is_empty() {
                            draft
                        } else {
                            crate::pipeline::muse::known::answer(
                                &mut d,
                                &deciding,
                                &target,
                                job.retrieval.as_ref().and_then(|r| r.stance.as_ref()),
                            );
                            d
                        }
                    }
                    None => draft,
                };
                // Never a verdict beside a contrary named check without saying so.
                let against = crate::pipeline::muse::contest::against(&d, &checks);
                if !against.is_empty() {
                    tracing::info!(
                        checks = against.len(),
                        "the reply's verdict contradicts a fact-check it names; said so"
                    );
                    crate::pipeline::muse::contest::say_so(&mut d, &against, &deciding, &target);
                }
                job.draft = Some(d);
                Ok(StageOutcome::Next(usage))
            }
            Err(e) => Err(self.pipeline_error(e)),
        }
    }

    fn pipeline_error(&self, e: crate::pipeline::PipelineError) -> StageError {
        self.worker.metrics.error(e.kind());
        if e.is_transient() {
            StageError::Transient(e.to_string())
        } else {
            StageError::Fatal(e.to_string())
        }
    }
}
