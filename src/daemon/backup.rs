//! Backups of a running daemon's store, asked for from the command line. sled lets one
//! process hold a store, so `musebot state backup` cannot read it while the daemon runs: it
//! writes a request (`backups/.request` in `daemon.state_dir`, a nonce of its own) and the
//! daemon, which looks for one every [`LOOK_EVERY`], writes the backup as
//! `backups/<nonce>.musebot-backup` (or `<nonce>.error` with why) — inside the state folder,
//! the one place the service may write, signed with `daemon.backup_key` where one is set. The
//! command then checks the file whole (against its own key) and moves it where it was asked to. A file, not a signal: it works whatever user namespace systemd gives
//! the service, and whoever may write the state folder may read the store anyway.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::store::backup::{BackupError, BackupKey, Summary};
use crate::store::Store;

/// How often the daemon looks for a request.
pub const LOOK_EVERY: Duration = Duration::from_secs(2);
const REQUEST: &str = ".request";

/// The folder requests and the daemon's backups live in.
pub fn folder(state_dir: &Path) -> PathBuf {
    state_dir.join("backups")
}

/// The daemon's side: answers each request until `stop`.
pub async fn serve(store: Store, state_dir: PathBuf, key: Option<BackupKey>, stop: CancellationToken) {
    let dir = folder(&state_dir);
    let mut tick = tokio::time::interval(LOOK_EVERY);
    // A request that could not be removed, said once.
    let mut refused: Option<String> = None;
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        let request = dir.join(REQUEST);
        // A plain file only (a link or a FIFO planted there stalls nothing), and its first
        // bytes only.
        let Some(nonce) = read_request(&request) else {
            continue;
        };
        if let Err(e) = std::fs::remove_file(&request) {
            if refused.as_deref() != Some(nonce.as_str()) {
                tracing::error!(error = %e, folder = %dir.display(), "a backup request the daemon cannot remove: the folder is not the service's (it was made by another user); remove it and run `musebot state backup` as the service's user");
                refused = Some(nonce);
            }
            continue;
        }
        sweep(&dir);
        if !is_nonce(&nonce) {
            tracing::warn!("a backup request that is not a nonce; ignored");
            continue;
        }
        let (store, out) = (store.clone(), dir.join(format!("{nonce}.musebot-backup")));
        let key = key.clone();
        let done = tokio::task::spawn_blocking(move || store.backup(&out, key.as_ref())).await;
        match done {
            Ok(Ok(s)) => tracing::info!(
                trees = s.trees,
                records = s.records,
                "state backup written for `musebot state backup`"
            ),
            Ok(Err(e)) => {
                tracing::error!(error = %e, "the state backup failed");
                let _ = std::fs::write(dir.join(format!("{nonce}.error")), e.to_string());
            }
            Err(e) => tracing::error!(error = %e, "the state backup's task ended"),
        }
    }
}

/// The nonce a request holds: at most 64 bytes of a plain file (not a link).
fn read_request(path: &Path) -> Option<String> {
    use std::io::Read;
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.file_type().is_file() {
        return None;
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(64)
        .read_to_string(&mut text)
        .ok()?;
    Some(text.trim().to_string())
}

/// A request's nonce as the command writes it: `<pid>-<microseconds>`.
fn is_nonce(nonce: &str) -> bool {
    nonce.len() <= 64 && pair_of_numbers(nonce)
}

/// `<digits>-<digits>`.
fn pair_of_numbers(s: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    s.split_once('-').is_some_and(|(a, b)| digits(a) && digits(b))
}

/// Whether `name` is one the daemon's answer to a request writes: `<nonce>.musebot-backup`,
/// `<nonce>.error`, or the backup's own `<nonce>.musebot-backup.partial-<pid>-<microseconds>`.
fn is_request_file(name: &str) -> bool {
    let Some((nonce, rest)) = name.split_once('.') else {
        return false;
    };
    is_nonce(nonce)
        && (rest == "musebot-backup"
            || rest == "error"
            || rest
                .strip_prefix("musebot-backup.partial-")
                .is_some_and(pair_of_numbers))
}

/// Backups and errors older than a command waits for are left-overs of a command that gave
/// up: removed (a backup holds what the state folder does). Only the names a request's answer
/// takes: an operator's own file in the folder stays, whatever its name ends with.
fn sweep(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let ours = is_request_file(&name);
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > WAIT + Duration::from_secs(60));
        if ours && old {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// How long the command waits for the daemon's backup.
pub const WAIT: Duration = Duration::from_secs(600);

/// Why `musebot state backup` could not get a backup from the daemon.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("{0}")]
    Backup(#[from] BackupError),
    #[error("{path}: {source} — run the command as the service's user (`sudo -u musebot musebot state backup …`)")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("the daemon did not answer within {0:?} — is it running this build (`systemctl status musebot`)? Stop it and run the command again to back up the store directly")]
    NoAnswer(Duration),
    #[error("the daemon could not write the backup: {0}")]
    Failed(String),
}

/// The command's side: asks the running daemon for a backup, waits up to `wait`, checks the
/// file whole (its MAC under `key` too, where given) and moves it to `out`.
pub fn request(state_dir: &Path, out: &Path, key: Option<&BackupKey>, wait: Duration) -> Result<Summary, RequestError> {
    let dir = folder(state_dir);
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| RequestError::Io { path, source }
    };
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let nonce = format!("{}-{}", std::process::id(), chrono::Utc::now().timestamp_micros());
    let request = dir.join(REQUEST);
    std::fs::write(&request, &nonce).map_err(io(&request))?;
    let (file, error) = (
        dir.join(format!("{nonce}.musebot-backup")),
        dir.join(format!("{nonce}.error")),
    );
    let deadline = std::time::Instant::now() + wait;
    while !file.exists() {
        if let Ok(why) = std::fs::read_to_string(&error) {
            let _ = std::fs::remove_file(&error);
            return Err(RequestError::Failed(why));
        }
        if std::time::Instant::now() > deadline {
            let _ = std::fs::remove_file(&request);
            return Err(RequestError::NoAnswer(wait));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    // Whatever happens next, the daemon's copy does not wait in `backups/` for the sweep.
    let placed = crate::store::backup::verify(&file, key)
        .map_err(RequestError::from)
        .and_then(|summary| {
            if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent).map_err(io(parent))?;
            }
            if std::fs::rename(&file, out).is_err() {
                copy_into(&file, out)?;
            }
            Ok(summary)
        });
    let _ = std::fs::remove_file(&file);
    placed
}

/// Another file system (or a rename refused): copied into a new file made exclusively beside
/// `out` ([`create_beside`](crate::store::backup::create_beside): never through a file or a
/// link someone put there), synced, renamed into place; removed on any failure.
fn copy_into(file: &Path, out: &Path) -> Result<(), RequestError> {
    let (mut to, tmp) = crate::store::backup::create_beside(out).map_err(|source| RequestError::Io {
        path: out.to_path_buf(),
        source,
    })?;
    let copied = std::fs::File::open(file)
        .and_then(|mut from| std::io::copy(&mut from, &mut to))
        .and_then(|_| to.sync_all())
        .and_then(|()| std::fs::rename(&tmp, out));
    if let Err(source) = copied {
        let _ = std::fs::remove_file(&tmp);
        return Err(RequestError::Io {
            path: out.to_path_buf(),
            source,
        });
    }
    let _ = std::fs::remove_file(file);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A backup copied onto another file system goes through a file made afresh beside the
    /// target: a link planted at any name there (the old `<name>.partial` included) is never
    /// written through, and the copy is whole and the owner's alone.
    #[test]
    fn a_copy_to_another_file_system_never_writes_through_a_planted_link() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("4242-1.musebot-backup");
        std::fs::write(&from, b"the backup").unwrap();
        let shared = dir.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"the victim's own").unwrap();
        let out = shared.join("nightly.backup");
        std::os::unix::fs::symlink(&victim, shared.join("nightly.partial")).unwrap();
        copy_into(&from, &out).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"the victim's own");
        assert_eq!(std::fs::read(&out).unwrap(), b"the backup");
        let mode = std::fs::metadata(&out).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        assert!(!from.exists(), "the daemon's copy is removed");
    }

    /// The running daemon answers a request: the backup lands in a folder that did not
    /// exist (the command makes it, as it does with the daemon stopped); where it cannot be
    /// put in place, the daemon's copy does not stay in `backups/` for the sweep.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_request_makes_the_target_folder_and_cleans_up_on_failure() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let store = Store::open(&state).unwrap();
        store.advance_cursor("mastodon:notifications", "1234").unwrap();
        let stop = CancellationToken::new();
        let daemon = tokio::spawn(serve(store, state.clone(), None, stop.clone()));
        let wait = Duration::from_secs(30);

        let out = dir.path().join("new/folder/nightly.backup");
        let (s, o) = (state.clone(), out.clone());
        let summary = tokio::task::spawn_blocking(move || request(&s, &o, None, wait))
            .await
            .unwrap()
            .unwrap();
        assert!(summary.records >= 1, "{summary:?}");
        assert_eq!(crate::store::backup::verify(&out, None).unwrap(), summary);

        // A target that is a folder with something in it: refused, nothing left behind.
        let taken = dir.path().join("taken");
        std::fs::create_dir_all(taken.join("inside")).unwrap();
        let s = state.clone();
        let refused = tokio::task::spawn_blocking(move || request(&s, &taken, None, wait))
            .await
            .unwrap();
        assert!(refused.is_err());
        let left: Vec<_> = std::fs::read_dir(folder(&state))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(left.is_empty(), "left in backups/: {left:?}");
        stop.cancel();
        daemon.await.unwrap();
    }

    /// A daemon with `daemon.backup_key` signs the backups it serves, and the command checks
    /// them with its own key: a backup from a daemon with another key (or none) is refused and
    /// not put in place.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_daemon_with_a_key_serves_signed_backups_the_command_checks() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let store = Store::open(&state).unwrap();
        store.advance_cursor("mastodon:notifications", "1234").unwrap();
        let key = BackupKey::of(b"the daemon's key, 32 bytes long!");
        let stop = CancellationToken::new();
        let daemon = tokio::spawn(serve(store, state.clone(), Some(key.clone()), stop.clone()));
        let wait = Duration::from_secs(30);
        let ask = |out: PathBuf, key: BackupKey| {
            let s = state.clone();
            tokio::task::spawn_blocking(move || request(&s, &out, Some(&key), wait))
        };

        let out = dir.path().join("signed.backup");
        let summary = ask(out.clone(), key.clone()).await.unwrap().unwrap();
        assert!(summary.signed, "{summary:?}");
        assert_eq!(crate::store::backup::verify(&out, Some(&key)).unwrap(), summary);

        let other = dir.path().join("other.backup");
        let refused = ask(other.clone(), BackupKey::of(b"not the daemon's key, 32 bytes!!"))
            .await
            .unwrap()
            .unwrap_err();
        assert!(
            refused.to_string().contains("does not match daemon.backup_key"),
            "{refused}"
        );
        assert!(!other.exists());
        stop.cancel();
        daemon.await.unwrap();
    }

    /// The sweep removes only the left-overs of a request (`<nonce>.musebot-backup`,
    /// `<nonce>.error`, a backup's `.partial-` file), never an operator's file that happens to
    /// end the same way, however old.
    #[test]
    fn the_sweep_removes_only_the_daemons_own_request_files() {
        let dir = tempfile::tempdir().unwrap();
        let ours = [
            "4242-1750000000000000.musebot-backup",
            "4242-1750000000000000.error",
            "4242-1750000000000000.musebot-backup.partial-77-1750000000000001",
        ];
        let theirs = [
            "nightly.musebot-backup",
            "before-upgrade.musebot-backup",
            "notes.error",
            "keep.partial-1",
            "4242.musebot-backup",
            "a-1.musebot-backup",
        ];
        let long_ago = std::time::SystemTime::now() - WAIT - Duration::from_secs(3600);
        for name in ours.iter().chain(&theirs) {
            let f = std::fs::File::create(dir.path().join(name)).unwrap();
            f.set_modified(long_ago).unwrap();
        }
        sweep(dir.path());
        for name in ours {
            assert!(!dir.path().join(name).exists(), "{name} left");
        }
        for name in theirs {
            assert!(dir.path().join(name).exists(), "{name} removed");
        }
    }
}
