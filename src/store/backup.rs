//! The store's schema version and its backups. A store records the schema it was written
//! by ([`SCHEMA`], key `musebot:store-schema` in sled's default tree); [`check_schema`] reads
//! it before musebot writes anything, so a store of a newer build is refused, never half-read
//! (sled's own open, which comes first, may already have recovered and rewritten its files). A backup is one file: a magic line, a JSON header (format, schema, when,
//! the build), then every record of every tree but the search cache (which refills itself)
//! and the platform sessions (tokens stay on the host) as length-prefixed frames, an end
//! frame and a JSON trailer with the counts and the SHA-256 of everything before it — and, with
//! `daemon.backup_key` set ([`BackupKey`]), its HMAC-SHA256 under that key. [`restore`] holds the target's own lock (its `db`, created and locked as
//! sled does), passes over any tree a backup leaves out, reads the rest into a new sled folder
//! inside the target and moves its files into place only when the trailer checks: a truncated, altered or
//! newer-schema file is refused and leaves nothing behind. The checksum catches accidents, not
//! forgery; the MAC catches forgery by anyone without the key: with a key set, a backup whose
//! MAC is missing or wrong is refused. Unsigned, a backup is as trusted as whoever could write it.

use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use super::backup_key::BackupKey;
use super::{Store, StoreError};

/// The store's schema: what this build writes and the newest it reads.
pub const SCHEMA: u32 = 1;
/// Where the schema is recorded (sled's default tree).
const SCHEMA_KEY: &[u8] = b"musebot:store-schema";
const MAGIC: &[u8] = b"MUSEBOT-STATE-BACKUP\n";
const FORMAT: u32 = 1;
/// Whether a backup leaves a tree out: the search cache (it refills itself) and the platform
/// sessions, every account's (tokens: whoever holds a copy of the backup must not be able to
/// act as the bot; a restored bot logs in again).
fn left_out(name: &[u8]) -> bool {
    name == b"cache" || name == b"sessions" || name.ends_with(b"/sessions")
}
/// The longest part of a frame read back (sled keeps far smaller records).
const MAX_PART: usize = 16 << 20;
/// The longest header or trailer line read back (each is a few hundred bytes).
const MAX_LINE: usize = 4 << 10;

/// What a backup holds, as its header and trailer say.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub schema: u32,
    pub created: chrono::DateTime<chrono::Utc>,
    /// The musebot version that wrote it.
    pub version: String,
    pub trees: u64,
    pub records: u64,
    /// Whether its trailer carries a MAC (checked where a key was given).
    pub signed: bool,
}

#[derive(Debug, Serialize, Deserialize)]
struct Header {
    format: u32,
    schema: u32,
    created: chrono::DateTime<chrono::Utc>,
    version: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct Trailer {
    trees: u64,
    records: u64,
    sha256: String,
    /// HMAC-SHA256 under `daemon.backup_key` of what `sha256` covers (absent: unsigned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hmac_sha256: Option<String>,
}

/// Why a backup could not be taken, read or restored. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}: not a musebot state backup (no header) — give the file `musebot state backup` wrote")]
    NotABackup(PathBuf),
    #[error("{path}: the backup is damaged ({why}) — nothing was restored; use another backup")]
    Damaged { path: PathBuf, why: String },
    #[error("{path}: the backup is of store schema {found}; this build reads schema {SCHEMA} at most — restore it with the musebot that wrote it ({version}) or a newer one")]
    Newer { path: PathBuf, found: u32, version: String },
    #[error("{0}: a store is already there — restore into an empty or new folder (move this one aside first)")]
    Occupied(PathBuf),
    #[error("{path}: the backup is not signed, and daemon.backup_key ({key}) is set — nothing was restored; use a backup written with that key, or, only for an unsigned backup you know is yours, run the command with a config whose daemon.backup_key is \"\"")]
    Unsigned { path: PathBuf, key: PathBuf },
    #[error("{path}: the backup's signature does not match daemon.backup_key ({key}) — it was altered, or signed with another key; nothing was restored; use another backup")]
    Forged { path: PathBuf, key: PathBuf },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BackupError + '_ {
    move |source| BackupError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Reads the store's schema before any write: a store of a newer build is refused (its
/// records may not read here, and writing would damage them); a store without one (a
/// fresh one, or one before schemas were recorded) is marked with [`SCHEMA`].
pub(super) fn check_schema(db: &sled::Db) -> Result<(), StoreError> {
    match db.get(SCHEMA_KEY)? {
        Some(v) => {
            let found = <[u8; 4]>::try_from(v.as_ref())
                .map(u32::from_be_bytes)
                .unwrap_or(u32::MAX);
            if found > SCHEMA {
                return Err(StoreError::Newer { found });
            }
            Ok(())
        }
        None => {
            db.insert(SCHEMA_KEY, &SCHEMA.to_be_bytes())?;
            Ok(())
        }
    }
}

impl Store {
    /// Writes a backup of the whole store (but the search cache) to `out`, through a new
    /// file beside it ([`create_beside`]) renamed into place, so `out` is either whole or
    /// absent (the new file removed on any failure); signed with `key` where one is given.
    /// Safe while the daemon runs: each tree is read as it stands when it is reached (see
    /// the book's Backup page for what that means for jobs in flight).
    pub fn backup(&self, out: &Path, key: Option<&BackupKey>) -> Result<Summary, BackupError> {
        let (file, tmp) = create_beside(out).map_err(io(out))?;
        let written = self.write_backup(file, &tmp, key).and_then(|s| {
            std::fs::rename(&tmp, out).map_err(io(out))?;
            Ok(s)
        });
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }

    fn write_backup(&self, file: std::fs::File, tmp: &Path, key: Option<&BackupKey>) -> Result<Summary, BackupError> {
        let mut w = Hashing::new(BufWriter::new(file), key);
        let created = chrono::Utc::now();
        let header = Header {
            format: FORMAT,
            schema: SCHEMA,
            created,
            version: env!("CARGO_PKG_VERSION").into(),
        };
        let mut names = self.db.tree_names();
        names.sort();
        let (mut trees, mut records) = (0u64, 0u64);
        let result = (|| -> std::io::Result<String> {
            w.write_all(MAGIC)?;
            serde_json::to_writer(&mut w, &header)?;
            w.write_all(b"\n")?;
            for name in names.iter().filter(|n| !left_out(n)) {
                let tree = self.db.open_tree(name).map_err(std::io::Error::other)?;
                frame(&mut w, b'T', &[name.as_ref()])?;
                trees += 1;
                for item in tree.iter() {
                    let (k, v) = item.map_err(std::io::Error::other)?;
                    frame(&mut w, b'R', &[k.as_ref(), v.as_ref()])?;
                    records += 1;
                }
            }
            w.write_all(b"E")?;
            Ok(w.hex())
        })();
        let sha256 = result.map_err(io(tmp))?;
        let hmac_sha256 = w.mac().map(|m| hex(&m.finalize().into_bytes()));
        let signed = hmac_sha256.is_some();
        let trailer = Trailer {
            trees,
            records,
            sha256,
            hmac_sha256,
        };
        let mut inner = w.into_inner();
        serde_json::to_writer(&mut inner, &trailer).map_err(|e| io(tmp)(e.into()))?;
        inner.write_all(b"\n").map_err(io(tmp))?;
        let file = inner.into_inner().map_err(|e| io(tmp)(e.into_error()))?;
        file.sync_all().map_err(io(tmp))?;
        Ok(Summary {
            schema: SCHEMA,
            created,
            version: header.version,
            trees,
            records,
            signed,
        })
    }
}

/// A new file beside `out` (its folder made when missing), `<out>.partial-<pid>-<n>`, created
/// exclusively (`O_CREAT|O_EXCL`: never an existing file, nor through a link planted at its
/// name; a name taken is passed over for the next) and the owner's alone whatever the umask —
/// a backup holds opt-outs and post texts. The caller renames it onto `out` or removes it.
pub(crate) fn create_beside(out: &Path) -> std::io::Result<(std::fs::File, PathBuf)> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let start = chrono::Utc::now().timestamp_micros();
    let mut last = None;
    for n in 0..64 {
        let mut tmp = out.as_os_str().to_owned();
        tmp.push(format!(".partial-{}-{}", std::process::id(), start.wrapping_add(n)));
        let tmp = PathBuf::from(tmp);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
        {
            Ok(file) => return Ok((file, tmp)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::ErrorKind::AlreadyExists.into()))
}

/// Reads a backup through and checks it whole (header, every frame, the trailer's counts
/// and checksum, and its MAC under `key` where one is given: then an unsigned backup is
/// refused too), writing nothing.
pub fn verify(path: &Path, key: Option<&BackupKey>) -> Result<Summary, BackupError> {
    read(path, key, &mut |_, _, _| Ok(()))
}

/// Restores the backup at `path` into the folder `dir` (`daemon.state_dir`), which must not
/// hold a store (other folders there, the fact-check corpus and the evidence index, stay):
/// the records go into a new store inside it (`.restoring`), whose files move into `dir`
/// only when the whole file has checked (against `key` too, as [`verify`]) — sled's `db` last, so a restore cut short
/// leaves no store that opens. On any error nothing is left behind.
pub fn restore(path: &Path, dir: &Path, key: Option<&BackupKey>) -> Result<Summary, BackupError> {
    restore_with(path, dir, key, || ())
}

/// [`restore`], calling `before_moving` once the records are written and just before the
/// first file moves into `dir` (the tests start a daemon there).
fn restore_with(
    path: &Path,
    dir: &Path,
    key: Option<&BackupKey>,
    before_moving: impl FnOnce(),
) -> Result<Summary, BackupError> {
    // Any of sled's files: a store, or what is left of one (a stale snapshot beside a
    // restored `db` would be read with it).
    let occupied = std::fs::read_dir(dir).is_ok_and(|d| {
        d.flatten().any(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            ["db", "conf", "blobs"].contains(&name.as_str()) || name.starts_with("snap.")
        })
    });
    if occupied {
        return Err(BackupError::Occupied(dir.to_path_buf()));
    }
    // The whole file checked before anything is written: a crafted one fills no disk.
    verify(path, key)?;
    // Staged inside the state folder: whoever may write it may restore (no write beside it,
    // in `/var/lib`, is needed), and the moves below stay on one file system.
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    // The store's own lock, before anything is written into `dir`: its `db`, created here
    // (never an existing one: a store there is refused) and locked as sled locks it. A daemon
    // started during the restore finds it locked and refuses to start, rather than have its
    // new store's files replaced under it. The restored `db` is renamed over it last.
    let lock = take_lock(dir)?;
    let staging = dir.join(".restoring");
    let _ = std::fs::remove_dir_all(&staging);
    let result = (|| {
        let db = sled::Config::new()
            .path(&staging)
            .flush_every_ms(None)
            .open()
            .map_err(StoreError::from)?;
        // `None` before the first tree; `Some(None)` in a tree a backup leaves out.
        let mut tree: Option<Option<sled::Tree>> = None;
        let summary = read(path, key, &mut |kind, a, b| {
            match kind {
                // A tree no backup holds (sessions, the cache) is passed over, records and all:
                // a file altered to carry one must not make the bot act as another account.
                b'T' if left_out(a) => tree = Some(None),
                b'T' => tree = Some(Some(db.open_tree(a).map_err(StoreError::from)?)),
                _ => match &tree {
                    None => {
                        return Err(BackupError::Damaged {
                            path: path.to_path_buf(),
                            why: "a record before its tree".into(),
                        })
                    }
                    Some(None) => {}
                    Some(Some(t)) => {
                        t.insert(a, b).map_err(StoreError::from)?;
                    }
                },
            }
            Ok(())
        })?;
        db.flush().map_err(StoreError::from)?;
        drop(tree);
        drop(db);
        before_moving();
        let entries = std::fs::read_dir(&staging).map_err(io(&staging))?;
        for entry in entries {
            let name = entry.map_err(io(&staging))?.file_name();
            if name == "db" {
                continue;
            }
            // What an earlier restore cut short left (never `db`: the lock's, replaced last).
            let to = dir.join(&name);
            if to.is_dir() {
                std::fs::remove_dir_all(&to).map_err(io(&to))?;
            } else if to.exists() {
                std::fs::remove_file(&to).map_err(io(&to))?;
            }
            std::fs::rename(staging.join(&name), &to).map_err(io(&to))?;
        }
        std::fs::rename(staging.join("db"), dir.join("db")).map_err(io(dir))?;
        Ok(summary)
    })();
    let _ = std::fs::remove_dir_all(&staging);
    if result.is_err() {
        // Still the placeholder this restore made and holds: no store is left that opens.
        let _ = std::fs::remove_file(dir.join("db"));
    }
    drop(lock);
    result
}

/// Creates `dir/db` exclusively and locks it as sled does (`flock`, exclusive): a store, or a
/// daemon that got there first, is [`BackupError::Occupied`].
fn take_lock(dir: &Path) -> Result<std::fs::File, BackupError> {
    use fs2::FileExt;
    let db = dir.join("db");
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&db)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(BackupError::Occupied(dir.to_path_buf()))
        }
        Err(e) => return Err(io(&db)(e)),
    };
    if file.try_lock_exclusive().is_err() {
        // A daemon opened it between the create and the lock: it is the daemon's now.
        return Err(BackupError::Occupied(dir.to_path_buf()));
    }
    Ok(file)
}

/// What [`read`] hands each frame to.
type EachFrame<'a> = dyn FnMut(u8, &[u8], &[u8]) -> Result<(), BackupError> + 'a;

/// Reads the backup at `path`, handing each frame to `each` (`b'T'` with a tree's name, `b'R'`
/// with a key and value), then checks the trailer (its MAC first, where `key` is given). Every
/// read is bounded: the header and the trailer by [`MAX_LINE`], each part by [`MAX_PART`].
fn read(path: &Path, key: Option<&BackupKey>, each: &mut EachFrame) -> Result<Summary, BackupError> {
    let damaged = |why: &str| BackupError::Damaged {
        path: path.to_path_buf(),
        why: why.to_string(),
    };
    let file = std::fs::File::open(path).map_err(io(path))?;
    let mut r = Hashing::new(BufReader::new(file), key);
    let mut magic = vec![0u8; MAGIC.len()];
    if r.read_exact(&mut magic).is_err() || magic != MAGIC {
        return Err(BackupError::NotABackup(path.to_path_buf()));
    }
    let mut line = Vec::new();
    (&mut r)
        .take(MAX_LINE as u64)
        .read_until(b'\n', &mut line)
        .map_err(io(path))?;
    if !line.ends_with(b"\n") {
        return Err(damaged("no header line within 4 KiB"));
    }
    let header: Header = serde_json::from_slice(&line).map_err(|_| damaged("unreadable header"))?;
    if header.format != FORMAT {
        return Err(damaged(&format!("format {} unknown to this build", header.format)));
    }
    if header.schema > SCHEMA {
        return Err(BackupError::Newer {
            path: path.to_path_buf(),
            found: header.schema,
            version: header.version,
        });
    }
    let (mut trees, mut records) = (0u64, 0u64);
    let truncated = |_| damaged("it ends before its last record (truncated)");
    loop {
        let mut kind = [0u8; 1];
        r.read_exact(&mut kind).map_err(truncated)?;
        match kind[0] {
            b'E' => break,
            b'T' => {
                let name = chunk(&mut r).map_err(truncated)?;
                each(b'T', &name, &[])?;
                trees += 1;
            }
            b'R' => {
                let key = chunk(&mut r).map_err(truncated)?;
                let value = chunk(&mut r).map_err(truncated)?;
                each(b'R', &key, &value)?;
                records += 1;
            }
            _ => return Err(damaged("an unknown frame")),
        }
    }
    let sha256 = r.hex();
    let mac = r.mac();
    let mut rest = Vec::new();
    r.into_inner()
        .take(MAX_LINE as u64 + 1)
        .read_to_end(&mut rest)
        .map_err(io(path))?;
    if rest.len() > MAX_LINE {
        return Err(damaged("more than a trailer line after its last record"));
    }
    let trailer: Trailer = rest
        .strip_suffix(b"\n")
        .and_then(|t| serde_json::from_slice(t).ok())
        .ok_or_else(|| damaged("no whole trailer (truncated)"))?;
    // The MAC before the checksum: a forger writes the checksum anew, and the message should
    // say what was found.
    if let (Some(key), Some(mac)) = (key, mac) {
        let Some(given) = &trailer.hmac_sha256 else {
            return Err(BackupError::Unsigned {
                path: path.to_path_buf(),
                key: key.path().to_path_buf(),
            });
        };
        if unhex(given).is_none_or(|given| mac.verify_slice(&given).is_err()) {
            return Err(BackupError::Forged {
                path: path.to_path_buf(),
                key: key.path().to_path_buf(),
            });
        }
    }
    if trailer.sha256 != sha256 {
        return Err(damaged("its checksum does not match (altered)"));
    }
    if (trailer.trees, trailer.records) != (trees, records) {
        return Err(damaged("its counts do not match"));
    }
    Ok(Summary {
        schema: header.schema,
        created: header.created,
        version: header.version,
        trees,
        records,
        signed: trailer.hmac_sha256.is_some(),
    })
}

/// Bytes as lower-case hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Hex (either case) as bytes; `None` when it is not hex.
fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

/// One frame: its kind and each part with its length (u32, big-endian) first.
fn frame(w: &mut impl Write, kind: u8, parts: &[&[u8]]) -> std::io::Result<()> {
    w.write_all(&[kind])?;
    for p in parts {
        let len = u32::try_from(p.len()).map_err(std::io::Error::other)?;
        w.write_all(&len.to_be_bytes())?;
        w.write_all(p)?;
    }
    Ok(())
}

/// A part of a frame; one longer than [`MAX_PART`] is damage, not an allocation.
fn chunk(r: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_PART {
        return Err(std::io::Error::other("a record longer than 16 MiB"));
    }
    let mut buf = Vec::new();
    r.take(len as u64).read_to_end(&mut buf)?;
    if buf.len() < len {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    Ok(buf)
}

/// A reader or writer that hashes every byte through it (and MACs it, with a key).
struct Hashing<T> {
    inner: T,
    hash: Sha256,
    mac: Option<Hmac<Sha256>>,
}

impl<T> Hashing<T> {
    fn new(inner: T, key: Option<&BackupKey>) -> Self {
        Hashing {
            inner,
            hash: Sha256::new(),
            mac: key.map(BackupKey::mac),
        }
    }
    fn hex(&self) -> String {
        hex(&self.hash.clone().finalize())
    }
    /// The MAC so far (to finalize, or to verify against), where there is a key.
    fn mac(&self) -> Option<Hmac<Sha256>> {
        self.mac.clone()
    }
    fn update(&mut self, bytes: &[u8]) {
        self.hash.update(bytes);
        if let Some(m) = &mut self.mac {
            m.update(bytes);
        }
    }
    fn into_inner(self) -> T {
        self.inner
    }
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.update(&buf[..n]);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Hashing<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, amt: usize) {
        if let Ok(buf) = self.inner.fill_buf() {
            let n = amt.min(buf.len());
            self.hash.update(&buf[..n]);
            if let Some(m) = &mut self.mac {
                m.update(&buf[..n]);
            }
        }
        self.inner.consume(amt);
    }
}

#[cfg(test)]
#[path = "backup_tests.rs"]
mod tests;
