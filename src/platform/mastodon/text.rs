//! Mastodon status HTML (sanitised to `p br span a`) to plain text: paragraphs become blank
//! lines, `<br>` a newline, tags go, entities are decoded. Links keep their visible text, which
//! Mastodon already shortens; the full href of each link is kept separately.

/// Plain text of a status's `content`.
pub fn html_to_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        out.push_str(&rest[..lt]);
        let Some(gt) = rest[lt..].find('>') else {
            // A stray '<' with no closing '>': keep it as text.
            out.push_str(&rest[lt..]);
            rest = "";
            break;
        };
        let tag = rest[lt + 1..lt + gt].trim().to_ascii_lowercase();
        let name = tag
            .trim_start_matches('/')
            .split(|c: char| c.is_whitespace() || c == '/')
            .next()
            .unwrap_or("");
        match name {
            "br" => out.push('\n'),
            "p" if tag.starts_with('/') => out.push_str("\n\n"),
            _ => {}
        }
        rest = &rest[lt + gt + 1..];
    }
    out.push_str(rest);
    let decoded = html_escape::decode_html_entities(&out);
    let lines: Vec<&str> = decoded.lines().map(str::trim_end).collect();
    let mut text = lines.join("\n");
    while text.contains("\n\n\n") {
        text = text.replace("\n\n\n", "\n\n");
    }
    text.trim().to_string()
}

/// The full `href` of every link in a status's HTML, in order, once each. Mentions and
/// hashtags are not links: servers mark them with class `mention` / `hashtag` (Mastodon,
/// GoToSocial, Pleroma and Akkoma alike) or `rel="tag"`. The visible text of a long link is
/// shortened by the server (`invisible` / `ellipsis` spans), so only the href is trusted.
pub fn links(html: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        let Some(gt) = rest[lt..].find('>') else { break };
        let tag = &rest[lt + 1..lt + gt];
        rest = &rest[lt + gt + 1..];
        let mut words = tag.splitn(2, char::is_whitespace);
        if !words.next().is_some_and(|n| n.eq_ignore_ascii_case("a")) {
            continue;
        }
        let attrs = words.next().unwrap_or("");
        let class = attribute(attrs, "class").unwrap_or_default().to_ascii_lowercase();
        let rel = attribute(attrs, "rel").unwrap_or_default().to_ascii_lowercase();
        let is_tag_or_mention = class.split_whitespace().any(|c| c == "mention" || c == "hashtag")
            || rel.split_whitespace().any(|r| r == "tag");
        let Some(href) = attribute(attrs, "href") else { continue };
        let href = html_escape::decode_html_entities(&href).trim().to_string();
        let web = href.starts_with("https://") || href.starts_with("http://");
        if web && !is_tag_or_mention && !out.contains(&href) {
            out.push(href);
        }
    }
    out
}

/// The value of attribute `name` in a tag's attribute text (quoted with `"` or `'`, or bare).
fn attribute(attrs: &str, name: &str) -> Option<String> {
    let lower = attrs.to_ascii_lowercase();
    let mut from = 0;
    while let Some(pos) = lower[from..].find(name) {
        let at = from + pos;
        from = at + name.len();
        let before_ok = at == 0 || lower.as_bytes()[at - 1].is_ascii_whitespace();
        let after = lower[from..].trim_start();
        if !before_ok || !after.starts_with('=') {
            continue;
        }
        let value_start = attrs.len() - after.len() + 1;
        let value = attrs[value_start..].trim_start();
        return Some(match value.chars().next() {
            Some(q @ ('"' | '\'')) => value[1..].split(q).next().unwrap_or("").to_string(),
            _ => value.split(char::is_whitespace).next().unwrap_or("").to_string(),
        });
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
}
