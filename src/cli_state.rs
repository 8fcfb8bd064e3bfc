//! `musebot state`: the store's backup, its check and its restore, for moving a bot to a new
//! host, upgrading with a way back, and recovering a lost disk. `backup` reads the store
//! itself when no daemon holds it, else asks the running daemon for one
//! ([`crate::daemon::backup`]); `restore` writes a new store only into a state folder that
//! holds none. Both refuse to run as anyone but the state folder's owner (the service's
//! user), so every file stays the service's. With `daemon.backup_key` set, `backup` signs
//! and `verify` (given the config) and `restore` refuse a backup not signed with it. Exit codes: 0
//! done, 1 refused or failed (the message says why and what to do), 2 configuration error.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;

use crate::config::Config;
use crate::store::backup::{BackupKey, Summary};
use crate::store::Store;

#[derive(Debug, Subcommand)]
pub enum StateCommand {
    /// Write a checked backup of the state store (opt-outs, jobs, kept answers and their
    /// timers, moderators' queues, cursors, labels) to PATH, while the daemon runs or not.
    Backup {
        path: PathBuf,
        #[arg(long, env = "MUSEBOT_CONFIG", default_value = crate::config::DEFAULT_PATH)]
        config: PathBuf,
    },
    /// Read a backup through and say what it holds; exit 1 when it is damaged or of a newer
    /// store schema than this build reads. Given a config whose `daemon.backup_key` is set,
    /// exit 1 too when the backup is not signed with that key.
    Verify {
        path: PathBuf,
        #[arg(long, env = "MUSEBOT_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Restore a backup into `daemon.state_dir`, which must hold no store (stop the daemon
    /// and move the old one aside first); nothing is written unless the whole file checks.
    Restore {
        path: PathBuf,
        #[arg(long, env = "MUSEBOT_CONFIG", default_value = crate::config::DEFAULT_PATH)]
        config: PathBuf,
    },
}

pub fn main(command: StateCommand) -> ExitCode {
    // The state folder and the backup key (`None`: unsigned), from the config.
    let load = |config: &Path| -> Result<(PathBuf, Option<BackupKey>), ExitCode> {
        let c = Config::load(config).map_err(|e| config_failure(&e))?;
        let key = BackupKey::load(&c.daemon.backup_key).map_err(|e| {
            eprintln!("{e}");
            ExitCode::from(2)
        })?;
        Ok((c.daemon.state_dir, key))
    };
    let (result, keyed) = match command {
        StateCommand::Verify { path, config } => {
            let key = match config.as_deref().map(load).transpose() {
                Ok(loaded) => loaded.and_then(|(_, key)| key),
                Err(code) => return code,
            };
            let checked = crate::store::backup::verify(&path, key.as_ref()).map_err(|e| e.to_string());
            (checked, key.is_some())
        }
        StateCommand::Backup { path, config } => match load(&config) {
            Ok((dir, key)) => (
                not_the_owner(&dir, "backup").map_or_else(|| backup(&dir, &path, key.as_ref()), Err),
                key.is_some(),
            ),
            Err(code) => return code,
        },
        StateCommand::Restore { path, config } => match load(&config) {
            Ok((dir, key)) => (
                not_the_owner(&dir, "restore").map_or_else(
                    || crate::store::backup::restore(&path, &dir, key.as_ref()).map_err(|e| e.to_string()),
                    Err,
                ),
                key.is_some(),
            ),
            Err(code) => return code,
        },
    };
    match result {
        Ok(s) => {
            let signed = match (s.signed, keyed) {
                (true, true) => "signed with daemon.backup_key",
                (true, false) => "signed (not checked: no daemon.backup_key given)",
                (false, _) => "unsigned",
            };
            println!(
                "ok: store schema {}, written {} by musebot {}; {} trees, {} records; {signed}",
                s.schema,
                s.created.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                s.version,
                s.trees,
                s.records
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

/// Why the command must not run as this user: the state folder is another user's (the
/// service's), and what root writes there — the store's files, a request the daemon cannot
/// remove — the daemon could not use. `None` where the folder is absent or this user's.
fn not_the_owner(dir: &Path, verb: &str) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let owner = std::fs::metadata(dir).ok()?.uid();
    // The effective uid, as Linux shows it (`Uid: real effective saved fs`).
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let me: u32 = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    (me != owner).then(|| {
        format!(
            "{} belongs to uid {owner}, and this command runs as uid {me}: run it as the folder's owner, e.g. `sudo -u musebot musebot state {verb} …`, so every file it writes stays the service's",
            dir.display()
        )
    })
}

/// The store read directly when no daemon holds it, else the daemon asked.
fn backup(state_dir: &Path, out: &Path, key: Option<&BackupKey>) -> Result<Summary, String> {
    if !state_dir.join("db").exists() {
        return Err(format!(
            "{}: no store here — is daemon.state_dir right?",
            state_dir.display()
        ));
    }
    match Store::open(state_dir) {
        Ok(store) => store.backup(out, key).map_err(|e| e.to_string()),
        Err(e) if e.is_locked() => {
            eprintln!("the daemon holds the store; asking it for a backup…");
            crate::daemon::backup::request(state_dir, out, key, crate::daemon::backup::WAIT).map_err(|e| e.to_string())
        }
        Err(e) => Err(e.to_string()),
    }
}

fn config_failure(e: &crate::config::ConfigError) -> ExitCode {
    eprintln!("{e}");
    ExitCode::from(2)
}
