//! Labels in-process: the labeler's channels and confidence on the stage machine,
//! the label stage's intent and resume (emitted once across a crash either side of the
//! call), a changed verdict moving the label, a re-check's stale event not put back after a
//! moderator's `unlabel`, and a withdrawal negating it — on the scripted
//! platform, which records every label event.

use std::sync::{Arc, Mutex};

use super::tests::{bench, mention, watched_hit, Bench, VERDICT};
use super::tests_living::{command, kept, rechecks, scheduler};
use super::*;
use crate::config::{Channel, Confidence, LabelerConfig};
use crate::model::Visibility;
use crate::model::{Cause, Command, LabelValue, RecheckWhy, Trigger};
use crate::platform::double::Call;
use crate::test_llm::Script;

const UNSURE: &str = "This post cannot be verified. No report I know of says whether the Moon is made of cheese.";
const RIGHT: &str = "This post is accurate. The Moon is made of rock and dust, as every sample since 1969 shows.";

fn labeler(mentions: Channel) -> LabelerConfig {
    LabelerConfig {
        enabled: true,
        mentions,
        hashtags: Channel::Label,
        flags: Channel::Both,
        // The baseline pipeline drafts without evidence: nothing here is "verified".
        min_confidence: Confidence::Drafted,
        ..LabelerConfig::default()
    }
}

async fn labelling(answer: &str, mentions: Channel) -> (Bench, Arc<Mutex<String>>) {
    let now = Arc::new(Mutex::new(answer.to_string()));
    let a = now.clone();
    let mut b = bench(Script::routed(move |_| a.lock().unwrap().clone())).await;
    b.worker.labeler = labeler(mentions);
    (b, now)
}

fn labels(b: &Bench) -> Vec<crate::model::JobLabel> {
    b.double.labels.lock().unwrap().clone()
}

#[tokio::test]
async fn a_label_only_verdict_is_put_on_the_checked_post_and_nothing_is_posted() {
    let (b, _) = labelling(VERDICT, Channel::Label).await;
    let id = b.add(mention("1"));
    let job = b.run(&id).await;
    assert_eq!(job.status, Status::Done, "{:?}", job.last_error);
    assert!(b.double.texts().is_empty(), "{:?}", b.double.texts());
    let l = labels(&b);
    assert_eq!(l.len(), 1);
    assert_eq!(l[0].uri, "100", "the checked post, not the asking one");
    assert_eq!(l[0].create, [LabelValue::False]);
    assert!(l[0].negate.is_empty());
    assert!(job.trace.iter().any(|r| r.stage == Stage::Label));
    assert_eq!(
        kept(&b, &id).label.map(|l| l.0),
        Some(LabelValue::False),
        "kept for its re-checks"
    );
}

#[tokio::test]
async fn both_labels_and_replies_with_the_same_verdict() {
    let (b, _) = labelling(VERDICT, Channel::Both).await;
    let id = b.add(mention("1"));
    let job = b.run(&id).await;
    assert_eq!(job.status, Status::Done, "{:?}", job.last_error);
    assert!(!job.posted.is_empty());
    assert!(b.double.texts()[0].contains("false"), "{:?}", b.double.texts());
    assert_eq!(labels(&b).len(), 1);
    assert_eq!(labels(&b)[0].create, [LabelValue::False]);
    // The reply channel alone labels nothing.
    let (b, _) = labelling(VERDICT, Channel::Reply).await;
    let job = b.run(&b.add(mention("2"))).await;
    assert_eq!(job.status, Status::Done);
    assert!(labels(&b).is_empty());
    assert!(!b.double.texts().is_empty());
}

#[tokio::test]
async fn no_label_without_a_sure_verdict_but_an_asker_is_still_answered() {
    // "Could not verify" has no label: the mention gets its reply anyway.
    let (b, _) = labelling(UNSURE, Channel::Label).await;
    let job = b.run(&b.add(mention("1"))).await;
    assert_eq!(job.status, Status::Done, "{:?}", job.last_error);
    assert!(labels(&b).is_empty());
    assert!(!b.double.texts().is_empty());
    // A verdict below the minimum confidence: the same.
    let (mut b, _) = labelling(VERDICT, Channel::Label).await;
    b.worker.labeler.min_confidence = Confidence::FactCheck;
    let job = b.run(&b.add(mention("2"))).await;
    assert_eq!(job.status, Status::Done);
    assert!(labels(&b).is_empty());
    assert!(b.double.texts()[0].contains("false"));
    // A watched tag's post labelled only: with a verdict, a label and no reply …
    let (b, _) = labelling(VERDICT, Channel::Reply).await;
    let job = b.run(&b.add(watched_hit(&b, "h1"))).await;
    assert_eq!(job.status, Status::Done, "{:?}", job.last_error);
    assert_eq!(labels(&b).len(), 1);
    assert!(b.double.texts().is_empty());
    // … and below the minimum, nothing at all (nobody asked).
    let (mut b, _) = labelling(VERDICT, Channel::Reply).await;
    b.worker.labeler.min_confidence = Confidence::Verified;
    let job = b.run(&b.add(watched_hit(&b, "h2"))).await;
    assert!(
        matches!(job.status, Status::Skipped(SkipReason::Policy(_))),
        "{:?}",
        job.status
    );
    assert!(labels(&b).is_empty() && b.double.texts().is_empty());
}

#[tokio::test]
async fn a_label_is_emitted_once_across_a_stop_on_either_side_of_the_call() {
    // The call fails (never reached the labeler): the retry emits it, once.
    let (b, _) = labelling(VERDICT, Channel::Label).await;
    b.double.fail(
        Call::Label,
        crate::platform::PlatformError::Transient("labeler down".into()),
    );
    let id = b.add(mention("1"));
    let job = b.run(&id).await;
    assert_eq!(job.status, Status::Pending);
    assert!(
        job.label.as_ref().unwrap().asked_at.is_some(),
        "the intent was saved first"
    );
    assert!(labels(&b).is_empty());
    let job = b.run(&id).await;
    assert_eq!(job.status, Status::Done, "{:?}", job.last_error);
    assert_eq!(labels(&b).len(), 1);

    // The call reached the labeler, the stop came before its record: not emitted again.
    let (b, _) = labelling(VERDICT, Channel::Label).await;
    let id = b.add(mention("2"));
    let mut job = b.run(&id).await;
    assert_eq!(labels(&b).len(), 1);
    job.label.as_mut().unwrap().sent_at = None;
    job.status = Status::Pending;
    b.worker.store.save(&job).unwrap();
    let job = b.run(&id).await;
    assert_eq!(job.status, Status::Done, "{:?}", job.last_error);
    assert_eq!(labels(&b).len(), 1, "the labeler already served it");
}

#[tokio::test]
async fn a_changed_verdict_moves_the_label_and_a_withdrawal_negates_it() {
    let (mut b, answer) = labelling(VERDICT, Channel::Label).await;
    let mut config = crate::config::ModerationConfig::default();
    config.mastodon_moderators = vec!["mod".into()];
    b.worker.moderation = crate::moderation::Moderation::new(config, b.worker.store.clone());
    let id = b.add(mention("1"));
    assert_eq!(b.run(&id).await.status, Status::Done);

    // The first answer's hour is over (its fresh mark dropped).
    b.worker
        .store
        .fresh_kept(chrono::Utc::now() + chrono::Duration::seconds(1))
        .unwrap();
    let relabelled = chrono::Utc::now() + chrono::Duration::seconds(1);
    // The facts change: a re-check moves the label in one event, and posts nothing.
    *answer.lock().unwrap() = RIGHT.into();
    let k = kept(&b, &id);
    assert!(super::tests_living::set_recheck(
        &b,
        &k.job_id,
        RecheckWhy::Asked("mod".into())
    ));
    assert_eq!(scheduler(&b).tick(chrono::Utc::now()).unwrap(), 1);
    let r = rechecks(&b);
    let done = b.run(&r[0]).await;
    assert_eq!(done.status, Status::Done, "{:?}", done.last_error);
    let l = labels(&b);
    assert_eq!(l.len(), 2);
    assert_eq!(
        (l[1].create.as_slice(), l[1].negate.as_slice()),
        ([LabelValue::Accurate].as_slice(), [LabelValue::False].as_slice())
    );
    assert!(b.double.texts().is_empty(), "{:?}", b.double.texts());
    let k = kept(&b, &id);
    assert_eq!(k.label.as_ref().map(|l| l.0), Some(LabelValue::Accurate));
    // The post is looked at every round for the next hour, as after the first answer (whose
    // hour was spent above, before the re-check).
    assert!(b
        .worker
        .store
        .fresh_kept(relabelled - chrono::Duration::seconds(1))
        .unwrap()
        .iter()
        .any(|k| k.job_id == id));
    assert_eq!(k.verdict, Some(crate::model::Verdict::Accurate));
    assert_eq!(b.double.labels_on("100"), [LabelValue::Accurate]);

    // The same verdict again: nothing moves.
    let k = kept(&b, &id);
    assert!(super::tests_living::set_recheck(
        &b,
        &k.job_id,
        RecheckWhy::Asked("mod".into())
    ));
    assert_eq!(scheduler(&b).tick(chrono::Utc::now()).unwrap(), 1);
    let r2: Vec<String> = rechecks(&b).into_iter().filter(|x| !r.contains(x)).collect();
    let done = b.run(&r2[0]).await;
    assert!(
        matches!(done.status, Status::Skipped(SkipReason::Unchanged(_))),
        "{:?}",
        done.status
    );
    assert_eq!(labels(&b).len(), 2);

    // A moderator withdraws the answer (under the checked post): the label is negated.
    let w = command(&b, "9", "mod", Command::Withdraw("wrong post".into()), "100");
    let done = b.run(&w).await;
    assert_eq!(done.status, Status::Done, "{:?}", done.last_error);
    let l = labels(&b);
    assert_eq!(l.len(), 3);
    assert_eq!(l[2].negate, [LabelValue::Accurate]);
    assert!(l[2].create.is_empty());
    assert!(b.double.labels_on("100").is_empty());
    assert_eq!(kept(&b, &id).label, None);
}

#[tokio::test]
async fn moderators_label_and_unlabel_an_answer_and_choose_a_tags_channel() {
    let (mut b, _) = labelling(VERDICT, Channel::Reply).await;
    let mut config = crate::config::ModerationConfig::default();
    config.mastodon_moderators = vec!["mod".into()];
    b.worker.moderation = crate::moderation::Moderation::new(config, b.worker.store.clone());
    let id = b.add(mention("1"));
    let first = b.run(&id).await;
    assert_eq!(first.status, Status::Done);
    assert!(labels(&b).is_empty(), "the reply channel labels nothing");

    // Someone else's `label` is ignored; a moderator's puts the answer's verdict on.
    let eve = command(&b, "2", "eve", Command::Label, &first.posted[0]);
    assert_eq!(b.run(&eve).await.status, Status::Skipped(SkipReason::NotModerator));
    assert!(labels(&b).is_empty());
    let l = command(&b, "3", "mod", Command::Label, &first.posted[0]);
    let done = b.run(&l).await;
    assert_eq!(done.status, Status::Done, "{:?}", done.last_error);
    assert_eq!(b.double.labels_on("100"), [LabelValue::False]);
    assert!(
        b.double.texts().last().unwrap().contains("Labelled"),
        "{:?}",
        b.double.texts()
    );
    assert_eq!(kept(&b, &id).label.map(|l| l.0), Some(LabelValue::False));

    // `unlabel` negates it and keeps the reply; a second one says there is none.
    let posted = b.double.texts().len();
    let u = command(&b, "4", "mod", Command::Unlabel, "100");
    assert_eq!(b.run(&u).await.status, Status::Done);
    assert!(b.double.labels_on("100").is_empty());
    assert!(b.double.deleted.lock().unwrap().is_empty(), "the reply stays");
    assert_eq!(b.double.texts().len(), posted + 1, "one acknowledgement");
    let u2 = command(&b, "5", "mod", Command::Unlabel, "100");
    assert_eq!(b.run(&u2).await.status, Status::Done);
    assert!(
        b.double.texts().last().unwrap().contains("no label"),
        "{:?}",
        b.double.texts().last()
    );
    assert_eq!(labels(&b).len(), 2);

    // `watch #moon label`: that tag's posts are labelled only, whatever the default.
    b.worker.labeler.hashtags = Channel::Reply;
    let w = command(&b, "6", "mod", Command::WatchAs("moon".into(), Channel::Label), "100");
    assert_eq!(b.run(&w).await.status, Status::Done);
    assert!(
        b.double.texts().last().unwrap().contains("labels"),
        "{:?}",
        b.double.texts().last()
    );
    let before = b.double.texts().len();
    b.double.add_post(crate::model::Post::text_only(
        "200",
        "dave",
        "The Moon is made of cheese, truly.",
        chrono::Utc::now(),
        Visibility::Public,
    ));
    let mut hit = watched_hit(&b, "h1");
    hit.status_id = "200".into();
    let job = b.run(&b.add(hit)).await;
    assert_eq!(job.status, Status::Done, "{:?}", job.last_error);
    assert_eq!(b.double.labels_on("200"), [LabelValue::False]);
    assert_eq!(b.double.texts().len(), before, "no reply on a label-only tag");
}

#[tokio::test]
async fn label_commands_where_labels_are_off_say_so() {
    let (mut b, _) = labelling(VERDICT, Channel::Reply).await;
    b.worker.labeler.enabled = false;
    let mut config = crate::config::ModerationConfig::default();
    config.mastodon_moderators = vec!["mod".into()];
    b.worker.moderation = crate::moderation::Moderation::new(config, b.worker.store.clone());
    let first = b.run(&b.add(mention("1"))).await;
    let l = command(&b, "2", "mod", Command::Label, &first.posted[0]);
    assert_eq!(b.run(&l).await.status, Status::Done);
    assert!(
        b.double.texts().last().unwrap().contains("Labels are off"),
        "{:?}",
        b.double.texts().last()
    );
    assert!(labels(&b).is_empty());
}

#[tokio::test]
async fn a_recheck_label_decided_before_a_moderators_unlabel_is_not_put_back() {
    let (mut b, answer) = labelling(VERDICT, Channel::Label).await;
    let mut config = crate::config::ModerationConfig::default();
    config.mastodon_moderators = vec!["mod".into()];
    b.worker.moderation = crate::moderation::Moderation::new(config, b.worker.store.clone());
    let id = b.add(mention("1"));
    assert_eq!(b.run(&id).await.status, Status::Done);
    assert_eq!(b.double.labels_on("100"), [LabelValue::False]);

    // A re-check moves the verdict; its call to the labeler fails once after the intent is
    // saved (it may or may not have gone through)…
    *answer.lock().unwrap() = RIGHT.into();
    assert!(super::tests_living::set_recheck(
        &b,
        &id,
        RecheckWhy::Asked("mod".into())
    ));
    scheduler(&b).tick(chrono::Utc::now()).unwrap();
    let r = rechecks(&b)[0].clone();
    b.double.fail(
        Call::Label,
        crate::platform::PlatformError::Transient("labeler down".into()),
    );
    let job = b.run(&r).await;
    assert_eq!(job.status, Status::Pending);
    assert!(job.label.as_ref().unwrap().asked_at.is_some());

    // …and meanwhile a moderator takes the label off the answer.
    let part = kept(&b, &id).parts.first().cloned().unwrap_or_else(|| "100".into());
    let un = command(&b, "u1", "mod", Command::Unlabel, &part);
    assert_eq!(b.run(&un).await.status, Status::Done);
    assert!(b.double.labels_on("100").is_empty());

    // The resumed re-check's event is stale: nothing is put back on the post.
    let job = b.run(&r).await;
    assert!(
        matches!(job.status, Status::Skipped(SkipReason::Unchanged(_))),
        "{:?}",
        job.status
    );
    assert!(b.double.labels_on("100").is_empty(), "{:?}", b.double.labels_on("100"));
    assert_eq!(kept(&b, &id).label, None);
}

/// A watched post longer than the text the watch keeps (`Seen::kept_text`) was decided on its
/// first characters: read again, it is judged on them too, not passed over as edited; a post
/// whose first characters did change still is.
#[tokio::test]
async fn a_watched_post_longer_than_the_watch_keeps_is_judged_on_the_kept_text() {
    let b = bench(Script::reply(VERDICT)).await;
    let long = format!("The Moon is made of cheese. {}", "Really, it is. ".repeat(500));
    assert!(long.chars().count() > crate::model::Seen::kept_text(&long).chars().count());
    let watched = |pid: &str, text: &str| {
        b.double.add_post(crate::model::Post::text_only(
            pid,
            "carol",
            text,
            chrono::Utc::now(),
            Visibility::Public,
        ));
        let t = Trigger {
            cause: Cause::Watch {
                review: "https://www.snopes.com/fact-check/moon/".into(),
            },
            event_id: pid.into(),
            status_id: pid.into(),
            in_reply_to_id: None,
            text: crate::model::Seen::kept_text(&long),
            ..mention(pid)
        };
        b.add(t)
    };
    let id = watched("300", &long);
    let job = b.run(&id).await;
    assert!(!matches!(job.status, Status::Skipped(_)), "{:?}", job.status);
    let target = job.target.expect("resolved");
    assert_eq!(target.text, crate::model::Seen::kept_text(&long));
    // Changed within what the watch read: not judged.
    let id = watched("301", &long.replacen("cheese", "rock", 1));
    let job = b.run(&id).await;
    assert!(
        matches!(&job.status, Status::Skipped(SkipReason::Policy(p)) if p.contains("edited")),
        "{:?}",
        job.status
    );
}

/// A re-check of an answer the watch gave (nobody asked) follows its first answer's rules: held
/// for a moderator unless `watch.auto_label`, labelled only with the configured rating classes
/// (`watch.label_ratings`), on the version of the post it read.
#[tokio::test]
async fn a_watched_answers_recheck_is_held_and_labels_only_the_configured_classes() {
    let (mut b, _) = labelling(VERDICT, Channel::Label).await;
    b.worker.watch_auto_label = false;
    b.worker.watch_label_verdicts = vec![crate::model::Verdict::Inaccurate];
    let platform = crate::model::PlatformKind::Mastodon;
    let of = crate::model::watch_job_id(platform, "100");
    let mut k = crate::store::test_kept(&of, chrono::Utc::now() + chrono::Duration::days(7));
    k.trigger = Trigger {
        cause: Cause::Watch {
            review: "https://www.snopes.com/fact-check/moon/".into(),
        },
        event_id: "100".into(),
        status_id: "100".into(),
        in_reply_to_id: None,
        ..mention("100")
    };
    k.target_id = "100".into();
    k.parts.clear();
    k.verdict = Some(crate::model::Verdict::Inaccurate);
    k.outcome = "reply".into();
    k.label = Some((LabelValue::False, "cid-seen".into()));
    b.worker.store.create_kept(&k).unwrap();
    assert!(super::tests_living::set_recheck(
        &b,
        &of,
        RecheckWhy::Asked("mod".into())
    ));
    assert_eq!(scheduler(&b).tick(chrono::Utc::now()).unwrap(), 1);
    let r = rechecks(&b).pop().expect("a re-check");
    // The re-check read the post's new version and the corpus now says "accurate" (a class the
    // watch does not label).
    let mut job = b.worker.store.job(&r).unwrap().unwrap();
    let mut post = crate::model::Post::text_only(
        "100",
        "carol",
        "The Moon is made of cheese.",
        chrono::Utc::now(),
        Visibility::Public,
    );
    post.version = Some("cid-read".into());
    b.double.add_post(post.clone());
    job.target = Some(post);
    job.draft = Some(crate::model::Draft {
        outcome: crate::model::Outcome::Reply,
        text: RIGHT.into(),
        urls: vec![],
        verdict: Some(crate::model::Verdict::Accurate),
        stance: None,
    });
    b.worker.store.save(&job).unwrap();
    let held = b.run(&r).await;
    assert_eq!(held.status, Status::Pending, "{:?}", held.last_error);
    assert!(held.review.is_some(), "held for a moderator's review");
    assert!(labels(&b).is_empty(), "nothing labelled before a moderator approves");
    let approved = crate::model::ReviewDecision::Approved {
        by: "mod".into(),
        at: chrono::Utc::now(),
    };
    assert!(b.worker.store.decide(&r, &approved).unwrap());
    let done = b.run(&r).await;
    assert_eq!(done.status, Status::Done, "{:?}", done.last_error);
    let l = labels(&b);
    assert_eq!(l.len(), 1, "{l:?}");
    assert!(l[0].create.is_empty(), "an unconfigured class is never put: {:?}", l[0]);
    assert_eq!(l[0].negate, [LabelValue::False]);
    assert_eq!(l[0].cid, "cid-read", "on the version the re-check read");
    assert!(b.double.texts().is_empty(), "{:?}", b.double.texts());
}
