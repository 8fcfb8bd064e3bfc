//! The composer: whatever the LLM wrote, the posted text obeys the output rules — only URLs from
//! the evidence set (every other link form removed), no mention in the body (the requester's
//! handle is the thread's lead) — and is split into thread parts that fit the platform's
//! length rules ([`TextLimits`]).

use std::collections::HashSet;

use unicode_segmentation::UnicodeSegmentation;

/// How a platform counts a post's length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextLimits {
    /// Maximum length of one post.
    pub max_chars: usize,
    /// Every URL counts as this many characters (Mastodon: 23), whatever its length;
    /// [`AS_WRITTEN`]: URLs and `@user@domain` mentions count their own characters.
    pub chars_per_url: usize,
}

/// `chars_per_url` for servers that count text as written (seen on servers that reject a post
/// the instance's advertised rules allow; the worker then re-splits with this).
pub const AS_WRITTEN: usize = usize::MAX;

impl TextLimits {
    /// The same limit, every character counted as written (no URL or mention shortening).
    pub fn as_written(self) -> TextLimits {
        TextLimits {
            chars_per_url: AS_WRITTEN,
            ..self
        }
    }
}

/// Length of `text` as Mastodon counts it: grapheme clusters, each URL as `chars_per_url`,
/// `@user@domain` as `@user`.
pub fn weighted_len(text: &str, limits: TextLimits) -> usize {
    let mut total = 0;
    for (i, token) in split_keep_ws(text) {
        let _ = i;
        total += token_len(token, limits);
    }
    total
}

fn token_len(token: &str, limits: TextLimits) -> usize {
    if token.chars().all(char::is_whitespace) {
        return token.graphemes(true).count();
    }
    if let Some(start) = url_start(token) {
        let (url, rest) = split_url_tail(&token[start..]);
        let url_len = if limits.chars_per_url == AS_WRITTEN {
            url.graphemes(true).count()
        } else {
            limits.chars_per_url
        };
        return token[..start].graphemes(true).count() + url_len + rest.graphemes(true).count();
    }
    if let Some(rest) = token.strip_prefix('@').filter(|_| limits.chars_per_url != AS_WRITTEN) {
        if let Some((user, _domain)) = rest.split_once('@') {
            return 1 + user.graphemes(true).count();
        }
    }
    token.graphemes(true).count()
}

/// The unposted rest of a thread (`rest`, parts as planned, " (i/n)" numbering included),
/// split again under `limits`: numbering removed (the posted parts already carry theirs), at
/// most `max_parts` parts.
pub fn resplit_rest(rest: &[String], limits: TextLimits, max_parts: usize) -> Vec<String> {
    let body: Vec<&str> = rest.iter().map(|p| strip_numbering(p)).collect();
    split_thread("", &body.join(" "), limits, false, max_parts.max(1))
}

/// `text` without a trailing " (i/n)".
fn strip_numbering(text: &str) -> &str {
    let Some(inner) = text.strip_suffix(')') else {
        return text;
    };
    match inner.rfind(" (") {
        Some(i) => {
            let numbers = &inner[i + 2..];
            let ok = numbers.split_once('/').is_some_and(|(a, b)| {
                !a.is_empty() && !b.is_empty() && (a.to_string() + b).chars().all(|c| c.is_ascii_digit())
            });
            if ok {
                &text[..i]
            } else {
                text
            }
        }
        None => text,
    }
}

/// Splits into alternating non-whitespace / whitespace runs, with byte offsets.
fn split_keep_ws(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_ws: Option<bool> = None;
    for (i, c) in text.char_indices() {
        let ws = c.is_whitespace();
        if in_ws.is_some_and(|w| w != ws) {
            out.push((start, &text[start..i]));
            start = i;
        }
        in_ws = Some(ws);
    }
    if start < text.len() {
        out.push((start, &text[start..]));
    }
    out
}

fn url_start(token: &str) -> Option<usize> {
    let lower = token.to_ascii_lowercase();
    [lower.find("https://"), lower.find("http://")]
        .into_iter()
        .flatten()
        .min()
}

/// Punctuation that ends a sentence or a bracket after a URL, ASCII and full-width.
const URL_TAIL: [char; 22] = [
    '.', ',', ';', ':', '!', '?', ')', ']', '"', '\'', '»', '。', '、', '，', '．', '：', '；', '！', '？', '）', '」',
    '』',
];

/// Splits `https://x/y).` into the URL and the trailing punctuation.
fn split_url_tail(s: &str) -> (&str, &str) {
    let end = s.trim_end_matches(URL_TAIL).len();
    s.split_at(end)
}

/// The same, for a URL that text without a space follows (`https://x/a）によると`): the URL
/// ends at its first character that is not ASCII.
fn split_url_at_text(s: &str) -> (&str, &str) {
    let ascii = s
        .find(|c: char| !c.is_ascii() || c.is_ascii_whitespace())
        .unwrap_or(s.len());
    let end = s[..ascii].trim_end_matches(URL_TAIL).len();
    s.split_at(end)
}

/// URL schemes that Mastodon's linkifier (its `valid_url_protocol`) or common clients turn into
/// links besides http(s): a reply carries none of them.
const LINK_SCHEMES: [&str; 16] = [
    "gemini", "ipfs", "ipns", "dat", "dweb", "ssb", "gopher", "xmpp", "magnet", "mailto", "ftp", "sftp", "irc",
    "matrix", "bitcoin", "tel",
];

/// Where the first link in `token` starts (byte offset): `http(s)://`, any `scheme://`, one of
/// [`LINK_SCHEMES`] followed by `:` and something, or a bare `www.` host — the earliest wins.
fn link_start(token: &str) -> Option<usize> {
    let lower = token.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let boundary = |i: usize| i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
    let mut best: Option<usize> = url_start(token);
    let mut consider = |i: usize| best = Some(best.map_or(i, |b| b.min(i)));
    for (i, _) in lower.match_indices("://") {
        // The scheme before `://`: letters, digits, `+ . -`, from its first letter (`-gemini://`
        // links from the `g`).
        let run = lower[..i]
            .char_indices()
            .rev()
            .find(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-')))
            .map_or(0, |(j, c)| j + c.len_utf8());
        if let Some(first) = lower[run..i].find(|c: char| c.is_ascii_alphabetic()) {
            consider(run + first);
        }
    }
    for scheme in LINK_SCHEMES {
        for (i, _) in lower.match_indices(scheme) {
            let after = &lower[i + scheme.len()..];
            let has_target = after.strip_prefix(':').is_some_and(|rest| {
                rest.trim_start_matches('/')
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_alphanumeric() || c == '?')
            });
            if boundary(i) && has_target {
                consider(i);
            }
        }
    }
    for (i, _) in lower.match_indices("www.") {
        if boundary(i) && lower[i + 4..].chars().next().is_some_and(char::is_alphanumeric) {
            consider(i);
        }
    }
    best
}

/// Applies the output rules to the model's text: every link not in `allowed_urls` is removed
/// (any scheme a platform or client links, bare `www.` hosts), and every `@` that could start
/// a mention is dropped. The body carries no mention at all: the requester's handle is the
/// thread's lead, added by the caller, so nothing the model wrote chooses whom the reply pings.
pub fn enforce_rules(text: &str, allowed_urls: &HashSet<String>) -> String {
    let text = &scrub(text);
    let mut out = String::with_capacity(text.len());
    for (_, token) in split_keep_ws(text) {
        if token.chars().all(char::is_whitespace) {
            out.push_str(token);
            continue;
        }
        // The model may write an evidence URL as given or in the form the bot posts it.
        let allowed = |start: usize| {
            let rest = &token[start..];
            [split_url_tail(rest), split_url_at_text(rest)]
                .into_iter()
                .find(|(link, _)| allowed_urls.contains(*link) || allowed_urls.iter().any(|u| at_safe(u) == *link))
        };
        match link_start(token).and_then(|start| Some((start, allowed(start)?))) {
            Some((start, (link, tail))) => {
                // An evidence URL is kept, every `@` a mention could follow percent-encoded
                // ([`at_safe`]; `/@author/` paths stay as written); only punctuation may
                // stand glued to it, so nothing can form a link or a mention with it. Words
                // glued before it (Japanese writes none of the spaces) are kept apart by a
                // space, unless they could make a host or a handle of it.
                let prefix = &token[..start];
                if prefix
                    .chars()
                    .all(|c| !c.is_alphanumeric() && !is_at_sign(c) && c != '.' && c != '/')
                {
                    out.push_str(prefix);
                } else if !prefix
                    .chars()
                    .any(|c| c.is_ascii_alphanumeric() || is_at_sign(c) || c == '.' || c == '/')
                {
                    out.push_str(&without_links_or_mentions(prefix));
                    out.push(' ');
                }
                out.push_str(&at_safe(link));
                if !tail.is_empty() && !tail.starts_with(URL_TAIL) {
                    out.push(' ');
                }
                out.push_str(&without_links_or_mentions(tail));
            }
            _ => out.push_str(&without_links_or_mentions(token)),
        }
    }
    // Collapse the gaps left by removed URLs.
    let mut cleaned = String::with_capacity(out.len());
    for line in out.split('\n') {
        let words: Vec<&str> = line.split([' ', '\t']).filter(|w| !w.is_empty()).collect();
        cleaned.push_str(&words.join(" "));
        cleaned.push('\n');
    }
    cleaned.trim().to_string()
}

/// `text` without the characters that change how text around them reads but show nothing: C0
/// and C1 controls (a line break and a tab stay) and the format characters
/// (`General_Category=Cf`: bidi embeddings, overrides and isolates, marks, invisible operators,
/// soft hyphens, the BOM…) — except ZWNJ and ZWJ (U+200C/D: Persian and Indic spelling, emoji
/// sequences) and the tag characters of flag sequences (U+E0020–E007F). Outside text
/// (ratings, publishers, claims, titles, the model's words) reaches the posted reply and the
/// terminal through it.
pub fn scrub(text: &str) -> String {
    text.chars().filter(|c| !is_hidden(*c)).collect()
}

fn is_hidden(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        '\u{200C}' | '\u{200D}' | '\u{E0020}'..='\u{E007F}' => false,
        c if c.is_control() => true,
        '\u{00AD}'
        | '\u{0600}'..='\u{0605}'
        | '\u{061C}'
        | '\u{06DD}'
        | '\u{070F}'
        | '\u{0890}'..='\u{0891}'
        | '\u{08E2}'
        | '\u{180E}'
        | '\u{200B}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{206F}'
        | '\u{FEFF}'
        | '\u{FFF9}'..='\u{FFFB}'
        | '\u{110BD}'
        | '\u{110CD}'
        | '\u{13430}'..='\u{1343F}'
        | '\u{1BCA0}'..='\u{1BCA3}'
        | '\u{1D173}'..='\u{1D17A}'
        | '\u{E0001}' => true,
        _ => false,
    }
}

/// A URL as the bot writes it: every `@` percent-encoded (`%40`) except one right after a `/`.
/// Mastodon finds mentions in the raw text, URLs included, after any character but `=`, `/`
/// and word characters (`MENTION_RE`), so `…/a-@victim@host`, `.@x`, `(@x`, `&@x` in a cited
/// URL would ping that account (and, in a direct reply, add it as a recipient); a `/@user`
/// profile path is no mention and stays readable. `%40` means `@` to every web server.
pub fn at_safe(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    let mut prev = ' ';
    for c in url.chars() {
        if c == '@' && prev != '/' {
            out.push_str("%40");
        } else if c != '@' && is_at_sign(c) {
            // The full-width forms, as a browser would send them (UTF-8, percent-encoded).
            let mut buf = [0; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
        prev = c;
    }
    out
}

/// `token` with every link removed and every mention defused, again until neither is left:
/// dropping an `@` can make a link (`www.@x.example`), removing a link can make a mention.
fn without_links_or_mentions(token: &str) -> String {
    let mut t = token.to_string();
    loop {
        let mut next = defuse_mentions(&t);
        while let Some(start) = link_start(&next) {
            let (_, tail) = split_url_tail(&next[start..]);
            next = format!("{}{}", &next[..start], tail);
        }
        if next == t {
            return t;
        }
        t = next;
    }
}

fn is_at_sign(c: char) -> bool {
    matches!(c, '@' | '\u{FF20}' | '\u{FE6B}')
}

/// Drops every at-sign (`@`, full-width `＠`, small `﹫`) that a letter, digit or `_` follows,
/// whatever precedes it. Mastodon's `MENTION_RE` looks behind with Ruby's `[[:word:]]`
/// (letters, marks, decimal digits, connectors), so `x²@bob@host`, `①@bob@host` and
/// `Ⓐ@bob@host` are mentions there, while other servers and clients draw the line elsewhere:
/// dropping the sign wherever a name could follow is wider than every linkifier, and costs an
/// e-mail address in a reply its `@`.
fn defuse_mentions(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    for (i, c) in chars.iter().enumerate() {
        let at_sign = matches!(c, '@' | '\u{FF20}' | '\u{FE6B}');
        let name_follows = chars
            .get(i + 1)
            .is_some_and(|n| n.is_alphanumeric() || matches!(n, '_' | '@' | '\u{FF20}' | '\u{FE6B}'));
        if at_sign && name_follows {
            continue;
        }
        out.push(*c);
    }
    out
}

/// Splits `body` into thread parts. The first part starts with `lead` (e.g. `@requester `).
/// Parts are numbered " (i/n)" when `number_parts` and there is more than one. At most
/// `max_parts` parts: past that the text is cut at a word and ends with "…".
pub fn split_thread(lead: &str, body: &str, limits: TextLimits, number_parts: bool, max_parts: usize) -> Vec<String> {
    let single = format!("{lead}{body}");
    if weighted_len(&single, limits) <= limits.max_chars {
        return vec![single];
    }
    // Reserve room for the widest numbering suffix.
    let reserve = if number_parts { " (99/99)".len() } else { 0 };
    let budget = limits.max_chars.saturating_sub(reserve).max(10);
    let mut parts: Vec<String> = Vec::new();
    let mut current = lead.to_string();
    let mut current_len = weighted_len(lead, limits);
    let mut pending_sep = String::new();
    for (_, token) in split_keep_ws(body) {
        if token.chars().all(char::is_whitespace) {
            pending_sep = if token.contains('\n') { "\n".into() } else { " ".into() };
            continue;
        }
        for piece in fit_pieces(token, budget, limits) {
            let piece_len = token_len(&piece, limits);
            let sep_len = if current_len == 0 || current.ends_with(' ') {
                0
            } else {
                pending_sep.len().min(1)
            };
            if current_len + sep_len + piece_len > budget && current_len > 0 {
                parts.push(current.trim_end().to_string());
                current = String::new();
                current_len = 0;
            }
            if current_len > 0 && !current.ends_with(' ') && !pending_sep.is_empty() {
                current.push_str(&pending_sep);
                current_len += 1;
            }
            current.push_str(&piece);
            current_len += piece_len;
            // The next piece of the same token follows without a space (a Japanese run cut
            // in two stays one run when both pieces share a part).
            pending_sep = String::new();
        }
    }
    if !current.trim().is_empty() {
        parts.push(current.trim_end().to_string());
    }
    if parts.len() > max_parts {
        parts.truncate(max_parts);
        let last = parts.last_mut().expect("max_parts >= 1");
        while weighted_len(last, limits) + 1 > budget {
            match last.rfind(' ') {
                Some(i) => last.truncate(i),
                None => break,
            }
        }
        last.push('…');
    }
    let n = parts.len();
    if number_parts && n > 1 {
        for (i, p) in parts.iter_mut().enumerate() {
            p.push_str(&format!(" ({}/{})", i + 1, n));
        }
    }
    parts
}

/// A token longer than a whole part (a run of Chinese or Japanese, written without spaces, or
/// one very long word) is cut where a reader would pause: after a clause or sentence mark
/// (。、！？ and their full-width kin) where one is in the part's second half, else at a word
/// boundary (UAX #29: a katakana or Latin word stays whole), never inside a grapheme cluster.
/// URLs are never cut.
fn fit_pieces(token: &str, budget: usize, limits: TextLimits) -> Vec<String> {
    if token_len(token, limits) <= budget || url_start(token).is_some() {
        return vec![token.to_string()];
    }
    let is_mark = |w: &str| w.chars().all(|c| "。、！？，．；：」』）".contains(c));
    let mut pieces = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let mut len = 0;
    for word in token.split_word_bounds() {
        let n = word.graphemes(true).count();
        if n > budget {
            // One word longer than a part: by graphemes.
            if !current.is_empty() {
                pieces.push(current.concat());
                current.clear();
                len = 0;
            }
            let graphemes: Vec<&str> = word.graphemes(true).collect();
            pieces.extend(graphemes.chunks(budget).map(|c| c.concat()));
            continue;
        }
        if len + n > budget {
            // Back to the last mark in the part's second half, when there is one.
            let cut = current
                .iter()
                .rposition(|w| is_mark(w))
                .filter(|&i| current[..=i].iter().map(|w| w.graphemes(true).count()).sum::<usize>() * 2 >= budget)
                .map_or(current.len(), |i| i + 1);
            let rest = current.split_off(cut);
            pieces.push(current.concat());
            current = rest;
            len = current.iter().map(|w| w.graphemes(true).count()).sum();
            // What followed the mark and this word may still not fit together.
            if len + n > budget && !current.is_empty() {
                pieces.push(current.concat());
                current = Vec::new();
                len = 0;
            }
        }
        current.push(word);
        len += n;
    }
    if !current.is_empty() {
        pieces.push(current.concat());
    }
    pieces
}

/// The thread for a draft: rules enforced, `lead` (the requester's handle) first, split to fit.
pub fn compose(
    draft: &crate::model::Draft,
    lead: &str,
    limits: TextLimits,
    reply: &crate::config::ReplyConfig,
) -> Vec<String> {
    let allowed_urls: HashSet<String> = draft.urls.iter().cloned().collect();
    let mut body = enforce_rules(&draft.text, &allowed_urls);
    if body.is_empty() {
        body = FALLBACK.to_string();
    }
    split_thread(lead, &body, limits, reply.number_parts, reply.max_parts)
}

/// Used when nothing of the model's text survives the rules.
pub const FALLBACK: &str =
    "I could not produce a reliable answer about this post. Please check it against trusted sources before sharing.";

#[cfg(test)]
mod tests;
