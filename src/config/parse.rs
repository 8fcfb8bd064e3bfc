//! A TOML error as `key: problem — fix`: the key on the offending line, and inside an
//! `[[accounts]]` entry the entry's name (`accounts.<name>.<section>.<key>`).

use super::ConfigProblem;

/// A problem inside an `[[accounts]]` entry, named as the book promises:
/// `accounts.<name>.<section>.<key>`. The entry is the one the error's span falls in; an
/// unknown key or section is looked up by its name inside that entry (the span of a nested
/// table's error can point at another of its lines).
fn in_accounts_entry(text: &str, err: &toml::de::Error, message: &str) -> Option<(usize, String)> {
    let at = err.span()?.start.min(text.len());
    // Entries: (start offset, end offset) of each `[[accounts]]` block.
    let mut starts: Vec<usize> = Vec::new();
    let mut offset = 0;
    let mut blocks: Vec<(usize, usize)> = Vec::new();
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if t.starts_with('[') {
            let header = t.trim_start_matches('[').trim_end_matches(']').trim();
            let in_accounts = header == "accounts" || header.starts_with("accounts.");
            if let Some(s) = starts.last().copied().filter(|_| t.starts_with("[[") || !in_accounts) {
                blocks.push((s, offset));
                starts.clear();
            }
            if t.starts_with("[[") && header == "accounts" {
                starts.push(offset);
            }
        }
        offset += line.len();
    }
    if let Some(s) = starts.last() {
        blocks.push((*s, text.len()));
    }
    let (start, end) = blocks.into_iter().find(|(s, e)| (*s..*e).contains(&at))?;
    let entry = &text[start..end];
    let name = entry
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == "name").then(|| v.trim().trim_matches('"').to_string())
        })
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "?".into());
    // The offending line: the unknown name inside the entry, else the span's line.
    let unknown = message
        .split("unknown field `")
        .nth(1)
        .and_then(|r| r.split('`').next())
        .map(str::to_string);
    let mut section = String::new();
    let mut found: Option<(usize, String)> = None;
    let mut span_line: Option<(usize, String)> = None;
    let mut here = start;
    for line in entry.split_inclusive('\n') {
        let t = line.trim();
        let line_no = text[..here].matches('\n').count() + 1;
        if t.starts_with('[') {
            section = t.trim_start_matches('[').trim_end_matches(']').trim().to_string();
            let last = section.rsplit('.').next().unwrap_or("");
            if unknown.as_deref() == Some(last) && found.is_none() {
                found = Some((line_no, section.clone()));
            }
        } else if let Some((k, _)) = t.split_once('=') {
            let k = k.trim().trim_matches('"');
            let full = if section.is_empty() || section == "accounts" {
                format!("accounts.{k}")
            } else {
                format!("{section}.{k}")
            };
            if unknown.as_deref() == Some(k) && found.is_none() {
                found = Some((line_no, full.clone()));
            }
            if (here..here + line.len()).contains(&at) {
                span_line = Some((line_no, full));
            }
        }
        here += line.len();
    }
    let (line_no, key) = found.or(span_line)?;
    let rest = key.strip_prefix("accounts.").unwrap_or(&key);
    Some((line_no, format!("accounts.{name}.{rest}")))
}

/// Turns a TOML error into `key: problem — fix`, naming the key on the offending line.
pub(super) fn problem(text: &str, err: &toml::de::Error) -> ConfigProblem {
    let message = err.message().to_string();
    let (line_no, key) = match err.span() {
        Some(span) => {
            let line_start = text[..span.start.min(text.len())].rfind('\n').map_or(0, |i| i + 1);
            let line_no = text[..line_start].matches('\n').count() + 1;
            let line = text[line_start..].lines().next().unwrap_or("");
            let section = text[..line_start]
                .lines()
                .rev()
                .find_map(|l| {
                    let l = l.trim();
                    (l.starts_with('[') && l.ends_with(']')).then(|| l.trim_matches(['[', ']']).trim().to_string())
                })
                .unwrap_or_default();
            let key = line
                .split('=')
                .next()
                .unwrap_or("")
                .trim()
                .trim_matches('"')
                .to_string();
            let full = match (section.is_empty(), key.is_empty() || key.starts_with('[')) {
                (_, true) => {
                    if section.is_empty() {
                        "config".to_string()
                    } else {
                        section
                    }
                }
                (true, false) => key,
                (false, false) => format!("{section}.{key}"),
            };
            (line_no, full)
        }
        None => (0, "config".to_string()),
    };
    let (line_no, key) = in_accounts_entry(text, err, &message).unwrap_or((line_no, key));
    let fix = if message.contains("unknown field") {
        "remove or rename it; bot-config.toml lists every key with its default".to_string()
    } else if message.contains("unknown variant") {
        "use one of the values the message lists".to_string()
    } else {
        "fix the value's type or syntax; bot-config.toml shows the expected form".to_string()
    };
    ConfigProblem {
        key,
        problem: format!("{} (line {line_no})", message.trim()),
        fix,
    }
}
