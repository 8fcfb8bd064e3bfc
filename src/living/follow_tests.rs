//! The follower on the scripted platform: a checked post hidden from the bot (its author
//! blocks it) keeps its answer and is followed again once seen again; a deleted one takes its
//! answer down.

use std::sync::Arc;

use serde_json::json;

use super::{Follower, Round};
use crate::config::LivingConfig;
use crate::model::{Kept, PlatformKind, Post, Trigger, Visibility};
use crate::platform::double::{Call, Double};
use crate::platform::{Platform, Platforms};
use crate::store::Store;

/// An answer to a mention (`m<n>`) about post `target`, in parts `p<n>a` and `p<n>b`.
fn kept(n: u32, target: &str) -> Kept {
    let mut trigger = Trigger::test_mention(&n.to_string());
    trigger.in_reply_to_id = Some(target.into());
    let now = chrono::Utc::now();
    serde_json::from_value(json!({
        "job_id": format!("mastodon:{n}"),
        "platform": PlatformKind::Mastodon,
        "trigger": trigger,
        "target_id": target,
        "claim": "The Moon is made of cheese.",
        "language": "en",
        "verdict": null,
        "outcome": "reply",
        "evidence": [],
        "reviews": [],
        "parts": [format!("p{n}a"), format!("p{n}b")],
        "digest": "",
        "kept_at": now,
        "until": now + chrono::Duration::days(7),
        "timers": 0,
        "updates": [],
    }))
    .expect("a kept answer")
}

fn bench() -> (Follower, Arc<Double>) {
    let double = Arc::new(Double::new(crate::compose::TextLimits {
        max_chars: 500,
        chars_per_url: 23,
    }));
    let follower = Follower {
        store: Store::open_temporary().unwrap(),
        config: LivingConfig::default(),
        platforms: Platforms::new([Platform::Double(double.clone())]),
        metrics: None,
    };
    (follower, double)
}

fn post(id: &str) -> Post {
    Post::text_only(
        id,
        "carol",
        "The Moon is made of cheese.",
        chrono::Utc::now(),
        Visibility::Public,
    )
}

/// A post its author hid from the bot (a block) is still there for everyone else: the
/// correction stays up, the answer is marked hidden, and later rounds leave it alone. A post
/// its author deleted takes its answer down, every part.
#[tokio::test]
async fn a_post_hidden_from_the_bot_keeps_its_answer_and_a_deleted_one_does_not() {
    let (f, double) = bench();
    for (n, target) in [(1, "100"), (2, "200")] {
        let mut k = kept(n, target);
        double.add_post(post(target));
        k.digest = crate::living::digest(&post(target));
        f.store.create_kept(&k).unwrap();
    }
    let round = f.round().await.unwrap();
    assert_eq!(
        round,
        Round {
            looked: 2,
            ..Round::default()
        }
    );

    // The author of 100 blocks the bot; the author of 200 deletes it.
    double.hidden.lock().unwrap().insert("100".into());
    double.posts.lock().unwrap().remove("200");
    let round = f.round().await.unwrap();
    assert_eq!((round.looked, round.deleted, round.hidden), (2, 1, 1), "{round:?}");
    assert_eq!(double.count(Call::Confirm), 2, "each missing post confirmed");
    let deleted = double.deleted.lock().unwrap().clone();
    assert_eq!(
        deleted,
        ["p2b", "p2a"],
        "only the deleted post's answer, last part first"
    );
    let hidden = f.store.kept("mastodon:1").unwrap().unwrap();
    assert!(hidden.gone.is_none(), "{hidden:?}");
    assert!(hidden.hidden.is_some(), "{hidden:?}");
    assert_eq!(hidden.claim, "The Moon is made of cheese.", "still an answer");
    assert!(f.store.kept("mastodon:2").unwrap().unwrap().gone.is_some());

    // Later rounds: the gone one is not read; the hidden one only in the batch read, never
    // asked alone or confirmed again.
    let (asked, confirmed) = (double.count(Call::Resolve), double.count(Call::Confirm));
    let round = f.round().await.unwrap();
    assert_eq!((round.deleted, round.hidden, round.visible), (0, 0, 0), "{round:?}");
    assert_eq!(
        (double.count(Call::Resolve), double.count(Call::Confirm)),
        (asked, confirmed)
    );
    assert_eq!(double.deleted.lock().unwrap().len(), 2, "nothing more deleted");
    // The author unblocks the bot: the post is followed (and re-checked) again.
    double.hidden.lock().unwrap().remove("100");
    let round = f.round().await.unwrap();
    assert_eq!(round.visible, 1, "{round:?}");
    let back = f.store.kept("mastodon:1").unwrap().unwrap();
    assert!(back.hidden.is_none());
    // It could not tell, and its timers were dropped while hidden: one re-check now.
    assert!(back.pending.is_some(), "{back:?}");
}

/// A failure to ask whether the post is deleted decides nothing: the answer stays, unmarked,
/// and the next round asks again.
#[tokio::test]
async fn a_failed_confirmation_decides_nothing() {
    let (f, double) = bench();
    let mut k = kept(1, "100");
    k.digest = crate::living::digest(&post("100"));
    f.store.create_kept(&k).unwrap();
    double.fail(
        Call::Confirm,
        crate::platform::PlatformError::Transient("unreachable".into()),
    );
    let round = f.round().await.unwrap();
    assert_eq!((round.deleted, round.hidden), (0, 0), "{round:?}");
    let k = f.store.kept("mastodon:1").unwrap().unwrap();
    assert!(k.gone.is_none() && k.hidden.is_none(), "{k:?}");
    assert!(double.deleted.lock().unwrap().is_empty());
    let round = f.round().await.unwrap();
    assert_eq!(round.deleted, 1, "asked again, and deleted: {round:?}");
}

/// `delete_when_asker_deletes`: an asker who blocks the bot after asking has not deleted the
/// ask, so the answer stays; the ask deleted takes it down.
#[tokio::test]
async fn an_asker_who_blocks_the_bot_has_not_deleted_the_ask() {
    let (mut f, double) = bench();
    f.config.delete_when_asker_deletes = true;
    let mut k = kept(1, "100");
    k.digest = crate::living::digest(&post("100"));
    f.store.create_kept(&k).unwrap();
    double.add_post(post("100"));
    double.add_post(post("m1"));
    double.hidden.lock().unwrap().insert("m1".into());
    let round = f.round().await.unwrap();
    assert_eq!((round.deleted, round.hidden), (0, 0), "{round:?}");
    assert!(double.deleted.lock().unwrap().is_empty());
    let k = f.store.kept("mastodon:1").unwrap().unwrap();
    assert!(
        k.gone.is_none() && k.hidden.is_none(),
        "the checked post is still followed: {k:?}"
    );
    double.posts.lock().unwrap().remove("m1");
    assert_eq!(f.round().await.unwrap().deleted, 1);
}

/// An edit of spacing or case re-checks nothing; an edit into another claim
/// right after an asked re-check (within the cooldown) is re-checked at once, and said once.
#[tokio::test]
async fn an_edit_that_changes_the_words_is_rechecked_at_once_and_a_trivial_one_not_at_all() {
    let (f, double) = bench();
    let mut k = kept(1, "100");
    k.digest = crate::living::digest(&post("100"));
    k.words = crate::living::words(&post("100"));
    // The asker's re-check ran a minute ago: the cooldown holds their next `recheck`.
    k.last_asked = Some(chrono::Utc::now() - chrono::Duration::minutes(1));
    f.store.create_kept(&k).unwrap();
    let edit = |text: &str| {
        let mut p = post("100");
        p.text = text.into();
        double.add_post(p);
    };
    edit("the  moon is made of CHEESE.");
    let round = f.round().await.unwrap();
    assert_eq!(round.edited, 0, "{round:?}");
    let now = f.store.kept("mastodon:1").unwrap().unwrap();
    assert!(now.pending.is_none(), "nothing re-checked: {now:?}");
    assert_ne!(
        now.digest, k.digest,
        "the trivial edit is taken, not met again each round"
    );
    assert_eq!(f.round().await.unwrap().edited, 0);

    edit("The Moon is made of cheese?");
    assert_eq!(f.round().await.unwrap().edited, 1, "a question is another post");
    let now = f.store.kept("mastodon:1").unwrap().unwrap();
    assert!(
        now.pending.is_some(),
        "re-checked at once, within the cooldown: {now:?}"
    );
    assert_eq!(now.claim, "The Moon is made of cheese?");
    // While that re-check waits, another edit is met again later, not set twice.
    edit("The Moon is made of rock.");
    assert_eq!(f.round().await.unwrap().edited, 0);
}

/// Every character the stance reads is a word: a minus, a percent, a currency, a decimal
/// separator, an emoji, any question mark, quote marks (a quoted claim is reported, an
/// unquoted one asserted), an exclamation, a full stop. Spacing and case are not.
#[test]
fn only_spacing_and_case_are_not_words() {
    let words = |t: &str| {
        let mut p = post("1");
        p.text = t.into();
        crate::living::words(&p)
    };
    assert_eq!(
        words("The Moon is  made of cheese.\n"),
        words("the moon is made of CHEESE.")
    );
    for (a, b) in [
        ("It rose 5 points", "It rose -5 points"),
        ("Taxes rise 50%", "Taxes rise 50"),
        ("It cost $5", "It cost €5"),
        ("1,500 died", "1.500 died"),
        ("Vaccines are safe ✅", "Vaccines are safe ❌"),
        ("Es seguro", "Es seguro？"),
        ("\"Vaccines cause autism\" they say", "Vaccines cause autism they say"),
        ("'5G spreads the virus'", "5G spreads the virus"),
        ("No. 5G spreads the virus", "No 5G spreads the virus"),
        ("A = B", "A ≠ B"),
    ] {
        assert_ne!(words(a), words(b), "{a} / {b}");
    }
}

/// Ends the re-check a test set (its timer gone, no job waiting), as a run that found nothing
/// new would.
fn run_out(store: &Store, job_id: &str) {
    for t in store.timers_of(job_id).unwrap() {
        store.remove_timer(&t.key).unwrap();
    }
}

/// An author edits an answered post every minute for a week: the full runs it costs are
/// bounded (the idle bound, then a cooldown that doubles each time), not one an hour.
#[test]
fn a_week_of_edits_every_minute_costs_a_bounded_number_of_runs() {
    let (f, _) = bench();
    f.store.create_kept(&kept(1, "100")).unwrap();
    let start = chrono::Utc::now();
    let mut runs = 0;
    for minute in 0..7 * 24 * 60 {
        let at = start + chrono::Duration::minutes(minute);
        let (set, _) = crate::living::recheck_at(
            &f.store,
            &f.config,
            "mastodon:1",
            crate::model::RecheckWhy::Edited,
            crate::living::Asker::Other,
            at,
        )
        .unwrap();
        if set == crate::living::RecheckSet::Set {
            runs += 1;
            run_out(&f.store, "mastodon:1");
        }
    }
    assert!(runs <= f.config.max_idle_rechecks + 8, "{runs} full runs in a week");
}

/// The author blocks and unblocks the bot in a loop: a post seen again is re-checked under
/// the same idle bound and cooldown as an edit, not once every follower round.
#[tokio::test]
async fn blocking_and_unblocking_the_bot_in_a_loop_costs_a_bounded_number_of_runs() {
    let (f, double) = bench();
    let mut k = kept(1, "100");
    double.add_post(post("100"));
    k.digest = crate::living::digest(&post("100"));
    f.store.create_kept(&k).unwrap();
    let mut runs = 0;
    for _ in 0..20 {
        double.hidden.lock().unwrap().insert("100".into());
        f.round().await.unwrap();
        double.hidden.lock().unwrap().remove("100");
        let round = f.round().await.unwrap();
        assert_eq!(round.visible, 1, "{round:?}");
        if f.store.kept("mastodon:1").unwrap().unwrap().pending.is_some()
            && !f.store.timers_of("mastodon:1").unwrap().is_empty()
        {
            runs += 1;
            run_out(&f.store, "mastodon:1");
        }
    }
    assert!((1..=f.config.max_idle_rechecks).contains(&runs), "{runs} full runs");
}
