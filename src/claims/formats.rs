//! What `musebot index import` reads, in the formats fact-checks are published in, told apart
//! by their bytes: a schema.org `DataFeed` of `ClaimReview`s (`dataFeedElement[].item`, the
//! format of the Fact Check Markup Tool's and Data Commons' fact-check feeds), a JSON array or
//! JSONL of `ClaimReview` objects, the Fact Check Tools API's answer (`claims[].claimReview[]`),
//! and CSV with named columns (a header row; the names below, in any case). Each record
//! becomes an [`Entry`] or a [`Skip`] naming where it was and why; nothing in a record is
//! anything but data. Bounded: a JSON document is read whole up to [`MAX_JSON_BYTES`]; JSONL
//! and CSV are read a record at a time, each line up to [`MAX_LINE_BYTES`].

use std::io::BufRead;

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::Value;

use super::Entry;
use crate::model::{ClaimReview, ReviewSource};

/// A whole-document JSON file (a `DataFeed`, an array) is read up to this size (its parsed
/// tree takes a few times that in memory; a larger dump is imported as JSONL).
pub const MAX_JSON_BYTES: u64 = 512 << 20;
/// A JSONL line or CSV record read at most.
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// Characters of a claim, rating, headline or name kept.
const FIELD_CHARS: usize = 1_000;

/// A record left out, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Skip {
    /// "line 7", "item 3", "row 12".
    pub at: String,
    pub why: String,
}

/// The file's format, as sniffed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON document: a `DataFeed`, an array, an API answer, one `ClaimReview`.
    Json,
    Jsonl,
    Csv,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Json => "JSON",
            Format::Jsonl => "JSONL",
            Format::Csv => "CSV",
        }
    }
}

/// Tells the format from the file's first bytes: `[` is a JSON array; `{` is JSONL when its
/// first line is a whole JSON value and more lines follow, else one JSON document; anything
/// else is CSV.
pub fn sniff(head: &[u8]) -> Format {
    let text = String::from_utf8_lossy(head);
    let text = text.trim_start_matches('\u{feff}').trim_start();
    match text.chars().next() {
        Some('[') => Format::Json,
        Some('{') => {
            let first = text.lines().next().unwrap_or("");
            let more = text.lines().skip(1).any(|l| !l.trim().is_empty());
            if serde_json::from_str::<Value>(first).is_ok() && more {
                Format::Jsonl
            } else {
                Format::Json
            }
        }
        _ => Format::Csv,
    }
}

/// The entries of one JSON value (a `DataFeed`, an array, an API answer, one review), each
/// with its place (`what` + number) for skips.
pub fn from_json(v: &Value, what: &str, out: &mut Vec<Result<Entry, Skip>>) {
    // The Fact Check Tools API's answer: claims with their reviews.
    if v.get("claims").is_some_and(Value::is_array) {
        let reviews = crate::extract::claimreview::api_reviews_titled(v);
        if reviews.is_empty() {
            out.push(Err(Skip {
                at: what.into(),
                why: "an API answer with no review that has a URL".into(),
            }));
        }
        for (mut review, title) in reviews {
            review.source = ReviewSource::Corpus;
            out.push(finish(review, title).map_err(|why| Skip { at: what.into(), why }));
        }
        return;
    }
    let objects = crate::extract::claimreview::review_objects(v);
    if objects.is_empty() {
        out.push(Err(Skip {
            at: what.into(),
            why: "no ClaimReview object in it (\"@type\": \"ClaimReview\")".into(),
        }));
        return;
    }
    let many = objects.len() > 1;
    for (i, o) in objects.into_iter().enumerate() {
        let at = if many {
            format!("{what}, review {}", i + 1)
        } else {
            what.to_string()
        };
        let entry = match crate::extract::claimreview::review_object(o) {
            Some((review, title)) => finish(review, title),
            None if o.get("claimReviewed").is_none() => Err("no claimReviewed".to_string()),
            None => Err("no absolute http(s) url of the review".to_string()),
        };
        out.push(entry.map_err(|why| Skip { at, why }));
    }
}

/// A review's last checks: a claim and a URL, fields cleaned and cut.
fn finish(mut r: ClaimReview, title: String) -> Result<Entry, String> {
    let cut = |s: &str| -> String {
        crate::model::rating::clean(s)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(FIELD_CHARS)
            .collect()
    };
    r.claim = cut(&r.claim);
    r.rating = cut(&r.rating);
    r.publisher = cut(&r.publisher);
    if r.claim.is_empty() {
        return Err("no claim text".into());
    }
    let url = url::Url::parse(r.url.trim()).map_err(|e| format!("the review URL is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err("the review URL is not an absolute http(s) URL".into());
    }
    r.url = url.to_string();
    Ok(Entry {
        review: r,
        title: cut(&title),
    })
}

/// A date as fact-check dumps write it: RFC 3339, `YYYY-MM-DD…`, "26 May 2015", "May 26, 2015".
pub fn date(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    if let Some(d) = crate::extract::claimreview::date(Some(&Value::String(s.to_string()))) {
        return Some(d);
    }
    ["%d %B %Y", "%B %d, %Y", "%d %b %Y", "%b %d, %Y", "%d/%m/%Y"]
        .iter()
        .find_map(|f| NaiveDate::parse_from_str(s, f).ok())
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|d| d.and_utc())
}

/// The CSV columns read, each with the names it is known by (compared in lower case, without
/// spaces, `_` and `-`).
const COLUMNS: &[(&str, &[&str])] = &[
    ("url", &["url", "reviewurl", "claimreviewurl", "factcheckurl", "link"]),
    ("claim", &["claim", "claimreviewed", "claimtext", "text"]),
    (
        "rating",
        &["rating", "textualrating", "alternatename", "verdict", "label"],
    ),
    (
        "publisher",
        &["publisher", "publishername", "author", "organization", "factchecker"],
    ),
    ("site", &["publishersite", "site"]),
    ("date", &["date", "reviewdate", "datepublished", "published"]),
    ("title", &["title", "headline", "name"]),
    ("language", &["language", "lang", "inlanguage", "languagecode"]),
    ("claimant", &["claimant", "claimauthor", "speaker"]),
    ("rating_value", &["ratingvalue"]),
    ("best_rating", &["bestrating"]),
    ("worst_rating", &["worstrating"]),
];

/// Which column of the header holds each field; an error names what is missing.
pub fn csv_columns(header: &csv::StringRecord) -> Result<Vec<(&'static str, usize)>, String> {
    let squash = |s: &str| {
        s.trim_start_matches('\u{feff}')
            .chars()
            .filter(|c| !matches!(c, ' ' | '_' | '-'))
            .collect::<String>()
            .to_lowercase()
    };
    let mut found = Vec::new();
    for (field, names) in COLUMNS {
        if let Some(i) = header.iter().position(|h| names.contains(&squash(h).as_str())) {
            found.push((*field, i));
        }
    }
    for need in ["url", "claim"] {
        if !found.iter().any(|(f, _)| *f == need) {
            return Err(format!(
                "the CSV header has no {need} column (known names: {}); the header read: {:?}",
                COLUMNS
                    .iter()
                    .find(|(f, _)| *f == need)
                    .map(|(_, n)| n.join(", "))
                    .unwrap_or_default(),
                header.iter().collect::<Vec<_>>()
            ));
        }
    }
    Ok(found)
}

/// One CSV record → an entry.
pub fn from_csv(record: &csv::StringRecord, columns: &[(&'static str, usize)]) -> Result<Entry, String> {
    let get = |name: &str| {
        columns
            .iter()
            .find(|(f, _)| *f == name)
            .and_then(|(_, i)| record.get(*i))
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let number = |name: &str| get(name).and_then(|s| s.parse::<f64>().ok()).filter(|f| f.is_finite());
    let review = ClaimReview {
        url: get("url").unwrap_or("").to_string(),
        publisher: get("publisher").unwrap_or("").to_string(),
        publisher_site: get("site").map(str::to_string),
        claim: get("claim").unwrap_or("").to_string(),
        claimant: get("claimant").map(str::to_string),
        rating: get("rating").unwrap_or("").to_string(),
        rating_value: number("rating_value"),
        best_rating: number("best_rating"),
        worst_rating: number("worst_rating"),
        reviewed: get("date").and_then(date),
        language: get("language").map(str::to_string),
        appearances: Vec::new(),
        source: ReviewSource::Corpus,
        claim_cosine: None,
        other_claim: false,
        same_claim: false,
        fact_checker: None,
    };
    if review.url.is_empty() {
        return Err("no review URL".into());
    }
    finish(review, get("title").unwrap_or("").to_string())
}

/// The next line (without its newline) of at most `max` bytes, and whether it was longer (then
/// the rest of it is read past, never held); `None` at the end.
fn bounded_line(r: &mut impl BufRead, max: usize) -> std::io::Result<Option<(Vec<u8>, bool)>> {
    let mut line = Vec::new();
    let mut over = false;
    let mut any = false;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(any.then_some((line, over)));
        }
        any = true;
        let (chunk, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !over && line.len() + chunk.len() <= max {
            line.extend_from_slice(chunk);
        } else {
            over = true;
            line.clear();
        }
        let used = done.unwrap_or(buf.len());
        r.consume(used);
        if done.is_some() {
            return Ok(Some((line, over)));
        }
    }
}

/// Every record of a file, in order, through `each` (so a JSONL or CSV dump of any length is
/// never held whole). The error is the file's own (unreadable, not JSON, a CSV without the
/// columns it needs).
pub fn read(path: &std::path::Path, each: &mut dyn FnMut(Result<Entry, Skip>)) -> Result<Format, String> {
    let open = || std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()));
    let mut head = vec![0u8; 64 * 1024];
    let n = {
        use std::io::Read;
        let mut f = open()?;
        let mut n = 0;
        while n < head.len() {
            match f.read(&mut head[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
            }
        }
        n
    };
    let format = sniff(&head[..n]);
    match format {
        Format::Json => {
            let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            if size > MAX_JSON_BYTES {
                return Err(format!(
                    "{} is one JSON document of {size} bytes, over the {MAX_JSON_BYTES} read whole — split it, or convert it to JSONL (one review per line)",
                    path.display()
                ));
            }
            let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let text = String::from_utf8_lossy(&bytes);
            let v: Value = serde_json::from_str(text.trim_start_matches('\u{feff}'))
                .map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
            let mut out = Vec::new();
            match &v {
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        from_json(item, &format!("item {}", i + 1), &mut out);
                    }
                }
                v => from_json(v, "the document", &mut out),
            }
            out.into_iter().for_each(each);
        }
        Format::Jsonl => {
            let mut reader = std::io::BufReader::new(open()?);
            for i in 0.. {
                let at = format!("line {}", i + 1);
                let (line, over) = match bounded_line(&mut reader, MAX_LINE_BYTES) {
                    Ok(Some(l)) => l,
                    Ok(None) => break,
                    Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
                };
                if over {
                    each(Err(Skip {
                        at,
                        why: format!("over {MAX_LINE_BYTES} bytes"),
                    }));
                    continue;
                }
                let text = String::from_utf8_lossy(&line);
                let text = text.trim().trim_start_matches('\u{feff}');
                if text.is_empty() {
                    continue;
                }
                match serde_json::from_str::<Value>(text) {
                    Ok(v) => {
                        let mut out = Vec::new();
                        from_json(&v, &at, &mut out);
                        out.into_iter().for_each(&mut *each);
                    }
                    Err(e) => each(Err(Skip {
                        at,
                        why: format!("not JSON: {e}"),
                    })),
                }
            }
        }
        Format::Csv => {
            let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(open()?);
            let header = reader
                .headers()
                .map_err(|e| format!("{} is neither JSON nor CSV: {e}", path.display()))?
                .clone();
            let columns = csv_columns(&header).map_err(|e| format!("{}: {e}", path.display()))?;
            for (i, record) in reader.records().enumerate() {
                let at = format!("row {}", i + 2);
                match record {
                    Ok(r) if r.as_byte_record().as_slice().len() > MAX_LINE_BYTES => each(Err(Skip {
                        at,
                        why: format!("over {MAX_LINE_BYTES} bytes"),
                    })),
                    Ok(r) => each(from_csv(&r, &columns).map_err(|why| Skip { at, why })),
                    Err(e) => each(Err(Skip {
                        at,
                        why: format!("not CSV: {e}"),
                    })),
                }
            }
        }
    }
    Ok(format)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(path: &std::path::Path) -> (Format, Vec<Result<Entry, Skip>>) {
        let mut out = Vec::new();
        let f = read(path, &mut |e| out.push(e)).unwrap();
        (f, out)
    }

    fn write(text: &str) -> tempfile::NamedTempFile {
        use std::io::Write;
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    const REVIEW: &str = r#"{"@context":"https://schema.org","@type":"ClaimReview","url":"https://www.snopes.com/fact-check/moon-wall/","claimReviewed":"The Great Wall is visible from the Moon","datePublished":"2024-05-01","name":"Is the Great Wall visible from the Moon?","author":{"@type":"Organization","name":"Snopes"},"reviewRating":{"@type":"Rating","alternateName":"False","ratingValue":1,"bestRating":5,"worstRating":1}}"#;

    #[test]
    fn a_data_feed_an_array_jsonl_and_the_api_answer() {
        let feed = format!(
            r#"{{"@context":"https://schema.org","@type":"DataFeed","dataFeedElement":[{{"@type":"DataFeedItem","item":[{REVIEW}]}},{{"@type":"DataFeedItem","item":{{"@type":"ClaimReview","claimReviewed":"x"}}}}]}}"#
        );
        let (f, out) = all(write(&feed).path());
        assert_eq!(f, Format::Json);
        let e = out[0].as_ref().unwrap();
        assert_eq!(e.review.url, "https://www.snopes.com/fact-check/moon-wall/");
        assert_eq!(e.review.rating, "False");
        assert_eq!(e.title, "Is the Great Wall visible from the Moon?");
        assert_eq!(e.review.source, ReviewSource::Corpus);
        assert!(out[1].as_ref().unwrap_err().why.contains("url"), "{out:?}");

        let (f, out) = all(write(&format!("[{REVIEW}, {{\"a\": 1}}]")).path());
        assert_eq!(f, Format::Json);
        assert!(out[0].is_ok());
        assert_eq!(out[1].as_ref().unwrap_err().at, "item 2");

        let (f, out) = all(write(&format!("{REVIEW}\nnot json\n\n{REVIEW}\n")).path());
        assert_eq!(f, Format::Jsonl);
        assert_eq!(out.len(), 3);
        assert_eq!(out[1].as_ref().unwrap_err().at, "line 2");
        // A line over the bound is skipped without being held; the next line is read.
        let long = format!("{REVIEW}\n{}\n{REVIEW}", "x".repeat(MAX_LINE_BYTES + 10));
        let (_, out) = all(write(&long).path());
        assert_eq!(out.len(), 3);
        assert!(out[1].as_ref().unwrap_err().why.starts_with("over"), "{:?}", out[1]);
        assert!(out[2].is_ok());

        let api = r#"{"claims":[{"text":"Vaccines contain microchips","claimant":"posts","claimReview":[{"publisher":{"name":"PolitiFact","site":"politifact.com"},"url":"https://www.politifact.com/factchecks/2021/x/","title":"No chips","reviewDate":"2021-01-02T00:00:00Z","textualRating":"Pants on Fire","languageCode":"en"}]}]}"#;
        let (_, out) = all(write(api).path());
        let e = out[0].as_ref().unwrap();
        assert_eq!(
            (e.review.rating.as_str(), e.title.as_str()),
            ("Pants on Fire", "No chips")
        );
        assert_eq!(e.review.source, ReviewSource::Corpus);
    }

    #[test]
    fn csv_with_named_columns_in_any_case_and_order() {
        let text = "Review URL,Claim Reviewed,textualRating,Publisher,Date,Headline\nhttps://fullfact.org/a,Tea cures colds,False,Full Fact,26 May 2015,Tea\n,No url,False,X,,\nnot a url,c,False,X,,\n";
        let (f, out) = all(write(text).path());
        assert_eq!(f, Format::Csv);
        let e = out[0].as_ref().unwrap();
        assert_eq!(e.review.claim, "Tea cures colds");
        assert_eq!(e.review.reviewed.unwrap().format("%Y-%m-%d").to_string(), "2015-05-26");
        assert_eq!(out[1].as_ref().unwrap_err().at, "row 3");
        assert!(out[2].as_ref().unwrap_err().why.contains("not a URL"));
        let bad = write("a,b\n1,2\n");
        let err = read(bad.path(), &mut |_| {}).unwrap_err();
        assert!(err.contains("no url column"), "{err}");
    }
}
