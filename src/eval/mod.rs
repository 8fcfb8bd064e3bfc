//! `musebot eval`: measures what the replies are worth. Each post of a file runs through the
//! daemon's own stage loop ([`crate::worker::Worker`] on the never-posting platform, as
//! `check` does — no second pipeline), a few at a time, each with only what was published
//! before it when its time is known; its links are checked through the fetch guard, its quotes
//! against the pages it cites, and an LLM judge rates it on the Muse rubric. Every finished
//! post is one durable line of `DIR/results.jsonl`, so an interrupted run resumes where it
//! stopped; `DIR/report.html` is the page a person reads. With expert ratings (Muse's
//! `ratings/`), the judge also rates the replies the experts rated, and the agreement with
//! them is printed beside theirs with each other.
//!
//! Rooms: [`input`] (posts), [`figures`] (integrity figures), [`record`] (results.jsonl,
//! totals), [`rubric`] and [`judge`], [`experts`] and [`agreement`], [`compare`], [`report`].

pub mod agreement;
pub mod compare;
pub mod experts;
pub mod figures;
pub mod input;
pub mod judge;
pub mod record;
pub mod report;
pub mod rubric;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::model::{Status, Usage};
use crate::platform::dry_run::DryRun;
use crate::store::Store;
use input::EvalPost;
use judge::{Case, Judge, Rating};
use record::{EvidenceLine, PostResult};

/// What `musebot eval` was asked.
#[derive(Debug, Clone)]
pub struct EvalArgs {
    pub posts: PathBuf,
    pub out: PathBuf,
    /// Only the first N posts of the file.
    pub limit: Option<usize>,
    /// Posts at once (default `[eval] jobs`).
    pub jobs: Option<usize>,
    /// Rate replies with `[eval.judge]`.
    pub judge: bool,
    /// Only rate the replies the experts rated (no post is run).
    pub experts_only: bool,
    /// Run again the posts that failed in an earlier run.
    pub retry_failed: bool,
}

/// One expert-rated reply as the judge rated it (`DIR/experts.jsonl`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JudgedItem {
    pub key: String,
    pub rating: Option<Rating>,
    pub error: Option<String>,
}

impl record::Keyed for JudgedItem {
    fn key(&self) -> &str {
        &self.key
    }
}

/// What the run shared between posts.
struct Shared {
    config: Config,
    store: Store,
    metrics: crate::metrics::SharedMetrics,
    /// `None` when only the experts' replies are rated (no model or search needed).
    pipeline: Option<crate::pipeline::Pipeline>,
    fetcher: crate::fetch::Fetcher,
    judge: Option<Judge>,
}

/// Runs the evaluation; returns the text printed at the end.
pub async fn run(config: &Config, args: &EvalArgs) -> anyhow::Result<String> {
    let mut input = input::load(&args.posts)?;
    for why in &input.skipped {
        eprintln!("eval: skipped {why}");
    }
    if let Some(n) = args.limit {
        input.posts.truncate(n);
    }
    std::fs::create_dir_all(&args.out).map_err(|e| anyhow::anyhow!("--out {}: {e}", args.out.display()))?;
    let mut config = config.clone();
    // Images named in the file may be local files: allowed here, as in `check --image`.
    config.images.local_files = input.posts.iter().flat_map(|p| &p.images).any(|i| !i.contains("://"));
    // Each post is measured on its own: no answer is kept, none lends its evidence to another.
    config.living.enabled = false;
    let store = Store::open_temporary()?;
    let metrics = crate::metrics::Metrics::new();
    let pipeline = if args.experts_only {
        None
    } else {
        Some(crate::pipeline::build(
            &config,
            Some(store.clone()),
            Some(metrics.clone()),
            None,
        )?)
    };
    let judge = if args.judge {
        let j = config.eval.judge.as_llm(&config.llm);
        let key = crate::secret::resolve("eval.judge.api_key", &j.api_key_env, &j.api_key_file, false)?;
        let prompts = match &pipeline {
            Some(p) => p.prompts.clone(),
            None => Arc::new(crate::prompts::Prompts::load(&config.daemon.prompts_dir)?),
        };
        Some(Judge {
            llm: crate::llm::LlmClient::new(&j, key)?,
            prompts,
        })
    } else {
        None
    };
    let shared = Arc::new(Shared {
        fetcher: crate::fetch::Fetcher::new(&config.fetch).map_err(anyhow::Error::msg)?,
        config,
        store,
        metrics,
        pipeline,
        judge,
    });
    let results_path = args.out.join("results.jsonl");
    if !args.experts_only {
        run_posts(&shared, &input.posts, &results_path, args).await?;
    }
    let mut agreement = None;
    if args.experts_only && (input.ratings.is_none() || shared.judge.is_none()) {
        anyhow::bail!(
            "--experts-only: needs expert ratings (ratings/ beside the posts, as in Muse's folder) and the judge (drop --no-judge)"
        );
    }
    if let (Some(dir), Some(_)) = (&input.ratings, &shared.judge) {
        let experts = experts::load(dir, &input.posts)?;
        let judged = judge_experts(&shared, &experts, &args.out.join("experts.jsonl"), args).await?;
        let a = agreement::agreement(&experts, &judged);
        std::fs::write(args.out.join("agreement.json"), serde_json::to_vec_pretty(&a)?)?;
        agreement = Some(a);
    }
    let results = record::read(&results_path)?;
    let wanted: HashSet<&str> = input.posts.iter().map(|p| p.id.as_str()).collect();
    let mine: Vec<&PostResult> = results.values().filter(|r| wanted.contains(r.id.as_str())).collect();
    let totals = record::totals(mine.iter().copied());
    std::fs::write(args.out.join("summary.json"), serde_json::to_vec_pretty(&totals)?)?;
    let title = format!("musebot eval: {}", args.posts.display());
    let report = report::write_report(&args.out, &title, &mine, &totals, agreement.as_deref(), &input.skipped)?;
    let mut text = summary_text(&totals, agreement.as_deref(), &report);
    if !input.skipped.is_empty() {
        text.push_str(&format!(
            "input lines skipped: {} (reasons above and in the report)\n",
            input.skipped.len()
        ));
    }
    Ok(text)
}

/// Runs every post not yet in `results.jsonl`, `jobs` at a time, appending each as it ends.
async fn run_posts(shared: &Arc<Shared>, posts: &[EvalPost], path: &Path, args: &EvalArgs) -> anyhow::Result<()> {
    let done = record::read_lines::<PostResult>(path, true)?;
    rejudge(shared, &done, path).await?;
    let pending: Vec<EvalPost> = posts
        .iter()
        .filter(|p| match done.get(&p.id) {
            Some(r) => args.retry_failed && r.failed(),
            None => true,
        })
        .cloned()
        .collect();
    let total = posts.len();
    let mut finished = total - pending.len();
    if finished > 0 {
        eprintln!(
            "eval: {finished} of {total} posts already in {} (resumed)",
            path.display()
        );
    }
    let jobs = args
        .jobs
        .unwrap_or(shared.config.eval.jobs)
        .clamp(1, shared.config.daemon.max_jobs_in_flight.max(1));
    let (mut failed, mut tokens, mut cost) = (0usize, 0u64, 0.0f64);
    let mut stream = futures_util::stream::iter(pending.into_iter().enumerate())
        .map(|(n, post)| {
            let shared = shared.clone();
            async move { run_one(&shared, &post, n).await }
        })
        .buffer_unordered(jobs);
    while let Some(result) = stream.next().await {
        record::append(path, &result)?;
        finished += 1;
        failed += usize::from(result.failed());
        let f = &result.figures;
        tokens += f.prompt_tokens + f.completion_tokens + f.judge_prompt_tokens + f.judge_completion_tokens;
        cost += f.cost + f.judge_cost;
        eprintln!(
            "eval: {finished}/{total} posts done, {failed} failed, {tokens} tokens, cost {cost:.4} so far — {} {}",
            result.id, result.outcome
        );
    }
    Ok(())
}

/// Posts finished in an earlier run without the judge's rating (run with `--no-judge`, or the
/// judge failed) are rated now, without running the post again; each rated post is appended
/// again (its later line replaces the earlier one).
async fn rejudge(shared: &Shared, done: &BTreeMap<String, PostResult>, path: &Path) -> anyhow::Result<()> {
    let Some(judge) = &shared.judge else { return Ok(()) };
    for r in done
        .values()
        .filter(|r| r.judge.is_none() && !r.failed() && !r.parts.is_empty())
    {
        let mut r = r.clone();
        rate(&shared.config, judge, &mut r).await;
        record::append(path, &r)?;
        eprintln!("eval: rated {} (finished earlier without a rating)", r.id);
    }
    Ok(())
}

/// The judge's rating of a finished post, its tokens and cost in the post's figures.
async fn rate(config: &Config, judge: &Judge, result: &mut PostResult) {
    let case = Case {
        text: &result.text,
        created_at: result.time.map(|t| t.to_rfc3339()).unwrap_or_else(|| "unknown".into()),
        reply: &result.reply(),
        references: result.links.iter().map(|l| l.url.clone()).collect(),
    };
    match judge.rate(&case).await {
        Ok((rating, u)) => {
            result.judge = Some(rating);
            result.judge_error = None;
            result.figures.judge_prompt_tokens = u.prompt_tokens;
            result.figures.judge_completion_tokens = u.completion_tokens;
            result.figures.judge_cost = judge_cost(config, u);
        }
        Err(e) => result.judge_error = Some(e),
    }
}

/// One post through the daemon's stages, then its links, quotes and the judge.
async fn run_one(shared: &Shared, post: &EvalPost, n: usize) -> PostResult {
    let started = Instant::now();
    let mut result = PostResult {
        id: post.id.clone(),
        text: post.text.clone(),
        time: post.time,
        language: post.language.clone(),
        outcome: "failed".into(),
        error: None,
        verdict: None,
        parts: Vec::new(),
        evidence: Vec::new(),
        links: Vec::new(),
        quotes: Vec::new(),
        figures: Default::default(),
        trace: Vec::new(),
        judge: None,
        judge_error: None,
        references: post.references.clone(),
    };
    let job = match answer(shared, post, n).await {
        Ok(job) => job,
        Err(e) => {
            result.error = Some(e.to_string());
            result.figures.seconds = started.elapsed().as_secs_f64();
            return result;
        }
    };
    let usage = job.tokens();
    let f = &mut result.figures;
    f.prompt_tokens = usage.prompt_tokens;
    f.completion_tokens = usage.completion_tokens;
    f.cost = crate::check::cost(&shared.config, usage);
    f.llm_calls = job.trace.iter().map(|s| s.llm_calls).sum();
    f.llm_in_sequence = job.trace.iter().map(|s| s.llm_in_sequence).sum();
    result.trace = job
        .trace
        .iter()
        .map(|s| crate::model::StepTrace {
            step: s.stage.as_str().into(),
            millis: s.millis,
            prompt_tokens: s.prompt_tokens,
            completion_tokens: s.completion_tokens,
        })
        .collect();
    match &job.status {
        Status::Done => {}
        Status::Skipped(reason) => {
            result.outcome = format!("skipped:{}", reason.as_str());
            result.figures.seconds = started.elapsed().as_secs_f64();
            return result;
        }
        Status::Failed(e) => {
            result.error = Some(e.clone());
            result.figures.seconds = started.elapsed().as_secs_f64();
            return result;
        }
        Status::Pending => {
            result.error = Some(
                job.last_error
                    .clone()
                    .unwrap_or_else(|| "the post did not finish".into()),
            );
            result.figures.seconds = started.elapsed().as_secs_f64();
            return result;
        }
    }
    let draft = job.draft.clone().unwrap_or_else(|| crate::model::Draft {
        outcome: crate::model::Outcome::Reply,
        text: String::new(),
        urls: Vec::new(),
        verdict: None,
        stance: None,
    });
    result.outcome = draft.outcome.as_str().into();
    result.verdict = draft.verdict.map(|v| v.as_str().to_string());
    result.parts = job.plan.as_ref().map(|p| p.parts.clone()).unwrap_or_default();
    let retrieval = job.retrieval.clone().unwrap_or_default();
    result.evidence = retrieval
        .all_evidence()
        .into_iter()
        .map(|e| EvidenceLine {
            url: e.url,
            tier: e.tier.as_str().into(),
            refute: e.refute,
            context: e.context,
        })
        .collect();
    let mut evidence: HashSet<String> = result.evidence.iter().map(|e| e.url.clone()).collect();
    evidence.extend(retrieval.cited_reviews().into_iter().map(|r| r.url));
    evidence.extend(retrieval.deciding_reviews().into_iter().map(|r| r.url));
    let (links, pages) = check_links(&shared.fetcher, &result.parts.join("\n"), &evidence).await;
    result.quotes = figures::check_quotes(&draft.text, &pages);
    result.links = links;
    let f = &mut result.figures;
    f.parts = result.parts.len();
    f.chars = result.parts.iter().map(|p| p.chars().count()).sum();
    f.reply_urls = result.links.len();
    f.urls_from_evidence = result.links.iter().filter(|l| l.from_evidence).count();
    f.urls_reachable = result.links.iter().filter(|l| l.reachable).count();
    f.quotes = result.quotes.len();
    f.quotes_verbatim = result.quotes.iter().filter(|q| q.verbatim).count();
    if let Some(judge) = &shared.judge {
        rate(&shared.config, judge, &mut result).await;
    }
    result.figures.seconds = started.elapsed().as_secs_f64();
    result
}

/// The daemon's stage loop on the post, as a moderator's check on a never-posting platform.
async fn answer(shared: &Shared, post: &EvalPost, n: usize) -> anyhow::Result<crate::model::Job> {
    let mut target = crate::check::text_post(&post.id, &post.text, &post.images, post.time)?;
    target.language = post.language.clone();
    let platform = DryRun::text(target, crate::check::TEXT_LIMITS);
    let kind = platform.kind;
    let pipeline = shared
        .pipeline
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("no pipeline was built for this run"))?
        .published_before(post.time);
    let worker = crate::check::worker(
        &shared.config,
        shared.store.clone(),
        pipeline,
        platform,
        shared.metrics.clone(),
    );
    let job = crate::check::flag_job(kind, &format!("eval-{n}-{}", post.id), &post.id);
    shared.store.save(&job)?;
    worker.run(&job.id).await;
    shared
        .store
        .job(&job.id)?
        .ok_or_else(|| anyhow::anyhow!("the post's job vanished from the run's store"))
}

/// Each URL of the reply fetched through the guard: (checks, the text of the pages that
/// answered, for the quotes).
async fn check_links(
    fetcher: &crate::fetch::Fetcher,
    reply: &str,
    evidence: &HashSet<String>,
) -> (Vec<figures::LinkCheck>, Vec<String>) {
    let mut links = Vec::new();
    let mut pages = Vec::new();
    for url in figures::urls_in(reply) {
        let (reachable, status) = match fetcher.fetch(&url).await {
            Ok(page) => {
                pages.push(crate::extract::extract(&page.html, Some(page.url.as_str())).text);
                (true, "ok".to_string())
            }
            // It answered, with something other than HTML (a PDF…).
            Err(crate::fetch::FetchError::NotHtml(_)) => (true, "ok (not HTML)".to_string()),
            Err(e) => (false, e.reason().to_string()),
        };
        links.push(figures::LinkCheck {
            from_evidence: figures::from_evidence(&url, evidence),
            url,
            reachable,
            status,
        });
    }
    (links, pages)
}

fn judge_cost(config: &Config, u: Usage) -> f64 {
    let j = &config.eval.judge;
    u.prompt_tokens as f64 * j.prompt_price_per_million / 1e6
        + u.completion_tokens as f64 * j.completion_price_per_million / 1e6
}

/// The judge on every expert-rated reply not yet in `experts.jsonl`.
async fn judge_experts(
    shared: &Arc<Shared>,
    experts: &experts::Experts,
    path: &Path,
    args: &EvalArgs,
) -> anyhow::Result<BTreeMap<String, Rating>> {
    let done: BTreeMap<String, JudgedItem> = record::read_lines(path, true)?;
    let judge = shared.judge.as_ref().expect("called with a judge");
    let pending: Vec<&experts::Item> = experts
        .items
        .iter()
        .filter(|i| done.get(&i.key).is_none_or(|d| args.retry_failed && d.rating.is_none()))
        .collect();
    let total = experts.items.len();
    let mut finished = total - pending.len();
    let jobs = args.jobs.unwrap_or(shared.config.eval.jobs).clamp(1, 16);
    let mut stream = futures_util::stream::iter(pending)
        .map(|item| async move {
            let case = Case {
                text: &item.post_text,
                created_at: input::snowflake_time(&item.tweet_id).map_or_else(|| "unknown".into(), |t| t.to_rfc3339()),
                reply: &item.response_text,
                references: item.urls.clone(),
            };
            let (rating, error) = match judge.rate(&case).await {
                Ok((r, _)) => (Some(r), None),
                Err(e) => (None, Some(e)),
            };
            JudgedItem {
                key: item.key.clone(),
                rating,
                error,
            }
        })
        .buffer_unordered(jobs);
    while let Some(j) = stream.next().await {
        record::append(path, &j)?;
        finished += 1;
        if finished % 25 == 0 || finished == total {
            eprintln!("eval: the judge rated {finished}/{total} expert-rated replies");
        }
    }
    let all: BTreeMap<String, JudgedItem> = record::read_lines(path, false)?;
    Ok(all.into_iter().filter_map(|(k, j)| Some((k, j.rating?))).collect())
}

fn summary_text(t: &figures::Totals, agreement: Option<&[agreement::DimensionAgreement]>, report: &Path) -> String {
    let pct = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{:.1} %", v * 100.0));
    let mut out = format!(
        "posts: {} ({} failed)\nreply URLs from the evidence: {} of {}\nlinks answering through the fetch guard: {}\nquotes verbatim in a cited page: {} of {}\ncould not verify: {}\noutcomes: {:?}\nverdicts: {:?}\nparts: {}, characters: {}\nLLM calls: {} ({} one after another)\ntime: {:.1} s summed over posts\ntokens: prompt {}, completion {} (judge: {} + {})\ncost: {:.4} (judge: {:.4})\n",
        t.posts,
        t.failed,
        pct(t.urls_from_evidence),
        t.sum.reply_urls,
        pct(t.urls_reachable),
        pct(t.quotes_verbatim),
        t.sum.quotes,
        pct(t.could_not_verify),
        t.outcomes,
        t.verdicts,
        t.sum.parts,
        t.sum.chars,
        t.sum.llm_calls,
        t.sum.llm_in_sequence,
        t.sum.seconds,
        t.sum.prompt_tokens,
        t.sum.completion_tokens,
        t.sum.judge_prompt_tokens,
        t.sum.judge_completion_tokens,
        t.sum.cost,
        t.sum.judge_cost
    );
    if !t.judge_means.is_empty() {
        out.push_str("judge, mean place on each scale (0 worst, 1 best):\n");
        for (k, v) in &t.judge_means {
            out.push_str(&format!("  {k:<24} {v:.3}\n"));
        }
    }
    if let Some(a) = agreement {
        out.push_str(&format!(
            "judge vs experts ({:<8} {:>7} {:>7} {:>5} | {:>7} {:>7} {:>5}):\n",
            "measure", "judge", "κ", "n", "experts", "κ", "n"
        ));
        let f = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{v:.3}"));
        for d in a {
            out.push_str(&format!(
                "  {:<22} {:<8} {:>7} {:>7} {:>5} | {:>7} {:>7} {:>5}\n",
                d.key,
                d.measure,
                f(d.judge),
                f(d.judge_kappa),
                d.judge_n,
                f(d.experts),
                f(d.experts_kappa),
                d.experts_n
            ));
        }
    }
    if !t.by_language.is_empty() {
        out.push_str(&language_table(&t.by_language));
    }
    out.push_str(&format!("report: {}\n", report.display()));
    out
}

/// The run's main figures per language, one row each.
fn language_table(by: &BTreeMap<String, figures::Totals>) -> String {
    let pct = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{:.1} %", v * 100.0));
    let mut out = format!(
        "by language:\n  {:<9} {:>6} {:>7} {:>16} {:>16} {:>13} {:>14}\n",
        "language", "posts", "failed", "could not verify", "URLs from evid.", "quotes verb.", "judge overall"
    );
    for (lang, t) in by {
        out.push_str(&format!(
            "  {:<9} {:>6} {:>7} {:>16} {:>16} {:>13} {:>14}\n",
            lang,
            t.posts,
            t.failed,
            pct(t.could_not_verify),
            pct(t.urls_from_evidence),
            pct(t.quotes_verbatim),
            t.judge_means
                .get("overall")
                .map_or("—".to_string(), |v| format!("{v:.3}"))
        ));
    }
    out
}

/// `musebot eval compare A B [--out DIR]`.
pub fn compare_runs(a: &Path, b: &Path, out: Option<&Path>) -> anyhow::Result<String> {
    let read = |d: &Path| -> anyhow::Result<BTreeMap<String, PostResult>> {
        let path = d.join("results.jsonl");
        if !path.is_file() {
            anyhow::bail!(
                "{}: no results.jsonl — give two folders written by `musebot eval`",
                d.display()
            );
        }
        record::read(&path)
    };
    let (ra, rb) = (read(a)?, read(b)?);
    let c = compare::compare(&ra, &rb);
    if c.paired == 0 {
        anyhow::bail!(
            "{} and {} share no post id: compare runs over the same posts",
            a.display(),
            b.display()
        );
    }
    let (na, nb) = (a.display().to_string(), b.display().to_string());
    let mut text = c.to_text(&na, &nb);
    if let Some(dir) = out {
        let path = report::write_compare(dir, &na, &nb, &c)?;
        text.push_str(&format!("report: {}\n", path.display()));
    }
    Ok(text)
}

/// `../shared/data/<sub>` for unit tests: skipped when absent, a failure under `CI=true`.
#[cfg(test)]
pub(crate) fn shared_data(sub: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data").join(sub);
    if p.exists() {
        return Some(p);
    }
    assert!(
        std::env::var("CI").map_or(true, |v| v != "true"),
        "{} is missing under CI",
        p.display()
    );
    eprintln!("skipped: {} is absent", p.display());
    None
}
