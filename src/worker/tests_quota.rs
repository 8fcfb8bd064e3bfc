//! What a person can make the bot do without limit, bounded — in-process, with the scripted
//! platform and LLM and the real store, scheduler and follower: a stranger's flood of commands
//! (charged to their hourly window, silent once spent, an opt-out still honoured), `recheck`
//! where the bot has no answer (silence), the asker's `recheck` and the author's edits (one
//! re-check waiting at a time, a cooldown, a bound on re-checks that find nothing new; a
//! moderator held only to the first), and claim memory forgetting an edited post's old words.

use super::tests::mention;
use super::tests_living::{command, follower, kept, living_bench, rechecks, scheduler};
use super::*;
use crate::model::{Command, RecheckWhy};

#[tokio::test]
async fn a_strangers_flood_of_commands_draws_at_most_the_hourly_window_and_stop_still_holds() {
    let (mut b, _answer) = living_bench().await;
    b.worker.limits.checks_per_requester_per_hour = 3;
    // Thirty commands from someone who is no moderator: `start`, `stop` and `recheck` under
    // posts the bot never answered.
    for i in 0..30 {
        let c = match i % 3 {
            0 => Command::Start,
            1 => Command::Recheck,
            _ => Command::Stop,
        };
        let id = command(&b, &format!("c{i}"), "eve", c, &format!("9{i}"));
        b.run(&id).await;
    }
    let said = b.double.texts();
    assert!(
        said.len() <= 3,
        "at most the window's three commands are acknowledged: {said:?}"
    );
    assert!(
        said.iter().all(|t| !t.contains("no answer")),
        "a recheck where the bot has no answer is not answered: {said:?}"
    );
    // The last command was a `stop`, past the window: carried out all the same, silently.
    assert!(b
        .worker
        .moderation
        .opted_out(crate::model::PlatformKind::Mastodon, "eve", None));
    // The window is the asker's own: another person's mention is answered at once.
    let id = b.add(mention("m1"));
    assert_eq!(b.run(&id).await.status, Status::Done);
}

#[tokio::test]
async fn the_askers_rechecks_wait_one_at_a_time_cool_down_and_stop_when_they_find_nothing() {
    let (mut b, _answer) = living_bench().await;
    b.worker.living.max_idle_rechecks = 2;
    // The asker's hourly window is not what this test is about.
    b.worker.limits.checks_per_requester_per_hour = 50;
    let config = crate::config::ModerationConfig {
        mastodon_moderators: vec!["mod".into()],
        ..Default::default()
    };
    b.worker.moderation = crate::moderation::Moderation::new(config, b.worker.store.clone());
    let id = b.add(mention("1"));
    let first = b.run(&id).await;
    let part = first.posted.last().unwrap().clone();
    let timers = kept(&b, &id).timers;
    let ask = |n: &str| command(&b, n, "bob", Command::Recheck, &part);

    // The asker: acknowledged and set; asked again while it waits: no second one.
    let one = ask("r1");
    assert_eq!(b.run(&one).await.status, Status::Done);
    let two = ask("r2");
    b.run(&two).await;
    assert_eq!(kept(&b, &id).timers, timers + 1, "one re-check waits at a time");
    // It runs and finds nothing new.
    assert_eq!(scheduler(&b).tick(chrono::Utc::now()).unwrap(), 1);
    for r in rechecks(&b) {
        b.run(&r).await;
    }
    assert_eq!(kept(&b, &id).idle_rechecks, 1);

    // Asked again within the cooldown: silence, nothing set.
    let said = b.double.texts().len();
    let three = ask("r3");
    assert!(matches!(
        b.run(&three).await.status,
        Status::Skipped(SkipReason::Policy(_))
    ));
    assert_eq!(b.double.texts().len(), said, "nothing said during the cooldown");
    assert_eq!(kept(&b, &id).timers, timers + 1);

    // After the cooldown: set again; it finds nothing either.
    let hour_ago = chrono::Utc::now() - chrono::Duration::hours(2);
    b.worker
        .store
        .update_kept(&id, |k| k.last_asked = Some(hour_ago))
        .unwrap();
    let four = ask("r4");
    assert_eq!(b.run(&four).await.status, Status::Done);
    assert_eq!(kept(&b, &id).timers, timers + 2);
    scheduler(&b).tick(chrono::Utc::now()).unwrap();
    for r in rechecks(&b) {
        b.run(&r).await;
    }
    assert_eq!(kept(&b, &id).idle_rechecks, 2);

    // Two re-checks found nothing: the asker's next sets none, even past the cooldown…
    b.worker
        .store
        .update_kept(&id, |k| k.last_asked = Some(hour_ago))
        .unwrap();
    let five = ask("r5");
    assert!(matches!(
        b.run(&five).await.status,
        Status::Skipped(SkipReason::Policy(_))
    ));
    assert_eq!(kept(&b, &id).timers, timers + 2);
    // …while a moderator's still does.
    let m = command(&b, "r6", "mod", Command::Recheck, &part);
    assert_eq!(b.run(&m).await.status, Status::Done);
    assert_eq!(kept(&b, &id).timers, timers + 3);
}

#[tokio::test]
async fn an_author_editing_every_minute_gets_the_idle_bounds_rechecks_and_memory_forgets_the_old_words() {
    let (b, _answer) = living_bench().await;
    let id = b.add(mention("1"));
    b.run(&id).await;
    let vector = crate::model::ClaimVector::from_unit("english", &[1.0, 0.0]);
    b.worker
        .store
        .save_vector(&id, &vector, chrono::Utc::now() + chrono::Duration::days(1))
        .unwrap();
    let timers = kept(&b, &id).timers;
    let edit = |text: &str| {
        let mut post = b.double.posts.lock().unwrap()["100"].clone();
        post.text = text.into();
        b.double.add_post(post);
    };
    let recheck_all = || async {
        scheduler(&b).tick(chrono::Utc::now()).unwrap();
        for r in rechecks(&b) {
            b.run(&r).await;
        }
    };

    edit("The Moon is made of cheese, NASA admits.");
    assert_eq!(follower(&b).round().await.unwrap().edited, 1);
    assert!(
        b.worker
            .store
            .nearest_claim(&vector, 0.5, chrono::Utc::now(), &[])
            .unwrap()
            .is_none(),
        "the edited post's old claim vector is forgotten at once"
    );
    assert_eq!(kept(&b, &id).timers, timers + 1);
    recheck_all().await;
    // Edited again and again within the hour: each change of words is re-checked at once (the
    // author cannot outrun the check), until `max_idle_rechecks` found nothing new…
    let bound = b.worker.living.max_idle_rechecks;
    let mut set = 0;
    for n in 0..8 {
        edit(&format!("The Moon is made of cheese, NASA admits ({n})."));
        set += follower(&b).round().await.unwrap().edited;
        recheck_all().await;
    }
    let now = kept(&b, &id);
    assert_eq!(now.idle_rechecks, bound, "{now:?}");
    assert_eq!(now.timers, timers + 1 + set as u32);
    assert!(set as u32 <= bound, "{set} re-checks for 8 edits");
    // …and then no more: the flood is bounded.
    edit("The Moon is made of cheese, NASA admits (9).");
    assert_eq!(follower(&b).round().await.unwrap().edited, 0);
    assert_eq!(kept(&b, &id).timers, timers + 1 + set as u32);
    let _ = RecheckWhy::Edited;
}

#[tokio::test]
async fn an_edit_soon_after_an_answer_is_met_in_the_next_round_whatever_the_round_robin() {
    let (mut b, _answer) = living_bench().await;
    b.worker.living.follow_batch = 1;
    b.worker.limits.checks_per_requester_per_hour = 50;
    let mut ids = Vec::new();
    for n in ["101", "102", "103"] {
        let mut post = b.double.posts.lock().unwrap()["100"].clone();
        post.id = n.into();
        b.double.add_post(post);
        let mut m = mention(&format!("m{n}"));
        m.in_reply_to_id = Some(n.into());
        let id = b.add(m);
        assert_eq!(b.run(&id).await.status, Status::Done);
        ids.push(id);
    }
    let mut post = b.double.posts.lock().unwrap()["103"].clone();
    post.text = "The Moon is made of cheese, NASA admits.".into();
    b.double.add_post(post);
    // One kept answer a round by the round-robin, but the answers of the last hour are all
    // looked at: the edit is met at once.
    let round = follower(&b).round().await.unwrap();
    assert_eq!((round.looked, round.edited), (3, 1), "{round:?}");
    assert_eq!(kept(&b, &ids[2]).claim, "The Moon is made of cheese, NASA admits.");
}

#[tokio::test]
async fn a_strangers_flood_of_mentions_under_an_answered_post_draws_at_most_the_hourly_window() {
    let mut b = super::tests::bench(crate::test_llm::Script::reply(super::tests::VERDICT)).await;
    b.worker.limits.checks_per_requester_per_hour = 3;
    let first = b.add(mention("1"));
    assert_eq!(b.run(&first).await.status, Status::Done);
    let said = b.double.texts().len();
    // Twenty mentions of eve's under the post the bot already answered: each would draw an
    // "already answered" pointer; only the window's three (and one quota notice) are posted.
    for i in 0..20 {
        let mut m = mention(&format!("e{i}"));
        m.author.handle = "eve".into();
        m.author.id = Some("eve-id".into());
        let id = b.add(m);
        b.run(&id).await;
    }
    let to_eve: Vec<String> = b.double.texts()[said..]
        .iter()
        .filter(|t| t.starts_with("@eve"))
        .cloned()
        .collect();
    assert_eq!(to_eve.len(), 4, "three pointers and one quota notice: {to_eve:?}");
    assert!(to_eve[..3].iter().all(|t| !t.contains("limit")), "{to_eve:?}");
}
