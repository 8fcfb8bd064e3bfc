//! The text of a post as a person sees it, which is what the stance reads: no links (a URL's
//! path or query — `watch?v=…`, `/wrong` — is not the author's words; the link itself is
//! the pipeline's evidence, not the stance's), no leading run of `@mentions` (a reply's
//! pre-filled addressees), no invisible format characters (zero-width joiners and marks a
//! reader never sees). Hidden markup (Mastodon's `invisible` spans outside a link) is already
//! gone from the platform's plain text (`platform::mastodon::text`).

/// Whether a whitespace-separated word is a link as a person reads past it.
fn is_link(word: &str) -> bool {
    let w = word
        .trim_start_matches(['(', '[', '<', '"', '\'', '“', '«'])
        .to_ascii_lowercase();
    w.contains("://") || w.starts_with("www.") || w.starts_with("pic.twitter.com/") || w.starts_with("t.co/")
}

/// Whether a word is a mention (`@user`, `@user@host`, `＠user`).
fn is_mention(word: &str) -> bool {
    let w = word.trim_start_matches(['@', '＠']);
    w.len() < word.len() && !w.is_empty() && w.chars().next().is_some_and(|c| c.is_alphanumeric() || c == '_')
}

/// The post's visible words: links dropped, the leading run of mentions dropped, invisible
/// format characters (`General_Category=Cf`, e.g. U+200B) removed, lines kept.
pub fn visible(text: &str) -> String {
    let text: String = text.chars().filter(|c| !is_format(*c)).collect();
    let mut out = String::with_capacity(text.len());
    let mut leading = true;
    for line in text.lines() {
        let mut words = Vec::new();
        for word in line.split_whitespace() {
            if leading && is_mention(word) {
                continue;
            }
            leading = false;
            if !is_link(word) {
                words.push(word);
            }
        }
        if !out.is_empty() && !words.is_empty() {
            out.push('\n');
        }
        out.push_str(&words.join(" "));
    }
    out
}

/// Unicode's format characters a reader never sees (zero-width space and joiners, bidi
/// marks and isolates, the word joiner, invisible operators, the BOM, tag characters).
fn is_format(c: char) -> bool {
    matches!(c as u32,
        0x00AD | 0x061C | 0x180E | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2064
        | 0x2066..=0x206F | 0xFEFF | 0xE0001 | 0xE0020..=0xE007F)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_mentions_and_invisible_characters_are_not_read() {
        assert_eq!(
            visible(
                "@bot @alice@m.example Lemons kill cancer https://www.youtube.com/watch?v=x1 (www.example.com/wrong)"
            ),
            "Lemons kill cancer"
        );
        assert_eq!(visible("no\u{200B}pe, the moon is real"), "nope, the moon is real");
        // A mention inside the text is the author's words.
        assert_eq!(visible("Ask @alice: is it true?"), "Ask @alice: is it true?");
        assert_eq!(
            visible("@a\n@b\nline one\n\nhttps://x.example\nline two"),
            "line one\nline two"
        );
        assert_eq!(visible("email me @ home"), "email me @ home");
    }
}
