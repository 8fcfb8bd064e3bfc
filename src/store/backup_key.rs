//! The key that signs backups (`daemon.backup_key`): a file on the host, never in a backup.
//! With one set, a backup's trailer carries an HMAC-SHA256 of everything before it (beside the
//! plain SHA-256, which catches accidents only), and `state verify` and `state restore` refuse
//! a backup whose MAC is missing or does not match: a file altered off the host, even with
//! its checksum written anew, is never restored. The key's bytes are never formatted (its
//! `Debug` names the file only).

use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The fewest bytes a key may have (a random 32-byte key, base64, has 44).
const MIN_LEN: usize = 16;

/// A backup key read from its file.
#[derive(Clone)]
pub struct BackupKey {
    path: PathBuf,
    bytes: Vec<u8>,
}

impl std::fmt::Debug for BackupKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BackupKey({}, [redacted])", self.path.display())
    }
}

/// A key file that cannot be used (unreadable, or too short): names the key and the fix.
#[derive(Debug, thiserror::Error)]
#[error("daemon.backup_key: cannot use {path}: {why} — write a random key into it (`head -c 32 /dev/urandom | base64 > {path}`, readable by the service's user only), or set daemon.backup_key = \"\" for unsigned backups")]
pub struct KeyError {
    pub path: PathBuf,
    pub why: String,
}

impl BackupKey {
    /// The key in the file `path` (surrounding whitespace trimmed); `None` where `path` is
    /// empty (`daemon.backup_key = ""`: backups unsigned). An unreadable or short file is an
    /// error naming the key, never a silent unsigned backup.
    pub fn load(path: &Path) -> Result<Option<BackupKey>, KeyError> {
        if path.as_os_str().is_empty() {
            return Ok(None);
        }
        let bad = |why: String| KeyError {
            path: path.to_path_buf(),
            why,
        };
        let text = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
        let bytes = text.trim_ascii().to_vec();
        if bytes.len() < MIN_LEN {
            return Err(bad(format!("it holds fewer than {MIN_LEN} bytes")));
        }
        Ok(Some(BackupKey {
            path: path.to_path_buf(),
            bytes,
        }))
    }

    /// The file the key was read from (what messages name).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A fresh MAC under this key.
    pub(super) fn mac(&self) -> Hmac<Sha256> {
        Hmac::<Sha256>::new_from_slice(&self.bytes).expect("HMAC takes a key of any length")
    }

    /// A key of these bytes (tests).
    #[cfg(test)]
    pub(crate) fn of(bytes: &[u8]) -> BackupKey {
        BackupKey {
            path: PathBuf::from("/etc/musebot/backup.key"),
            bytes: bytes.to_vec(),
        }
    }
}
