//! Status HTML as the servers render it (Mastodon, Pleroma/Akkoma, GoToSocial: sanitised to
//! `p br span a`) to what the bot reads: plain text (paragraphs become blank lines, `<br>` a
//! newline, entities decoded), with every link written as its full `href` (servers shorten the
//! visible text: Mastodon's `invisible` / `ellipsis` spans, GoToSocial's bare host/path), the
//! links themselves, the mentions with where they stand, and hashtags (for `#nobot`).

/// One piece of status HTML.
#[derive(Debug, Clone, PartialEq)]
enum Piece<'a> {
    Text(&'a str),
    Open { name: String, attrs: &'a str },
    Close(String),
}

/// Splits HTML into text and tags. A stray `<` without `>` is text.
fn pieces(html: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        if lt > 0 {
            out.push(Piece::Text(&rest[..lt]));
        }
        let Some(gt) = tag_close(&rest[lt..]) else {
            out.push(Piece::Text(&rest[lt..]));
            return out;
        };
        let tag = rest[lt + 1..lt + gt].trim();
        let closing = tag.starts_with('/');
        let tag = tag.trim_start_matches('/');
        let split = tag.find(|c: char| c.is_whitespace() || c == '/').unwrap_or(tag.len());
        let name = tag[..split].to_ascii_lowercase();
        if closing {
            out.push(Piece::Close(name));
        } else {
            out.push(Piece::Open {
                name,
                attrs: &tag[split..],
            });
        }
        rest = &rest[lt + gt + 1..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    out
}

/// The offset of the `>` that ends the tag opening `tag` (a `>` inside a quoted attribute
/// value does not: remote servers' hrefs may hold one unescaped).
fn tag_close(tag: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    for (i, c) in tag.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') if tag[..i].ends_with('=') || tag[..i].trim_end().ends_with('=') => quote = Some(c),
            (None, '>') => return Some(i),
            _ => {}
        }
    }
    None
}

/// What an `<a>` is.
#[derive(Debug, Clone, PartialEq)]
enum Anchor {
    /// A mention of an account (`class="mention"` / `u-url mention`), with its profile URL.
    Mention(String),
    /// A hashtag (`class="hashtag"`, `mention hashtag`, or `rel="tag"`).
    Hashtag(String),
    /// A web link, with its full URL.
    Link(String),
    /// Anything else (no web href).
    Other,
}

fn anchor(attrs: &str) -> Anchor {
    let class = attribute(attrs, "class").unwrap_or_default().to_ascii_lowercase();
    let rel = attribute(attrs, "rel").unwrap_or_default().to_ascii_lowercase();
    let href = attribute(attrs, "href")
        .map(|h| html_escape::decode_html_entities(&h).trim().to_string())
        .unwrap_or_default();
    let classes: Vec<&str> = class.split_whitespace().collect();
    if classes.contains(&"hashtag") || rel.split_whitespace().any(|r| r == "tag") {
        Anchor::Hashtag(href)
    } else if classes.contains(&"mention") {
        Anchor::Mention(href)
    } else if href.starts_with("https://") || href.starts_with("http://") {
        Anchor::Link(href)
    } else {
        Anchor::Other
    }
}

/// Walks the HTML once, calling `on_anchor(kind, visible text, leading)` for each `<a>` and
/// for each plain-text `@handle` (as a mention without href), where `leading` is true while
/// nothing but whitespace and other mentions came before; returns the plain text. Mastodon's
/// quote fallback (`class="quote-inline"`, "RE: <link>") is left out: the quote is a field.
/// So is an `invisible` span outside a link, which Mastodon's clients hide: the bot reads what
/// a person sees (inside a link it is the part of the URL the link's `href` gives in full).
fn walk(html: &str, mut on_anchor: impl FnMut(&Anchor, &str, bool)) -> String {
    let mut out = String::with_capacity(html.len());
    let mut open: Option<(Anchor, String)> = None;
    let mut leading = true;
    // Inside a quote-inline element: its tag name and nesting depth.
    let mut skipping: Option<(String, usize)> = None;
    for piece in pieces(html) {
        if let Some((tag, depth)) = &mut skipping {
            match &piece {
                Piece::Open { name, .. } if name == tag => *depth += 1,
                Piece::Close(name) if name == tag => {
                    *depth -= 1;
                    if *depth == 0 {
                        skipping = None;
                    }
                }
                _ => {}
            }
            continue;
        }
        match piece {
            Piece::Open { name, attrs }
                if !attrs.trim_end().ends_with('/')
                    && !matches!(name.as_str(), "br" | "img" | "hr" | "wbr" | "input")
                    && attribute(attrs, "class").is_some_and(|c| {
                        c.split_whitespace()
                            .any(|c| c == "quote-inline" || (c == "invisible" && open.is_none()))
                    }) =>
            {
                skipping = Some((name, 1));
            }
            Piece::Text(t) => {
                let decoded = html_escape::decode_html_entities(t);
                match &mut open {
                    Some((_, inner)) => inner.push_str(&decoded),
                    None => {
                        for word in decoded.split_whitespace() {
                            if is_handle(word) {
                                let handle = word.trim_end_matches(HANDLE_END);
                                on_anchor(&Anchor::Mention(String::new()), handle, leading);
                            } else {
                                leading = false;
                            }
                        }
                        out.push_str(&decoded);
                    }
                }
            }
            Piece::Open { name, attrs } if name == "a" => {
                // An anchor left open ends where the next begins (as a browser reads it).
                if let Some((kind, inner)) = open.take() {
                    finish_anchor(kind, &inner, &mut leading, &mut out, &mut on_anchor);
                }
                if !attrs.trim_end().ends_with('/') {
                    open = Some((anchor(attrs), String::new()));
                }
            }
            Piece::Close(name) if name == "a" => {
                let Some((kind, inner)) = open.take() else { continue };
                finish_anchor(kind, &inner, &mut leading, &mut out, &mut on_anchor);
            }
            Piece::Open { name, .. } if name == "br" => out.push('\n'),
            Piece::Close(name) if name == "p" => out.push_str("\n\n"),
            Piece::Open { .. } | Piece::Close(_) => {}
        }
    }
    if let Some((_, inner)) = open {
        out.push_str(&inner);
    }
    out
}

/// An anchor's end: its kind settled by its text (servers that relay others' markup may
/// drop the class: the text still says), reported, and written out.
fn finish_anchor(
    kind: Anchor,
    inner: &str,
    leading: &mut bool,
    out: &mut String,
    on_anchor: &mut impl FnMut(&Anchor, &str, bool),
) {
    let kind = match kind {
        Anchor::Link(href) if inner.trim_start().starts_with('#') => Anchor::Hashtag(href),
        Anchor::Link(href) if inner.trim_start().starts_with('@') => Anchor::Mention(href),
        k => k,
    };
    on_anchor(&kind, inner, *leading);
    if !matches!(kind, Anchor::Mention(_)) {
        *leading = false;
    }
    match &kind {
        Anchor::Link(href) => out.push_str(&link_text(inner, href)),
        _ => out.push_str(inner),
    }
}

/// Punctuation that may follow a handle written as text.
const HANDLE_END: [char; 7] = [',', '.', ':', ';', '!', '?', ')'];

/// `@user` or `@user@domain` written as plain text (trailing punctuation allowed).
fn is_handle(word: &str) -> bool {
    let w = word.trim_end_matches(HANDLE_END);
    let Some(rest) = w.strip_prefix('@') else { return false };
    let mut parts = rest.split('@');
    let user = parts.next().unwrap_or("");
    let domain = parts.next();
    let user_ok = !user.is_empty()
        && user
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == '-');
    let domain_ok =
        domain.is_none_or(|d| d.contains('.') && d.chars().all(|c| c.is_alphanumeric() || c == '.' || c == '-'));
    user_ok && domain_ok && parts.next().is_none()
}

/// A link as text: its full URL where the visible text is the URL or a shortened form of it,
/// else the visible text followed by the URL.
fn link_text(visible: &str, href: &str) -> String {
    let shown = visible.trim().trim_end_matches(['…', '.']).trim();
    let bare = |u: &str| {
        u.trim_start_matches("https://")
            .trim_start_matches("http://")
            .trim_start_matches("www.")
            .to_string()
    };
    if shown.is_empty() || bare(href).starts_with(&bare(shown)) || href.contains(shown) {
        href.to_string()
    } else {
        format!("{} ({href})", visible.trim())
    }
}

/// A status's plain text as the bot reads it: its content warning first, then its content.
pub fn status_text(content: &str, spoiler_text: &str) -> String {
    let text = html_to_text(content);
    if spoiler_text.is_empty() {
        text
    } else {
        format!("{spoiler_text}\n\n{text}")
    }
}

/// Plain text of a status's `content` (or a profile note), links written as full URLs.
pub fn html_to_text(html: &str) -> String {
    let text = walk(html, |_, _, _| {});
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let mut text = lines.join("\n");
    while text.contains("\n\n\n") {
        text = text.replace("\n\n\n", "\n\n");
    }
    text.trim().to_string()
}

/// The full `href` of every link in a status's HTML, in order, once each. Mentions and
/// hashtags are not links.
pub fn links(html: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    walk(html, |a, _, _| {
        if let Anchor::Link(href) = a {
            if !out.contains(href) {
                out.push(href.clone());
            }
        }
    });
    out
}

/// A mention in a status: the account's profile URL, its visible text (`@user`), and whether
/// it stands in the leading run of mentions that clients pre-fill in a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MentionAt {
    pub href: String,
    pub shown: String,
    pub leading: bool,
}

/// Every mention in a status's HTML, in order.
pub fn mentions(html: &str) -> Vec<MentionAt> {
    let mut out = Vec::new();
    walk(html, |a, inner, leading| {
        if let Anchor::Mention(href) = a {
            out.push(MentionAt {
                href: href.clone(),
                shown: inner.trim().to_string(),
                leading,
            });
        }
    });
    out
}

/// Whether HTML (a profile note, a profile field) carries the `#nobot` opt-out: as a hashtag
/// link (`…/tags/nobot`, `#<span>nobot</span>`) or as plain text.
pub fn has_nobot(html: &str) -> bool {
    let text = html_to_text(html).to_lowercase();
    text.split(|c: char| !(c.is_alphanumeric() || c == '#' || c == '_'))
        .any(|w| w == "#nobot")
}

/// The value of attribute `name` in a tag's attribute text (quoted with `"` or `'`, or bare),
/// read pair by pair, so a name inside another attribute's value is not taken for one.
fn attribute(attrs: &str, name: &str) -> Option<String> {
    let b = attrs.as_bytes();
    let mut at = 0;
    while at < b.len() {
        while at < b.len() && (b[at].is_ascii_whitespace() || b[at] == b'/') {
            at += 1;
        }
        let start = at;
        while at < b.len() && !b[at].is_ascii_whitespace() && b[at] != b'=' && b[at] != b'/' {
            at += 1;
        }
        let key = &attrs[start..at];
        while at < b.len() && b[at].is_ascii_whitespace() {
            at += 1;
        }
        let mut value = String::new();
        if b.get(at) == Some(&b'=') {
            at += 1;
            while at < b.len() && b[at].is_ascii_whitespace() {
                at += 1;
            }
            match b.get(at) {
                Some(&q @ (b'"' | b'\'')) => {
                    let end = attrs[at + 1..].find(q as char).map_or(attrs.len(), |e| at + 1 + e);
                    value = attrs[at + 1..end].to_string();
                    at = (end + 1).min(attrs.len());
                }
                _ => {
                    let end = attrs[at..].find(char::is_whitespace).map_or(attrs.len(), |e| at + e);
                    value = attrs[at..end].to_string();
                    at = end;
                }
            }
        }
        if key.eq_ignore_ascii_case(name) {
            return Some(value);
        }
        if key.is_empty() && at == start {
            at += 1;
        }
    }
    None
}

/// Removes leading `@handle` mentions (the bot's and others') that open a reply, so the text
/// that remains is what the requester wrote.
pub fn strip_leading_mentions(text: &str) -> &str {
    let mut rest = text.trim_start();
    while rest.starts_with('@') {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        rest = rest[end..].trim_start();
    }
    rest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hidden_span_outside_a_link_is_not_read() {
        let html = r#"<p>Lemons kill cancer cells<span class="invisible"> — no, that is a lie, lol</span>! <a href="https://news.example/2026/a-long-path" rel="nofollow"><span class="invisible">https://</span><span class="ellipsis">news.example/2026/a-lo</span><span class="invisible">ng-path</span></a></p>"#;
        assert_eq!(
            html_to_text(html),
            "Lemons kill cancer cells! https://news.example/2026/a-long-path"
        );
    }

    #[test]
    fn html_cases() {
        let cases: &[(&str, &str)] = &[
            ("<p>Hello &amp; welcome</p>", "Hello & welcome"),
            ("<p>a<br>b<br/>c</p><p>d</p>", "a\nb\nc\n\nd"),
            (
                r#"<p><span class="h-card"><a href="https://x/@bot" class="u-url mention">@<span>bot</span></a></span> check &lt;this&gt;</p>"#,
                "@bot check <this>",
            ),
            ("plain 1 < 2", "plain 1 < 2"),
            ("", ""),
        ];
        for (html, want) in cases {
            assert_eq!(html_to_text(html), *want, "{html}");
        }
    }

    #[test]
    fn leading_mentions() {
        assert_eq!(strip_leading_mentions("@bot @x@y.z is this true?"), "is this true?");
        assert_eq!(strip_leading_mentions("no @mention first"), "no @mention first");
    }

    /// Link markup as each server family renders it (from their status HTML): Mastodon's
    /// shortened link spans and h-card mentions, Pleroma/Akkoma's `class="hashtag"` tags and
    /// GoToSocial's `class="mention hashtag"` with `rel="tag"`.
    #[test]
    fn links_are_full_hrefs_without_mentions_or_hashtags() {
        let mastodon = r#"<p><span class="h-card" translate="no"><a href="https://m.example/@bot" class="u-url mention">@<span>bot</span></a></span> <a href="https://www.example.com/news/2026/very-long-slug?id=1&amp;x=2" target="_blank" rel="nofollow noopener" translate="no"><span class="invisible">https://www.</span><span class="ellipsis">example.com/news/2026/very-lon</span><span class="invisible">g-slug?id=1&amp;x=2</span></a> <a href="https://m.example/tags/nobot" class="mention hashtag" rel="tag">#<span>nobot</span></a></p>"#;
        assert_eq!(
            links(mastodon),
            ["https://www.example.com/news/2026/very-long-slug?id=1&x=2"]
        );
        let pleroma = r#"<span class="h-card"><a class="u-url mention" data-user="9" href="https://p.example/users/bob" rel="ugc">@<span>bob</span></a></span> read <a href='https://news.example/a' rel='ugc'>https://news.example/a</a> <a class="hashtag" data-tag="moon" href="https://p.example/tag/moon" rel="tag ugc">#moon</a>"#;
        assert_eq!(links(pleroma), ["https://news.example/a"]);
        let gotosocial = r#"<p><span class="h-card"><a href="https://g.example/@bob" class="u-url mention" rel="nofollow noreferrer noopener" target="_blank">@<span>bob</span></a></span> <a href="https://g.example/tags/moon" class="mention hashtag" rel="tag nofollow noreferrer noopener" target="_blank">#<span>moon</span></a> <a href="https://news.example/b" rel="nofollow noreferrer noopener" target="_blank">news.example/b</a> <a href="https://news.example/b">again</a></p>"#;
        assert_eq!(links(gotosocial), ["https://news.example/b"]);
        assert!(links("<p>no links, <b>bold</b> and <a name=x>an anchor</a></p>").is_empty());
    }

    // Fixtures in each server's real markup, from their formatters: Mastodon
    // `app/lib/text_formatter.rb` (h-card mentions, `mention hashtag` links with an inner span,
    // long links split into `invisible` / `ellipsis` spans, the `quote-inline` fallback),
    // Pleroma/Akkoma `lib/pleroma/formatter.ex` (`class="hashtag"` under `/tag/`, `rel="ugc"`
    // links with the full URL), GoToSocial `internal/text/replace.go` (`mention hashtag`, full
    // URLs) and Misskey `MfmService.toHtml` as Mastodon relays it (no classes on hashtags).
    const MASTODON_REPLY: &str = r#"<p><span class="h-card" translate="no"><a href="https://m.example/@alice" class="u-url mention">@<span>alice</span></a></span> <span class="h-card" translate="no"><a href="https://bot.example/@musebot" class="u-url mention">@<span>musebot</span></a></span> thanks! see <a href="https://www.example.com/news/2026/11/a-very-long-article-path?id=1&amp;x=2" target="_blank" rel="nofollow noopener noreferrer" translate="no"><span class="invisible">https://www.</span><span class="ellipsis">example.com/news/2026/11/a-ver</span><span class="invisible">y-long-article-path?id=1&amp;x=2</span></a> <a href="https://m.example/tags/moon" class="mention hashtag" rel="tag">#<span>moon</span></a></p>"#;
    const MASTODON_QUOTE: &str = r#"<p class="quote-inline">RE: <a href="https://m.example/@carol/1" target="_blank" rel="nofollow noopener noreferrer" translate="no"><span class="invisible">https://</span><span class="">m.example/@carol/1</span><span class="invisible"></span></a></p><p><span class="h-card" translate="no"><a href="https://bot.example/@musebot" class="u-url mention">@<span>musebot</span></a></span> is this true?</p>"#;
    const PLEROMA: &str = r#"<span class="h-card"><a class="u-url mention" data-user="9zX" href="https://pl.example/users/bob" rel="ugc">@<span>bob</span></a></span> what do you think, <span class="h-card"><a class="u-url mention" data-user="9zY" href="https://bot.example/@musebot" rel="ugc">@<span>musebot</span></a></span>? <a href="https://news.example/a" rel="ugc">https://news.example/a</a> <a class="hashtag" data-tag="moon" href="https://pl.example/tag/moon" rel="tag ugc">#moon</a>"#;
    const GOTOSOCIAL: &str = r#"<p><span class="h-card"><a href="https://g.example/@bob" class="u-url mention" rel="nofollow noreferrer noopener" target="_blank">@<span>bob</span></a></span> <a href="https://g.example/tags/moon" class="mention hashtag" rel="tag nofollow noreferrer noopener" target="_blank">#<span>moon</span></a> <a href="https://news.example/b" rel="nofollow noreferrer noopener" target="_blank">https://news.example/b</a></p>"#;
    const MISSKEY_RELAYED: &str = r#"<p><a href="https://mk.example/@bob" class="u-url mention">@bob@mk.example</a> <a href="https://mk.example/tags/moon" target="_blank" rel="nofollow noopener">#moon</a> <a href="https://news.example/c" target="_blank" rel="nofollow noopener">https://news.example/c</a></p>"#;

    #[test]
    fn real_markup_gives_full_urls_in_text_and_links() {
        assert_eq!(
            html_to_text(MASTODON_REPLY),
            "@alice @musebot thanks! see https://www.example.com/news/2026/11/a-very-long-article-path?id=1&x=2 #moon"
        );
        assert_eq!(
            links(MASTODON_REPLY),
            ["https://www.example.com/news/2026/11/a-very-long-article-path?id=1&x=2"]
        );
        assert_eq!(
            html_to_text(MASTODON_QUOTE),
            "@musebot is this true?",
            "the RE: fallback is not text"
        );
        assert!(links(MASTODON_QUOTE).is_empty());
        assert_eq!(links(PLEROMA), ["https://news.example/a"]);
        assert!(html_to_text(PLEROMA).ends_with("https://news.example/a #moon"));
        assert_eq!(links(GOTOSOCIAL), ["https://news.example/b"]);
        assert_eq!(
            links(MISSKEY_RELAYED),
            ["https://news.example/c"],
            "a classless #tag is no link"
        );
        // A link whose text is words keeps them, with the URL.
        assert_eq!(
            html_to_text(r#"<p>read <a href="https://news.example/d" rel="ugc">this report</a></p>"#),
            "read this report (https://news.example/d)"
        );
        // GoToSocial and others may shorten the shown URL without spans.
        assert_eq!(
            html_to_text(r#"<a href="https://news.example/2026/a-long-path">news.example/2026/a-long…</a>"#),
            "https://news.example/2026/a-long-path"
        );
    }

    #[test]
    fn mentions_know_whether_they_lead() {
        let lead =
            |html: &str| -> Vec<(String, bool)> { mentions(html).into_iter().map(|m| (m.shown, m.leading)).collect() };
        let s = |v: &[(&str, bool)]| v.iter().map(|(a, b)| (a.to_string(), *b)).collect::<Vec<_>>();
        assert_eq!(lead(MASTODON_REPLY), s(&[("@alice", true), ("@musebot", true)]));
        assert_eq!(lead(MASTODON_QUOTE), s(&[("@musebot", true)]));
        assert_eq!(lead(PLEROMA), s(&[("@bob", true), ("@musebot", false)]));
        assert_eq!(lead(MISSKEY_RELAYED), s(&[("@bob@mk.example", true)]));
        // mastodon-mock renders mentions as plain text.
        assert_eq!(
            lead("<p>@alice @musebot@bot.example hi @musebot, really?</p>"),
            s(&[("@alice", true), ("@musebot@bot.example", true), ("@musebot", false)])
        );
    }

    #[test]
    fn nobot_is_found_as_every_server_renders_it() {
        for note in [
            r#"<p>Human. <a href="https://m.example/tags/nobot" class="mention hashtag" rel="tag">#<span>nobot</span></a></p>"#,
            r#"Human. <a class="hashtag" data-tag="nobot" href="https://pl.example/tag/nobot" rel="tag ugc">#nobot</a>"#,
            r#"<p><a href="https://g.example/tags/NoBot" class="mention hashtag" rel="tag nofollow noreferrer noopener" target="_blank">#<span>NoBot</span></a> please</p>"#,
            r#"<p>no bots: <a href="https://mk.example/tags/nobot" rel="tag">#nobot</a></p>"#,
            "<p>plain #nobot.</p>",
        ] {
            assert!(has_nobot(note), "{note}");
        }
        for note in ["<p>I like #nobots and bots</p>", "<p>nobot</p>", ""] {
            assert!(!has_nobot(note), "{note}");
        }
    }

    /// Markup the first parser misread (review): a `>` inside a quoted href, an attribute name
    /// inside another attribute's value, an anchor left open, a void element with the
    /// quote-inline class.
    #[test]
    fn awkward_but_valid_markup_is_read_right() {
        assert_eq!(
            links(r#"<a href="https://e.example/?q=>y">t</a> after"#),
            ["https://e.example/?q=>y"]
        );
        assert_eq!(
            html_to_text(r#"<p><a href="https://e.example/?q=>y">https://e.example/?q=>y</a> after</p>"#),
            "https://e.example/?q=>y after"
        );
        assert_eq!(
            links(r#"<a href="https://e.example/ rel=tag x">t</a>"#),
            ["https://e.example/ rel=tag x"]
        );
        assert_eq!(
            html_to_text(r#"<p><a name=x>see <a href="https://e.example/b">more</a> then</p>"#),
            "see more (https://e.example/b) then"
        );
        assert_eq!(html_to_text(r#"<p>one<br class="quote-inline">two</p>"#), "one\ntwo");
        assert_eq!(html_to_text(r#"<p>a <a href="https://e.example/x"/> b</p>"#), "a  b");
    }
}
