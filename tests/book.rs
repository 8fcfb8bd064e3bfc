//! The operator's book (`docs/src`, built with mdBook) stays true to the code:
//! - the configuration reference documents every key of the config tree, no key the config no
//!   longer has, and each key's default as the code has it;
//! - the troubleshooting chapter has an entry for every key a configuration error can name;
//! - every relative link in the book and the README reaches a file, and every `#anchor` a heading
//!   of that file; every chapter SUMMARY.md lists exists.
//!
//! The reference's format, one entry per key:
//!
//! ```text
//! ### `section.key`
//!
//! Type: integer · Default: `30`
//! ```
//!
//! The default is TOML, as in bot-config.toml. A default too long for one line is written
//! `Default: below`, and its value is the entry's first ```` ```toml ```` block. Keys inside the
//! entries of an array of tables are written `section.key[].field`; those of a table keyed by
//! name (`[budget.prices."MODEL"]`) `section.key.<model>.field`. Their `Default:` is prose (an
//! entry has no default of its own) and is not compared.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use musebot::config::Config;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

// ---------------------------------------------------------------------------------------------
// The config's keys.

/// One entry of each array of tables and of each table keyed by name, so that the keys of their
/// entries are listed too (their defaults are empty).
const SAMPLE: &str = r#"
[search]
backends = [{ kind = "google", cx = "x", api_key_env = "X" }]
[credibility]
files = [{ path = "x", format = "tier_list", tier = "high" }]
fact_checkers = [{ domain = "x.example", path = "/", name = "X" }]
[budget.prices."<model>"]
prompt = 0.0
completion = 0.0
[[accounts]]
name = "x"
"#;

fn as_value(config: &Config) -> toml::Value {
    toml::Value::try_from(config).expect("the config serialises to TOML")
}

/// Every key path below `value`: a scalar or an array is one key (with its value); an array of
/// tables also lists its tables' keys once, as `key[].field`; an empty table is one key.
fn walk(value: &toml::Value, path: &str, out: &mut BTreeMap<String, toml::Value>) {
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match value {
        toml::Value::Table(t) if t.is_empty() && !path.is_empty() => {
            out.insert(path.to_string(), value.clone());
        }
        toml::Value::Table(t) => {
            for (k, v) in t {
                walk(v, &join(k), out);
            }
        }
        toml::Value::Array(items) => {
            out.insert(path.to_string(), value.clone());
            for item in items.iter().filter(|i| i.is_table()) {
                walk(item, &format!("{path}[]"), out);
            }
        }
        _ => {
            out.insert(path.to_string(), value.clone());
        }
    }
}

/// Every key of the config, with its default (`None`: a key inside an entry, with no default of
/// its own).
fn config_keys() -> BTreeMap<String, Option<toml::Value>> {
    let mut defaults = BTreeMap::new();
    walk(&as_value(&Config::default()), "", &mut defaults);
    let mut entries = BTreeMap::new();
    let sample = Config::parse(SAMPLE).unwrap_or_else(|e| panic!("the sample entries parse: {e}"));
    walk(&as_value(&sample), "", &mut entries);
    let mut keys: BTreeMap<String, Option<toml::Value>> = BTreeMap::new();
    for (k, v) in &defaults {
        let entry = k.contains("[]");
        keys.insert(k.clone(), (!entry).then(|| v.clone()));
    }
    for k in entries.keys() {
        keys.entry(k.clone()).or_insert(None);
    }
    keys
}

fn lookup<'a>(value: &'a toml::Value, path: &str) -> Option<&'a toml::Value> {
    path.split('.').try_fold(value, |v, k| v.get(k))
}

/// The default as bot-config.toml writes it (readable floats), else as the code serialises it.
fn shown_default(key: &str, value: &toml::Value) -> String {
    let shipped: toml::Value = toml::from_str(&read("bot-config.toml")).expect("bot-config.toml parses");
    match lookup(&shipped, key) {
        Some(v) => v.to_string(),
        None => value.to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// Markdown.

/// The lines of a Markdown file outside fenced code blocks, with their line numbers (1-based).
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        match fence {
            Some(f) if t.starts_with(f) => fence = None,
            Some(_) => {}
            None if t.starts_with("```") => fence = Some("```"),
            None if t.starts_with("~~~") => fence = Some("~~~"),
            None => out.push((i + 1, line)),
        }
    }
    out
}

/// A heading's text (`## Text` → `Text`), or None.
fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    (1..=6)
        .contains(&level)
        .then(|| line[level..].strip_prefix(' '))
        .flatten()
        .map(|t| (level, t.trim().trim_end_matches('#').trim()))
}

/// The key of a heading that is one inline code span: "`daemon.keep_days`".
fn code_heading(text: &str) -> Option<&str> {
    let inner = text.strip_prefix('`')?.strip_suffix('`')?;
    (!inner.contains('`')).then_some(inner)
}

/// A heading's anchor, by mdBook's rule: the rendered text (Markdown links keep their text, tags
/// and entities dropped), lower-cased, white space to '-', every other character but
/// alphanumerics, '-' and '_' dropped; a repeated anchor gets "-1", "-2", …
fn anchor_of(text: &str) -> String {
    let mut plain = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("](").map(|c| open + c) else {
            break;
        };
        let Some(end) = rest[close..].find(')').map(|e| close + e) else {
            break;
        };
        plain.push_str(&rest[..open]);
        plain.push_str(&rest[open + 1..close]);
        rest = &rest[end + 1..];
    }
    plain.push_str(rest);
    let mut no_tags = String::new();
    let mut in_tag = false;
    for c in plain.chars() {
        match c {
            '<' if !in_tag => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => no_tags.push(c),
            _ => {}
        }
    }
    // `&` renders as "&amp;", which mdBook drops whole.
    no_tags
        .trim()
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c.to_ascii_lowercase())
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// Every anchor of a Markdown file: its headings' (mdBook's rule) and explicit `id="…"` /
/// `name="…"` of its HTML.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        if let Some((_, h)) = heading(line) {
            let base = anchor_of(h);
            let n = seen.entry(base.clone()).or_insert(0);
            out.insert(if *n == 0 { base.clone() } else { format!("{base}-{n}") });
            *n += 1;
        }
        for attr in ["id=\"", "name=\""] {
            let mut rest = line;
            while let Some(i) = rest.find(attr) {
                rest = &rest[i + attr.len()..];
                if let Some(end) = rest.find('"') {
                    out.insert(rest[..end].to_string());
                }
            }
        }
    }
    out
}

/// The targets of a Markdown line's inline links `[text](target)` and images, and of a
/// reference definition `[name]: target`; inline code spans are skipped.
fn link_targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let t = line.trim_start();
    if t.starts_with('[') {
        if let Some(i) = t.find("]: ") {
            if !t[..i].contains("](") {
                out.push(t[i + 3..].split_whitespace().next().unwrap_or("").to_string());
                return out;
            }
        }
    }
    // Drop inline code spans.
    let mut prose = String::new();
    for (i, part) in line.split('`').enumerate() {
        if i % 2 == 0 {
            prose.push_str(part);
        }
    }
    let mut rest = prose.as_str();
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        let target = if let Some(inner) = after.strip_prefix('<') {
            inner.split('>').next().unwrap_or("")
        } else {
            // Balanced parentheses (URLs may hold some); a title after a space is dropped.
            let mut depth = 0;
            let end = after
                .char_indices()
                .find(|&(_, c)| match c {
                    '(' => {
                        depth += 1;
                        false
                    }
                    ')' if depth == 0 => true,
                    ')' => {
                        depth -= 1;
                        false
                    }
                    _ => false,
                })
                .map_or(after.len(), |(j, _)| j);
            after[..end].split_whitespace().next().unwrap_or("")
        };
        out.push(target.to_string());
        rest = after;
    }
    out
}

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            markdown_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "md") {
            out.push(p);
        }
    }
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

// ---------------------------------------------------------------------------------------------
// The configuration reference.

struct Documented {
    line: usize,
    /// The `Default:` text: TOML, or None when the entry has no parseable form.
    default: Result<String, String>,
}

/// The reference's entries: key → its line and its documented default.
fn reference(text: &str) -> BTreeMap<String, Vec<Documented>> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: BTreeMap<String, Vec<Documented>> = BTreeMap::new();
    let prose = prose_lines(text);
    let headings: Vec<(usize, &str)> = prose
        .iter()
        .filter(|(_, l)| heading(l).is_some())
        .map(|&(n, l)| (n, l))
        .collect();
    for (i, &(n, line)) in headings.iter().enumerate() {
        let Some((_, h)) = heading(line) else { continue };
        let Some(key) = code_heading(h).filter(|k| !k.starts_with('[')) else {
            continue;
        };
        let end = headings.get(i + 1).map_or(lines.len(), |&(m, _)| m - 1);
        let body = &lines[n..end];
        let default = entry_default(body);
        out.entry(key.to_string())
            .or_default()
            .push(Documented { line: n, default });
    }
    out
}

/// The `Default:` of one entry's lines: the inline code after it, or the first ```toml block
/// when it says `Default: below`.
fn entry_default(body: &[&str]) -> Result<String, String> {
    let Some(type_line) = body.iter().find(|l| l.starts_with("Type:")) else {
        return Err("no `Type: … · Default: …` line under the heading".into());
    };
    let Some(d) = type_line.find("Default:") else {
        return Err(format!("its Type line `{type_line}` has no `Default:`"));
    };
    let d = type_line[d + "Default:".len()..].trim();
    if let Some(code) = d.strip_prefix('`') {
        return code
            .split('`')
            .next()
            .map(str::to_string)
            .ok_or_else(|| "its default's inline code is not closed".to_string());
    }
    if d.starts_with("below") {
        let start = body
            .iter()
            .position(|l| l.trim_start().starts_with("```toml"))
            .ok_or("`Default: below` but no ```toml block follows")?;
        let block: Vec<&str> = body[start + 1..]
            .iter()
            .take_while(|l| !l.trim_start().starts_with("```"))
            .copied()
            .collect();
        return Ok(block.join("\n"));
    }
    Err(format!("its default `{d}` is neither `inline code` nor `below`"))
}

/// The value a documented default gives the key, read through the config's own parser (so
/// `0.2` equals the code's f32, and an entry's omitted fields their defaults).
fn parse_default(key: &str, toml_text: &str) -> Result<toml::Value, String> {
    let (section, name) = key.rsplit_once('.').expect("keys are section.key");
    let doc = format!("[{section}]\n{name} = {toml_text}\n");
    let config = Config::parse(&doc).map_err(|e| e.to_string())?;
    lookup(&as_value(&config), key)
        .cloned()
        .ok_or_else(|| "the key is absent once parsed".to_string())
}

#[test]
fn the_configuration_reference_documents_every_key_and_its_default() {
    let keys = config_keys();
    let path = "docs/src/configuration.md";
    let documented = reference(&read(path));
    let mut problems = Vec::new();
    for (key, default) in &keys {
        let Some(entries) = documented.get(key) else {
            let shown = default.as_ref().map_or("an entry's key".to_string(), |v| {
                format!("default `{}`", shown_default(key, v))
            });
            problems.push(format!(
                "{path} lacks `{key}` ({shown}): add an entry headed ### `{key}`"
            ));
            continue;
        };
        if entries.len() > 1 {
            let at: Vec<_> = entries.iter().map(|e| e.line.to_string()).collect();
            problems.push(format!(
                "{path}: `{key}` is documented {} times (lines {})",
                entries.len(),
                at.join(", ")
            ));
        }
        let e = &entries[0];
        match (&e.default, default) {
            // An entry's key has no default of its own: its `Default:` is prose.
            (Err(why), None) if !why.starts_with("no `Type") => {}
            (Err(why), _) => problems.push(format!("{path}:{}: `{key}`: {why}", e.line)),
            (Ok(_), None) => {}
            (Ok(text), Some(code)) => match parse_default(key, text) {
                Err(why) => problems.push(format!(
                    "{path}:{}: `{key}`: the documented default `{text}` does not parse: {why}",
                    e.line
                )),
                Ok(doc) if &doc != code => problems.push(format!(
                    "{path}:{}: `{key}`: the documented default is `{text}`, the code's is `{}`",
                    e.line,
                    shown_default(key, code)
                )),
                Ok(_) => {}
            },
        }
    }
    for (key, entries) in &documented {
        if !keys.contains_key(key) {
            problems.push(format!(
                "{path}:{}: documents `{key}`, which the config does not have (removed or renamed?)",
                entries[0].line
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "the configuration reference disagrees with the code (Config::default()):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_reference_parser_reads_its_own_format() {
    let text = "# C\n\n## `[daemon]`\n\n### `daemon.keep_days`\n\nType: integer · Default: `30`\n\nDays.\n\n\
                ### `index.feeds`\n\nType: array · Default: below\n\n```toml\n[\n  \"https://a.example/feed\",\n]\n```\n";
    let r = reference(text);
    assert_eq!(r["daemon.keep_days"][0].default.as_deref(), Ok("30"));
    assert_eq!(
        parse_default("index.feeds", r["index.feeds"][0].default.as_deref().unwrap()).unwrap(),
        toml::Value::Array(vec![toml::Value::String("https://a.example/feed".into())])
    );
    // A float is compared as the code holds it (f32).
    assert_eq!(
        parse_default("llm.temperature", "0.2").unwrap(),
        lookup(&as_value(&Config::default()), "llm.temperature")
            .unwrap()
            .clone()
    );
    let keys = config_keys();
    for k in [
        "daemon.keep_days",
        "search.backends",
        "search.backends[].cx",
        "budget.prices",
        "budget.prices.<model>.prompt",
        "bluesky.labeler.enabled",
        "moderation.tag_policy.max_age_hours",
    ] {
        assert!(keys.contains_key(k), "{k} not listed");
    }
    assert!(
        !keys.contains_key("images.local_files"),
        "a key no config file can set is listed"
    );
}

// ---------------------------------------------------------------------------------------------
// Troubleshooting.

/// A Rust string literal starting at `s` (after its opening quote): its text, escapes kept.
fn literal(s: &str) -> &str {
    let mut prev = ' ';
    for (i, c) in s.char_indices() {
        if c == '"' && prev != '\\' {
            return &s[..i];
        }
        prev = c;
    }
    s
}

/// `search.backends[{i}].base_url` and `search.backends[0].base_url` →
/// `search.backends[].base_url`; `budget.prices.{model}` → `budget.prices.<model>`.
fn key_shape(raw: &str) -> String {
    let mut out = String::new();
    let mut rest = raw;
    while let Some(i) = rest.find(['{', '[']) {
        let close = if rest[i..].starts_with('{') { '}' } else { ']' };
        out.push_str(&rest[..i]);
        let end = rest[i..].find(close).map_or(rest.len(), |e| i + e + 1);
        let inner = &rest[i + 1..end.saturating_sub(1)];
        if close == ']' {
            out.push_str("[]");
        } else if !out.ends_with('[') {
            out.push_str(&format!("<{inner}>"));
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out.replace("[[]]", "[]")
}

fn is_key_path(s: &str, sections: &BTreeSet<String>) -> bool {
    let first = s.split(['.', '[']).next().unwrap_or("");
    s.contains('.')
        && sections.contains(first)
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._[]{}<>".contains(c))
}

/// Every key a configuration error in `code` can name:
/// - the first argument of `p.bad(` and the key of `check_url(p, ` (a literal or a `format!`);
/// - a key literal that opens a tuple `("section.key", …)` (the loops that hand `p.bad` its key);
/// - the prefix of `secret::resolve("x.y", …)` (its errors name `x.y_env` and `x.y_file`);
/// - a message that starts with its key: `"section.key: …"` (runtime errors: unreadable paths,
///   models that do not load, a token too short).
fn error_keys(code: &str, sections: &BTreeSet<String>) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    let mut add = |raw: &str| {
        // `relevance.{key}: …` names one of several keys, each documented on its own.
        if is_key_path(raw, sections) && !raw.contains("{key}") {
            keys.insert(key_shape(raw));
            true
        } else {
            false
        }
    };
    let skip = |s: &str| {
        s.trim_start()
            .trim_start_matches('&')
            .trim_start_matches("format!(")
            .trim_start()
            .to_string()
    };
    for (i, _) in code.match_indices("p.bad(") {
        let arg = skip(&code[i + "p.bad(".len()..]);
        if let Some(s) = arg.strip_prefix('"') {
            add(literal(s));
        }
    }
    for (i, _) in code.match_indices("check_url(") {
        let arg = code[i + "check_url(".len()..].trim_start();
        if let Some(arg) = arg.strip_prefix("p,") {
            if let Some(s) = skip(arg).strip_prefix('"') {
                add(literal(s));
            }
        }
    }
    for (i, _) in code.match_indices("secret::resolve(") {
        let arg = skip(&code[i + "secret::resolve(".len()..]);
        if let Some(s) = arg.strip_prefix('"') {
            let prefix = literal(s);
            if is_key_path(prefix, sections) {
                add(&format!("{prefix}_env"));
                add(&format!("{prefix}_file"));
            }
        }
    }
    for (i, _) in code.match_indices('(') {
        if code[..i].ends_with("resolve") {
            continue;
        }
        if let Some(s) = code[i + 1..].trim_start().strip_prefix('"') {
            let lit = literal(s);
            if code[i + 1..].trim_start()[lit.len() + 2..]
                .trim_start()
                .starts_with(',')
            {
                add(lit);
            }
        }
    }
    for (i, _) in code.match_indices('"') {
        let s = &code[i + 1..];
        if let Some(colon) = s.find(": ") {
            let head = &s[..colon];
            if !head.contains(' ') && !head.contains('"') {
                add(head);
            }
        }
    }
    keys
}

/// The keys troubleshooting.md has an entry for: each "### `key`" heading (several keys may share
/// one: "### `a`, `b`"); `[0]` in a heading stands for any position.
fn troubleshooting_keys(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        if let Some((_, h)) = heading(line) {
            for (i, part) in h.split('`').enumerate() {
                if i % 2 == 1 {
                    out.insert(key_shape(part));
                }
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn every_configuration_error_has_a_troubleshooting_entry() {
    let Some(toml::Value::Table(top)) = Some(as_value(&Config::default())) else {
        unreachable!()
    };
    let sections: BTreeSet<String> = top.keys().cloned().collect();
    // The validation functions, named here so that moving them fails loudly; and every other
    // source file, for the runtime errors that name their key.
    let validators = [
        ("src/config/validate.rs", include_str!("../src/config/validate.rs")),
        (
            "src/config/validate_ops.rs",
            include_str!("../src/config/validate_ops.rs"),
        ),
        (
            "src/config/validate_platforms.rs",
            include_str!("../src/config/validate_platforms.rs"),
        ),
    ];
    let config = config_keys();
    // A key of the config, a secret's prefix (`llm.api_key` for `llm.api_key_env`/`_file`), or
    // one entry of a key (`index.feeds[]`, `budget.prices.<model>`); not, say, a domain name that
    // starts like a section ("factcheck.org").
    let is_config_key = |k: &str| {
        config.contains_key(k)
            || config.contains_key(&format!("{k}_env"))
            || config.keys().any(|c| {
                k.strip_prefix(c.as_str())
                    .is_some_and(|rest| rest.starts_with("[]") || rest.starts_with(".<"))
            })
    };
    let mut keys = BTreeSet::new();
    let mut unknown = Vec::new();
    for (name, code) in validators {
        let found = error_keys(code, &sections);
        assert!(
            !found.is_empty(),
            "{name}: no p.bad key found: has the pattern changed?"
        );
        unknown.extend(
            found
                .iter()
                .filter(|k| !is_config_key(k))
                .map(|k| format!("  {name}: {k}")),
        );
        keys.extend(found);
    }
    assert!(
        unknown.is_empty(),
        "configuration errors name keys the config does not have:\n{}",
        unknown.join("\n")
    );
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    for f in &files {
        let found = error_keys(&std::fs::read_to_string(f).unwrap(), &sections);
        keys.extend(found.into_iter().filter(|k| is_config_key(k)));
    }
    let path = "docs/src/troubleshooting.md";
    let documented = troubleshooting_keys(&read(path));
    let missing: Vec<_> = keys.iter().filter(|k| !documented.contains(*k)).collect();
    assert!(
        missing.is_empty(),
        "{path} has no entry (a \"### `key`\" heading) for these keys a configuration error names:\n{}\n\
         Add each with the error's text, what it means and the fix the code prints.",
        missing.iter().map(|k| format!("  {k}")).collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn the_error_key_scanner_finds_each_form() {
    let sections: BTreeSet<String> = ["a", "budget", "search", "index"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let code = r#"
        p.bad("a.one", "is 0".into(), "fix");
        p.bad(
            &format!("search.backends[{i}].cx"),
            "is empty".into(), "fix");
        check_url(p, "a.url", &x, "fix");
        for (key, value) in [("a.two", 1), ("a.three", 2)] { p.bad(key, format!("is {value}"), "fix"); }
        p.bad(&format!("budget.prices.{model}"), "bad".into(), "fix");
        secret::resolve("a.token", &e, &f, true);
        #[error("index.path: cannot open — fix")]
        let s = "not a.key: at all";
    "#;
    let keys: Vec<_> = error_keys(code, &sections).into_iter().collect();
    assert_eq!(
        keys,
        [
            "a.one",
            "a.three",
            "a.token_env",
            "a.token_file",
            "a.two",
            "a.url",
            "budget.prices.<model>",
            "index.path",
            "search.backends[].cx"
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Links.

#[test]
fn every_chapter_in_summary_exists() {
    let summary = read("docs/src/SUMMARY.md");
    let mut missing = Vec::new();
    for (n, line) in prose_lines(&summary) {
        for target in link_targets(line) {
            if !target.is_empty() && !root().join("docs/src").join(&target).is_file() {
                missing.push(format!("docs/src/SUMMARY.md:{n}: chapter `{target}` does not exist"));
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn every_relative_link_in_the_book_and_readme_resolves() {
    let mut files = Vec::new();
    markdown_files(&root().join("docs/src"), &mut files);
    files.push(root().join("README.md"));
    files.sort();
    let mut cache: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let dir = file.parent().unwrap();
        for (n, line) in prose_lines(&text) {
            for target in link_targets(line) {
                if target.is_empty()
                    || target.contains("://")
                    || target.starts_with("mailto:")
                    || target.starts_with('/')
                {
                    continue;
                }
                let (file_part, anchor) = match target.split_once('#') {
                    Some((f, a)) => (f, Some(a)),
                    None => (target.as_str(), None),
                };
                let dest = if file_part.is_empty() {
                    file.clone()
                } else {
                    dir.join(file_part)
                };
                let at = format!("{}:{n}", rel(file));
                if !dest.exists() {
                    broken.push(format!("{at}: `{target}`: {} does not exist", rel(&dest)));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                if dest.extension().is_none_or(|x| x != "md") {
                    continue;
                }
                let known = cache
                    .entry(dest.clone())
                    .or_insert_with(|| anchors(&std::fs::read_to_string(&dest).unwrap_or_default()));
                if !known.contains(anchor) {
                    broken.push(format!(
                        "{at}: `{target}`: {} has no heading with the anchor #{anchor}",
                        rel(&dest)
                    ));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn anchors_follow_mdbooks_rule() {
    assert_eq!(anchor_of("`daemon.keep_days`"), "daemonkeep_days");
    assert_eq!(anchor_of("Labels on Bluesky"), "labels-on-bluesky");
    assert_eq!(anchor_of("Deploy → Labeler"), "deploy--labeler");
    assert_eq!(anchor_of("The [index](index.md) & its feeds"), "the-index--its-feeds");
    let a = anchors("# A\n## A\n```\n# not a heading\n```\n<a id=\"here\"></a>\n");
    assert_eq!(a.into_iter().collect::<Vec<_>>(), ["a", "a-1", "here"]);
    assert_eq!(
        link_targets("see [x](a.md#b), `[no](c.md)` and ![i](img/p.png \"t\")"),
        ["a.md#b", "img/p.png"]
    );
    assert_eq!(link_targets("[ref]: other.md#top"), ["other.md#top"]);
}

/// The command-line reference (`cli.md`) has a `### \`musebot …\`` entry for every command
/// the parser knows — a leaf, or a command that runs by itself (`eval` beside `eval compare`)
/// — and none for a command it does not; each entry names each of the command's long flags.
#[test]
fn the_command_line_reference_matches_the_parser() {
    use clap::CommandFactory;
    let page = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/cli.md")).unwrap();
    let mut commands = Vec::new();
    fn walk(cmd: &clap::Command, path: String, out: &mut Vec<(String, Vec<String>)>) {
        let flags: Vec<String> = cmd
            .get_arguments()
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .filter(|l| l != "--help" && l != "--version")
            .collect();
        let runs_alone = !cmd.is_subcommand_required_set() && cmd.get_subcommands().next().is_some();
        if cmd.get_subcommands().next().is_none() || runs_alone {
            out.push((path.clone(), flags));
        }
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            walk(sub, format!("{path} {}", sub.get_name()), out);
        }
    }
    let root = musebot::cli::Cli::command();
    for sub in root.get_subcommands().filter(|s| s.get_name() != "help") {
        walk(sub, format!("musebot {}", sub.get_name()), &mut commands);
    }
    assert!(commands.len() >= 16, "the parser's commands: {commands:?}");
    assert!(
        commands
            .iter()
            .any(|(p, f)| p == "musebot eval" && f.contains(&"--out".to_string())),
        "{commands:?}"
    );
    let mut missing = Vec::new();
    for (path, flags) in &commands {
        let heading = format!("### `{path}`\n");
        let Some(at) = page.find(&heading) else {
            missing.push(path.clone());
            continue;
        };
        let entry = &page[at + heading.len()..];
        let entry = &entry[..entry
            .find("\n### ")
            .or_else(|| entry.find("\n## "))
            .unwrap_or(entry.len())];
        for flag in flags {
            if !entry.contains(flag.as_str()) {
                missing.push(format!("{path} {flag}"));
            }
        }
    }
    assert!(missing.is_empty(), "cli.md lacks: {missing:?}");
    let known: Vec<&str> = commands.iter().map(|(p, _)| p.as_str()).collect();
    let stale: Vec<&str> = page
        .lines()
        .filter_map(|l| l.strip_prefix("### `")?.strip_suffix('`'))
        .filter(|p| p.starts_with("musebot") && !known.contains(p))
        .collect();
    assert!(
        stale.is_empty(),
        "cli.md documents commands the parser does not know: {stale:?}"
    );
}

/// Runtime troubleshooting names every message the daemon logs at WARN or ERROR: each
/// `tracing::warn!`/`tracing::error!` message in `src/` (outside tests) is quoted in
/// `troubleshooting.md`, so an operator who searches the page for a log line finds it.
#[test]
fn every_warning_the_daemon_logs_is_in_troubleshooting() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/src/troubleshooting.md")).unwrap();
    let mut files = Vec::new();
    let mut stack = vec![root.join("src")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") && !p.to_string_lossy().contains("tests") {
                files.push(p);
            }
        }
    }
    let mut missing = BTreeSet::new();
    let mut seen = 0;
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for mac in ["tracing::warn!(", "tracing::error!("] {
            for (at, _) in code.match_indices(mac) {
                // The call's text up to its closing parenthesis (messages hold none).
                let mut depth = 0;
                let call: String = code[at + mac.len() - 1..]
                    .chars()
                    .take_while(|c| {
                        match c {
                            '(' => depth += 1,
                            ')' => depth -= 1,
                            _ => {}
                        }
                        depth > 0
                    })
                    .collect();
                // The message is the call's last string literal.
                let Some(end) = call.rfind('"') else { continue };
                let Some(start) = call[..end].rfind('"') else { continue };
                let message = &call[start + 1..end];
                if message.is_empty() || message.contains('{') {
                    continue;
                }
                seen += 1;
                if !page.contains(message) {
                    missing.insert(format!("{}: {message}", f.strip_prefix(root).unwrap().display()));
                }
            }
        }
    }
    assert!(seen > 50, "{seen} messages found");
    assert!(
        missing.is_empty(),
        "not in troubleshooting.md:\n{}",
        missing.into_iter().collect::<Vec<_>>().join("\n")
    );
}
