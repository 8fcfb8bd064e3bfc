//! A feed's items: RSS 0.9x/1.0/2.0, Atom and JSON Feed, parsed by `feed-rs` into what the
//! refresher reads — each item's link (absolute, http(s) only), title, date and summary as
//! plain text — newest first. A feed that does not parse is an error naming why; an item
//! without a usable link is left out.

use chrono::{DateTime, Utc};
use url::Url;

/// One feed item.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub url: String,
    pub title: String,
    pub published: Option<DateTime<Utc>>,
    /// The item's summary or content, tags removed (used when its page gives no text).
    pub summary: String,
}

/// The items of the feed read from `feed_url`, newest first (undated last, in feed order).
pub fn items(body: &[u8], feed_url: &Url) -> Result<Vec<Item>, String> {
    let feed = feed_rs::parser::parse(body).map_err(|e| format!("not a feed: {e}"))?;
    let mut out: Vec<Item> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for entry in feed.entries {
        let link = entry
            .links
            .iter()
            .find(|l| l.rel.as_deref().is_none_or(|r| r == "alternate"))
            .or_else(|| {
                entry
                    .links
                    .iter()
                    .find(|l| !matches!(l.rel.as_deref(), Some("self" | "enclosure" | "edit" | "replies")))
            })
            .map(|l| l.href.clone())
            // RSS items may carry only a <guid isPermaLink="true">.
            .or_else(|| entry.id.starts_with("http").then(|| entry.id.clone()));
        let Some(url) = link.and_then(|l| feed_url.join(l.trim()).ok()) else {
            continue;
        };
        if url.scheme() != "http" && url.scheme() != "https" {
            continue;
        }
        let url = url.to_string();
        if !seen.insert(url.clone()) {
            continue;
        }
        let summary = entry
            .content
            .and_then(|c| c.body)
            .or(entry.summary.map(|s| s.content))
            .unwrap_or_default();
        out.push(Item {
            url,
            title: cap_title(&entry.title.map(|t| plain(&t.content)).unwrap_or_default()),
            published: entry.published.or(entry.updated),
            summary: plain(&summary),
        });
    }
    out.sort_by_key(|i| std::cmp::Reverse(i.published));
    Ok(out)
}

/// Text without tags, entities decoded, whitespace collapsed.
fn plain(html: &str) -> String {
    let mut text = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => {
                in_tag = true;
                text.push(' ');
            }
            '>' if in_tag => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    let decoded = html_escape::decode_html_entities(&text);
    decoded.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Url {
        Url::parse("https://checker.example/feed/").unwrap()
    }

    #[test]
    fn rss_items_come_newest_first_with_absolute_links() {
        let rss = br#"<?xml version="1.0"?><rss version="2.0"><channel><title>c</title>
<item><title>Old &amp; busted</title><link>/2024/old</link><pubDate>Mon, 01 Jan 2024 10:00:00 GMT</pubDate>
<description>&lt;p&gt;Old &lt;b&gt;text&lt;/b&gt;&lt;/p&gt;</description></item>
<item><title>New</title><link>https://checker.example/2025/new</link><pubDate>Wed, 01 Jan 2025 10:00:00 GMT</pubDate></item>
<item><title>No link</title></item>
<item><title>Script</title><link>javascript:alert(1)</link></item>
</channel></rss>"#;
        let items = items(rss, &base()).unwrap();
        let urls: Vec<&str> = items.iter().map(|i| i.url.as_str()).collect();
        assert_eq!(
            urls,
            ["https://checker.example/2025/new", "https://checker.example/2024/old"]
        );
        assert_eq!(items[1].title, "Old & busted");
        assert_eq!(items[1].summary, "Old text");
        assert!(items[0].published.unwrap() > items[1].published.unwrap());
    }

    #[test]
    fn atom_entries_use_their_alternate_link() {
        let atom = br#"<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">
<title>t</title><id>urn:x</id><updated>2025-02-01T00:00:00Z</updated>
<entry><title type="html">A &lt;i&gt;check&lt;/i&gt;</title><id>urn:1</id>
<link rel="self" href="https://checker.example/api/1"/><link rel="alternate" href="https://checker.example/a/1"/>
<updated>2025-02-01T00:00:00Z</updated><summary>S</summary></entry></feed>"#;
        let items = items(atom, &base()).unwrap();
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].url, "https://checker.example/a/1");
        assert_eq!(items[0].title, "A check");
    }

    #[test]
    fn a_page_that_is_not_a_feed_is_an_error() {
        assert!(items(b"<html><body>hello</body></html>", &base()).is_err());
        assert!(items(b"", &base()).is_err());
    }
}

/// Characters of a title the index stores (a feed's or a page's title is outside text).
pub const MAX_TITLE_CHARS: usize = 300;

/// A title cut at [`MAX_TITLE_CHARS`] characters, on one line.
pub fn cap_title(title: &str) -> String {
    title
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(MAX_TITLE_CHARS)
        .collect()
}
