//! schema.org `ClaimReview` markup on a fetched page (issue: evidence from fact-checkers):
//! every `<script type="application/ld+json">` block is read, in every shape the schema
//! allows — one object, an array, a `@graph`, `@type` as a string or an array, `author` as an
//! object, an array or a name, `reviewRating` with words (`alternateName`) or only numbers
//! (`ratingValue` within `worstRating`..`bestRating`), `itemReviewed.appearance` as URLs or
//! objects. A block that is not JSON, or a review without a claim, is skipped (a page is not
//! refused for its markup). Bounded: at most [`MAX_BLOCKS`] blocks of [`MAX_BLOCK_BYTES`].

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::Value;

use crate::model::{ClaimReview, ReviewSource};

/// JSON-LD blocks read per page, and bytes per block.
pub const MAX_BLOCKS: usize = 20;
pub const MAX_BLOCK_BYTES: usize = 256 * 1024;
/// Reviews kept per page.
const MAX_REVIEWS: usize = 10;

/// The claim reviews of `html`, published at `page_url` (their URL, whatever `url` the markup
/// gives).
pub fn read(html: &str, page_url: &str) -> Vec<ClaimReview> {
    let mut out = Vec::new();
    for block in json_ld_blocks(html).into_iter().take(MAX_BLOCKS) {
        let Ok(v) = serde_json::from_str::<Value>(block.trim()) else {
            continue;
        };
        walk(&v, page_url, &mut out, 0);
        if out.len() >= MAX_REVIEWS {
            break;
        }
    }
    out.truncate(MAX_REVIEWS);
    out
}

/// The contents of every `<script … type="application/ld+json" …>` element.
fn json_ld_blocks(html: &str) -> Vec<&str> {
    let lower = html.to_ascii_lowercase();
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = lower[at..].find("<script") {
        let open = at + i;
        let Some(gt) = lower[open..].find('>') else { break };
        let attrs = &lower[open..open + gt];
        let body_start = open + gt + 1;
        let Some(end) = lower[body_start..].find("</script") else {
            break;
        };
        if attrs.contains("application/ld+json") && end <= MAX_BLOCK_BYTES {
            out.push(&html[body_start..body_start + end]);
        }
        at = body_start + end;
    }
    out
}

fn walk(v: &Value, page_url: &str, out: &mut Vec<ClaimReview>, depth: usize) {
    if depth > 8 || out.len() >= MAX_REVIEWS {
        return;
    }
    match v {
        Value::Array(items) => items.iter().for_each(|x| walk(x, page_url, out, depth + 1)),
        Value::Object(o) => {
            if is_type(v, "ClaimReview") {
                if let Some(r) = review(v, page_url) {
                    out.push(r);
                }
            }
            if let Some(graph) = o.get("@graph") {
                walk(graph, page_url, out, depth + 1);
            }
            // A review nested in an article (`review`, `mainEntity`, `hasPart`).
            for key in ["review", "mainEntity", "hasPart", "itemListElement"] {
                if let Some(x) = o.get(key) {
                    walk(x, page_url, out, depth + 1);
                }
            }
        }
        _ => {}
    }
}

fn is_type(v: &Value, name: &str) -> bool {
    match v.get("@type") {
        Some(Value::String(t)) => t.rsplit(['/', ':']).next() == Some(name),
        Some(Value::Array(ts)) => ts
            .iter()
            .any(|t| t.as_str().and_then(|t| t.rsplit(['/', ':']).next()) == Some(name)),
        _ => false,
    }
}

fn text(v: Option<&Value>) -> Option<String> {
    let s = match v? {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Array(a) => return a.iter().find_map(|x| text(Some(x))),
        Value::Object(o) => return text(o.get("name")).or_else(|| text(o.get("@value"))),
        _ => return None,
    };
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    (!s.is_empty()).then(|| s.chars().take(300).collect())
}

fn number(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .filter(|f: &f64| f.is_finite())
}

/// A date as publishers write it: RFC 3339, or a bare `YYYY-MM-DD`.
pub fn date(v: Option<&Value>) -> Option<DateTime<Utc>> {
    let s = v?.as_str()?.trim();
    DateTime::parse_from_rfc3339(s)
        .map(|d| d.with_timezone(&Utc))
        .ok()
        .or_else(|| {
            NaiveDate::parse_from_str(s.get(..10)?, "%Y-%m-%d")
                .ok()
                .and_then(|d| d.and_hms_opt(0, 0, 0))
                .map(|d| d.and_utc())
        })
}

/// One `ClaimReview` object as a dump or a feed gives it, away from any page: its own `url` is
/// the review's (absolute http(s), else none), with its headline (`name`, `headline`). `None`
/// for an object that is not a `ClaimReview`, has no claim or no URL.
pub fn review_object(v: &Value) -> Option<(ClaimReview, String)> {
    if !is_type(v, "ClaimReview") {
        return None;
    }
    let url = text(v.get("url")).filter(|u| u.starts_with("https://") || u.starts_with("http://"))?;
    let mut r = review(v, &url)?;
    r.source = ReviewSource::Corpus;
    let title = text(v.get("headline"))
        .or_else(|| text(v.get("name")))
        .unwrap_or_default();
    Some((r, title))
}

/// Every `ClaimReview` object in `v` (one, an array, a `@graph`, nested in an article), as
/// [`walk`] finds them on a page.
pub fn review_objects(v: &Value) -> Vec<&Value> {
    fn go<'a>(v: &'a Value, out: &mut Vec<&'a Value>, depth: usize) {
        if depth > 8 {
            return;
        }
        match v {
            Value::Array(items) => items.iter().for_each(|x| go(x, out, depth + 1)),
            Value::Object(o) => {
                if is_type(v, "ClaimReview") {
                    out.push(v);
                }
                for key in [
                    "@graph",
                    "review",
                    "mainEntity",
                    "hasPart",
                    "itemListElement",
                    "dataFeedElement",
                    "item",
                ] {
                    if let Some(x) = o.get(key) {
                        go(x, out, depth + 1);
                    }
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    go(v, &mut out, 0);
    out
}

/// The claim reviews of one answer page of the Fact Check Tools API: `claims[]` (search) or `results[].claim`
/// (imageSearch); a review without a URL is skipped.
pub fn api_reviews(page: &Value) -> Vec<ClaimReview> {
    api_reviews_titled(page).into_iter().map(|(r, _)| r).collect()
}

/// [`api_reviews`], each with its review's `title`.
pub fn api_reviews_titled(page: &Value) -> Vec<(ClaimReview, String)> {
    let claims = page["claims"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .chain(
            page["results"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| r["claim"].clone()),
        );
    let mut out = Vec::new();
    for claim in claims {
        let text = |v: &Value| v.as_str().map(|s| s.chars().take(300).collect::<String>());
        for r in claim["claimReview"].as_array().into_iter().flatten() {
            let Some(url) = r["url"].as_str().filter(|u| u.starts_with("http")) else {
                continue;
            };
            let title = text(&r["title"]).unwrap_or_default();
            out.push((
                ClaimReview {
                    url: url.to_string(),
                    publisher: text(&r["publisher"]["name"]).unwrap_or_default(),
                    publisher_site: text(&r["publisher"]["site"]),
                    claim: text(&claim["text"]).unwrap_or_default(),
                    claimant: text(&claim["claimant"]),
                    rating: text(&r["textualRating"]).unwrap_or_default(),
                    rating_value: None,
                    best_rating: None,
                    worst_rating: None,
                    reviewed: date(Some(&r["reviewDate"])),
                    language: text(&r["languageCode"]),
                    appearances: Vec::new(),
                    source: ReviewSource::Api,
                    claim_cosine: None,
                    other_claim: false,
                    same_claim: false,
                    fact_checker: None,
                },
                title,
            ));
        }
    }
    out
}

fn review(v: &Value, page_url: &str) -> Option<ClaimReview> {
    let claim = text(v.get("claimReviewed"))?;
    let rating = v.get("reviewRating");
    let author = v.get("author").or_else(|| v.get("publisher"));
    let item = v.get("itemReviewed");
    let mut appearances: Vec<String> = Vec::new();
    let appearance = item.and_then(|i| i.get("appearance").or_else(|| i.get("firstAppearance")));
    for a in appearance
        .map(|a| a.as_array().cloned().unwrap_or_else(|| vec![a.clone()]))
        .unwrap_or_default()
    {
        let url = a.as_str().map(str::to_string).or_else(|| text(a.get("url")));
        appearances.extend(
            url.filter(|u| u.starts_with("http"))
                .map(|u| u.chars().take(500).collect()),
        );
    }
    appearances.truncate(10);
    // The review is this page's: it is cited where the page landed and was judged, never at
    // a `url` the markup names (outside text does not choose a link).
    Some(ClaimReview {
        url: page_url.to_string(),
        publisher: text(author).unwrap_or_default(),
        publisher_site: author.and_then(|a| text(a.get("url"))),
        claim,
        claimant: item.and_then(|i| text(i.get("author"))),
        rating: rating
            .and_then(|r| text(r.get("alternateName")).or_else(|| text(r.get("name"))))
            .unwrap_or_default(),
        rating_value: rating.and_then(|r| number(r.get("ratingValue"))),
        best_rating: rating.and_then(|r| number(r.get("bestRating"))),
        worst_rating: rating.and_then(|r| number(r.get("worstRating"))),
        reviewed: date(v.get("datePublished")).or_else(|| date(v.get("dateModified"))),
        language: text(v.get("inLanguage")),
        appearances,
        source: ReviewSource::Markup,
        claim_cosine: None,
        other_claim: false,
        same_claim: false,
        fact_checker: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(json: &str) -> String {
        format!(
            "<html><head><script type=\"application/ld+json\">{json}</script>\
             <SCRIPT Type='application/ld+json' data-x>not json at all</SCRIPT>\
             <script>var x = '<script type=\"application/ld+json\">';</script></head><body>x</body></html>"
        )
    }

    #[test]
    fn every_shape_the_schema_allows_is_read() {
        // One object, words and numbers (PolitiFact-style), author an object.
        let one = page(
            r#"{"@context":"https://schema.org","@type":"ClaimReview","url":"https://www.politifact.com/r/1",
                "claimReviewed":"The Moon is made of cheese.","datePublished":"2024-03-05",
                "author":{"@type":"Organization","name":"PolitiFact","url":"https://www.politifact.com"},
                "reviewRating":{"@type":"Rating","ratingValue":"1","bestRating":"6","worstRating":"1","alternateName":"Pants on Fire"},
                "itemReviewed":{"@type":"Claim","author":{"@type":"Person","name":"A. Blogger"},"appearance":[{"@type":"CreativeWork","url":"https://blog.example/cheese"}]}}"#,
        );
        let r = read(&one, "https://www.politifact.com/r/1");
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(r[0].publisher, "PolitiFact");
        assert_eq!(r[0].rating, "Pants on Fire");
        assert_eq!(
            (r[0].rating_value, r[0].best_rating, r[0].worst_rating),
            (Some(1.0), Some(6.0), Some(1.0))
        );
        assert_eq!(r[0].claimant.as_deref(), Some("A. Blogger"));
        assert_eq!(r[0].appearances, vec!["https://blog.example/cheese"]);
        assert_eq!(r[0].reviewed.unwrap().format("%Y-%m-%d").to_string(), "2024-03-05");
        // A @graph with the review among other nodes, @type an array, author an array of names,
        // the rating only as numbers, no url (the page's).
        let graph = page(
            r#"{"@context":"https://schema.org","@graph":[{"@type":"WebPage","name":"x"},
                {"@type":["ClaimReview","Review"],"claimReviewed":"Vaccines contain chips","author":["Full Fact"],
                 "datePublished":"2023-01-02T10:00:00+01:00","reviewRating":{"ratingValue":1,"bestRating":5,"worstRating":1}}]}"#,
        );
        let r = read(&graph, "https://fullfact.org/health/chips/");
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(
            (r[0].url.as_str(), r[0].publisher.as_str()),
            ("https://fullfact.org/health/chips/", "Full Fact")
        );
        assert_eq!(r[0].rating_text(), "1 of 5");
        assert_eq!(r[0].hint(), crate::model::RatingHint::False);
        // An array of reviews, one without a claim (skipped), nested in an article's `review`.
        let many = page(
            r#"[{"@type":"NewsArticle","review":{"@type":"ClaimReview","claimReviewed":"A","reviewRating":{"alternateName":"False"},"author":"AFP"}},
                {"@type":"ClaimReview","reviewRating":{"alternateName":"True"}},
                {"@type":"http://schema.org/ClaimReview","claimReviewed":"B","reviewRating":{"name":"Mostly True"},"author":{"name":"Snopes"}}]"#,
        );
        let r = read(&many, "https://x.example/p");
        let got: Vec<(&str, &str)> = r.iter().map(|x| (x.claim.as_str(), x.rating.as_str())).collect();
        assert_eq!(got, vec![("A", "False"), ("B", "Mostly True")]);
        // No markup, broken markup: nothing, no panic.
        assert!(read("<html><body>plain</body></html>", "https://x.example").is_empty());
        assert!(read(&page("{\"@type\":\"ClaimReview\", broken"), "https://x.example").is_empty());
        assert!(read("<script type=application/ld+json>", "https://x.example").is_empty());
    }
}
