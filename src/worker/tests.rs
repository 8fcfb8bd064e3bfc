//! The stage machine in-process: a scripted platform ([`Double`]) and a scripted LLM on
//! loopback (the same peer the integration tests use, `tests/common/llm.rs`), a store in a
//! temporary directory. Resume after every stage, transient vs fatal errors, part-by-part
//! posting with stable keys, the re-split of a refused part, jobs of unconfigured platforms.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::*;
use crate::compose::TextLimits;
use crate::config::{Config, PipelineMode};
use crate::metrics::Metrics;
use crate::model::{Account, Cause, Post, Trigger, Visibility};
use crate::platform::double::{Call, Double};
use crate::platform::PlatformError;
use crate::test_llm::{Script, ScriptedLlm};

/// A verdict long enough to need three parts under 120 characters.
pub(super) const VERDICT: &str = "This post is false. The Moon is made of rock, as the Apollo samples showed in 1969 and every mission since then has confirmed again, and no cheese has ever been found on it by anyone.";

pub(super) struct Bench {
    pub(super) worker: Worker,
    pub(super) double: Arc<Double>,
    pub(super) llm: ScriptedLlm,
    pub(super) _dir: tempfile::TempDir,
}

pub(super) async fn bench(script: Script) -> Bench {
    let llm = ScriptedLlm::start(script).await;
    let mut config = Config::default();
    config.daemon.pipeline = PipelineMode::Baseline;
    config.llm.base_url = llm.base_url.clone();
    config.llm.max_retries = 0;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let pipeline = crate::pipeline::build(&config, Some(store.clone()), None, None).unwrap();
    let double = Arc::new(Double::new(TextLimits {
        max_chars: 120,
        chars_per_url: 23,
    }));
    double.add_post(Post::text_only(
        "100",
        "carol",
        "The Moon is made of cheese.",
        chrono::Utc::now(),
        Visibility::Public,
    ));
    let worker = Worker {
        moderation: crate::moderation::Moderation::new(config.moderation.clone(), store.clone()),
        store,
        platforms: Platforms::new([Platform::Double(double.clone())]),
        prompts: pipeline.prompts.clone(),
        pipeline,
        metrics: Metrics::new(),
        reply: config.reply.clone(),
        limits: config.limits.clone(),
        privacy: config.privacy.clone(),
        living: config.living.clone(),
        labeler: config.bluesky.labeler.clone(),
        watch_auto_label: config.watch.auto_label,
        watch_label_verdicts: config.watch.label_verdicts(),
        retry_base: std::time::Duration::from_secs(config.daemon.retry_base_secs),
    };
    Bench {
        worker,
        double,
        llm,
        _dir: dir,
    }
}

pub(super) fn mention(id: &str) -> Trigger {
    Trigger {
        language: None,
        in_reply_to_id: Some("100".into()),
        author: Account {
            handle: "bob".into(),
            ..Trigger::test_mention(id).author
        },
        text: "@musebot is this true?".into(),
        ..Trigger::test_mention(id)
    }
}

/// A post on #moon, which a moderator watches: carol's post "100" itself, not a reply.
pub(super) fn watched_hit(b: &Bench, id: &str) -> Trigger {
    b.worker
        .moderation
        .execute(
            crate::model::PlatformKind::Mastodon,
            "moderator",
            None,
            &crate::model::Command::Watch("moon".into()),
            "en",
        )
        .unwrap();
    Trigger {
        language: None,
        cause: Cause::HashtagHit { tag: "moon".into() },
        status_id: "100".into(),
        in_reply_to_id: None,
        ..mention(id)
    }
}

impl Bench {
    /// A post by `author` with id `pid`, and a new job for bob's mention `event` replying to it.
    pub(super) fn ask_about(&self, event: &str, pid: &str, author: &str, text: &str, visibility: Visibility) -> String {
        self.double
            .add_post(Post::text_only(pid, author, text, chrono::Utc::now(), visibility));
        let mut t = mention(event);
        t.in_reply_to_id = Some(pid.into());
        self.add(t)
    }

    pub(super) fn add(&self, trigger: Trigger) -> String {
        let job = Job::new(trigger);
        self.worker.store.save(&job).unwrap();
        job.id
    }

    /// Runs the job as the dispatcher would once it is due (a retry's wait is skipped).
    pub(super) async fn run(&self, id: &str) -> Job {
        let mut job = self.worker.store.job(id).unwrap().unwrap();
        job.retry_at = None;
        self.worker.store.save(&job).unwrap();
        self.worker.run(id).await;
        self.worker.store.job(id).unwrap().unwrap()
    }

    pub(super) fn llm_calls(&self) -> usize {
        self.llm.calls.load(Ordering::SeqCst)
    }

    pub(super) fn keys(&self) -> Vec<String> {
        self.double.posted.lock().unwrap().iter().map(|p| p.0.clone()).collect()
    }
}

#[tokio::test]
async fn a_job_runs_every_stage_and_posts_a_chained_thread() {
    let b = bench(Script::reply(VERDICT)).await;
    let id = b.add(mention("1"));
    let job = b.run(&id).await;
    assert_eq!(job.status, Status::Done);
    let stages: Vec<Stage> = job.trace.iter().map(|r| r.stage).collect();
    assert_eq!(
        stages,
        [Stage::Resolve, Stage::Draft, Stage::Verify, Stage::Compose, Stage::Post]
    );
    let posted = b.double.posted.lock().unwrap().clone();
    assert!(posted.len() >= 2, "a long verdict is a thread: {posted:?}");
    assert_eq!(posted[0].1, "100", "the first part answers the post asked about");
    for (i, (key, reply_to, _)) in posted.iter().enumerate().skip(1) {
        assert_eq!(*reply_to, format!("p{}", i - 1), "part {i} answers part {}", i - 1);
        assert_eq!(*key, format!("musebot-{id}-{i}"));
    }
    assert!(posted[0].2.starts_with("@bob "), "{}", posted[0].2);
    assert!(posted.iter().all(|p| p.2.chars().count() <= 120));
    assert_eq!(job.posted.len(), posted.len());
    assert_eq!(b.llm_calls(), 1);
}

/// A crash after any stage: the next run starts at the first missing output and repeats no
/// finished work (no second resolve, LLM call or post).
#[tokio::test]
async fn a_restart_after_any_stage_repeats_nothing() {
    let reference = bench(Script::reply(VERDICT)).await;
    let id = reference.add(mention("1"));
    let finished = reference.run(&id).await;
    let parts = finished.posted.len();
    for after in 0..=4 {
        let b = bench(Script::reply(VERDICT)).await;
        let mut job = finished.clone();
        job.status = Status::Pending;
        job.trace.clear();
        if after < 4 {
            job.posted.clear();
        }
        if after < 3 {
            job.plan = None;
        }
        if after < 2 {
            job.draft = None;
        }
        if after < 1 {
            job.target = None;
        }
        b.worker.store.save(&job).unwrap();
        // What the first run had already posted before the "crash".
        if after == 4 {
            job.posted.truncate(1);
            b.worker.store.save(&job).unwrap();
            let first = finished.plan.as_ref().unwrap().parts[0].clone();
            b.double.post(&first, "100", &format!("musebot-{id}-0"), "en").unwrap();
            b.double.calls.lock().unwrap().clear();
            b.double.failures.lock().unwrap().clear();
        }
        let done = b.run(&id).await;
        assert_eq!(done.status, Status::Done, "after {after} stages");
        let calls = b.double.calls.lock().unwrap().clone();
        let resolves = calls.iter().filter(|c| **c == Call::Resolve).count();
        assert_eq!(resolves, usize::from(after < 1), "after {after} stages: {calls:?}");
        assert_eq!(b.llm_calls(), usize::from(after < 2), "after {after} stages");
        let expected_posts = if after == 4 { parts - 1 } else { parts };
        let posts = calls.iter().filter(|c| **c == Call::Post).count();
        assert_eq!(posts, expected_posts, "after {after} stages: {calls:?}");
        assert_eq!(b.keys().len(), parts, "every part exactly once");
    }
}

#[tokio::test]
async fn a_failure_between_two_parts_resumes_at_the_next_part() {
    let b = bench(Script::reply(VERDICT)).await;
    let id = b.add(mention("1"));
    // Part 0 goes through; part 1 meets a network failure.
    b.double
        .fail_at(Call::Post, 1, PlatformError::Transient("connection reset".into()));
    let job = b.run(&id).await;
    assert_eq!(job.status, Status::Pending);
    assert_eq!(job.posted.len(), 1, "{job:?}");
    assert_eq!(job.attempts, 1);
    assert!(job.retry_at.is_some());
    assert_eq!(job.last_error.as_deref(), Some("connection reset"));
    let done = b.run(&id).await;
    assert_eq!(done.status, Status::Done);
    let keys = b.keys();
    let expected: Vec<String> = (0..keys.len()).map(|i| format!("musebot-{id}-{i}")).collect();
    assert_eq!(keys, expected, "no part twice, none skipped");
    assert_eq!(b.llm_calls(), 1);
}

#[tokio::test]
async fn transient_errors_retry_then_fail_fatal_errors_fail_at_once() {
    let b = bench(Script::reply(VERDICT)).await;
    let id = b.add(mention("1"));
    for _ in 0..MAX_ATTEMPTS {
        b.double
            .fail(Call::Resolve, PlatformError::Transient("HTTP 503".into()));
    }
    let mut job = b.run(&id).await;
    assert_eq!(job.status, Status::Pending);
    assert!(job.retry_at.is_some_and(|t| t > chrono::Utc::now()));
    for _ in 1..MAX_ATTEMPTS {
        job = b.run(&id).await;
    }
    assert_eq!(job.status, Status::Failed("HTTP 503".into()));
    assert_eq!(job.attempts, MAX_ATTEMPTS);

    let id = b.add(mention("2"));
    b.double.fail(Call::Resolve, PlatformError::Fatal("HTTP 401".into()));
    assert_eq!(b.run(&id).await.status, Status::Failed("HTTP 401".into()));

    let id = b.add(mention("3"));
    b.double.fail(Call::Resolve, PlatformError::Gone("HTTP 404".into()));
    assert_eq!(
        b.run(&id).await.status,
        Status::Skipped(SkipReason::TargetUnavailable("HTTP 404".into()))
    );
    assert_eq!(b.llm_calls(), 0);
}

#[tokio::test]
async fn a_part_refused_as_too_long_is_resplit_with_keys_of_its_own() {
    let b = bench(Script::reply(VERDICT)).await;
    let id = b.add(mention("1"));
    b.double.fail(
        Call::Post,
        PlatformError::TooLong("Text character limit of 120 exceeded".into()),
    );
    let job = b.run(&id).await;
    assert_eq!(job.status, Status::Done);
    assert!(job.plan.as_ref().unwrap().as_written);
    let keys = b.keys();
    assert!(keys.iter().all(|k| k.ends_with('w')), "{keys:?}");

    // Refused as written too (a server counting code points): split shorter, the
    // limit halved (120 → 60), never silence.
    let id = b.add(mention("2"));
    for _ in 0..2 {
        b.double
            .fail(Call::Post, PlatformError::TooLong("Text is too long".into()));
    }
    let job = b.run(&id).await;
    assert_eq!(job.status, Status::Done, "{job:?}");
    let plan = job.plan.as_ref().unwrap();
    assert_eq!(plan.shrink, 1);
    assert!(!job.posted.is_empty());
    let limits = crate::compose::TextLimits {
        max_chars: 60,
        chars_per_url: crate::compose::AS_WRITTEN,
    };
    assert!(
        plan.parts.iter().all(|p| crate::compose::weighted_len(p, limits) <= 60),
        "{:?}",
        plan.parts
    );
    let keys = b.keys();
    assert!(keys.last().unwrap().ends_with("w1"), "{keys:?}");

    // Refused at every length: a bounded number of tries (as written, 60; 30 is under the
    // floor), then a failure with the server's words — not a loop.
    let id = b.add(mention("3"));
    for _ in 0..3 {
        b.double
            .fail(Call::Post, PlatformError::TooLong("Text is too long".into()));
    }
    let job = b.run(&id).await;
    assert_eq!(job.status, Status::Failed("Text is too long".into()), "{job:?}");
}

#[tokio::test]
async fn a_trigger_nobody_asked_for_mentions_no_one() {
    let b = bench(Script::reply(VERDICT)).await;
    let t = watched_hit(&b, "7");
    let id = b.add(t);
    assert_eq!(id, "mastodon:tag:7");
    assert_eq!(b.run(&id).await.status, Status::Done);
    let texts = b.double.texts();
    assert!(texts.iter().all(|t| !t.contains("@bob")), "{texts:?}");
}

#[tokio::test]
async fn a_job_of_a_platform_not_configured_waits() {
    let mut b = bench(Script::reply(VERDICT)).await;
    b.worker.platforms = Platforms::default();
    let id = b.add(mention("1"));
    let job = b.run(&id).await;
    assert_eq!(job.status, Status::Pending);
    assert!(job.trace.is_empty());
    assert!(b.double.calls.lock().unwrap().is_empty());
}

/// A reply under a thread where the parent already mentions the bot, with the bot's handle
/// only in the pre-filled leading run: nobody asked. Written into the text, it is a request.
#[tokio::test]
async fn a_mention_only_inherited_from_the_parent_is_not_a_request() {
    let b = bench(Script::reply(VERDICT)).await;
    b.double.add_post(Post {
        mentions: vec!["musebot".into()],
        ..Post::text_only(
            "200",
            "alice",
            "@musebot is this true?",
            chrono::Utc::now(),
            Visibility::Public,
        )
    });
    let mut t = mention("1");
    t.in_reply_to_id = Some("200".into());
    t.asked_in_text = false;
    let id = b.add(t.clone());
    assert_eq!(b.run(&id).await.status, Status::Skipped(SkipReason::NotAsked));
    t.event_id = "2".into();
    t.asked_in_text = true;
    let id = b.add(t);
    assert_eq!(b.run(&id).await.status, Status::Done);
    assert_eq!(b.llm_calls(), 1);
    // A reply to a parent that does not mention the bot is a request, handle leading or not.
    let mut t = mention("3");
    t.asked_in_text = false;
    let id = b.add(t);
    assert_eq!(b.run(&id).await.status, Status::Done);
}

#[tokio::test]
async fn replies_to_the_bots_own_post_never_start_a_check() {
    let b = bench(Script::reply(VERDICT)).await;
    let id = b.ask_about("1", "300", "musebot", "This post is false.", Visibility::Unlisted);
    assert_eq!(b.run(&id).await.status, Status::Skipped(SkipReason::TargetIsOwnPost));
    assert_eq!(b.llm_calls(), 0);
    assert!(b.double.texts().is_empty());
}

/// A followers-only or direct post (or one of an unknown visibility) is not sent to the LLM;
/// the requester gets a direct message that says why.
#[tokio::test]
async fn a_post_that_is_not_public_gets_a_direct_message_and_no_check() {
    let b = bench(Script::reply(VERDICT)).await;
    for (i, visibility) in [
        Visibility::Private,
        Visibility::Direct,
        Visibility::from_server("limited"),
    ]
    .into_iter()
    .enumerate()
    {
        let pid = format!("40{i}");
        b.double.add_post(Post::text_only(
            &pid,
            "carol",
            "The Moon is made of cheese.",
            chrono::Utc::now(),
            visibility,
        ));
        let mut t = mention(&format!("1{i}"));
        t.in_reply_to_id = Some(pid);
        let id = b.add(t.clone());
        let job = b.run(&id).await;
        assert_eq!(job.status, Status::Done);
        assert_eq!(job.draft.as_ref().unwrap().outcome, Outcome::NotPublic);
        let plan = job.plan.as_ref().unwrap();
        assert_eq!(plan.visibility, Visibility::Direct);
        assert_eq!(plan.reply_to, t.status_id, "answers the mention, not the post");
    }
    assert_eq!(b.llm_calls(), 0, "the text went nowhere");
    assert!(b
        .double
        .texts()
        .iter()
        .all(|t| t.starts_with("@bob ") && t.contains("public posts")));
}

#[tokio::test]
async fn with_the_operators_consent_a_private_post_is_checked_and_answered_directly() {
    let mut b = bench(Script::reply(VERDICT)).await;
    b.worker.privacy.check_non_public = true;
    let id = b.ask_about("1", "401", "carol", "The Moon is cheese.", Visibility::Private);
    let job = b.run(&id).await;
    assert_eq!(job.draft.as_ref().unwrap().outcome, Outcome::Reply);
    assert_eq!(job.plan.as_ref().unwrap().visibility, Visibility::Direct);
}

/// The quota is charged only for jobs that will be answered, in the store: a new worker on
/// the same store (a restart) finds it spent.
#[tokio::test]
async fn the_quota_counts_answered_jobs_only_and_survives_a_restart() {
    let mut b = bench(Script::reply(VERDICT)).await;
    b.worker.limits.checks_per_requester_per_hour = 2;
    b.double.add_post(Post::text_only(
        "300",
        "musebot",
        "This post is false.",
        chrono::Utc::now(),
        Visibility::Unlisted,
    ));
    // Three replies to the bot's own post: skipped, and free.
    for i in 0..3 {
        let mut t = mention(&format!("own{i}"));
        t.in_reply_to_id = Some("300".into());
        let id = b.add(t);
        b.run(&id).await;
    }
    // Each about a post of its own (a second ask about one post is a free pointer).
    let about = |b: &Bench, n: &str| {
        let pid = format!("t{n}");
        b.double.add_post(Post::text_only(
            &pid,
            "carol",
            "The Moon is cheese.",
            chrono::Utc::now(),
            Visibility::Public,
        ));
        let mut t = mention(n);
        t.in_reply_to_id = Some(pid);
        t
    };
    for i in 0..2 {
        let id = b.add(about(&b, &format!("{i}")));
        let job = b.run(&id).await;
        assert_ne!(job.draft.unwrap().outcome, Outcome::QuotaNotice, "job {i}");
    }
    // The same store, a new worker (as after a restart or in a crash loop).
    let store = b.worker.store.clone();
    let fresh = bench(Script::reply(VERDICT)).await;
    let mut worker = fresh.worker;
    worker.store = store;
    worker.limits.checks_per_requester_per_hour = 2;
    worker.platforms = b.worker.platforms.clone();
    b.worker = worker;
    let id = b.add(about(&b, "9"));
    let job = b.run(&id).await;
    assert_eq!(job.draft.unwrap().outcome, Outcome::QuotaNotice);
    let id = b.add(about(&b, "10"));
    assert_eq!(b.run(&id).await.status, Status::Skipped(SkipReason::OverQuotaSilenced));
}

/// A limit that lasts hours (Mastodon's 300 posts per 3 hours) parks the job until the reset
/// without spending an attempt, and the half-posted thread resumes from its next part.
#[tokio::test]
async fn a_long_rate_limit_parks_the_job_and_the_thread_resumes_at_its_next_part() {
    let b = bench(Script::reply(VERDICT)).await;
    let id = b.add(mention("1"));
    let until = chrono::Utc::now() + chrono::Duration::hours(2);
    b.double.fail_at(
        Call::Post,
        1,
        PlatformError::RateLimited {
            until,
            message: "HTTP 429".into(),
        },
    );
    b.worker.run(&id).await;
    let job = b.worker.store.job(&id).unwrap().unwrap();
    assert_eq!(job.status, Status::Pending);
    assert_eq!(job.attempts, 0, "a rate limit spends no attempt");
    assert_eq!(job.retry_at, Some(until));
    assert_eq!(job.posted.len(), 1);
    // Not before the reset: a run now does nothing.
    b.worker.run(&id).await;
    assert_eq!(b.double.count(Call::Post), 2);
    // After it, the thread goes on from part 1.
    let done = b.run(&id).await;
    assert_eq!(done.status, Status::Done);
    let keys = b.keys();
    let expected: Vec<String> = (0..keys.len()).map(|i| format!("musebot-{id}-{i}")).collect();
    assert_eq!(keys, expected);
}

/// A crash after the last part was saved but before the job was: the next run finishes the
/// job (records the reply, marks it done) instead of leaving it pending forever, and the
/// pointer for a later ask keeps the first part's URL though part 0 was posted in another run.
#[tokio::test]
async fn a_crash_after_the_last_part_leaves_no_job_pending() {
    let b = bench(Script::reply(VERDICT)).await;
    let id = b.add(mention("1"));
    // Part 1 fails once: part 0 is posted in this run, the rest in the next.
    b.double
        .fail_at(Call::Post, 1, PlatformError::Transient("reset".into()));
    b.run(&id).await;
    let mut job = b.run(&id).await;
    assert_eq!(job.status, Status::Done);
    // As if the process died right after the last part's save.
    job.status = Status::Pending;
    b.worker.store.save(&job).unwrap();
    let again = b.run(&id).await;
    assert_eq!(again.status, Status::Done);
    assert!(b.worker.store.pending_jobs().unwrap().is_empty());
    let record = b.worker.store.reply_for(&job.target_key("100")).unwrap().unwrap();
    assert_eq!(record.first_url.as_deref(), Some("https://double.example/p0"));
    assert_eq!(b.double.count(Call::Post), job.posted.len() + 1, "nothing re-posted");
}

/// A reply only the mentioned can read (a direct message about a private post): every part
/// carries the requester's handle, within the length limit — a part without it would reach
/// nobody.
#[tokio::test]
async fn every_part_of_a_direct_reply_mentions_the_requester() {
    let mut b = bench(Script::reply(VERDICT)).await;
    b.worker.privacy.check_non_public = true;
    let id = b.ask_about("1", "402", "carol", "The Moon is cheese.", Visibility::Private);
    let job = b.run(&id).await;
    assert_eq!(job.plan.as_ref().unwrap().visibility, Visibility::Direct);
    let texts = b.double.texts();
    assert!(texts.len() >= 2, "{texts:?}");
    for t in &texts {
        assert!(t.starts_with("@bob "), "{t}");
        assert!(t.chars().count() <= 120, "{t}");
    }
    // Not recorded as an answer others could be pointed to.
    assert!(b.worker.store.reply_for(&job.target_key("402")).unwrap().is_none());
}

/// Two mentions about one post in flight together: the one that posts second points to the
/// first one's reply instead of answering the same post again.
#[tokio::test]
async fn two_asks_in_flight_give_one_answer_and_one_pointer() {
    let b = bench(Script::reply(VERDICT)).await;
    let first = b.add(mention("1"));
    let second = b.add(mention("2"));
    // Both past resolve and draft before either posts (resolve saw no answer yet).
    for id in [&first, &second] {
        let mut job = b.worker.store.job(id).unwrap().unwrap();
        job.target = Some(Post::text_only(
            "100",
            "carol",
            "The Moon is made of cheese.",
            chrono::Utc::now(),
            Visibility::Public,
        ));
        b.worker.store.save(&job).unwrap();
    }
    let a = b.run(&first).await;
    assert_eq!(a.draft.as_ref().unwrap().outcome, Outcome::Reply);
    let c = b.run(&second).await;
    assert_eq!(c.status, Status::Done);
    assert_eq!(c.draft.as_ref().unwrap().outcome, Outcome::AlreadyAnswered);
    let pointer = b.double.texts().last().unwrap().clone();
    assert!(pointer.contains("https://double.example/p0"), "{pointer}");
    assert_eq!(c.plan.unwrap().reply_to, "m2", "the pointer answers the second mention");
}

/// A hashtag hit the model finds no verdict for ends with nothing posted (nobody asked for a
/// "could not verify"), and gives back the author's and the tag's slots.
#[tokio::test]
async fn a_hit_without_a_verdict_posts_nothing_and_frees_its_slots() {
    let b = bench(Script::reply("I am not sure what to make of this.")).await;
    let t = watched_hit(&b, "8");
    let id = b.add(t.clone());
    let job = b.run(&id).await;
    assert!(
        matches!(&job.status, Status::Skipped(crate::model::SkipReason::Policy(why)) if why.contains("nothing to post")),
        "{:?}",
        job.status
    );
    assert!(b.double.texts().is_empty());
    assert_eq!(b.worker.moderation.admit_hit(&t, "another-job", "carol").unwrap(), None);
}
