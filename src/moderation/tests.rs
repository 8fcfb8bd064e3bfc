//! `Moderation`'s rules on a real store: moderators and blocks by stable ids, commands, hashtag
//! policies and their windows.

use super::*;
use crate::model::{Account, Visibility};

fn moderation() -> Moderation {
    let config = ModerationConfig {
        mastodon_moderators: vec!["alice".into(), "@mod@other.example".into()],
        blocked_accounts: vec!["spam@junk.example".into()],
        blocked_instances: vec!["bad.example".into()],
        ..Default::default()
    };
    Moderation::new(config, Store::open_temporary().unwrap())
}

fn hit(tag: &str, author: &str) -> Trigger {
    Trigger {
        language: None,
        platform: PlatformKind::Mastodon,
        cause: Cause::HashtagHit { tag: tag.into() },
        event_id: "7".into(),
        status_id: "7".into(),
        in_reply_to_id: None,
        quote_of: None,
        asked_in_text: true,
        author: Account {
            handle: author.into(),
            is_bot: false,
            is_self: false,
            nobot: false,
            id: None,
        },
        visibility: Visibility::Public,
        created_at: Utc::now(),
        text: "a claim #tag".into(),
    }
}

#[test]
fn moderators_blocklists_and_domains() {
    let m = moderation();
    let masto = |h: &str| m.is_moderator(PlatformKind::Mastodon, h, None);
    assert!(masto("Alice"));
    assert!(masto("mod@other.example"));
    assert!(!m.is_moderator(PlatformKind::Bluesky, "alice", None));
    assert!(!masto("bob"));
    // The bot's own server, under its web host and its account domain (Mastodon's
    // WEB_DOMAIN and LOCAL_DOMAIN may differ): Mastodon writes its accounts without one.
    let mut local = m
        .clone()
        .with_local_domains(["Social.Bots.Example".to_string(), "bots.example".to_string()]);
    local.config.mastodon_moderators = vec!["carol@bots.example".into(), "dan".into()];
    for who in [
        "carol",
        "@Carol@bots.example",
        "carol@social.bots.example",
        "dan@bots.example",
        "Dan",
    ] {
        assert!(local.is_moderator(PlatformKind::Mastodon, who, None), "{who}");
    }
    assert!(!local.is_moderator(PlatformKind::Mastodon, "carol@elsewhere.example", None));
    assert!(!local.is_moderator(PlatformKind::Mastodon, "dan@elsewhere.example", None));
    let blocked = |h: &str| m.blocked_account(PlatformKind::Mastodon, h, None);
    assert!(blocked("Spam@junk.example"));
    assert!(blocked("anyone@bad.example") && blocked("x@eu.bad.example"));
    assert!(!blocked("anyone@notbad.example") && !blocked("bob"));
    assert!(blocked("anyone@BAD.example.") && blocked("x@eu.bad.example."));
    let domains = vec!["badnews.example".to_string()];
    assert!(domain_blocked(&domains, "https://www.badnews.example/a"));
    assert!(domain_blocked(&domains, "https://eu.badnews.example/a"));
    assert!(!domain_blocked(&domains, "https://goodbadnews.example/a"));
    assert!(!domain_blocked(&domains, "not a url"));
    assert!(domain_blocked(&domains, "https://badnews.example./a"));
    assert!(domain_blocked(&domains, "https://BADNEWS.example../a"));
    let idn = vec!["Bücher.example.".to_string()];
    assert!(domain_blocked(&idn, "https://xn--bcher-kva.example/a"));
    assert!(domain_blocked(&idn, "https://news.bücher.example/a"));
}

#[test]
fn a_hashtag_policy_skips_what_it_must() {
    let m = moderation();
    let why = |t: &Trigger| m.triage(t).map(|r| format!("{r:?}"));
    assert!(why(&hit("vote", "bob")).unwrap().contains("no longer watched"));
    m.execute(
        PlatformKind::Mastodon,
        "alice",
        None,
        &Command::Watch("vote".into()),
        "en",
    )
    .unwrap();
    let mut t = hit("vote", "bob");
    assert_eq!(why(&t), None);
    t.in_reply_to_id = Some("1".into());
    assert!(why(&t).unwrap().contains("a reply"));
    let mut t = hit("vote", "bob");
    t.created_at = Utc::now() - chrono::Duration::hours(7);
    assert!(why(&t).unwrap().contains("before the tag was watched"));
    let mut t = hit("vote", "bob");
    t.author.nobot = true;
    assert_eq!(m.triage(&t), Some(SkipReason::NoBot));
    assert_eq!(m.triage(&hit("vote", "x@bad.example")), Some(SkipReason::Blocked));
    m.execute(PlatformKind::Mastodon, "alice", None, &Command::Pause, "en")
        .unwrap();
    assert!(why(&hit("vote", "bob")).unwrap().contains("paused"));
    m.execute(PlatformKind::Mastodon, "alice", None, &Command::Resume, "en")
        .unwrap();
    // One reply per author per window; the same job again is free.
    let t = hit("vote", "bob");
    assert_eq!(m.admit_hit(&t, "j1", "bob").unwrap(), None);
    assert_eq!(m.admit_hit(&t, "j1", "bob").unwrap(), None);
    assert!(m.admit_hit(&t, "j2", "Bob").unwrap().is_some());
    // The hourly prune keeps the counters (their keys end in their window's first hour).
    let retention = crate::store::Retention {
        jobs: chrono::Duration::days(30),
        cache: chrono::Duration::days(1),
        quota: chrono::Duration::days(2),
    };
    m.store.prune(&retention, Utc::now()).unwrap();
    assert!(m.admit_hit(&t, "j2", "bob").unwrap().is_some(), "pruned too early");
    assert_eq!(m.admit_hit(&t, "j3", "carol").unwrap(), None);
    // A cap on watched tags: past it a watch is refused, a watched tag again is fine.
    let mut capped = m.clone();
    capped.config.max_watched_tags = 1;
    let refused = capped
        .execute(
            PlatformKind::Mastodon,
            "alice",
            None,
            &Command::Watch("other".into()),
            "en",
        )
        .unwrap();
    assert!(refused.starts_with("Not watching #other"), "{refused}");
    assert_eq!(m.store.watches(PlatformKind::Mastodon).len(), 1);
    capped
        .execute(
            PlatformKind::Mastodon,
            "alice",
            None,
            &Command::Watch("vote".into()),
            "en",
        )
        .unwrap();
    // Opt-out: stop silences the author, start restores them; both pass triage.
    m.execute(PlatformKind::Mastodon, "carol", None, &Command::Stop, "en")
        .unwrap();
    assert_eq!(m.triage(&hit("vote", "carol")), Some(SkipReason::OptedOut));
    let mut start = hit("vote", "carol");
    start.cause = Cause::Command {
        command: Command::Start,
    };
    assert_eq!(m.triage(&start), None);
    m.execute(PlatformKind::Mastodon, "carol", None, &Command::Start, "en")
        .unwrap();
    assert_eq!(m.triage(&hit("vote", "carol")), None);
    // A non-moderator's moderator command is refused; their stop is not.
    let mut cmd = hit("vote", "bob");
    cmd.cause = Cause::Command {
        command: Command::Pause,
    };
    assert_eq!(m.triage(&cmd), Some(SkipReason::NotModerator));
    cmd.cause = Cause::Command { command: Command::Stop };
    assert_eq!(m.triage(&cmd), None);
}

/// On Bluesky rights and memory follow the DID: a moderator's old handle, taken by another
/// account, gives it nothing; a moderator who changed handle keeps the rights; an opt-out
/// survives a handle change; two accounts shown as `handle.invalid` are two people.
#[test]
fn bluesky_people_are_known_by_their_did() {
    let config = ModerationConfig {
        bluesky_moderators: vec!["alice.test".into(), "did:plc:dan".into()],
        blocked_accounts: vec!["spammer.test".into(), "spam@junk.example".into()],
        ..ModerationConfig::default()
    };
    assert_eq!(Moderation::bluesky_handles(&config), vec!["alice.test", "spammer.test"]);
    let resolved = HashMap::from([
        ("alice.test".to_string(), "did:plc:alice".to_string()),
        ("spammer.test".to_string(), "did:plc:spam".to_string()),
    ]);
    let m = Moderation::new(config, Store::open_temporary().unwrap()).with_bluesky_dids(&resolved);
    let b = PlatformKind::Bluesky;
    assert!(m.is_moderator(b, "alice-renamed.test", Some("did:plc:alice")));
    assert!(
        !m.is_moderator(b, "alice.test", Some("did:plc:mallory")),
        "the old handle's new holder"
    );
    assert!(!m.is_moderator(b, "alice.test", None), "no DID, no rights");
    assert!(m.is_moderator(b, "whatever.test", Some("did:plc:dan")));
    assert!(m.blocked_account(b, "renamed-spammer.test", Some("did:plc:spam")));
    assert!(!m.blocked_account(b, "spammer.test", Some("did:plc:innocent")));
    m.execute(b, "bob.test", Some("did:plc:bob"), &Command::Stop, "en")
        .unwrap();
    assert!(m.opted_out(b, "bob-renamed.test", Some("did:plc:bob")));
    assert!(!m.opted_out(b, "handle.invalid", Some("did:plc:eve")));
    m.execute(b, "handle.invalid", Some("did:plc:carl"), &Command::Stop, "en")
        .unwrap();
    assert!(
        !m.opted_out(b, "handle.invalid", Some("did:plc:eve")),
        "handle.invalid is nobody's key"
    );
    m.execute(b, "bob-renamed.test", Some("did:plc:bob"), &Command::Start, "en")
        .unwrap();
    assert!(!m.opted_out(b, "bob-renamed.test", Some("did:plc:bob")));
}

/// A blocked Bluesky handle that does not resolve at start fails closed: refused by
/// its handle until it resolves, then by its DID (whatever handle that account takes later).
#[test]
fn a_blocked_handle_that_does_not_resolve_is_refused_by_handle_until_it_does() {
    let store = Store::open_temporary().unwrap();
    let config = ModerationConfig {
        blocked_accounts: vec!["Spam.bsky.social".into()],
        ..ModerationConfig::default()
    };
    let m = Moderation::new(config, store).with_bluesky_dids(&HashMap::new());
    assert_eq!(m.unresolved_blocked(), ["spam.bsky.social"]);
    assert!(m.blocked_account(PlatformKind::Bluesky, "spam.bsky.social", Some("did:plc:spam")));
    assert!(!m.blocked_account(PlatformKind::Bluesky, "someone.bsky.social", Some("did:plc:spam")));
    m.blocked_resolved("spam.bsky.social", "did:plc:spam");
    assert!(m.unresolved_blocked().is_empty());
    assert!(m.blocked_account(PlatformKind::Bluesky, "renamed.bsky.social", Some("did:plc:spam")));
    assert!(!m.blocked_account(PlatformKind::Bluesky, "spam.bsky.social", Some("did:plc:new-holder")));
}

/// Mastodon people by their account id on the bot's server: the moderators' `acct`s looked
/// up at start, the notifications' `account.id`. An account that takes a moderator's `acct`
/// after a rename (another id, the same `acct`) gets no rights; the moderator, renamed, keeps
/// them; an opt-out follows the account, not the name.
#[test]
fn mastodon_people_are_known_by_their_account_id() {
    let m = moderation()
        .with_local_domains(["bots.example".to_string()])
        .with_mastodon_ids(["111".to_string(), "222".to_string()]);
    assert_eq!(m.mastodon_moderator_accts(), ["alice", "mod@other.example"]);
    let masto = PlatformKind::Mastodon;
    assert!(m.is_moderator(masto, "alice", Some("111")));
    assert!(
        !m.is_moderator(masto, "alice", Some("999")),
        "the same acct, another account"
    );
    assert!(!m.is_moderator(masto, "alice@bots.example", Some("999")));
    assert!(
        m.is_moderator(masto, "alice-renamed", Some("111")),
        "renamed, still a moderator"
    );
    assert!(m.is_moderator(masto, "mod@other.example", Some("222")));
    // A moderator whose lookup failed at start has no id here: nobody is granted by the name.
    let unresolved = moderation().with_mastodon_ids(["111".to_string()]);
    assert!(!unresolved.is_moderator(masto, "mod@other.example", Some("222")));

    let command = |id: &str, command: Command| {
        let mut t = hit("x", "alice");
        t.author.id = Some(id.into());
        t.cause = Cause::Command { command };
        t
    };
    assert_eq!(
        m.triage(&command("999", Command::Pause)),
        Some(SkipReason::NotModerator)
    );
    assert_eq!(m.triage(&command("111", Command::Pause)), None);

    m.execute(masto, "alice", Some("111"), &Command::Stop, "en").unwrap();
    assert!(m.opted_out(masto, "alice-renamed", Some("111")));
    assert!(
        !m.opted_out(masto, "alice", Some("999")),
        "the name's new holder did not opt out"
    );
    m.execute(masto, "alice-renamed", Some("111"), &Command::Start, "en")
        .unwrap();
    assert!(!m.opted_out(masto, "alice-renamed", Some("111")));
}

#[test]
fn status_counts_reports_only_in_a_direct_message_and_reports_off_holds() {
    let config = ModerationConfig {
        mastodon_moderators: vec!["alice".into()],
        bluesky_moderators: vec!["mod.test".into()],
        reports: crate::config::ReportsConfig {
            enabled: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let m = Moderation::new(config, Store::open_temporary().unwrap());
    for platform in [PlatformKind::Mastodon, PlatformKind::Bluesky] {
        let mut t = hit("x", "carol");
        t.platform = platform;
        t.cause = Cause::Report {
            report: "3".into(),
            reasons: Vec::new(),
        };
        m.store.enqueue(&crate::model::Job::new(t), None).unwrap();
    }
    let said = m
        .execute(PlatformKind::Mastodon, "alice", None, &Command::Status, "en")
        .unwrap();
    assert!(
        said.contains("Reports: followed; reported posts being checked: 1; findings waiting for delivery: 1."),
        "{said}"
    );
    // Bluesky's acknowledgement is a public reply: not a word of reports.
    let said = m
        .execute(PlatformKind::Bluesky, "mod.test", None, &Command::Status, "en")
        .unwrap();
    assert!(!said.to_lowercase().contains("report"), "{said}");

    m.execute(PlatformKind::Mastodon, "alice", None, &Command::Reports(false), "en")
        .unwrap();
    assert!(!m.reports_on(PlatformKind::Mastodon));
    assert!(m.reports_on(PlatformKind::Bluesky), "per platform");
    let said = m
        .execute(PlatformKind::Mastodon, "alice", None, &Command::Status, "en")
        .unwrap();
    assert!(said.contains("Reports: off"), "{said}");
}

#[test]
fn start_from_a_user_named_like_an_id_clears_only_their_own_opt_out() {
    let m = moderation();
    let masto = PlatformKind::Mastodon;
    // Account 12345 (named "victim") says stop.
    m.execute(masto, "victim", Some("12345"), &Command::Stop, "en").unwrap();
    assert!(m.opted_out(masto, "victim", Some("12345")));
    // A local user whose username is "12345" (another account, id 777) says start.
    m.execute(masto, "12345", Some("777"), &Command::Start, "en").unwrap();
    assert!(m.opted_out(masto, "victim", Some("12345")), "the victim's stop stands");
    // An older build's record keyed by the sender's own handle is still cleared by its owner.
    let old = crate::model::OptOut {
        platform: masto,
        handle: "carol".into(),
        since: chrono::Utc::now(),
    };
    m.store.set_opt_out(masto, "carol", Some(&old)).unwrap();
    m.execute(masto, "carol", Some("888"), &Command::Start, "en").unwrap();
    assert!(m.store.opt_out_at(masto, "carol").is_none());
}
