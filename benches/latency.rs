//! Mention → posted reply, with realistic latencies (`cargo bench --bench latency [POSTS]`):
//! the daemon's own stage loop (`Worker::run`, resolve → draft → verify → compose, on a
//! platform that never posts) over real posts (../shared/data/muse/posts.csv), the tests' own
//! local web (the 91 real pages, each answer delayed), search and scripted LLM (a fixed delay
//! plus a delay per word of the answer). Printed per post: wall time p50/p99, LLM calls, how
//! many of them ran one after another, and the share of the time spent reading pages — with
//! draft verification off and on (the shipped default), and with two evidence calls at once
//! (`relevance.evidence_parallel = 2`; the default reads them one after another). A second
//! scenario, "later pages refute", has the scripted LLM find refuting quotes only in some
//! pages (a hash of the page picks one in three), so Muse's early stop needs more evidence
//! calls and reading two at once can pay. Tokens per post are printed in all, and the draft
//! debate's share of them (the trace's `verify` stage).
//! Last, what one daemon carries at the shipped defaults: every post at once, at most
//! `daemon.max_jobs_in_flight` running together as the dispatcher runs them, printed as
//! mentions an hour (wall) and the CPU a mention costs (→ mentions an hour before the cores are
//! the limit); the scripted LLM serves any number of calls at once, so past these figures the
//! limit is the LLM endpoint's own throughput.
//! Every latency and changed setting is printed beside the figures.
//!
//! Arguments: [POSTS] (default 10) [DATA_DIR] (default ../shared/data), and the latencies
//! `--llm-ms N` (per call, default 400), `--token-ms N` (per output token, default 15) and
//! `--page-ms N` (per page, default 300): `cargo bench --bench latency -- --llm-ms 1500
//! --token-ms 15 --page-ms 300`. The last line reads `verification on: p50 X s p99 Y s`.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use musebot::config::{Config, VerifyMode};
use musebot::metrics::Metrics;
use musebot::model::{Account, Cause, Job, PlatformKind, Post, Trigger, Visibility};
use musebot::platform::dry_run::DryRun;
use musebot::platform::{Platform, Platforms};
use musebot::search::{BackendConfig, BackendKind};
use musebot::store::Store;
use musebot::worker::Worker;

mod common;
#[path = "../tests/common/llm.rs"]
mod llm;
#[path = "../tests/common/web.rs"]
mod web;

use common::{answer, percentile};

/// The scripted LLM's latency by default: a fixed part per call (`--llm-ms`) and a part per
/// output token (`--token-ms`; the scripted answers' words stand for their tokens).
const LLM_FIXED_MS: u64 = 400;
const LLM_PER_TOKEN_MS: u64 = 15;
/// Every page answer's delay by default (`--page-ms`).
const PAGE_DELAY_MS: u64 = 300;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let Some((n_posts, data)) = common::args("latency", 10) else {
        return;
    };
    let llm_fixed = Duration::from_millis(common::option_ms("--llm-ms", LLM_FIXED_MS));
    let llm_per_token = Duration::from_millis(common::option_ms("--token-ms", LLM_PER_TOKEN_MS));
    let page_delay = Duration::from_millis(common::option_ms("--page-ms", PAGE_DELAY_MS));
    let sandbox = common::sandbox();
    let posts = common::posts(&data, n_posts);
    let (site, urls, hosts) = common::pages(&data);
    let web = web::Site::start_slow(site, page_delay).await;
    let search = web::SearchServer::start(move |q| common::results_for(&urls, q)).await;
    let late = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let only_some = late.clone();
    let mut script = llm::Script::routed(move |body| {
        if only_some.load(Ordering::SeqCst) {
            late_refute(body)
        } else {
            answer(body)
        }
    });
    script.delay = llm_fixed;
    script.per_word = llm_per_token;
    let llm = llm::ScriptedLlm::start(script).await;

    let mut config = Config::default();
    config.llm.base_url = llm.base_url.clone();
    config.search.backends = vec![BackendConfig {
        kind: BackendKind::Searxng,
        base_url: search.base_url(),
        api_key_env: String::new(),
        api_key_file: String::new(),
        cx: String::new(),
    }];
    config.fetch.test_allow_addrs = vec![web.addr.to_string()];
    config.fetch.test_resolve = hosts.iter().map(|h| format!("{h}={}", web.addr)).collect();
    config.relevance.onnxruntime = sandbox["MUSEBOT_ORT_DYLIB"].clone();
    config.relevance.model = sandbox["MUSEBOT_EMBED_MODEL"].clone();
    config.relevance.tokenizer = sandbox["MUSEBOT_EMBED_TOKENIZER"].clone();
    // The local search's pages are mostly unrated and unrelated (see the pipeline bench).
    config.relevance.threshold = 0.0;
    config.credibility.include_unknown = true;

    println!(
        "Mention → reply (daemon stage loop, never posting), {} real posts",
        posts.len()
    );
    println!(
        "  latencies: LLM {} ms a call + {} ms per output token (a word of the scripted answer); every page {} ms; search 0 ms (--llm-ms, --token-ms, --page-ms)",
        llm_fixed.as_millis(),
        llm_per_token.as_millis(),
        page_delay.as_millis()
    );
    println!("  changed settings: relevance.threshold = 0.0, credibility.include_unknown = true");
    println!();
    println!(
        "  {:<36} {:>8} {:>8} {:>10} {:>11} {:>12} {:>13} {:>13}",
        "", "p50 (s)", "p99 (s)", "LLM calls", "sequential", "pages share", "prompt words", "debate words"
    );
    let mut summary = None;
    // (label, refuting pages, verification, evidence calls at once)
    for (label, late_pages, mode, parallel) in [
        ("verification off", false, VerifyMode::Off, 1),
        ("verification on (default)", false, VerifyMode::All, 1),
        ("on, evidence_parallel = 2", false, VerifyMode::All, 2),
        ("later pages refute, default", true, VerifyMode::All, 1),
        ("later pages refute, parallel = 2", true, VerifyMode::All, 2),
    ] {
        late.store(late_pages, Ordering::SeqCst);
        config.verify.mode = mode;
        config.relevance.evidence_parallel = parallel;
        let store = Store::open_temporary().unwrap();
        let pipeline = musebot::pipeline::build(&config, Some(store.clone()), None, None).unwrap();
        let (mut wall, mut calls, mut sequential, mut pages_ms, mut total_ms) = (Vec::new(), 0, 0, 0u64, 0u64);
        let (mut tokens, mut debate_tokens) = (0u64, 0u64);
        for (i, text) in posts.iter().enumerate() {
            let (worker, job) = worker_for(&config, &store, &pipeline, text, &format!("{label}-{i}"), i);
            store.save(&job).unwrap();
            llm.requests.lock().unwrap().clear();
            let before = llm.calls.load(Ordering::SeqCst);
            llm.sequential_calls();
            let t = Instant::now();
            worker.run(&job.id).await;
            let ms = t.elapsed().as_millis() as u64;
            wall.push(ms as f64 / 1000.0);
            total_ms += ms;
            calls += llm.calls.load(Ordering::SeqCst) - before;
            sequential += llm.sequential_calls();
            let done = store.job(&job.id).unwrap().unwrap();
            // Prompt words of this post's calls (the scripted server's usage figures are fixed).
            for body in llm.requests.lock().unwrap().drain(..) {
                let words: u64 = body["messages"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|m| m["content"].as_str().unwrap_or("").split_whitespace().count() as u64)
                    .sum();
                tokens += words;
                if body["messages"][0]["content"]
                    .as_str()
                    .unwrap_or("")
                    .contains("You check a reply")
                {
                    debate_tokens += words;
                }
            }
            pages_ms += done
                .retrieval
                .iter()
                .flat_map(|r| &r.steps)
                .filter(|s| s.step == "pages")
                .map(|s| s.millis)
                .sum::<u64>();
        }
        let n = posts.len() as f64;
        if label == "verification on (default)" {
            summary = Some((percentile(&mut wall.clone(), 0.5), percentile(&mut wall.clone(), 0.99)));
        }
        println!(
            "  {:<36} {:>8.2} {:>8.2} {:>10.1} {:>11.1} {:>11.0}% {:>13.0} {:>13.0}",
            label,
            percentile(&mut wall.clone(), 0.5),
            percentile(&mut wall, 0.99),
            calls as f64 / n,
            sequential as f64 / n,
            100.0 * pages_ms as f64 / total_ms.max(1) as f64,
            tokens as f64 / n,
            debate_tokens as f64 / n
        );
    }
    // What one daemon carries: the shipped defaults (verification on, one evidence call at a
    // time, daemon.max_jobs_in_flight jobs at once), every post at once.
    late.store(false, Ordering::SeqCst);
    config.verify.mode = VerifyMode::All;
    config.relevance.evidence_parallel = 1;
    let (wall, cpu) = capacity(&config, &posts).await;
    let n = posts.len() as f64;
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get()) as f64;
    println!();
    println!(
        "  capacity, {} posts at once, daemon.max_jobs_in_flight = {}: {:.0} mentions/hour (wall {:.1} s); CPU {:.2} s a mention (stage loop + in-process scripted peers) → {:.0} mentions/hour on {} cores before the CPU is the limit",
        posts.len(),
        config.daemon.max_jobs_in_flight,
        3600.0 * n / wall.max(1e-9),
        wall,
        cpu / n,
        3600.0 * cores / (cpu / n).max(1e-9),
        cores
    );
    if let Some((p50, p99)) = summary {
        println!();
        println!("  verification on: p50 {p50:.2} s p99 {p99:.2} s");
    }
}

/// A worker whose platform serves the post `text` (as `p{i}`), and the job asking about it.
fn worker_for(
    config: &Config,
    store: &Store,
    pipeline: &musebot::pipeline::Pipeline,
    text: &str,
    event: &str,
    i: usize,
) -> (Worker, Job) {
    let post = Post::text_only(
        &format!("p{i}"),
        "someone",
        text,
        "2024-01-01T00:00:00Z".parse().unwrap(),
        Visibility::Public,
    );
    let worker = Worker {
        moderation: musebot::moderation::Moderation::new(config.moderation.clone(), store.clone()),
        store: store.clone(),
        platforms: Platforms::new([Platform::DryRun(DryRun::text(
            post,
            musebot::compose::TextLimits {
                max_chars: 500,
                chars_per_url: 23,
            },
        ))]),
        prompts: pipeline.prompts.clone(),
        pipeline: pipeline.clone(),
        metrics: Metrics::new(),
        reply: config.reply.clone(),
        limits: config.limits.clone(),
        privacy: config.privacy.clone(),
        living: musebot::config::LivingConfig {
            enabled: false,
            ..config.living.clone()
        },
        labeler: config.bluesky.labeler.clone(),
        watch_auto_label: config.watch.auto_label,
        watch_label_verdicts: config.watch.label_verdicts(),
        retry_base: Duration::from_secs(5),
    };
    let job = Job::new(Trigger {
        language: None,
        platform: PlatformKind::Mastodon,
        cause: Cause::ModeratorFlag {
            moderator: "bench".into(),
        },
        event_id: event.to_string(),
        status_id: format!("p{i}"),
        in_reply_to_id: None,
        quote_of: None,
        asked_in_text: true,
        author: Account {
            handle: "bench".into(),
            is_bot: false,
            is_self: false,
            nobot: false,
            id: None,
        },
        visibility: Visibility::Public,
        created_at: chrono::Utc::now(),
        text: String::new(),
    });
    (worker, job)
}

/// Every post at once, at most `daemon.max_jobs_in_flight` (the shipped 4) running together as
/// the dispatcher runs them: the wall time and the process's CPU time (user + system, the
/// in-process scripted peers included: an upper bound of the daemon's own), in seconds.
async fn capacity(config: &Config, posts: &[String]) -> (f64, f64) {
    use futures_util::StreamExt;
    let store = Store::open_temporary().unwrap();
    let pipeline = musebot::pipeline::build(config, Some(store.clone()), None, None).unwrap();
    let jobs: Vec<(Worker, Job)> = posts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let (worker, job) = worker_for(config, &store, &pipeline, text, &format!("capacity-{i}"), i);
            store.save(&job).unwrap();
            (worker, job)
        })
        .collect();
    let (t, cpu) = (Instant::now(), cpu_seconds());
    futures_util::stream::iter(jobs)
        .for_each_concurrent(config.daemon.max_jobs_in_flight, |(worker, job)| async move {
            worker.run(&job.id).await;
        })
        .await;
    (t.elapsed().as_secs_f64(), cpu_seconds() - cpu)
}

/// This process's CPU time so far (user + system), from /proc/self/stat (Linux clock ticks,
/// 100 a second).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(") ").map_or("", |x| x.1);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are the 14th and 15th fields of the line, the 12th and 13th after ")".
    (ticks(11) + ticks(12)) / 100.0
}

/// As [`answer`], but the evidence calls quote only the pages a hash picks (one in three), so
/// the first pages read often refute nothing.
fn late_refute(body: &serde_json::Value) -> String {
    let system = body["messages"][0]["content"].as_str().unwrap_or("");
    if !system.contains("Quote passages") {
        return answer(body);
    }
    let user = body["messages"][1]["content"].as_str().unwrap_or("");
    let quotes: Vec<String> = user
        .split("content:\n")
        .skip(1)
        .filter(|content| {
            let words: Vec<&str> = content.split_whitespace().take(16).collect();
            words
                .join(" ")
                .bytes()
                .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32))
                % 3
                == 0
        })
        .map(|content| content.split_whitespace().take(16).collect::<Vec<_>>().join(" "))
        .collect();
    serde_json::json!({"refute": quotes, "context": []}).to_string()
}
