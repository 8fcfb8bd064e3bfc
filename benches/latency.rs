//! Mention → posted reply, with realistic latencies (`cargo bench --bench latency [POSTS]`):
//! the daemon's own stage loop (`Worker::run`, resolve → draft → verify → compose, on a
//! platform that never posts) over real posts (../shared/data/muse/posts.csv), the tests' own
//! local web (the 91 real pages, each answer delayed), search and scripted LLM (a fixed delay
//! plus a delay per word of the answer). Printed per post: wall time p50/p99, LLM calls, how
//! many of them ran one after another, and the share of the time spent reading pages — with
//! draft verification off and on (the shipped default), and with two evidence calls at once
//! (`relevance.evidence_parallel = 2`; the default reads them one after another).
//! Every latency and changed setting is printed beside the figures.
//!
//! Arguments: [POSTS] (default 10) [DATA_DIR] (default ../shared/data).

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

/// The scripted LLM's latency: a fixed part and a part per word it answers.
const LLM_FIXED: Duration = Duration::from_millis(400);
const LLM_PER_WORD: Duration = Duration::from_millis(15);
/// Every page answer's delay.
const PAGE_DELAY: Duration = Duration::from_millis(300);

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let Some((n_posts, data)) = common::args("latency", 10) else {
        return;
    };
    let sandbox = common::sandbox();
    let posts = common::posts(&data, n_posts);
    let (site, urls, hosts) = common::pages(&data);
    let web = web::Site::start_slow(site, PAGE_DELAY).await;
    let search = web::SearchServer::start(move |q| common::results_for(&urls, q)).await;
    let mut script = llm::Script::routed(answer);
    script.delay = LLM_FIXED;
    script.per_word = LLM_PER_WORD;
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
        "  latencies: LLM {} ms + {} ms per word answered; every page {} ms; search 0 ms",
        LLM_FIXED.as_millis(),
        LLM_PER_WORD.as_millis(),
        PAGE_DELAY.as_millis()
    );
    println!("  changed settings: relevance.threshold = 0.0, credibility.include_unknown = true");
    println!();
    println!(
        "  {:<30} {:>9} {:>9} {:>10} {:>11} {:>13}",
        "", "p50 (s)", "p99 (s)", "LLM calls", "sequential", "pages share"
    );
    // (label, verification, evidence calls at once)
    for (label, mode, parallel) in [
        ("verification off", VerifyMode::Off, 1),
        ("verification on (default)", VerifyMode::All, 1),
        ("on, evidence_parallel = 2", VerifyMode::All, 2),
    ] {
        config.verify.mode = mode;
        config.relevance.evidence_parallel = parallel;
        let store = Store::open_temporary().unwrap();
        let pipeline = musebot::pipeline::build(&config, Some(store.clone()), None, None).unwrap();
        let (mut wall, mut calls, mut sequential, mut pages_ms, mut total_ms) = (Vec::new(), 0, 0, 0u64, 0u64);
        for (i, text) in posts.iter().enumerate() {
            let post = Post::text_only(
                &format!("p{i}"),
                "someone",
                text,
                "2024-01-01T00:00:00Z".parse().unwrap(),
                Visibility::Public,
            );
            let worker = Worker {
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
                retry_base: Duration::from_secs(5),
            };
            let job = Job::new(Trigger {
                platform: PlatformKind::Mastodon,
                cause: Cause::ModeratorFlag {
                    moderator: "bench".into(),
                },
                event_id: format!("{label}-{i}"),
                status_id: format!("p{i}"),
                in_reply_to_id: None,
                quote_of: None,
                asked_in_text: true,
                author: Account {
                    handle: "bench".into(),
                    is_bot: false,
                    is_self: false,
                    nobot: false,
                },
                visibility: Visibility::Public,
                created_at: chrono::Utc::now(),
                text: String::new(),
            });
            store.save(&job).unwrap();
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
            pages_ms += done
                .retrieval
                .iter()
                .flat_map(|r| &r.steps)
                .filter(|s| s.step == "pages")
                .map(|s| s.millis)
                .sum::<u64>();
        }
        let n = posts.len() as f64;
        println!(
            "  {:<30} {:>9.2} {:>9.2} {:>10.1} {:>11.1} {:>12.0}%",
            label,
            percentile(&mut wall.clone(), 0.5),
            percentile(&mut wall, 0.99),
            calls as f64 / n,
            sequential as f64 / n,
            100.0 * pages_ms as f64 / total_ms.max(1) as f64
        );
    }
}
