//! Outgoing Bluesky text: facets and record keys.
//!
//! - [`facets`]: a link facet for every URL and a mention facet for the requester's `@handle`
//!   only, to the DID the notification gave (no handle in the text is ever looked up: handles
//!   change hands), at UTF-8 byte offsets (what the lexicon counts; JavaScript clients that count
//!   UTF-16 units get them wrong on non-ASCII text).
//! - [`tid`]: a deterministic record key in the TID syntax, so a part posted again after a
//!   crash or a retry lands on the same record instead of a second one.

use serde_json::{json, Value};

/// Where each URL and the requester's `@handle` of `text` stand, as facets (JSON,
/// `app.bsky.richtext.facet`). `mention`: the requester as (handle, DID); every other handle
/// gets no facet.
pub fn facets(text: &str, mention: Option<(&str, &str)>) -> Vec<Value> {
    let mut out = Vec::new();
    for (start, token) in tokens(text) {
        if let Some(url) = url_in(token) {
            let begin = start + token.find(url).expect("url is a slice of token");
            out.push(json!({
                "index": { "byteStart": begin, "byteEnd": begin + url.len() },
                "features": [{ "$type": "app.bsky.richtext.facet#link", "uri": url }],
            }));
        } else if let Some(handle) = handle_in(token) {
            if let Some((_, did)) = mention.filter(|(h, _)| h.eq_ignore_ascii_case(handle)) {
                // The span includes the `@`.
                let begin = start + token.find('@').expect("handle follows @");
                out.push(json!({
                    "index": { "byteStart": begin, "byteEnd": begin + 1 + handle.len() },
                    "features": [{ "$type": "app.bsky.richtext.facet#mention", "did": did }],
                }));
            }
        }
    }
    out
}

/// The `@handle`s of `text` (without `@`, as written).
pub fn handles(text: &str) -> Vec<&str> {
    tokens(text).filter_map(|(_, t)| handle_in(t)).collect()
}

/// Whitespace-separated tokens with their byte offsets.
fn tokens(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split_whitespace()
        .map(move |t| (t.as_ptr() as usize - text.as_ptr() as usize, t))
}

/// A URL in a token, without the punctuation that ends a sentence around it.
fn url_in(token: &str) -> Option<&str> {
    let start = token.find("https://").or_else(|| token.find("http://"))?;
    let url = token[start..].trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '"', '\'', '»']);
    (url.len() > "https://".len()).then_some(url)
}

/// A handle in a token (`@name.domain`), without trailing punctuation.
fn handle_in(token: &str) -> Option<&str> {
    let rest = token.trim_start_matches(['(', '[', '"', '\'']).strip_prefix('@')?;
    let handle = rest.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '"', '\'']);
    let valid = handle.contains('.')
        && handle
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
        && !handle.starts_with('.')
        && !handle.ends_with('.');
    valid.then_some(handle)
}

const TID_ALPHABET: &[u8; 32] = b"234567abcdefghijklmnopqrstuvwxyz";

/// A record key in TID syntax (13 base32-sortable characters: 53 bits of microseconds since
/// the epoch, 10 bits of clock id), made from the job's creation time plus `seq` and a clock
/// id hashed from `key`: the same part of the same job always gets the same key, parts of one
/// job sort in order, and two jobs collide only if created in the same microsecond with the
/// same 10-bit hash.
pub fn tid(created_micros: i64, seq: u32, key: &str) -> String {
    let micros = (created_micros.max(0) as u64 + u64::from(seq)) & ((1 << 53) - 1);
    let clock = fnv1a(key) & 0x3ff;
    let mut v = (micros << 10) | clock;
    let mut out = [0u8; 13];
    for slot in out.iter_mut().rev() {
        *slot = TID_ALPHABET[(v & 31) as usize];
        v >>= 5;
    }
    String::from_utf8(out.to_vec()).expect("ascii")
}

fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facets_use_utf8_byte_offsets() {
        let text = "@alice.test Ça n'est pas vrai — voir https://news.example/é?a=1. Merci @nobody.test";
        let f = facets(text, Some(("alice.test", "did:plc:alice")));
        assert_eq!(f.len(), 2, "{f:?}");
        let slice = |v: &Value| {
            let (s, e) = (
                v["index"]["byteStart"].as_u64().unwrap() as usize,
                v["index"]["byteEnd"].as_u64().unwrap() as usize,
            );
            &text.as_bytes()[s..e]
        };
        assert_eq!(slice(&f[0]), b"@alice.test");
        assert_eq!(f[0]["features"][0]["did"], "did:plc:alice");
        assert_eq!(slice(&f[1]), "https://news.example/é?a=1".as_bytes());
        assert_eq!(f[1]["features"][0]["uri"], "https://news.example/é?a=1");
        assert_eq!(handles(text), ["alice.test", "nobody.test"]);
    }

    #[test]
    fn tids_are_valid_deterministic_and_ordered() {
        let t0 = tid(1_796_000_000_000_000, 0, "musebot-bluesky:x-0");
        assert_eq!(t0, tid(1_796_000_000_000_000, 0, "musebot-bluesky:x-0"));
        assert_eq!(t0.len(), 13);
        assert!(matches!(t0.as_bytes()[0], b'2'..=b'7' | b'a'..=b'j'), "{t0}");
        assert!(t0.bytes().all(|c| TID_ALPHABET.contains(&c)));
        let t1 = tid(1_796_000_000_000_000, 1, "musebot-bluesky:x-1");
        assert!(t0 < t1, "parts sort in order: {t0} {t1}");
        assert_ne!(t0, tid(1_796_000_000_000_000, 0, "musebot-bluesky:y-0"));
    }
}
