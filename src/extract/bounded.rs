//! Untrusted HTML within a budget. Any page within the fetch caps can reach the parser, and
//! html5ever and rs-trafilatura recurse over the DOM: 20,000 nested tables overflow a thread's
//! stack (an abort, not a panic: the whole daemon would die), and 50,000 nested `<div>`s keep
//! the extractor busy for minutes. So a page is first scanned for how deep its elements nest
//! ([`nesting_depth`], a linear pass over the bytes; real news pages nest ≤ 94 deep), dropped
//! past [`MAX_NESTING`], and otherwise extracted on a thread of its own with a large stack
//! ([`EXTRACT_STACK`]) and a time budget; a panic or an overrun costs that page only.

use std::time::Duration;

use super::{extract, Page};

/// Deepest element nesting read (counted without void elements and those whose end tag is
/// optional, so a DOM may be up to ~4× deeper: `table > tbody > tr > td`). The 91 real news
/// pages of the extraction benchmark: ≤ 94 (≤ 34 but one, whose scripts hold HTML text).
pub const MAX_NESTING: usize = 512;
/// Stack of an extraction thread: enough for a DOM of 4 × [`MAX_NESTING`] levels with room.
pub const EXTRACT_STACK: usize = 64 << 20;
/// Time one page may take to extract before it is dropped.
pub const EXTRACT_BUDGET: Duration = Duration::from_secs(10);

/// Why a page could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtractError {
    #[error("elements nest more than {MAX_NESTING} deep")]
    TooDeep,
    #[error("the extractor failed: {0}")]
    Panicked(String),
    #[error("extraction took longer than {} s", .0.as_secs())]
    TimedOut(Duration),
    #[error("no thread for the extractor: {0}")]
    NoThread(String),
}

/// Elements with no content (never closed).
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr",
    "keygen", "command", "basefont", "frame", "isindex", "spacer", "image",
];
/// Elements whose end tag may be left out (closed implicitly by the next one): not counted.
const OPTIONAL_END: &[&str] = &[
    "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup", "thead", "tbody", "tfoot", "colgroup", "rt", "rp",
    "rb", "rtc", "html", "head", "body",
];
/// Elements whose content html5ever reads as text in HTML (not in SVG/MathML).
const RAW_TEXT: &[&str] = &["script", "style"];
/// HTML elements that end foreign (SVG/MathML) content: inside `<svg>`, `<div/>` is an HTML
/// `<div>` whose `/` is ignored, so it opens an element.
const BREAKOUT: &[&str] = &[
    "b",
    "big",
    "blockquote",
    "body",
    "br",
    "center",
    "code",
    "dd",
    "div",
    "dl",
    "dt",
    "em",
    "embed",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "head",
    "hr",
    "i",
    "img",
    "li",
    "listing",
    "menu",
    "meta",
    "nobr",
    "ol",
    "p",
    "pre",
    "ruby",
    "s",
    "small",
    "span",
    "strong",
    "strike",
    "sub",
    "sup",
    "table",
    "tt",
    "u",
    "ul",
    "var",
    "font",
];

/// How deep elements nest, by a linear scan of the tags; stops counting once past `limit`.
/// Errs on the side of counting more than html5ever builds (a false drop, never a missed
/// one): comments end where html5ever ends them (`-->`, `--!>`), script and style text is
/// skipped only in HTML context, and `/>` closes an element only in SVG/MathML (in HTML,
/// html5ever ignores it on non-void elements).
pub fn nesting_depth(html: &str, limit: usize) -> usize {
    let bytes = html.as_bytes();
    let lower = |i: usize| bytes.get(i).map(u8::to_ascii_lowercase);
    let (mut i, mut depth, mut max, mut foreign) = (0usize, 0usize, 0usize, 0usize);
    while let Some(lt) = memchr(b'<', bytes, i) {
        i = lt + 1;
        if bytes[i..].starts_with(b"!--") {
            let body = i + 3;
            i = if bytes[body..].starts_with(b">") || bytes[body..].starts_with(b"->") {
                body + 1
            } else {
                let a = find(bytes, b"-->", body).map_or(bytes.len(), |e| e + 3);
                let b = find(bytes, b"--!>", body).map_or(bytes.len(), |e| e + 4);
                a.min(b)
            };
            continue;
        }
        let closing = lower(i) == Some(b'/');
        let start = if closing { i + 1 } else { i };
        let mut end = start;
        while lower(end).is_some_and(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b':') {
            end += 1;
        }
        if end == start || !lower(start).is_some_and(|c| c.is_ascii_alphabetic()) {
            continue;
        }
        let name = html[start..end].to_ascii_lowercase();
        let gt = memchr(b'>', bytes, end).unwrap_or(bytes.len());
        let self_closing = gt > 0 && bytes.get(gt - 1) == Some(&b'/');
        i = gt.saturating_add(1).min(bytes.len());
        let name = name.as_str();
        if name == "svg" || name == "math" {
            if closing {
                foreign = foreign.saturating_sub(1);
            } else if !self_closing {
                foreign += 1;
            }
        }
        if !closing && foreign == 0 && RAW_TEXT.contains(&name) {
            let close = format!("</{name}");
            i = find_ci(html, &close, i).unwrap_or(bytes.len());
            continue;
        }
        let closes_itself = self_closing && foreign > 0 && !BREAKOUT.contains(&name);
        if VOID.contains(&name) || OPTIONAL_END.contains(&name) || closes_itself {
            continue;
        }
        if closing {
            depth = depth.saturating_sub(1);
        } else {
            depth += 1;
            max = max.max(depth);
            if max > limit {
                return max;
            }
        }
    }
    max
}

fn memchr(needle: u8, hay: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?.iter().position(|&b| b == needle).map(|p| p + from)
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// Case-insensitive `find` of an ASCII needle.
fn find_ci(hay: &str, needle: &str, from: usize) -> Option<usize> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    h.get(from..)?
        .windows(n.len())
        .position(|w| w.eq_ignore_ascii_case(n))
        .map(|p| p + from)
}

/// Extracts a page within the nesting bound, on its own big-stack thread, within `budget`.
/// Blocking: call it from a blocking context (`spawn_blocking`, a CLI).
pub fn extract_bounded(html: String, url: Option<String>, budget: Duration) -> Result<Page, ExtractError> {
    if nesting_depth(&html, MAX_NESTING) > MAX_NESTING {
        return Err(ExtractError::TooDeep);
    }
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("extract".into())
        .stack_size(EXTRACT_STACK)
        .spawn(move || {
            let result = std::panic::catch_unwind(|| extract(&html, url.as_deref()));
            let _ = tx.send(result.map_err(|p| {
                p.downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".into())
            }));
        })
        .map_err(|e| ExtractError::NoThread(e.to_string()))?;
    match rx.recv_timeout(budget) {
        Ok(Ok(page)) => Ok(page),
        Ok(Err(panic)) => Err(ExtractError::Panicked(panic)),
        // The thread finishes on its own; its result is dropped.
        Err(_) => Err(ExtractError::TimedOut(budget)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(inner: &str) -> String {
        let para = "<p>The moon samples were studied by geologists in many labs over decades.</p>".repeat(12);
        format!("<html><head><title>t</title><script>var s = '<div><div><div>';</script></head><body><article>{para}{inner}</article></body></html>")
    }

    #[test]
    fn nesting_counts_what_nests_and_skips_what_does_not() {
        assert_eq!(nesting_depth("<div><div><span>x</span></div></div>", 100), 3);
        // Optional end tags, void elements, comments and script text do not nest.
        assert_eq!(nesting_depth(&"<p>a<li>b<br><img src=x><td>".repeat(1000), 100), 0);
        assert_eq!(nesting_depth("<!-- <div><div> --><script><div><div></script>", 100), 0);
        // What html5ever nests is counted: `/>` on an HTML element, a comment closed by `--!>`,
        // script text inside SVG, an HTML element that breaks out of SVG.
        assert_eq!(nesting_depth(&"<div/>".repeat(1000), 100), 101);
        assert_eq!(nesting_depth(&format!("<!-- --!>{}", "<b>".repeat(500)), 100), 101);
        assert_eq!(nesting_depth(&format!("<svg><style>{}", "<g>".repeat(500)), 100), 101);
        assert_eq!(
            nesting_depth(&format!("<svg>{}</svg>", "<path d='M0'/>".repeat(500)), 100),
            1
        );
        assert_eq!(nesting_depth(&format!("<svg>{}", "<span/>".repeat(500)), 100), 101);
        assert_eq!(nesting_depth(&page(""), 100), 1);
        // Pathological: counting stops just past the limit.
        assert_eq!(nesting_depth(&"<div>".repeat(50_000), 256), 257);
        assert_eq!(nesting_depth(&"<b><i><u>".repeat(20_000), 512), 513);
    }

    #[test]
    fn hostile_pages_are_dropped_or_read_never_fatal() {
        let tables = page(&format!(
            "{}x{}",
            "<table><tr><td>".repeat(20_000),
            "</td></tr></table>".repeat(20_000)
        ));
        assert_eq!(
            extract_bounded(tables, None, EXTRACT_BUDGET),
            Err(ExtractError::TooDeep)
        );
        // Right at the limit: a DOM 4 × as deep still extracts on the big stack.
        let at_limit = page(&format!(
            "{}x{}",
            "<table><tbody><tr><td><div>".repeat(MAX_NESTING / 2 - 1),
            "</div></td></tr></tbody></table>".repeat(MAX_NESTING / 2 - 1)
        ));
        let p = extract_bounded(at_limit, None, Duration::from_secs(60)).expect("within the bound");
        assert!(p.word_count > 100, "{}", p.word_count);
    }

    /// The benchmark's real pages all pass, far below the bound.
    #[test]
    fn real_pages_nest_far_below_the_bound() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/extraction/html");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            assert!(std::env::var("CI").is_err(), "{} is missing under CI", dir.display());
            eprintln!("skipped: {} is absent", dir.display());
            return;
        };
        let mut deepest = 0;
        for e in entries {
            let html = String::from_utf8_lossy(&std::fs::read(e.unwrap().path()).unwrap()).into_owned();
            deepest = deepest.max(nesting_depth(&html, MAX_NESTING));
        }
        assert!(deepest > 5 && deepest <= MAX_NESTING / 4, "{deepest}");
    }
}
