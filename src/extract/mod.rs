//! Main-text extraction with `rs-trafilatura` (no hand-written extractor): text, title, publish
//! date, main image, language, word count, the page's `ClaimReview` markup ([`claimreview`]);
//! and the pipeline's keep/drop decision before
//! relevance — too short (< 100 words) or published after the cut-off time. Untrusted pages go
//! through [`extract_bounded`] (nesting bound, own big-stack thread, time budget).

mod bounded;
pub mod claimreview;

pub use bounded::{extract_bounded, nesting_depth, ExtractError, EXTRACT_BUDGET, EXTRACT_STACK, MAX_NESTING};

use chrono::{DateTime, Utc};
use serde::Serialize;

/// Pages shorter than this are dropped (Muse keeps pages of at least 100 words).
pub const MIN_WORDS: usize = 100;

/// What the bot reads from a page.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Page {
    pub url: Option<String>,
    pub title: Option<String>,
    pub date: Option<DateTime<Utc>>,
    /// The main image, absolute when the page URL is known.
    pub image: Option<String>,
    /// From the page's own metadata (`<html lang>`, meta tags); not detected from the text.
    pub language: Option<String>,
    pub word_count: usize,
    pub text: String,
    /// The page's `ClaimReview` markup ([`claimreview`]): the fact-checks it publishes.
    pub claim_reviews: Vec<crate::model::ClaimReview>,
}

/// The keep/drop decision taken before relevance. Closed: each drop is a trace reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    Keep,
    TooShort {
        words: usize,
        min: usize,
    },
    TooNew {
        published: DateTime<Utc>,
        before: DateTime<Utc>,
    },
}

impl Decision {
    pub fn reason(&self) -> &'static str {
        match self {
            Decision::Keep => "kept",
            Decision::TooShort { .. } => "too short",
            Decision::TooNew { .. } => "too new",
        }
    }
}

/// Extracts a page; `url` resolves relative image links and helps the extractor.
///
/// The page is read as an article: evidence is article text, and skipping rs-trafilatura's
/// page-type classifier (forum, product, listing profiles) cuts extraction time by about a third
/// at the same F1 on the 91 benchmark pages (`scripts/bench-extraction.sh`).
pub fn extract(html: &str, url: Option<&str>) -> Page {
    let options = rs_trafilatura::Options {
        url: url.map(str::to_string),
        include_images: false,
        page_type: Some(rs_trafilatura::page_type::PageType::Article),
        ..Default::default()
    };
    let (text, meta) = match rs_trafilatura::extract_with_options(html, &options) {
        Ok(r) => (r.content_text, Some(r.metadata)),
        Err(e) => {
            tracing::debug!(error = %e, "extraction failed; page treated as empty");
            (String::new(), None)
        }
    };
    let text = text.trim().to_string();
    let word_count = text.split_whitespace().count();
    let (title, date, image, language) = match meta {
        Some(m) => (m.title, m.date, m.image, m.language),
        None => (None, None, None, None),
    };
    let image = image.map(|img| {
        match url
            .and_then(|u| url::Url::parse(u).ok())
            .and_then(|base| base.join(&img).ok())
        {
            Some(abs) => abs.to_string(),
            None => img,
        }
    });
    Page {
        url: url.map(str::to_string),
        title,
        date,
        image,
        language,
        word_count,
        text,
        claim_reviews: url.map(|u| claimreview::read(html, u)).unwrap_or_default(),
    }
}

/// Muse's filters before relevance: at least [`MIN_WORDS`] words, and published before
/// `before` when both are known (undated pages are kept: most pages state no date, and a
/// date-less page cannot be shown to be too new).
pub fn decide(page: &Page, before: Option<DateTime<Utc>>) -> Decision {
    if page.word_count < MIN_WORDS {
        return Decision::TooShort {
            words: page.word_count,
            min: MIN_WORDS,
        };
    }
    if let (Some(published), Some(before)) = (page.date, before) {
        if published >= before {
            return Decision::TooNew { published, before };
        }
    }
    Decision::Keep
}

#[cfg(test)]
mod tests {
    use super::*;

    fn article(words: usize) -> String {
        let body: Vec<String> = (0..words).map(|i| format!("word{i}")).collect();
        format!(
            r#"<html lang="en"><head><title>Moon rocks | Example News</title>
<meta property="og:image" content="/img/moon.jpg">
<meta property="article:published_time" content="2024-03-05T10:00:00Z"></head>
<body><nav>Home | World | Science</nav><article><h1>Moon rocks</h1>
<p>{}</p><p>The samples returned by Apollo show the Moon is made of rock.</p></article>
<footer>Copyright Example News</footer></body></html>"#,
            body.join(" ")
        )
    }

    #[test]
    fn fields_and_decisions() {
        let page = extract(&article(150), Some("https://news.example/science/moon"));
        assert!(page.text.contains("made of rock"), "{}", page.text);
        assert!(!page.text.contains("Copyright"), "{}", page.text);
        assert!(page.word_count >= 150, "{}", page.word_count);
        assert_eq!(page.image.as_deref(), Some("https://news.example/img/moon.jpg"));
        assert_eq!(
            page.date.map(|d| d.to_rfc3339()),
            Some("2024-03-05T10:00:00+00:00".to_string())
        );
        assert_eq!(page.language.as_deref(), Some("en"));
        assert_eq!(decide(&page, None), Decision::Keep);
        let before: DateTime<Utc> = "2024-01-01T00:00:00Z".parse().unwrap();
        assert_eq!(decide(&page, Some(before)).reason(), "too new");
        let after: DateTime<Utc> = "2025-01-01T00:00:00Z".parse().unwrap();
        assert_eq!(decide(&page, Some(after)), Decision::Keep);
        let short = extract(&article(10), None);
        assert_eq!(decide(&short, None).reason(), "too short");
    }

    #[test]
    fn garbage_is_an_empty_page_not_a_panic() {
        for html in ["", "<<<>>>", "\u{0}\u{1}binary", "<html><body></body></html>"] {
            let p = extract(html, None);
            assert_eq!(decide(&p, None).reason(), "too short");
        }
    }
}
