//! Tidy checks: every module opens with a `//!` header saying what it owns; there is no import
//! circle among `src/` files; the model imports nothing above it; and only the owner of each
//! outside party (sled, the social APIs, the LLM) names it.

use std::path::Path;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_module_has_a_doc_header() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches"] {
        if root.join(dir).exists() {
            rust_files(&root.join(dir), &mut files);
        }
    }
    assert!(files.len() > 10);
    let missing: Vec<_> = files
        .iter()
        .filter(|f| !std::fs::read_to_string(f).unwrap().trim_start().starts_with("//!"))
        .map(|f| f.strip_prefix(root).unwrap().display().to_string())
        .collect();
    assert!(missing.is_empty(), "modules without a //! header: {missing:?}");
}

/// `src/` files as (path relative to src, text without its `#[cfg(test)]` tail).
fn src_files() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap();
            let code = match text.find("#[cfg(test)]") {
                Some(i) => text[..i].to_string(),
                None => text,
            };
            (
                f.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/"),
                code,
            )
        })
        .collect()
}

/// The module path of a file (`pipeline/muse/mod.rs` → `pipeline::muse`).
fn module_of(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel.trim_end_matches(".rs").split('/').map(String::from).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The paths a file names: `crate::a::b…` anywhere, `super::a…` in `use` lines.
fn named_paths(rel: &str, code: &str) -> Vec<Vec<String>> {
    let here = module_of(rel);
    let mut out = Vec::new();
    let ident = |s: &str| -> Vec<String> {
        s.split("::")
            .map(|p| {
                p.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect::<String>()
            })
            .take_while(|p| !p.is_empty())
            .collect()
    };
    for (i, _) in code.match_indices("crate::") {
        let before = code[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        out.push(ident(&code[i + "crate::".len()..]));
    }
    for line in code.lines().map(str::trim).filter(|l| l.starts_with("use super::")) {
        // `super` of `a/b.rs` (module a::b) and of `a/b/mod.rs` (also a::b) is `a`.
        let mut base = here.clone();
        base.pop();
        base.extend(ident(&line["use super::".len()..]));
        out.push(base);
    }
    out
}

/// Which file defines the longest module prefix of `path`.
fn file_of(path: &[String], modules: &std::collections::HashMap<Vec<String>, String>) -> Option<String> {
    (1..=path.len()).rev().find_map(|k| modules.get(&path[..k]).cloned())
}

/// The import graph among `src/` files. Naming a module's `mod.rs` from outside its folder
/// also reaches the children it re-exports (`pub use child::…`), so `crate::model::Usage`
/// counts as an import of `model/usage.rs`.
fn import_graph() -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let files = src_files();
    let modules: std::collections::HashMap<Vec<String>, String> =
        files.iter().map(|(rel, _)| (module_of(rel), rel.clone())).collect();
    let reexports = |m: &str, code: &str| -> Vec<String> {
        let dir = m.trim_end_matches("mod.rs");
        code.lines()
            .filter_map(|l| l.trim().strip_prefix("pub use "))
            .filter_map(|l| l.split("::").next())
            .flat_map(|child| [format!("{dir}{child}.rs"), format!("{dir}{child}/mod.rs")])
            .filter(|f| modules.values().any(|v| v == f))
            .collect()
    };
    let code_of: std::collections::HashMap<&str, &str> = files.iter().map(|(r, c)| (r.as_str(), c.as_str())).collect();
    files
        .iter()
        .map(|(rel, code)| {
            let mut targets = std::collections::BTreeSet::new();
            for t in named_paths(rel, code).iter().filter_map(|p| file_of(p, &modules)) {
                let outside = !rel.starts_with(t.trim_end_matches("mod.rs"));
                if t.ends_with("mod.rs") && outside {
                    targets.extend(reexports(&t, code_of[t.as_str()]));
                }
                targets.insert(t);
            }
            targets.remove(rel);
            (rel.clone(), targets)
        })
        .collect()
}

/// No import circle among `src/` files (strongly connected sets of two or more files).
#[test]
fn there_is_no_import_circle() {
    let graph = import_graph();
    assert!(graph.len() > 20);
    let reaches = |from: &str, to: &str| {
        let mut seen = std::collections::BTreeSet::new();
        let mut stack = vec![from.to_string()];
        while let Some(f) = stack.pop() {
            if f == to {
                return true;
            }
            if seen.insert(f.clone()) {
                stack.extend(graph[&f].iter().cloned());
            }
        }
        false
    };
    let circles: Vec<String> = graph
        .iter()
        .flat_map(|(a, targets)| targets.iter().map(move |b| (a, b)))
        .filter(|(a, b)| reaches(b, a))
        .map(|(a, b)| format!("{a} -> {b} -> … -> {a}"))
        .collect();
    assert!(circles.is_empty(), "import circles:\n{}", circles.join("\n"));
}

/// The model (persisted records) is the ground floor: it imports nothing from the crate but
/// itself.
#[test]
fn the_model_imports_nothing_above_it() {
    let graph = import_graph();
    let upward: Vec<String> = graph
        .iter()
        .filter(|(f, _)| f.starts_with("model/"))
        .flat_map(|(f, targets)| {
            targets
                .iter()
                .filter(|t| !t.starts_with("model/"))
                .map(move |t| format!("{f} imports {t}"))
        })
        .collect();
    assert!(upward.is_empty(), "{upward:?}");
    assert!(graph.keys().any(|f| f.starts_with("model/")), "the model module exists");
}

/// The architecture invariant: one module per outside party.
#[test]
fn only_the_owner_talks_to_each_outside_party() {
    // (what gives a file away, where it may appear)
    let rules: &[(&str, &str)] = &[
        ("sled::", "store/"),
        ("tokio_tungstenite::", "platform/"),
        ("/api/v1/", "platform/"),
        ("/api/v2/", "platform/"),
        ("/xrpc/", "platform/bluesky/"),
        ("/chat/completions", "llm.rs"),
    ];
    let mut offences = Vec::new();
    for (rel, code) in src_files() {
        // Code only: a comment may name anything.
        let code: String = code
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for (needle, owner) in rules {
            if code.contains(needle) && !rel.starts_with(owner) {
                offences.push(format!("{rel} names `{needle}` (only {owner} may)"));
            }
        }
    }
    assert!(offences.is_empty(), "{offences:#?}");
}

/// The code map names every source file by its path, so a newcomer finds any room in one hop,
/// and no file grows past what one sitting reads (600 lines).
#[test]
fn every_file_is_on_the_code_map_and_none_is_long() {
    let map = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md")).unwrap();
    let mut missing = Vec::new();
    let mut long = Vec::new();
    for (rel, _) in src_files() {
        let path = format!("src/{rel}");
        if !map.contains(&path) {
            missing.push(path.clone());
        }
        let whole = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(&path)).unwrap();
        let lines = whole.lines().count();
        if lines > 600 {
            long.push(format!("{path} ({lines} lines)"));
        }
    }
    assert!(missing.is_empty(), "not on ARCHITECTURE.md's code map: {missing:?}");
    assert!(long.is_empty(), "over 600 lines (split by responsibility): {long:?}");
}

/// Words that explain themselves: no ticket numbers in the code, the README, the architecture or
/// the book (a reader outside the team cannot open them).
#[test]
fn no_ticket_numbers_in_code_or_documents() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut texts: Vec<(String, String)> = src_files()
        .into_iter()
        .map(|(r, _)| {
            let path = format!("src/{r}");
            let whole = std::fs::read_to_string(root.join(&path)).unwrap();
            (path, whole)
        })
        .collect();
    for doc in ["README.md", "ARCHITECTURE.md"] {
        texts.push((doc.into(), std::fs::read_to_string(root.join(doc)).unwrap()));
    }
    let mut book = Vec::new();
    markdown_files(&root.join("docs/src"), &mut book);
    for f in book {
        let text = std::fs::read_to_string(&f).unwrap();
        texts.push((f.display().to_string(), text));
    }
    let mut found = Vec::new();
    for (name, text) in &texts {
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            let mut rest = lower.as_str();
            while let Some(i) = rest.find("issue") {
                let after = rest[i + 5..].trim_start_matches('s').trim_start();
                if after.starts_with(|c: char| c.is_ascii_digit()) {
                    found.push(format!("{name}:{}: {}", n + 1, line.trim()));
                    break;
                }
                rest = &rest[i + 5..];
            }
        }
    }
    assert!(
        found.is_empty(),
        "ticket numbers (say what the code does instead): {found:#?}"
    );
}

fn markdown_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            markdown_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// The shipped alerting rules (`systemd/alerts.yml`, `/usr/share/musebot/alerts.yml`) name only
/// metrics the daemon exports: each `musebot_…` name, less its `_total`/`_bucket` suffix, is
/// registered in `src/metrics.rs`; every rule has an expression, and each label the rules
/// match on errors (`kind`) is a kind the code counts.
#[test]
fn the_shipped_alerts_name_metrics_the_daemon_exports() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let rules = std::fs::read_to_string(root.join("systemd/alerts.yml")).unwrap();
    let metrics = std::fs::read_to_string(root.join("src/metrics.rs")).unwrap();
    let mut unknown = Vec::new();
    for (at, _) in rules.match_indices("musebot_") {
        let name: String = rules[at..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '_')
            .collect();
        let base = name
            .trim_start_matches("musebot_")
            .trim_end_matches("_total")
            .trim_end_matches("_bucket");
        if !metrics.contains(&format!("\"{base}\"")) {
            unknown.push(name);
        }
    }
    assert!(
        unknown.is_empty(),
        "alerts.yml names metrics the daemon does not export: {unknown:?}"
    );
    let alerts = rules.matches("- alert:").count();
    assert!(alerts >= 8, "{alerts} rules");
    assert_eq!(rules.matches("expr:").count(), alerts, "every rule has one expression");
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let src: String = files.iter().map(|f| std::fs::read_to_string(f).unwrap()).collect();
    for kind in ["store", "llm", "outage"] {
        assert!(
            src.contains(&format!("\"{kind}\"")),
            "errors kind {kind} is never counted"
        );
    }
}

/// The layer of each room (a top-level file or folder of `src/`), lowest first, as
/// ARCHITECTURE.md's code map states them.
const LAYERS: &[(&str, u8)] = &[
    ("model", 1),
    ("secret", 2),
    ("pins", 2),
    ("retry", 2),
    ("metrics", 2),
    ("prompts", 2),
    ("lang", 2),
    ("words", 2),
    ("extract", 2),
    ("image", 2),
    ("fetch", 2),
    ("credibility", 2),
    ("relevance", 2),
    ("stance", 2),
    ("body", 2),
    ("store", 3),
    ("index", 3),
    ("claims", 3),
    ("search", 3),
    ("config", 4),
    ("llm", 5),
    ("compose", 5),
    ("telemetry", 5),
    ("moderation", 6),
    ("intake", 7),
    ("pipeline", 8),
    ("platform", 8),
    ("webhook", 8),
    ("worker", 9),
    ("watch", 9),
    ("living", 9),
    ("labeler", 9),
    ("check", 9),
    ("eval", 9),
    ("models", 9),
    ("daemon", 9),
    ("http", 9),
    ("admin", 9),
    ("inspect", 9),
    ("cli", 9),
    ("cli_state", 9),
    ("lib", 10),
    ("main", 10),
    ("proptests", 10),
];

/// A file imports only from its own room, its own layer or below; every room has a layer.
/// (Test files — `*tests*.rs` — may reach any room.)
#[test]
fn every_import_goes_to_the_same_layer_or_below() {
    let room = |rel: &str| rel.split('/').next().unwrap().trim_end_matches(".rs").to_string();
    let layer = |r: &str| LAYERS.iter().find(|(n, _)| *n == r).map(|(_, l)| *l);
    let mut offences = Vec::new();
    for (file, targets) in import_graph() {
        if file.rsplit('/').next().is_some_and(|name| name.contains("tests")) {
            continue;
        }
        let (from, Some(up)) = (room(&file), layer(&room(&file))) else {
            offences.push(format!("{file}: its room has no layer"));
            continue;
        };
        for t in targets {
            let to = room(&t);
            match layer(&to) {
                Some(l) if to == from || l <= up => {}
                Some(l) => offences.push(format!("{file} (layer {up}) imports {t} (layer {l})")),
                None => offences.push(format!("{t}: its room has no layer")),
            }
        }
    }
    offences.sort();
    offences.dedup();
    assert!(offences.is_empty(), "{offences:#?}");
}
