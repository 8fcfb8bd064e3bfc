//! Living replies in-process: a scripted platform and LLM, a real store, the real
//! scheduler and follower with a scripted clock (`Scheduler::tick(now)` is handed the time,
//! so "in 24 hours" is a call, not a wait). Re-checks, updates (once, at most `max_updates`),
//! a crash after an update, deletions and edits followed, the `recheck` and `withdraw`
//! commands and who may give them.

use std::sync::{Arc, Mutex};

use super::tests::{bench, mention, watched_hit, Bench, VERDICT};
use super::*;
use crate::living::follow::Follower;
use crate::living::schedule::Scheduler;
use crate::model::{Cause, Command, Kept, RecheckWhy, Trigger};
use crate::platform::double::Call;
use crate::test_llm::Script;

const UNSURE: &str = "This post cannot be verified. No report I know of says whether the Moon is made of cheese.";

/// A bench whose LLM answers whatever `answer` holds at the time of the call.
pub(super) async fn living_bench() -> (Bench, Arc<Mutex<String>>) {
    let answer = Arc::new(Mutex::new(UNSURE.to_string()));
    let a = answer.clone();
    let b = bench(Script::routed(move |_| a.lock().unwrap().clone())).await;
    (b, answer)
}

pub(super) fn scheduler(b: &Bench) -> Scheduler {
    Scheduler {
        store: b.worker.store.clone(),
        config: b.worker.living.clone(),
        metrics: None,
    }
}

pub(super) fn follower(b: &Bench) -> Follower {
    Follower {
        store: b.worker.store.clone(),
        config: b.worker.living.clone(),
        platforms: b.worker.platforms.clone(),
        metrics: None,
    }
}

/// A re-check of a kept answer set now, as a moderator's `recheck` sets it (held to one at a
/// time and the thread's bounds, not to the cooldown): whether it was set.
pub(super) fn set_recheck(b: &Bench, id: &str, why: RecheckWhy) -> bool {
    let (set, _) = crate::living::recheck_now(
        &b.worker.store,
        &b.worker.living,
        id,
        why,
        crate::living::Asker::Moderator,
    )
    .unwrap();
    set == crate::living::RecheckSet::Set
}

pub(super) fn kept(b: &Bench, id: &str) -> Kept {
    b.worker.store.kept(id).unwrap().expect("the answer is kept")
}

/// The re-check jobs waiting in the store.
pub(super) fn rechecks(b: &Bench) -> Vec<String> {
    let mut ids: Vec<String> = b
        .worker
        .store
        .pending_jobs()
        .unwrap()
        .into_iter()
        .filter(|j| matches!(j.trigger.cause, Cause::Recheck { .. }))
        .map(|j| j.id)
        .collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn an_unverified_answer_is_rechecked_on_its_timers_and_corrected_once_in_its_thread() {
    let (b, answer) = living_bench().await;
    let id = b.add(mention("1"));
    let first = b.run(&id).await;
    assert_eq!(first.status, Status::Done);
    let k = kept(&b, &id);
    assert_eq!(k.timers, 2, "1 h and 24 h");
    assert_eq!(k.parts, first.posted);
    assert_eq!(k.claim, "The Moon is made of cheese.");
    let now = chrono::Utc::now();
    assert_eq!(scheduler(&b).tick(now).unwrap(), 0, "nothing is due yet");

    // An hour later: still unsure — nothing is posted.
    assert_eq!(scheduler(&b).tick(now + chrono::Duration::minutes(61)).unwrap(), 1);
    assert_eq!(
        scheduler(&b).tick(now + chrono::Duration::minutes(61)).unwrap(),
        0,
        "a timer fires once"
    );
    let r1 = rechecks(&b);
    assert_eq!(r1, [format!("mastodon:recheck:{id}:0")]);
    let posted_before = b.double.texts().len();
    let done = b.run(&r1[0]).await;
    assert!(
        matches!(done.status, Status::Skipped(SkipReason::Unchanged(_))),
        "{:?}",
        done.status
    );
    assert_eq!(
        b.double.texts().len(),
        posted_before,
        "an unchanged verdict posts nothing"
    );

    // A day later the facts are in: one update, under the thread's last part.
    *answer.lock().unwrap() = VERDICT.into();
    assert_eq!(scheduler(&b).tick(now + chrono::Duration::hours(25)).unwrap(), 1);
    let r2 = format!("mastodon:recheck:{id}:1");
    let done = b.run(&r2).await;
    assert_eq!(done.status, Status::Done, "{:?}", done.last_error);
    let posted = b.double.posted.lock().unwrap().clone();
    let update = &posted[posted_before..];
    assert!(!update.is_empty());
    assert_eq!(
        update[0].1,
        *first.posted.last().unwrap(),
        "the update hangs under the last part"
    );
    assert!(
        update[0].2.starts_with("@bob Update: This post is false."),
        "{}",
        update[0].2
    );
    assert_eq!(update[0].0, format!("musebot-{r2}-0"), "its own keys");
    let k = kept(&b, &id);
    assert_eq!(k.updates.len(), 1);
    assert_eq!(k.verdict, Some(crate::model::Verdict::Inaccurate));
    assert_eq!(
        k.parts.len(),
        first.posted.len() + update.len(),
        "the update's parts join the thread"
    );

    // The same verdict again, asked for: nothing new, nothing posted.
    let k = kept(&b, &id);
    assert!(super::tests_living::set_recheck(
        &b,
        &k.job_id,
        RecheckWhy::Asked("bob".into())
    ));
    assert_eq!(scheduler(&b).tick(chrono::Utc::now()).unwrap(), 1);
    let done = b.run(&format!("mastodon:recheck:{id}:2")).await;
    assert!(
        matches!(done.status, Status::Skipped(SkipReason::Unchanged(_))),
        "{:?}",
        done.status
    );
    assert_eq!(b.double.posted.lock().unwrap().len(), posted.len());
}

#[tokio::test]
async fn a_thread_gets_at_most_max_updates_and_a_crash_after_an_update_records_it_once() {
    let (mut b, answer) = living_bench().await;
    b.worker.living.max_updates = 1;
    let id = b.add(mention("1"));
    b.run(&id).await;
    *answer.lock().unwrap() = VERDICT.into();
    let k = kept(&b, &id);
    super::tests_living::set_recheck(&b, &k.job_id, RecheckWhy::Edited);
    scheduler(&b).tick(chrono::Utc::now()).unwrap();
    let r = format!("mastodon:recheck:{id}:2");
    let done = b.run(&r).await;
    assert_eq!(done.status, Status::Done);
    let posted = b.double.posted.lock().unwrap().len();
    // The last update says the bot no longer follows the post.
    let said: Vec<String> = b.double.posted.lock().unwrap().iter().map(|p| p.2.clone()).collect();
    assert!(crate::words::say("en", "update_last", ()).contains("I no longer follow this post"));
    assert!(
        said.last().is_some_and(|t| t.contains("I no longer follow this post")),
        "{said:#?}"
    );

    // A crash after the last part was saved, before the update was recorded and the job saved.
    b.worker.store.update_kept(&id, |k| k.updates.clear()).unwrap();
    let mut job = done.clone();
    job.status = Status::Pending;
    b.worker.store.save(&job).unwrap();
    let again = b.run(&r).await;
    assert_eq!(again.status, Status::Done);
    assert_eq!(b.double.posted.lock().unwrap().len(), posted, "nothing is posted again");
    assert_eq!(kept(&b, &id).updates.len(), 1, "recorded once");
    b.run(&r).await;
    assert_eq!(kept(&b, &id).updates.len(), 1, "and only once");

    // The thread has had its one update: no further re-check is set.
    *answer.lock().unwrap() = "This post is accurate. Scientists now agree the Moon is cheese.".into();
    let k = kept(&b, &id);
    assert!(!super::tests_living::set_recheck(&b, &k.job_id, RecheckWhy::Edited));
}

#[tokio::test]
async fn a_deleted_post_takes_its_answer_with_it_and_its_pending_recheck_posts_nothing() {
    let (b, answer) = living_bench().await;
    let id = b.add(mention("1"));
    let first = b.run(&id).await;
    // A re-check already queued when the post goes.
    let k = kept(&b, &id);
    super::tests_living::set_recheck(&b, &k.job_id, RecheckWhy::Edited);
    scheduler(&b).tick(chrono::Utc::now()).unwrap();
    let queued = rechecks(&b);
    assert_eq!(queued.len(), 1);

    b.double.posts.lock().unwrap().remove("100");
    let resolves = b.double.count(Call::Resolve);
    let round = follower(&b).round().await.unwrap();
    assert_eq!(round.deleted, 1, "{round:?}");
    assert_eq!(b.double.count(Call::LookMany), 1, "one batch read");
    assert_eq!(
        b.double.count(Call::Resolve),
        resolves + 1,
        "the missing post confirmed alone"
    );
    let mut deleted = b.double.deleted.lock().unwrap().clone();
    deleted.reverse();
    assert_eq!(deleted, first.posted, "every part, last first");
    let k = kept(&b, &id);
    assert!(k.gone.is_some());
    assert!(
        k.claim.is_empty() && k.vector.is_none(),
        "no copy of the post's text is kept"
    );
    assert!(b.worker.store.timers_of(&id).unwrap().is_empty());
    assert!(b.worker.store.reply_for(&format!("mastodon:100")).unwrap().is_none());

    *answer.lock().unwrap() = VERDICT.into();
    let posted = b.double.texts().len();
    let done = b.run(&queued[0]).await;
    assert!(
        matches!(done.status, Status::Skipped(SkipReason::Unchanged(_))),
        "{:?}",
        done.status
    );
    assert_eq!(b.double.texts().len(), posted);
    assert_eq!(follower(&b).round().await.unwrap().deleted, 0, "deleted once");
}

#[tokio::test]
async fn an_edited_post_is_rechecked_and_the_asker_deleting_the_ask_leaves_the_answer() {
    let (b, _answer) = living_bench().await;
    let id = b.add(mention("1"));
    b.run(&id).await;
    let round = follower(&b).round().await.unwrap();
    assert_eq!(
        (round.looked, round.edited, round.deleted),
        (1, 0, 0),
        "unchanged: nothing"
    );
    let mut post = b.double.posts.lock().unwrap()["100"].clone();
    post.text = "The Moon is made of cheese, NASA admits.".into();
    b.double.add_post(post);
    let round = follower(&b).round().await.unwrap();
    assert_eq!(round.edited, 1, "{round:?}");
    assert_eq!(scheduler(&b).tick(chrono::Utc::now()).unwrap(), 1);
    assert_eq!(kept(&b, &id).claim, "The Moon is made of cheese, NASA admits.");
    // The post that asked ("m1") is not the checked one; its deletion changes nothing by default.
    assert_eq!(follower(&b).round().await.unwrap().deleted, 0);
}

pub(super) fn command(b: &Bench, event: &str, author: &str, command: Command, under: &str) -> String {
    let mut t = mention(event);
    t.author.handle = author.into();
    t.cause = Cause::Command { command };
    t.in_reply_to_id = Some(under.into());
    let _ = b;
    b.add(Trigger { ..t })
}

#[tokio::test]
async fn recheck_is_the_askers_or_a_moderators_and_withdraw_a_moderators() {
    let (mut b, _answer) = living_bench().await;
    let mut config = crate::config::ModerationConfig::default();
    config.mastodon_moderators = vec!["mod".into()];
    b.worker.moderation = crate::moderation::Moderation::new(config, b.worker.store.clone());
    let id = b.add(mention("1"));
    let first = b.run(&id).await;
    let part = first.posted[1].clone();

    // Someone else: ignored, never acknowledged, no timer.
    let eve = command(&b, "2", "eve", Command::Recheck, &part);
    let done = b.run(&eve).await;
    assert_eq!(done.status, Status::Skipped(SkipReason::NotModerator));
    let timers = kept(&b, &id).timers;
    // The asker, under any part of the answer: acknowledged, a re-check set.
    let bob = command(&b, "3", "bob", Command::Recheck, &part);
    let done = b.run(&bob).await;
    assert_eq!(done.status, Status::Done, "{:?}", done.last_error);
    assert!(b.double.texts().last().unwrap().contains("Checking this again"));
    assert_eq!(kept(&b, &id).timers, timers + 1);
    // A moderator, under the checked post itself, while the asker's re-check still waits: told
    // it is on its way, and no second one is set (one at a time).
    let m = command(&b, "4", "mod", Command::Recheck, "100");
    assert_eq!(b.run(&m).await.status, Status::Done);
    assert!(
        b.double.texts().last().unwrap().contains("Checking this again"),
        "{:?}",
        b.double.texts().last()
    );
    assert_eq!(kept(&b, &id).timers, timers + 1);

    // Withdraw: the asker may not; a moderator deletes every part.
    let w = command(&b, "5", "bob", Command::Withdraw("no".into()), &part);
    assert_eq!(b.run(&w).await.status, Status::Skipped(SkipReason::NotModerator));
    assert!(b.double.deleted.lock().unwrap().is_empty());
    let w = command(&b, "6", "mod", Command::Withdraw("wrong post".into()), &part);
    let done = b.run(&w).await;
    assert_eq!(done.status, Status::Done, "{:?}", done.last_error);
    assert_eq!(b.double.deleted.lock().unwrap().len(), first.posted.len());
    assert!(kept(&b, &id).gone.as_deref().unwrap().contains("wrong post"));
    assert!(b.double.texts().last().unwrap().contains("Withdrawn"));
    // Nothing is left to re-check.
    assert!(b.worker.store.timers_of(&id).unwrap().is_empty());
    let again = command(&b, "7", "bob", Command::Recheck, &part);
    b.run(&again).await;
    assert!(
        b.double.texts().last().unwrap().contains("cannot be updated"),
        "{:?}",
        b.double.texts().last()
    );
}

#[tokio::test]
async fn the_admin_page_lists_kept_answers_with_their_next_recheck() {
    let (b, _answer) = living_bench().await;
    let id = b.add(mention("1"));
    b.run(&id).await;
    let data = crate::admin::view::dashboard(&b.worker.moderation, 10).unwrap();
    let kept = &data["kept"][0];
    assert_eq!(kept["job"], id);
    assert_eq!(kept["claim"], "The Moon is made of cheese.");
    let next = kept["next"].as_str().expect("a timer is shown");
    let in_an_hour = (chrono::Utc::now() + chrono::Duration::hours(1))
        .format("%Y-%m-%d %H")
        .to_string();
    assert!(next.starts_with(&in_an_hour), "{next}");
}

#[tokio::test]
async fn a_paused_platform_posts_no_update_of_a_hashtag_auto_reply() {
    let (b, answer) = living_bench().await;
    *answer.lock().unwrap() = VERDICT.into();
    let hit = watched_hit(&b, "1");
    let id = b.add(hit);
    let first = b.run(&id).await;
    assert_eq!(first.status, Status::Done, "{:?}", first.status);
    b.worker
        .store
        .set_paused(crate::model::PlatformKind::Mastodon, true)
        .unwrap();
    *answer.lock().unwrap() = "This post is accurate. Scientists now agree the Moon is cheese.".into();
    let k = kept(&b, &id);
    super::tests_living::set_recheck(&b, &k.job_id, RecheckWhy::Edited);
    scheduler(&b).tick(chrono::Utc::now()).unwrap();
    let posted = b.double.texts().len();
    let done = b.run(&rechecks(&b)[0]).await;
    assert!(
        matches!(done.status, Status::Skipped(SkipReason::Policy(_))),
        "{:?}",
        done.status
    );
    assert_eq!(b.double.texts().len(), posted);
}

/// Re-checks have their own share of the day's budget, below reports': with the day's spend
/// past `recheck_share` but below `report_share`, a due re-check waits for the next UTC day
/// (running nothing) while a reported post is still checked.
#[tokio::test]
async fn past_the_recheck_share_a_recheck_waits_while_a_report_is_served() {
    use super::tests_reports::{moon_post, report, reports};
    let (mut b, answer) = living_bench().await;
    reports(&mut b, crate::config::ReportChannel::Note);
    let id = b.add(mention("1"));
    assert_eq!(b.run(&id).await.status, Status::Done);
    *answer.lock().unwrap() = VERDICT.into();
    // 70 % of the day's tokens spent: past the re-check share (0.6), below reports' (0.8).
    let budget = &mut b.worker.moderation.budget;
    budget
        .record(Usage {
            prompt_tokens: 1_000,
            completion_tokens: 0,
        })
        .unwrap();
    let today = budget.today();
    budget.config = crate::config::BudgetConfig {
        daily_tokens: (today.prompt_tokens + today.completion_tokens) * 10 / 7,
        recheck_share: 0.6,
        report_share: 0.8,
        ..Default::default()
    };
    let used = budget.used();
    assert!((0.6..0.8).contains(&used), "{used}");

    let k = kept(&b, &id);
    set_recheck(&b, &k.job_id, RecheckWhy::Edited);
    scheduler(&b).tick(chrono::Utc::now()).unwrap();
    let r = format!("mastodon:recheck:{id}:2");
    let calls = b.llm_calls();
    let waiting = b.run(&r).await;
    assert_eq!(waiting.status, Status::Pending, "{:?}", waiting.last_error);
    let until = waiting.retry_at.expect("waits");
    assert!(until > chrono::Utc::now() && until <= chrono::Utc::now() + chrono::Duration::days(1));
    assert_eq!(b.llm_calls(), calls, "the re-check ran nothing");

    moon_post(&b, "101");
    let reported = b.add(report("9", "101", "7"));
    let job = b.run(&reported).await;
    assert_eq!(job.status, Status::Done, "{:?} {:?}", job.status, job.last_error);
}
