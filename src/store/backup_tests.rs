//! Backups of a busy store: every tree but the cache and the sessions comes back as it was (opt-outs, jobs,
//! kept answers and their timers, cursors, named accounts' trees); a truncated, altered,
//! foreign or newer-schema file is refused and leaves nothing behind; a store of a newer
//! schema is refused at open; with a key set, a backup not signed with it is refused.

use super::*;
use crate::model::{Job, OptOut, PlatformKind, RecheckWhy, Trigger};

/// A store with something in every tree a restore must bring back.
fn busy(dir: &Path) -> Store {
    let store = Store::open(dir).unwrap();
    store.advance_cursor("mastodon:notifications", "1234").unwrap();
    let job = Job::new(Trigger::test_mention("7"));
    store.enqueue(&job, None).unwrap();
    let out = OptOut {
        platform: PlatformKind::Mastodon,
        handle: "109".into(),
        since: chrono::Utc::now(),
    };
    store.set_opt_out(PlatformKind::Mastodon, "109", Some(&out)).unwrap();
    let kept = crate::store::test_kept("mastodon:7", chrono::Utc::now() + chrono::Duration::days(7));
    store.create_kept(&kept).unwrap();
    let at = chrono::Utc::now() + chrono::Duration::hours(6);
    store.add_timer(at, "mastodon:7", 0, &RecheckWhy::Scheduled).unwrap();
    let other = store.account("labels", "", "").unwrap();
    other.advance_cursor("bluesky:notifications", "abc").unwrap();
    store.cache.insert("search:q", b"cached".to_vec()).unwrap();
    store.set_session("did:plc:bot", "refresh-jwt").unwrap();
    other.set_session("did:plc:labels", "refresh-jwt").unwrap();
    store.flush().unwrap();
    store
}

/// A tree's name and its records.
type Tree = (Vec<u8>, Vec<(Vec<u8>, Vec<u8>)>);

/// Every record of every tree, by tree name.
fn contents(store: &Store) -> Vec<Tree> {
    let mut names = store.db.tree_names();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let tree = store.db.open_tree(&n).unwrap();
            let items = tree
                .iter()
                .map(|i| i.unwrap())
                .map(|(k, v)| (k.to_vec(), v.to_vec()))
                .collect();
            (n.to_vec(), items)
        })
        .filter(|(n, items): &Tree| !left_out(n) && !items.is_empty())
        .collect()
}

#[test]
fn a_busy_store_comes_back_whole_on_a_new_folder() {
    let here = tempfile::tempdir().unwrap();
    let store = busy(&here.path().join("state"));
    let file = here.path().join("state.musebot-backup");
    let summary = store.backup(&file, None).unwrap();
    assert!(summary.records >= 6, "{summary:?}");
    assert_eq!(verify(&file, None).unwrap(), summary);

    let new_host = tempfile::tempdir().unwrap();
    let target = new_host.path().join("state");
    // The corpus copied over first stays where it is.
    std::fs::create_dir_all(target.join("claims")).unwrap();
    std::fs::write(target.join("claims/meta.json"), "{}").unwrap();
    assert_eq!(restore(&file, &target, None).unwrap(), summary);
    assert!(target.join("claims/meta.json").exists());
    let restored = Store::open(&target).unwrap();
    assert_eq!(contents(&restored), contents(&store));
    assert!(restored.opted_out(PlatformKind::Mastodon, "109"), "opt-outs come back");
    assert_eq!(
        restored.cursor("mastodon:notifications").unwrap().as_deref(),
        Some("1234")
    );
    assert_eq!(restored.pending_jobs().unwrap().len(), 1);
    assert!(restored.kept("mastodon:7").unwrap().is_some());
    assert_eq!(restored.timers_of("mastodon:7").unwrap().len(), 1, "timers come back");
    let labels = restored.account("labels", "", "").unwrap();
    assert_eq!(labels.cursor("bluesky:notifications").unwrap().as_deref(), Some("abc"));
    assert!(restored.cache.is_empty(), "the cache refills itself");
    assert_eq!(
        restored.session("did:plc:bot").unwrap(),
        None,
        "tokens stay on the host"
    );
    assert_eq!(labels.session("did:plc:labels").unwrap(), None);
    assert!(!target.join(".restoring").exists());

    // Never over a store: the restore is refused and the store untouched.
    drop((restored, labels));
    assert!(matches!(restore(&file, &target, None), Err(BackupError::Occupied(_))));
    assert_eq!(contents(&Store::open(&target).unwrap()), contents(&store));
}

#[test]
fn a_truncated_altered_foreign_or_newer_backup_is_refused_and_leaves_nothing() {
    let here = tempfile::tempdir().unwrap();
    let store = busy(&here.path().join("state"));
    let file = here.path().join("b");
    store.backup(&file, None).unwrap();
    let bytes = std::fs::read(&file).unwrap();
    let try_restore = |bytes: &[u8]| {
        let f = here.path().join("bad");
        std::fs::write(&f, bytes).unwrap();
        let target = here.path().join("target");
        let result = restore(&f, &target, None);
        assert!(!target.join("db").exists(), "nothing restored");
        assert!(!target.join(".restoring").exists(), "nothing left behind");
        result.unwrap_err()
    };
    for cut in [bytes.len() - 1, bytes.len() - 80, bytes.len() / 2, MAGIC.len() + 10] {
        let e = try_restore(&bytes[..cut]);
        assert!(matches!(e, BackupError::Damaged { .. }), "cut at {cut}: {e}");
    }
    // One byte of a record changed.
    let mut altered = bytes.clone();
    let at = bytes.windows(4).position(|w| w == b"1234").unwrap();
    altered[at] = b'9';
    let e = try_restore(&altered);
    assert!(e.to_string().contains("altered"), "{e}");
    assert!(matches!(try_restore(b"hello"), BackupError::NotABackup(_)));
    // A backup of a newer schema (the header says so).
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let newer = text.replacen(
        &format!("\"schema\":{SCHEMA}"),
        &format!("\"schema\":{}", SCHEMA + 1),
        1,
    );
    let e = try_restore(newer.as_bytes());
    assert!(matches!(e, BackupError::Newer { .. }), "{e}");
    assert!(e.to_string().contains("newer"), "{e}");
}

#[test]
fn a_store_of_a_newer_schema_is_refused_before_any_write() {
    let here = tempfile::tempdir().unwrap();
    {
        let store = Store::open(here.path()).unwrap();
        store.db.insert(SCHEMA_KEY, &(SCHEMA + 1).to_be_bytes()).unwrap();
        store.flush().unwrap();
    }
    // sled's flusher thread may hold the file lock a moment after the drop: wait it out.
    let mut e = Store::open(here.path()).err().expect("refused");
    for _ in 0..50 {
        if !e.to_string().contains("could not acquire lock") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        e = Store::open(here.path()).err().expect("refused");
    }
    assert!(matches!(e, StoreError::Newer { .. }), "{e}");
    assert!(e.to_string().contains("musebot state restore"), "{e}");
}

/// A backup whose body (everything before the trailer) is `body`, sealed with a trailer that
/// checks, padded with `pad` blanks before its line ends.
fn sealed(body: &[u8], trees: u64, records: u64, pad: usize) -> Vec<u8> {
    let sha256: String = Sha256::digest(body).iter().map(|b| format!("{b:02x}")).collect();
    let trailer = serde_json::to_vec(&Trailer {
        trees,
        records,
        sha256,
        hmac_sha256: None,
    })
    .unwrap();
    [body, &trailer, &vec![b' '; pad], b"\n"].concat()
}

/// The header's and the trailer's lines are read up to a bound: a file whose header or trailer
/// runs on for a megabyte is damaged, not read into memory whole.
#[test]
fn a_header_or_trailer_past_its_bound_is_refused() {
    let here = tempfile::tempdir().unwrap();
    let store = busy(&here.path().join("state"));
    let file = here.path().join("b");
    let summary = store.backup(&file, None).unwrap();
    let bytes = std::fs::read(&file).unwrap();
    let end = bytes.iter().rposition(|b| *b == b'E').unwrap() + 1;
    let (body, counts) = (&bytes[..end], (summary.trees, summary.records));
    let header_end = MAGIC.len() + bytes[MAGIC.len()..].iter().position(|b| *b == b'\n').unwrap();
    let check = |bytes: Vec<u8>| {
        let f = here.path().join("crafted");
        std::fs::write(&f, bytes).unwrap();
        verify(&f, None)
    };
    // Resealed as written: the file checks, so only the padding below is refused.
    check(sealed(body, counts.0, counts.1, 0)).unwrap();
    let mut long_header = body[..header_end].to_vec();
    long_header.extend(vec![b' '; 1 << 20]);
    long_header.extend_from_slice(&body[header_end..]);
    let e = check(sealed(&long_header, counts.0, counts.1, 0)).unwrap_err();
    assert!(matches!(e, BackupError::Damaged { .. }), "{e}");
    let e = check(sealed(body, counts.0, counts.1, 1 << 20)).unwrap_err();
    assert!(matches!(e, BackupError::Damaged { .. }), "{e}");
}

/// A file altered to carry trees no backup holds (the sessions, every account's; the cache)
/// restores without them: a planted session never makes the bot act as another account.
#[test]
fn a_restore_passes_over_the_trees_a_backup_leaves_out() {
    let here = tempfile::tempdir().unwrap();
    let store = busy(&here.path().join("state"));
    let file = here.path().join("b");
    let summary = store.backup(&file, None).unwrap();
    let bytes = std::fs::read(&file).unwrap();
    let end = bytes.iter().rposition(|b| *b == b'E').unwrap();
    let mut body = bytes[..end].to_vec();
    for tree in ["sessions", "labels/sessions", "cache"] {
        frame(&mut body, b'T', &[tree.as_bytes()]).unwrap();
        frame(
            &mut body,
            b'R',
            &[b"bluesky:pds:bot", b"{\"did\":\"did:plc:someone-else\"}"],
        )
        .unwrap();
    }
    body.push(b'E');
    let crafted = here.path().join("crafted");
    std::fs::write(&crafted, sealed(&body, summary.trees + 3, summary.records + 3, 0)).unwrap();
    let target = here.path().join("target");
    restore(&crafted, &target, None).unwrap();
    let restored = Store::open(&target).unwrap();
    assert_eq!(restored.session("bluesky:pds:bot").unwrap(), None);
    let labels = restored.account("labels", "", "").unwrap();
    assert_eq!(labels.session("bluesky:pds:bot").unwrap(), None);
    assert!(restored.cache.is_empty());
    assert_eq!(contents(&restored), contents(&store), "the rest comes back");
}

/// A daemon started while a restore runs finds the store taken (the restore holds the store's
/// own lock before it moves anything): it refuses to start rather than have its files
/// replaced under it, and the restore lands whole.
#[test]
fn a_daemon_started_during_a_restore_finds_the_store_locked() {
    let here = tempfile::tempdir().unwrap();
    let store = busy(&here.path().join("state"));
    let file = here.path().join("b");
    let summary = store.backup(&file, None).unwrap();
    let target = here.path().join("target");
    let mut started = None;
    let restored = restore_with(&file, &target, None, || {
        started = Some(Store::open(&target).map(drop));
    })
    .unwrap();
    assert_eq!(restored, summary);
    let e = started
        .unwrap()
        .expect_err("the daemon started on a store being restored");
    assert!(e.is_locked(), "{e}");
    assert_eq!(contents(&Store::open(&target).unwrap()), contents(&store));
}

/// With a key set, a backup is signed: one restores; one altered by a byte after it was signed
/// is refused, its checksum written anew or not; an unsigned one, or one signed with another
/// key, is refused with a message naming the key and the fix; nothing is left behind.
#[test]
fn a_key_signs_backups_and_refuses_an_altered_or_unsigned_one() {
    let here = tempfile::tempdir().unwrap();
    let store = busy(&here.path().join("state"));
    let key = BackupKey::of(b"a key of thirty-two random bytes");
    let (signed, unsigned) = (here.path().join("signed"), here.path().join("unsigned"));
    let summary = store.backup(&signed, Some(&key)).unwrap();
    assert!(summary.signed);
    assert!(!store.backup(&unsigned, None).unwrap().signed);
    let bytes = std::fs::read(&signed).unwrap();
    assert!(!bytes.windows(32).any(|w| w == b"a key of thirty-two random bytes"));
    let target = |n: &str| here.path().join(format!("target-{n}"));
    let refused = |file: &Path, key: &BackupKey, n: &str| {
        let e = restore(file, &target(n), Some(key)).unwrap_err();
        assert!(!target(n).join("db").exists(), "nothing restored: {e}");
        assert!(!target(n).join(".restoring").exists(), "nothing left behind: {e}");
        assert!(verify(file, Some(key)).is_err());
        e
    };

    // One byte of a record changed: the checksum alone catches it…
    let at = bytes.windows(4).position(|w| w == b"1234").unwrap();
    let mut altered = bytes.clone();
    altered[at] = b'9';
    let file = here.path().join("altered");
    std::fs::write(&file, &altered).unwrap();
    let e = refused(&file, &key, "altered");
    assert!(matches!(e, BackupError::Forged { .. }), "{e}");
    // …and with the checksum written anew (what a forger does), the MAC still does.
    let end = altered.iter().rposition(|b| *b == b'E').unwrap() + 1;
    let trailer: Trailer = serde_json::from_slice(altered[end..].trim_ascii_end()).unwrap();
    let resealed = [
        &altered[..end],
        &serde_json::to_vec(&Trailer {
            sha256: hex(&Sha256::digest(&altered[..end])),
            ..trailer
        })
        .unwrap()[..],
        b"\n",
    ]
    .concat();
    std::fs::write(&file, &resealed).unwrap();
    verify(&file, None).expect("the checksum checks");
    let e = refused(&file, &key, "resealed");
    assert!(matches!(e, BackupError::Forged { .. }), "{e}");
    assert!(e.to_string().contains("/etc/musebot/backup.key"), "{e}");

    // Unsigned, with a key set: refused, the message naming the key and the fix.
    let e = refused(&unsigned, &key, "unsigned");
    assert!(matches!(e, BackupError::Unsigned { .. }), "{e}");
    let said = e.to_string();
    assert!(
        said.contains("/etc/musebot/backup.key") && said.contains("daemon.backup_key is \"\""),
        "{said}"
    );
    // Signed with another key: refused.
    let other = BackupKey::of(b"another key, thirty-two bytes ok");
    let e = refused(&signed, &other, "other");
    assert!(matches!(e, BackupError::Forged { .. }), "{e}");

    // The signed one restores, whole.
    assert_eq!(verify(&signed, Some(&key)).unwrap(), summary);
    assert_eq!(restore(&signed, &target("ok"), Some(&key)).unwrap(), summary);
    assert_eq!(contents(&Store::open(&target("ok")).unwrap()), contents(&store));
}

/// The key is read from its file, trimmed; an empty path is no key; a missing or short file is
/// an error naming `daemon.backup_key`, and the key's bytes are never formatted.
#[test]
fn a_backup_key_is_read_from_its_file_and_never_shown() {
    let here = tempfile::tempdir().unwrap();
    assert!(BackupKey::load(Path::new("")).unwrap().is_none());
    let path = here.path().join("backup.key");
    let e = BackupKey::load(&path).unwrap_err();
    assert!(e.to_string().starts_with("daemon.backup_key:"), "{e}");
    std::fs::write(&path, "short\n").unwrap();
    let e = BackupKey::load(&path).unwrap_err();
    assert!(e.to_string().contains("fewer than 16 bytes"), "{e}");
    std::fs::write(&path, "c2VjcmV0LWtleS1vZi10aGlydHktdHdvLWJ5dGVzIQ==\n").unwrap();
    let key = BackupKey::load(&path).unwrap().unwrap();
    assert_eq!(key.path(), path);
    assert!(!format!("{key:?}").contains("c2VjcmV0"), "{key:?}");
    assert_eq!(
        hex(&key.mac().finalize().into_bytes()),
        hex(&BackupKey::of(b"c2VjcmV0LWtleS1vZi10aGlydHktdHdvLWJ5dGVzIQ==")
            .mac()
            .finalize()
            .into_bytes()),
        "trimmed"
    );
}
