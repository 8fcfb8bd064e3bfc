//! `musebot check`: runs the daemon's own stage loop once on a post (by URL) or on a text, on a
//! platform that resolves posts but never posts ([`DryRun`]) and a store that lives only for
//! this run, and reports the reply and a trace — queries, every link and page kept or dropped
//! with its reason, evidence, per-step time, tokens and a cost estimate. `--json` for machines.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::compose::TextLimits;
use crate::config::Config;
use crate::metrics::Metrics;
use crate::model::{Account, Cause, Job, Post, Retrieval, Stage, Status, StepTrace, Trigger, Verification, Visibility};
use crate::platform::dry_run::DryRun;
use crate::platform::mastodon::Mastodon;
use crate::platform::{Platform, Platforms};
use crate::secret;
use crate::store::Store;
use crate::worker::Worker;

#[derive(Debug, Serialize)]
pub struct CheckReport {
    pub post: Post,
    pub pipeline: &'static str,
    pub outcome: &'static str,
    pub parts: Vec<String>,
    pub retrieval: Option<Retrieval>,
    /// The debate that checked the draft against its evidence (when it ran).
    pub verification: Option<Verification>,
    pub trace: Vec<StepTrace>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_estimate: f64,
}

pub async fn check(
    config: &Config,
    target: &str,
    images: &[String],
    before: Option<DateTime<Utc>>,
) -> anyhow::Result<CheckReport> {
    // `--image FILE` reads a local file: allowed here only, and only when the operator named
    // one (the daemon never reads files; a post's media URLs never come through here).
    let mut config = config.clone();
    config.images.local_files = images
        .iter()
        .any(|i| !i.starts_with("http://") && !i.starts_with("https://"));
    let config = &config;
    let platform = if !images.is_empty() {
        // A caption with its images, as an operator saw them somewhere.
        DryRun::text(text_post("text", target, images, before)?, TEXT_LIMITS)
    } else if crate::platform::bluesky::records::parse_post_ref(target).is_some() {
        DryRun::bluesky(bluesky_reader(config).await?, target)
    } else if target.starts_with("http://") || target.starts_with("https://") {
        DryRun::url(mastodon_reader(config).await?, target)
    } else {
        DryRun::text(text_post("text", target, &[], before)?, TEXT_LIMITS)
    };
    let kind = platform.kind;
    let store = Store::open_temporary()?;
    let metrics = Metrics::new();
    // One post, one temporary store: nothing is kept or remembered.
    let mut config = config.clone();
    config.living.enabled = false;
    let config = &config;
    let pipeline = crate::pipeline::build(config, Some(store.clone()), Some(metrics.clone()), before)?;
    let worker = worker(config, store.clone(), pipeline, platform, metrics);
    let job = flag_job(kind, "check", target);
    store.save(&job)?;
    worker.run(&job.id).await;
    let job = store
        .job(&job.id)?
        .ok_or_else(|| anyhow::anyhow!("the check's job vanished from its store"))?;
    match &job.status {
        Status::Done => {}
        Status::Skipped(reason) => anyhow::bail!("not checked ({}): {reason:?}", reason.as_str()),
        Status::Failed(e) => anyhow::bail!("{e}"),
        Status::Pending => anyhow::bail!("{}", job.last_error.as_deref().unwrap_or("the check did not finish")),
    }
    Ok(report(config, job))
}

/// How a post given as text is split: Mastodon's defaults.
pub const TEXT_LIMITS: TextLimits = TextLimits {
    max_chars: 500,
    chars_per_url: 23,
};

/// A post given as text, with its images (URLs, or local files as `file://` URLs), posted at
/// `before` (now when not given).
pub fn text_post(id: &str, text: &str, images: &[String], before: Option<DateTime<Utc>>) -> anyhow::Result<Post> {
    let mut post = Post::text_only(id, "unknown", text, before.unwrap_or_else(Utc::now), Visibility::Public);
    for image in images {
        let url = if image.starts_with("http://") || image.starts_with("https://") {
            url::Url::parse(image).map_err(|e| anyhow::anyhow!("--image {image}: not a URL ({e})"))?;
            image.clone()
        } else {
            let path = std::fs::canonicalize(image)
                .map_err(|e| anyhow::anyhow!("--image {image}: not a URL, and not a readable file ({e})"))?;
            format!("file://{}", path.display())
        };
        post.media.push(crate::model::Media {
            kind: crate::model::MediaKind::Image,
            url,
            preview_url: None,
            alt: None,
        });
    }
    Ok(post)
}

/// The daemon's own worker over one never-posting platform and a store of this run's.
pub fn worker(
    config: &Config,
    store: Store,
    pipeline: crate::pipeline::Pipeline,
    platform: DryRun,
    metrics: crate::metrics::SharedMetrics,
) -> Worker {
    Worker {
        moderation: crate::moderation::Moderation::new(config.moderation.clone(), store.clone())
            .with_budget(config.budget.clone(), &config.llm.model),
        store,
        platforms: Platforms::new([Platform::DryRun(platform)]),
        prompts: pipeline.prompts.clone(),
        pipeline,
        metrics,
        reply: config.reply.clone(),
        limits: config.limits.clone(),
        privacy: config.privacy.clone(),
        // `check` and `eval` post nothing: there is no answer to keep.
        living: crate::config::LivingConfig {
            enabled: false,
            ..config.living.clone()
        },
        // Nor is anything labelled (the `DryRun` platform has no labels).
        labeler: config.bluesky.labeler.clone(),
        watch_auto_label: config.watch.auto_label,
        watch_label_verdicts: config.watch.label_verdicts(),
        retry_base: std::time::Duration::from_secs(config.daemon.retry_base_secs),
    }
}

/// The job an operator's check is: a moderator's flag of the post `status_id`, answered
/// directly to the operator (no requester quota, nobody's mention).
pub fn flag_job(kind: crate::model::PlatformKind, event_id: &str, status_id: &str) -> Job {
    Job::new(Trigger {
        language: None,
        platform: kind,
        cause: Cause::ModeratorFlag {
            moderator: "musebot check".into(),
        },
        event_id: event_id.into(),
        status_id: status_id.into(),
        in_reply_to_id: None,
        quote_of: None,
        asked_in_text: true,
        author: Account {
            handle: "operator".into(),
            is_bot: false,
            is_self: false,
            nobot: false,
            id: None,
        },
        visibility: Visibility::Direct,
        created_at: Utc::now(),
        text: String::new(),
    })
}

/// What `usage` costs at `[llm]`'s prices.
pub fn cost(config: &Config, usage: crate::model::Usage) -> f64 {
    usage.prompt_tokens as f64 * config.llm.prompt_price_per_million / 1e6
        + usage.completion_tokens as f64 * config.llm.completion_price_per_million / 1e6
}

/// The Mastodon client `check` reads a post URL with (the instance's limits, no identity).
async fn mastodon_reader(config: &Config) -> anyhow::Result<Mastodon> {
    let m = &config.mastodon;
    let token =
        secret::resolve("mastodon.access_token", &m.access_token_env, &m.access_token_file, true)?.expect("required");
    Ok(Mastodon::reader(m, token).await?)
}

/// The Bluesky client `check` reads a post with (logged in, nothing written).
async fn bluesky_reader(config: &Config) -> anyhow::Result<crate::platform::bluesky::Bluesky> {
    let b = &config.bluesky;
    if b.identifier.is_empty() {
        anyhow::bail!("bluesky.identifier: is empty — a Bluesky post is read through the bot's account; set [bluesky] identifier and its app password");
    }
    let password =
        secret::resolve("bluesky.app_password", &b.app_password_env, &b.app_password_file, true)?.expect("required");
    Ok(crate::platform::bluesky::Bluesky::reader(b, password).await?)
}

/// The finished job as a report: the stage trace with the retrieval steps in place of the
/// draft stage (Muse), tokens and cost.
fn report(config: &Config, job: Job) -> CheckReport {
    let muse = config.daemon.pipeline == crate::config::PipelineMode::Muse;
    let mut trace = Vec::new();
    for record in &job.trace {
        let step = |name: &str| StepTrace {
            step: name.into(),
            millis: record.millis,
            prompt_tokens: record.prompt_tokens,
            completion_tokens: record.completion_tokens,
        };
        match record.stage {
            Stage::Draft if muse => trace.extend(job.retrieval.iter().flat_map(|r| r.steps.iter().cloned())),
            Stage::Post => {}
            stage => trace.push(step(stage.as_str())),
        }
    }
    let usage = job.tokens();
    let cost_estimate = cost(config, usage);
    let draft = job.draft.as_ref().expect("a finished job has a draft");
    CheckReport {
        pipeline: if muse { "muse" } else { "baseline" },
        outcome: draft.outcome.as_str(),
        parts: job.plan.as_ref().map(|p| p.parts.clone()).unwrap_or_default(),
        retrieval: if muse { job.retrieval.clone() } else { None },
        verification: job
            .verification
            .clone()
            .filter(|v| v.outcome != Some(crate::model::Verified::NotNeeded)),
        trace,
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        cost_estimate,
        post: job.target.expect("a finished job has a target"),
    }
}
impl CheckReport {
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "post by {} at {} (language: {}):\n  {}\n\n",
            self.post.author,
            self.post.created_at.to_rfc3339(),
            self.post.language.as_deref().unwrap_or("unknown"),
            self.post.text.replace('\n', "\n  ")
        ));
        if let Some(r) = &self.retrieval {
            for (i, d) in r.images.iter().flatten().enumerate() {
                out.push_str(&format!("image {} ({}): {}\n", i + 1, d.made_from, d.url));
                let show = |out: &mut String, name: &str, v: Option<&str>| {
                    if let Some(v) = v.filter(|v| !v.is_empty()) {
                        out.push_str(&format!("  {name}: {}\n", v.replace('\n', " / ")));
                    }
                };
                show(&mut out, "not read", d.refused.as_deref());
                show(&mut out, "alt text", d.alt.as_deref());
                show(&mut out, "caption", d.caption.as_deref());
                show(&mut out, "people", Some(&d.people.join(", ")));
                show(&mut out, "text (OCR)", d.ocr.as_deref());
                show(&mut out, "vision failed", d.vision_error.as_deref());
                show(&mut out, "description", d.description.as_deref());
            }
            out.push_str("queries:\n");
            for q in r.queries.iter().flatten() {
                out.push_str(&format!("  • {q}\n"));
            }
            let found_by_image: Vec<&str> = r
                .candidates
                .iter()
                .flatten()
                .filter(|c| c.query.starts_with("reverse image"))
                .map(|c| c.url.as_str())
                .collect();
            if let Some(ctx) = &r.image_context {
                let finding = ctx.finding.map_or("not judged".to_string(), |f| format!("{f:?}"));
                out.push_str(&format!(
                    "image context ({} pages showed the picture; {} debate turns): {finding}\n",
                    ctx.sources.len(),
                    ctx.debate.turns.len()
                ));
            }
            if !found_by_image.is_empty() {
                out.push_str("found by reverse image search:\n");
                for u in &found_by_image {
                    out.push_str(&format!("  ◦ {u}\n"));
                }
            }
            out.push_str("pages kept:\n");
            for p in r.pages.iter().flatten() {
                let picture = p
                    .image_match
                    .map(|d| format!(", its main image is the post's picture ({d} bits apart)"))
                    .unwrap_or_default();
                out.push_str(&format!(
                    "  + [{}] {:.2} {}  ({} words{picture})\n",
                    p.tier.as_str(),
                    p.relevance,
                    p.url,
                    p.words
                ));
            }
            out.push_str("dropped:\n");
            for d in &r.dropped {
                out.push_str(&format!("  - {:<18} {}\n", d.reason.as_str(), d.url));
            }
            out.push_str("evidence:\n");
            for e in r.evidence.iter().flatten() {
                for q in &e.refute {
                    out.push_str(&format!("  ✗ refutes  \"{q}\" — {}\n", e.url));
                }
                for q in &e.context {
                    out.push_str(&format!("  ≈ context  \"{q}\" — {}\n", e.url));
                }
            }
            // Claim matching: each candidate of the fact-check corpus, its scores, what decided.
            if let Some(matches) = r.matches.as_ref().filter(|m| !m.is_empty()) {
                out.push_str(
                    "claim matches (fact-check corpus):
",
                );
                for m in matches {
                    let fate = if let Some(live) = m.deciding() {
                        format!(
                            "DECIDES: its page's own markup rates the same claim \"{}\"",
                            crate::model::rating::clean(&live.rating_text())
                        )
                    } else if m.review.same_claim {
                        format!("same claim, not used: {}", m.why_not.as_deref().unwrap_or("?"))
                    } else {
                        "another claim (below the same-claim threshold)".to_string()
                    };
                    out.push_str(&format!(
                        "  score {:.3} cosine {} bm25 {:.2} — {} rated \"{}\" the claim \"{}\" — {} — {fate}\n",
                        m.score,
                        m.cosine.map_or("none".to_string(), |c| format!("{c:.3}")),
                        m.bm25,
                        m.review.fact_checker.as_deref().unwrap_or("(not a fact-checker)"),
                        crate::model::rating::clean(&m.review.rating_text()),
                        crate::model::rating::clean(&m.review.claim),
                        m.review.url
                    ));
                }
            }
            // Every professional fact-check found (API or a page's markup), and what became of it.
            let cited = r.deciding_reviews();
            let mut reviews: Vec<&crate::model::ClaimReview> = r.fact_checks.iter().collect();
            reviews.extend(r.pages.iter().flatten().flat_map(|p| p.claim_reviews.iter()));
            if !reviews.is_empty() {
                out.push_str("fact-checks:\n");
                let mut shown = std::collections::HashSet::new();
                for c in reviews {
                    if !shown.insert((c.url.clone(), c.publisher.clone(), c.claim.clone())) {
                        continue;
                    }
                    let fate = if cited.iter().any(|x| x.url == c.url && x.publisher == c.publisher) {
                        "kept: named in the reply".to_string()
                    } else if c.fact_checker.is_none() && !c.other_claim {
                        "evidence only: not a fact-checker's page, so never named".to_string()
                    } else if !c.same_claim && !c.other_claim {
                        format!(
                            "evidence only: below the same-claim threshold (cosine {:.2} with the post)",
                            c.claim_cosine.unwrap_or_default()
                        )
                    } else if c.other_claim {
                        format!(
                            "dropped: it reviews another claim (cosine {:.2} with the post)",
                            c.claim_cosine.unwrap_or_default()
                        )
                    } else if let Some(d) = r.dropped.iter().find(|d| d.url == c.url) {
                        format!("dropped: its page was {}", d.reason.as_str())
                    } else if r.pages.iter().flatten().any(|p| p.url == c.url) {
                        "dropped: its page gave no evidence".to_string()
                    } else {
                        "dropped: its page was not read".to_string()
                    };
                    out.push_str(&format!(
                        "  {} ({:?}) rated \"{}\" the claim \"{}\" — {} — {fate}\n",
                        c.publisher,
                        c.source,
                        c.rating_text(),
                        c.claim,
                        c.url
                    ));
                }
            }
            if r.unverified_quotes > 0 {
                out.push_str(&format!(
                    "  ({} quotes dropped: not verbatim in their page)\n",
                    r.unverified_quotes
                ));
            }
            out.push('\n');
        }
        if let Some(v) = &self.verification {
            out.push_str(&format!(
                "verification: {}\n",
                v.outcome.map_or("unfinished", |o| o.as_str())
            ));
            for (name, debate) in [("draft", Some(&v.first)), ("revision", v.second.as_ref())] {
                for t in debate.into_iter().flat_map(|d| &d.turns) {
                    out.push_str(&format!(
                        "  {name} round {} agent {}: {} — {}\n",
                        t.round,
                        t.agent + 1,
                        t.support.as_str(),
                        t.reasons.replace('\n', " ")
                    ));
                    for o in &t.objections {
                        out.push_str(&format!("      ✗ {o}\n"));
                    }
                }
            }
            out.push('\n');
        }
        out.push_str(&format!(
            "reply ({} pipeline, {}, {} part(s)):\n",
            self.pipeline,
            self.outcome,
            self.parts.len()
        ));
        for p in &self.parts {
            out.push_str(&format!("  ▸ {}\n", p.replace('\n', "\n    ")));
        }
        out.push_str("\ntrace:\n");
        for t in &self.trace {
            out.push_str(&format!(
                "  {:<8} {:>7} ms  prompt {:>5} tok  completion {:>5} tok\n",
                t.step, t.millis, t.prompt_tokens, t.completion_tokens
            ));
        }
        out.push_str(&format!(
            "  total tokens: prompt {}, completion {}; cost estimate ${:.4}\n",
            self.prompt_tokens, self.completion_tokens, self.cost_estimate
        ));
        // Outside text (the post, titles, ratings, claims) reaches the operator's terminal.
        crate::compose::scrub(&out)
    }
}
