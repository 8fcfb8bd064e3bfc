//! Reported posts in-process, on the scripted platform (which records every finding item and
//! every public post): the finding reaches the moderators and nothing public by default;
//! fifty reports of one post are one job; a public channel posts only a verdict, with no
//! mention and no word of the report; the finding is delivered once across a failed delivery;
//! `reports off` and the reporter's window bound what reports cost.

use super::tests::{bench, Bench, VERDICT};
use super::*;
use crate::config::{ModerationConfig, ReportChannel, ReportsConfig};
use crate::model::{Account, Cause, NoteItem, Trigger};
use crate::platform::double::Call;
use crate::test_llm::Script;

pub(super) fn reports(b: &mut Bench, channel: ReportChannel) {
    let config = ModerationConfig {
        mastodon_moderators: vec!["mod".into()],
        reports: ReportsConfig {
            enabled: true,
            channel,
            ..ReportsConfig::default()
        },
        ..Default::default()
    };
    b.worker.moderation = crate::moderation::Moderation::new(config, b.worker.store.clone());
}

/// Report `report` of post `post` by the account with id `reporter`.
pub(super) fn report(report: &str, post: &str, reporter: &str) -> Trigger {
    Trigger {
        cause: Cause::Report {
            report: report.into(),
            reasons: vec!["misleading".into()],
        },
        event_id: post.into(),
        status_id: post.into(),
        in_reply_to_id: None,
        asked_in_text: false,
        author: Account {
            handle: format!("reporter{reporter}"),
            is_bot: false,
            is_self: false,
            nobot: false,
            id: Some(reporter.into()),
        },
        text: String::new(),
        ..Trigger::test_mention(report)
    }
}

/// Post `pid` by carol, public, repeating a checked claim.
pub(super) fn moon_post(b: &Bench, pid: &str) {
    b.double.add_post(crate::model::Post::text_only(
        pid,
        "carol",
        "The Moon is made of cheese.",
        chrono::Utc::now(),
        crate::model::Visibility::Public,
    ));
}

fn notes(b: &Bench) -> Vec<(String, NoteItem)> {
    b.double.notes.lock().unwrap().clone()
}

#[tokio::test]
async fn a_report_reaches_the_moderators_privately_and_nothing_is_posted() {
    let mut b = bench(Script::reply(VERDICT)).await;
    reports(&mut b, ReportChannel::Note);
    let id = b.add(report("12", "100", "7"));
    let job = b.run(&id).await;
    assert_eq!(job.status, Status::Done, "{:?}", job.last_error);
    assert!(b.double.texts().is_empty(), "nothing public: {:?}", b.double.texts());
    assert!(b.double.labels.lock().unwrap().is_empty());
    let items = notes(&b);
    assert!(items.len() >= 2, "{items:?}");
    for (_, item) in &items {
        let NoteItem::Message(text) = item else {
            panic!("{item:?}")
        };
        assert!(text.starts_with("@mod "), "every part addresses the moderators: {text}");
        assert!(!text.contains("reporter7"), "the reporter is never named: {text}");
    }
    let all: String = items.iter().map(|(_, i)| i.text().to_string()).collect();
    assert!(all.contains("Reported post"), "{all}");
    assert!(all.contains("false"), "the verdict is in the finding: {all}");
    assert!(job.trace.iter().any(|r| r.stage == Stage::Note));
    assert!(!job.note.unwrap().pending());
    // Not kept: there is no public answer to re-check.
    assert!(b.worker.store.kept(&id).unwrap().is_none());
}

#[tokio::test]
async fn fifty_reports_of_one_post_are_one_job() {
    let first = report("1", "100", "1");
    for n in 2..=50 {
        let other = report(&n.to_string(), "100", &n.to_string());
        assert_eq!(other.job_id(), first.job_id());
    }
    assert_ne!(report("1", "101", "1").job_id(), first.job_id());
    assert_eq!(first.requester(), None, "nobody public asked");
}

#[tokio::test]
async fn a_public_channel_posts_only_a_verdict_with_no_mention_and_no_word_of_the_report() {
    let mut b = bench(Script::reply(VERDICT)).await;
    reports(&mut b, ReportChannel::Reply);
    let id = b.add(report("12", "100", "7"));
    let job = b.run(&id).await;
    assert_eq!(job.status, Status::Done, "{:?}", job.last_error);
    let public = b.double.texts();
    assert!(!public.is_empty());
    for text in &public {
        let lower = text.to_lowercase();
        assert!(!lower.contains("report"), "{text}");
        assert!(!text.contains('@'), "no mention: {text}");
    }
    assert!(!notes(&b).is_empty(), "the moderators hear of it too");

    // No verdict (the bot cannot verify): the moderators hear of it, nobody else.
    let mut b = bench(Script::reply("I am not sure what to make of this.")).await;
    reports(&mut b, ReportChannel::Reply);
    let id = b.add(report("13", "100", "7"));
    let job = b.run(&id).await;
    assert_eq!(job.status, Status::Done, "{:?}", job.last_error);
    assert!(b.double.texts().is_empty(), "{:?}", b.double.texts());
    assert!(!notes(&b).is_empty());
}

#[tokio::test]
async fn a_finding_is_delivered_once_across_a_failed_delivery() {
    let mut b = bench(Script::reply(VERDICT)).await;
    reports(&mut b, ReportChannel::Note);
    b.double.fail_at(
        Call::Note,
        1,
        crate::platform::PlatformError::Transient("connection reset".into()),
    );
    let id = b.add(report("12", "100", "7"));
    let job = b.run(&id).await;
    assert_eq!(job.status, Status::Pending, "waits for its retry");
    assert_eq!(job.note.as_ref().unwrap().delivered.len(), 1);
    let job = b.run(&id).await;
    assert_eq!(job.status, Status::Done, "{:?}", job.last_error);
    let keys: Vec<String> = notes(&b).into_iter().map(|(k, _)| k).collect();
    let mut unique = keys.clone();
    unique.dedup();
    assert_eq!(keys, unique, "each item once");
    assert_eq!(keys.len(), job.note.unwrap().items.len());
}

#[tokio::test]
async fn reports_off_and_the_reporters_window_bound_what_reports_cost() {
    let mut b = bench(Script::reply(VERDICT)).await;
    reports(&mut b, ReportChannel::Note);
    b.worker.limits.checks_per_requester_per_hour = 2;
    let mut reads = Vec::new();
    for (n, pid) in ["101", "102", "103"].iter().enumerate() {
        moon_post(&b, pid);
        let id = b.add(report(&n.to_string(), pid, "7"));
        b.run(&id).await;
        reads.push(b.double.count(Call::Resolve));
    }
    let calls = b.llm_calls();
    let third = b.worker.store.job("mastodon:report:103").unwrap().unwrap();
    assert_eq!(third.status, Status::Skipped(SkipReason::OverQuotaSilenced));
    // Charged before the post is read: the report past the window costs no request.
    assert_eq!(reads[2], reads[1], "the third reported post was fetched: {reads:?}");

    // A moderator's `reports off`: the next report is skipped before any LLM call.
    b.worker
        .moderation
        .execute(
            crate::model::PlatformKind::Mastodon,
            "mod",
            None,
            &crate::model::Command::Reports(false),
            "en",
        )
        .unwrap();
    let id = b.add(report("9", "100", "8"));
    let job = b.run(&id).await;
    assert!(
        matches!(job.status, Status::Skipped(SkipReason::Policy(_))),
        "{:?}",
        job.status
    );
    assert_eq!(b.llm_calls(), calls);
}

#[tokio::test]
async fn the_label_channel_labels_where_labels_exist_and_posts_nothing_elsewhere() {
    let mut b = bench(Script::reply(VERDICT)).await;
    reports(&mut b, ReportChannel::Label);
    b.worker.labeler = crate::config::LabelerConfig {
        enabled: true,
        min_confidence: crate::config::Confidence::Drafted,
        ..Default::default()
    };
    let id = b.add(report("12", "100", "7"));
    let job = b.run(&id).await;
    assert_eq!(job.status, Status::Done, "{:?}", job.last_error);
    assert!(
        b.double.texts().is_empty(),
        "a label, not a reply: {:?}",
        b.double.texts()
    );
    assert_eq!(b.double.labels.lock().unwrap().len(), 1);

    // Mastodon has no labels (nor has a platform whose labeler is off): `label` posts nothing
    // public there.
    let mut b = bench(Script::reply(VERDICT)).await;
    reports(&mut b, ReportChannel::Label);
    b.double.no_labels.store(true, std::sync::atomic::Ordering::Relaxed);
    let id = b.add(report("13", "100", "7"));
    let job = b.run(&id).await;
    assert_eq!(job.status, Status::Done, "{:?}", job.last_error);
    assert!(b.double.texts().is_empty(), "{:?}", b.double.texts());
    assert!(b.double.labels.lock().unwrap().is_empty());
    assert!(!notes(&b).is_empty(), "the moderators still hear of it");
}

#[tokio::test]
async fn a_post_gone_while_its_finding_is_delivered_is_skipped_not_failed() {
    let mut b = bench(Script::reply(VERDICT)).await;
    reports(&mut b, ReportChannel::Note);
    b.double
        .fail_at(Call::Note, 0, crate::platform::PlatformError::Gone("deleted".into()));
    let id = b.add(report("12", "100", "7"));
    let job = b.run(&id).await;
    assert!(
        matches!(job.status, Status::Skipped(SkipReason::TargetUnavailable(_))),
        "{:?} {:?}",
        job.status,
        job.last_error
    );
    assert!(b.double.texts().is_empty());
}

#[tokio::test]
async fn hidden_characters_in_the_posts_address_do_not_reach_the_moderators() {
    let mut b = bench(Script::reply(VERDICT)).await;
    reports(&mut b, ReportChannel::Note);
    let mut post = crate::model::Post::text_only(
        "104",
        "carol",
        "The Moon is made of cheese.",
        chrono::Utc::now(),
        crate::model::Visibility::Public,
    );
    post.url = Some("https://x.example/@carol/104\u{202E}moc.evil".into());
    b.double.add_post(post);
    let id = b.add(report("12", "104", "7"));
    let job = b.run(&id).await;
    assert_eq!(job.status, Status::Done, "{:?}", job.last_error);
    let all: String = notes(&b).iter().map(|(_, i)| i.text().to_string()).collect();
    assert!(all.contains("https://x.example/@carol/104"), "{all}");
    assert!(!all.contains('\u{202E}'), "{all:?}");
}

#[tokio::test]
async fn a_mention_in_the_posts_address_reaches_nobody() {
    let mut b = bench(Script::reply(VERDICT)).await;
    reports(&mut b, ReportChannel::Note);
    let mut post = crate::model::Post::text_only(
        "105",
        "carol",
        "The Moon is made of cheese.",
        chrono::Utc::now(),
        crate::model::Visibility::Public,
    );
    // A remote server's address for its post, written to make the finding's DM a mention.
    post.url = Some("https://evil.example/notes/1?@spy@evil.example x.@spy2@evil.example ＠spy3@evil.example".into());
    b.double.add_post(post);
    let id = b.add(report("13", "105", "7"));
    let job = b.run(&id).await;
    assert_eq!(job.status, Status::Done, "{:?}", job.last_error);
    let all: String = notes(&b).iter().map(|(_, i)| i.text().to_string()).collect();
    assert!(
        all.contains("https://evil.example/notes/1?%40spy%40evil.example"),
        "{all}"
    );
    for spy in ["@spy", "@spy2", "＠spy3"] {
        assert!(!all.contains(spy), "{spy} in {all}");
    }
}

/// A remote author's post address longer than a whole message (on a host whose name a server
/// does not take for a link, so it counts every character): the finding's first part is cut
/// to the platform's limit and still delivered, naming the report.
#[tokio::test]
async fn a_long_post_address_is_cut_to_fit_and_the_finding_is_delivered() {
    let mut b = bench(Script::reply(VERDICT)).await;
    reports(&mut b, ReportChannel::Note);
    let mut post = crate::model::Post::text_only(
        "106",
        "carol",
        "The Moon is made of cheese.",
        chrono::Utc::now(),
        crate::model::Visibility::Public,
    );
    let long = format!("https://far.invalid/@carol/106/{}", "a".repeat(2_000));
    post.url = Some(long.clone());
    b.double.add_post(post);
    let id = b.add(report("14", "106", "7"));
    let job = b.run(&id).await;
    assert_eq!(job.status, Status::Done, "{:?}", job.last_error);
    let items = notes(&b);
    assert!(items.len() >= 2, "{items:?}");
    let limits = b.double.limits;
    for (_, item) in &items {
        let text = item.text();
        assert!(
            crate::compose::weighted_len(text, limits) <= limits.max_chars,
            "over {} characters: {text}",
            limits.max_chars
        );
    }
    // The part with the address fits however a server counts it.
    let head = items[0].1.text();
    assert!(
        crate::compose::weighted_len(head, limits.as_written()) <= limits.max_chars,
        "over {} characters as written: {head}",
        limits.max_chars
    );
    assert!(head.starts_with("@mod "), "{head}");
    assert!(head.contains("https://far.invalid/@carol/106/aaa"), "{head}");
    assert!(head.contains("(report 14)"), "the report is still named: {head}");
    assert!(!job.note.unwrap().pending());
}

/// A report job whose finding is one acknowledgement, its Note stage next.
fn acknowledging(b: &Bench, pid: &str) -> String {
    moon_post(b, pid);
    let id = b.add(report(&format!("r{pid}"), pid, "7"));
    let mut job = b.worker.store.job(&id).unwrap().unwrap();
    job.target = Some(b.double.posts.lock().unwrap()[pid].clone());
    job.draft = Some(crate::model::Draft {
        outcome: Outcome::Reply,
        text: "False.".into(),
        urls: vec![],
        verdict: Some(crate::model::Verdict::Inaccurate),
        stance: None,
    });
    job.verification = Some(crate::model::Verification {
        outcome: Some(crate::model::Verified::NotNeeded),
        ..Default::default()
    });
    job.plan = Some(crate::model::Plan {
        reply_to: pid.into(),
        visibility: crate::model::Visibility::Public,
        parts: vec![],
        as_written: false,
        shrink: 0,
        edit: false,
    });
    job.note = Some(crate::model::Note::new(vec![NoteItem::Acknowledge(
        "musebot: decided".into(),
    )]));
    b.worker.store.save(&job).unwrap();
    id
}

/// An acknowledgement closes every report on the subject, those filed after the bot read them
/// too: the reports are looked at again just before, and where one is not the bot's to judge
/// (or came later) the finding goes as a comment, the subject left open.
#[tokio::test]
async fn a_subject_whose_reports_are_not_all_the_bots_to_judge_is_commented_not_closed() {
    let b = bench(Script::reply(VERDICT)).await;
    b.double.closable.store(false, std::sync::atomic::Ordering::SeqCst);
    let id = acknowledging(&b, "110");
    let job = b.run(&id).await;
    assert_eq!(job.status, Status::Done, "{:?}", job.last_error);
    assert_eq!(
        notes(&b).iter().map(|(_, i)| i.clone()).collect::<Vec<_>>(),
        [NoteItem::Comment("musebot: decided".into())]
    );
    assert_eq!(job.note.unwrap().items, [NoteItem::Comment("musebot: decided".into())]);
    // Every report still the bot's to judge: closed.
    b.double.closable.store(true, std::sync::atomic::Ordering::SeqCst);
    let id = acknowledging(&b, "111");
    let job = b.run(&id).await;
    assert_eq!(job.status, Status::Done, "{:?}", job.last_error);
    assert!(
        matches!(notes(&b).last(), Some((_, NoteItem::Acknowledge(_)))),
        "{:?}",
        notes(&b)
    );
}

/// An intake over the bench's store and moderation, as the daemon builds it.
fn intake(b: &Bench) -> crate::intake::Intake {
    let (queues, _, _) = crate::intake::Queues::new(16);
    crate::intake::Intake::new(
        b.worker.store.clone(),
        crate::metrics::Metrics::new(),
        queues,
        Default::default(),
        b.worker.moderation.clone(),
        b.worker.limits.checks_per_requester_per_hour,
    )
}

async fn accept(intake: &crate::intake::Intake, t: Trigger) {
    let event = crate::intake::Event {
        trigger: Some(t),
        cursor: None,
    };
    intake.accept(event).await.unwrap();
}

#[tokio::test]
async fn a_post_skipped_for_its_first_reporter_is_checked_when_someone_else_reports_it() {
    let mut b = bench(Script::reply(VERDICT)).await;
    reports(&mut b, ReportChannel::Note);
    b.worker.limits.checks_per_requester_per_hour = 1;
    for pid in ["100", "101"] {
        moon_post(&b, pid);
    }
    // The first reporter of post 100 opted out: the job is skipped at intake.
    let out = crate::model::OptOut {
        platform: crate::model::PlatformKind::Mastodon,
        handle: "7".into(),
        since: chrono::Utc::now(),
    };
    b.worker
        .store
        .set_opt_out(crate::model::PlatformKind::Mastodon, "7", Some(&out))
        .unwrap();
    let intake = intake(&b);
    accept(&intake, report("1", "100", "7")).await;
    let id = "mastodon:report:100";
    let job = b.worker.store.job(id).unwrap().unwrap();
    assert_eq!(job.status, Status::Skipped(SkipReason::OptedOut));
    // The same reporter again (a re-read) changes nothing.
    accept(&intake, report("1", "100", "7")).await;
    assert_eq!(
        b.worker.store.job(id).unwrap().unwrap().status,
        Status::Skipped(SkipReason::OptedOut)
    );
    // Someone else's report of the post: checked, for that reporter.
    accept(&intake, report("2", "100", "8")).await;
    let job = b.worker.store.job(id).unwrap().unwrap();
    assert_eq!(job.status, Status::Pending);
    assert_eq!(job.trigger.author.id.as_deref(), Some("8"));
    let job = b.run(id).await;
    assert_eq!(job.status, Status::Done, "{:?}", job.last_error);
    assert!(!notes(&b).is_empty(), "the moderators hear of it");
    // A done job is not taken over: many reports, one check.
    let calls = b.llm_calls();
    accept(&intake, report("3", "100", "9")).await;
    assert_eq!(b.worker.store.job(id).unwrap().unwrap().status, Status::Done);
    assert_eq!(b.llm_calls(), calls);

    // Reporter 8 has spent its one check this hour: its report of 101 is skipped, and
    // taken over by the next reporter's.
    accept(&intake, report("4", "101", "8")).await;
    let job = b.run("mastodon:report:101").await;
    assert_eq!(job.status, Status::Skipped(SkipReason::OverQuotaSilenced));
    accept(&intake, report("5", "101", "10")).await;
    let job = b.run("mastodon:report:101").await;
    assert_eq!(job.status, Status::Done, "{:?}", job.last_error);
}

/// An account past its hourly window reports a post, and an ordinary member reports it in the
/// same read (before any worker ran): the post is checked, for the member. The window is
/// charged when intake decides, so the first report ends at once and the second takes over.
#[tokio::test]
async fn a_report_that_comes_while_a_spent_reporters_job_is_pending_is_not_dropped() {
    let mut b = bench(Script::reply(VERDICT)).await;
    reports(&mut b, ReportChannel::Note);
    b.worker.limits.checks_per_requester_per_hour = 1;
    for pid in ["102", "103"] {
        moon_post(&b, pid);
    }
    let intake = intake(&b);
    // Reporter 8 spends its one check of the hour.
    accept(&intake, report("6", "102", "8")).await;
    let job = b.run("mastodon:report:102").await;
    assert_eq!(job.status, Status::Done, "{:?}", job.last_error);
    // One read: 8's report of 103, then member 11's.
    accept(&intake, report("7", "103", "8")).await;
    accept(&intake, report("8", "103", "11")).await;
    let job = b.run("mastodon:report:103").await;
    assert_eq!(job.status, Status::Done, "{:?} {:?}", job.status, job.last_error);
    assert_eq!(job.trigger.author.id.as_deref(), Some("11"), "checked for the member");
}

#[tokio::test]
async fn a_platform_moderators_reports_are_bounded_by_the_budget_not_the_strangers_window() {
    let mut b = bench(Script::reply(VERDICT)).await;
    reports(&mut b, ReportChannel::Note);
    b.worker.moderation = b.worker.moderation.clone().with_mastodon_ids(["77".to_string()]);
    b.worker.limits.checks_per_requester_per_hour = 1;
    for (n, pid) in ["101", "102", "103"].iter().enumerate() {
        moon_post(&b, pid);
        let id = b.add(report(&n.to_string(), pid, "77"));
        let job = b.run(&id).await;
        assert_eq!(
            job.status,
            Status::Done,
            "report {n}: {:?} {:?}",
            job.status,
            job.last_error
        );
    }
}

/// Only a job that ended on its reporter before reading the post is taken over: one that read
/// and drafted (a draft a moderator may have approved) or one skipped for the post's author
/// is not.
#[test]
fn a_job_that_read_the_post_or_ended_on_its_author_is_not_taken_over() {
    let mut drafted = Job::new(report("1", "100", "7"));
    drafted.status = Status::Skipped(SkipReason::OptedOut);
    assert!(drafted.reopened_by(&report("2", "100", "8")));
    drafted.target = Some(crate::model::Post::text_only(
        "100",
        "carol",
        "x",
        chrono::Utc::now(),
        crate::model::Visibility::Public,
    ));
    assert!(!drafted.reopened_by(&report("2", "100", "8")));
    let mut author = Job::new(report("1", "100", "7"));
    author.status = Status::Skipped(SkipReason::Policy("the reported post's author opted out".into()));
    assert!(!author.reopened_by(&report("2", "100", "8")));
}

/// A remote server's reporters share one window, keyed by its domain: a server that files
/// Flags under a new actor each time gets no more checks than one reporter.
#[tokio::test]
async fn a_remote_servers_reporters_share_one_window() {
    let mut b = bench(Script::reply(VERDICT)).await;
    reports(&mut b, ReportChannel::Note);
    b.worker.limits.checks_per_requester_per_hour = 1;
    let mut fates = Vec::new();
    for (n, pid) in ["101", "102"].iter().enumerate() {
        moon_post(&b, pid);
        let mut t = report(&n.to_string(), pid, &format!("90{n}"));
        t.author.handle = format!("actor{n}@evil.example");
        let id = b.add(t);
        fates.push(b.run(&id).await.status);
    }
    assert_eq!(fates[0], Status::Done);
    assert_eq!(fates[1], Status::Skipped(SkipReason::OverQuotaSilenced));
}

/// Unasked work (six reported posts) never holds the last job permit: a mention that comes
/// while it runs is served beside it, not after it (order, not time, is asserted).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mention_is_served_beside_unasked_work_not_after_it() {
    let mut script = Script::reply(VERDICT);
    script.delay = std::time::Duration::from_millis(300);
    let mut b = bench(script).await;
    reports(&mut b, ReportChannel::Note);
    b.worker.limits.checks_per_requester_per_hour = 100;
    let mut reported = Vec::new();
    for n in 0..6 {
        let pid = format!("20{n}");
        moon_post(&b, &pid);
        reported.push(b.add(report(&n.to_string(), &pid, &format!("7{n}"))));
    }
    let mut m = Trigger::test_mention("m1");
    m.in_reply_to_id = Some("100".into());
    let mention = b.add(m);
    let super::tests::Bench { worker, _dir, .. } = b;
    let worker = Arc::new(worker);
    let (queues, first_rx, later_rx) = crate::intake::Queues::new(16);
    for id in &reported {
        queues.later.try_send(id.clone()).unwrap();
    }
    let shutdown = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn(super::dispatch::dispatch(
        worker.clone(),
        (first_rx, later_rx),
        2,
        std::time::Duration::from_secs(5),
        shutdown.clone(),
    ));
    let pending = |id: &str| worker.store.job(id).unwrap().unwrap().status == Status::Pending;
    // The unasked work has begun (its first LLM call is under way).
    while worker.store.job(&reported[0]).unwrap().unwrap().trace.is_empty() {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    queues.first.try_send(mention.clone()).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while pending(&mention) {
        assert!(std::time::Instant::now() < deadline, "the mention was never served");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let done = reported.iter().filter(|id| !pending(id)).count();
    assert_eq!(worker.store.job(&mention).unwrap().unwrap().status, Status::Done);
    assert!(done <= 2, "{done} of 6 unasked jobs finished before the mention");
    shutdown.cancel();
    task.await.unwrap();
}
