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
}
