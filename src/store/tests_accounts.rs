//! Several accounts over one store: each account's jobs, cursors, moderation and kept claims
//! are its own; opt-outs and caches are shared where the account ids mean the same person.

use super::Store;
use crate::model::{ClaimVector, Job, OptOut, PlatformKind, Trigger};

fn opt_out(platform: PlatformKind, key: &str) -> OptOut {
    OptOut {
        platform,
        handle: key.into(),
        since: chrono::Utc::now(),
    }
}

#[test]
fn each_account_keeps_its_own_jobs_cursors_and_moderation() {
    let root = Store::open_temporary().unwrap();
    let es = root.account("es", "es.example", "en.example").unwrap();
    let job = Job::new(Trigger::test_mention("7"));
    assert!(root.enqueue(&job, Some(("mastodon:notifications", "7"))).unwrap());
    // The same mention id at another account is another job, with its own cursor.
    assert!(es.job(&job.id).unwrap().is_none());
    assert!(es.cursor("mastodon:notifications").unwrap().is_none());
    assert!(es.enqueue(&job, Some(("mastodon:notifications", "3"))).unwrap());
    assert_eq!(es.cursor("mastodon:notifications").unwrap().as_deref(), Some("3"));
    assert_eq!(root.cursor("mastodon:notifications").unwrap().as_deref(), Some("7"));
    assert_eq!(root.pending_jobs().unwrap().len(), 1);
    assert_eq!(es.pending_jobs().unwrap().len(), 1);
    // A moderator's pause at one account leaves the other answering.
    root.set_paused(PlatformKind::Mastodon, true).unwrap();
    assert!(root.paused(PlatformKind::Mastodon));
    assert!(!es.paused(PlatformKind::Mastodon));
    // The empty name is the default account itself.
    let same = root.account("", "", "en.example").unwrap();
    assert_eq!(same.cursor("mastodon:notifications").unwrap().as_deref(), Some("7"));
}

#[test]
fn opt_outs_hold_for_every_account_where_the_id_means_the_same_person() {
    let root = Store::open_temporary().unwrap();
    let labels = root.account("labels", "", "en.example").unwrap();
    let en2 = root.account("en2", "en.example", "en.example").unwrap();
    let es = root.account("es", "es.example", "en.example").unwrap();
    // A DID is the same person everywhere on Bluesky.
    labels
        .set_opt_out(
            PlatformKind::Bluesky,
            "did:plc:bob",
            Some(&opt_out(PlatformKind::Bluesky, "did:plc:bob")),
        )
        .unwrap();
    assert!(root.opted_out(PlatformKind::Bluesky, "did:plc:bob"));
    assert!(es.opted_out(PlatformKind::Bluesky, "did:plc:bob"));
    // A Mastodon account id is one person on its server only.
    root.set_opt_out(
        PlatformKind::Mastodon,
        "111",
        Some(&opt_out(PlatformKind::Mastodon, "111")),
    )
    .unwrap();
    assert!(en2.opted_out(PlatformKind::Mastodon, "111"));
    assert!(
        !es.opted_out(PlatformKind::Mastodon, "111"),
        "id 111 on es.example is someone else"
    );
    assert_eq!(es.opt_outs().len(), 1, "the Bluesky one");
    assert_eq!(root.opt_outs().len(), 2);
}

#[test]
fn claim_vectors_stay_with_their_account() {
    let root = Store::open_temporary().unwrap();
    let es = root.account("es", "es.example", "").unwrap();
    let v = ClaimVector {
        space: "english".into(),
        v: vec![100; 8],
    };
    let until = chrono::Utc::now() + chrono::Duration::days(1);
    es.save_vector("mastodon:1", &v, until).unwrap();
    let now = chrono::Utc::now();
    assert!(root.nearest_claim(&v, 0.9, now, &[]).unwrap().is_none());
    assert_eq!(
        es.nearest_claim(&v, 0.9, now, &[]).unwrap().map(|x| x.0).as_deref(),
        Some("mastodon:1")
    );
}
