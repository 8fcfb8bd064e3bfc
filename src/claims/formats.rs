//! What `musebot index import` reads, in the formats fact-checks are published in, told apart
//! by their bytes: a schema.org `DataFeed` of `ClaimReview`s (`dataFeedElement[].item`, the
//! format of the Fact Check Markup Tool's and Data Commons' fact-check feeds), a JSON array or
//! JSONL of `ClaimReview` objects, the Fact Check Tools API's answer (`claims[].claimReview[]`),
//! and CSV with named columns (a header row; the names below, in any case). Each record
//! becomes an [`Entry`] or a [`Skip`] naming where it was and why; nothing in a record is
//! anything but data. Bounded: a JSON document is streamed a piece at a time (an item of its
//! array, an element of a `DataFeed`), each piece up to [`MAX_JSON_PIECE_BYTES`]; JSONL and
//! CSV are read a record at a time, each record up to [`MAX_LINE_BYTES`] (a CSV quote that is
//! never closed costs its line only: see [`lines`]).

mod lines;
mod stream;

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::Value;

use super::Entry;
use crate::model::{ClaimReview, ReviewSource};

/// A piece of a JSON document (an item of its array, an element of a `DataFeed`, the top
/// object's own fields) read at most: the document is streamed, one piece held at a time. A
/// parsed piece can take 10–16 times its bytes (`[0,0,…]` as values), so 8 MiB — a review is a
/// few KiB — keeps one piece's memory near 128 MiB at worst.
pub const MAX_JSON_PIECE_BYTES: u64 = 8 << 20;
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
    let mut push = |r| out.push(r);
    // The Fact Check Tools API's answer: claims with their reviews.
    if v.get("claims").is_some_and(Value::is_array) {
        if api_entries(v, what, &mut push) == 0 {
            push(Err(Skip {
                at: what.into(),
                why: NO_API_REVIEW.into(),
            }));
        }
    } else if review_entries(v, what, &mut push) == 0 {
        push(Err(Skip {
            at: what.into(),
            why: NO_REVIEW.into(),
        }));
    }
}

/// Why an API answer is skipped whole, and a value with no review at all.
const NO_API_REVIEW: &str = "an API answer with no review that has a URL";
const NO_REVIEW: &str = "no ClaimReview object in it (\"@type\": \"ClaimReview\")";

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

/// Every record of a file, in order, through `each`: a file of any length or format is never
/// held whole (a JSON document is read piece by piece, JSONL and CSV a record at a time). The
/// error is the file's own (unreadable, not JSON, a CSV without the columns it needs); a JSON
/// document that stops being readable after some of it was read ends with a skip instead.
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
        Format::Json => read_json(&path.display().to_string(), open()?, each)?,
        Format::Jsonl => {
            let mut reader = std::io::BufReader::new(open()?);
            for i in 0.. {
                let at = format!("line {}", i + 1);
                let (line, over) = match lines::bounded_line(&mut reader, b'\n', MAX_LINE_BYTES) {
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
            // A file with carriage returns and no line feed (an old Mac export) has those for lines.
            let head = &head[..n];
            let sep = if head.contains(&b'\r') && !head.contains(&b'\n') {
                b'\r'
            } else {
                b'\n'
            };
            read_csv(&path.display().to_string(), std::io::BufReader::new(open()?), sep, each)?
        }
    }
    Ok(format)
}

/// One JSON document, piece by piece (see [`stream`]): a top-level array's items each as
/// [`from_json`] reads them ("item 3"); a top-level object's reviews element by element
/// ("dataFeedElement 3", "claims 2" for the API's), then those in its own fields ("the
/// document"). The error names the file (`name`): unreadable, or not JSON before any piece.
fn read_json(name: &str, reader: impl std::io::Read, each: &mut dyn FnMut(Result<Entry, Skip>)) -> Result<(), String> {
    let mut pieces = 0usize;
    // The reviews found in the top-level object, and whether it is the API's answer.
    let (mut found, mut api) = (0usize, false);
    let result = stream::read(reader, MAX_JSON_PIECE_BYTES, &mut |piece| {
        pieces += 1;
        match piece {
            stream::Piece::Item(n, v) => {
                let mut out = Vec::new();
                from_json(&v, &format!("item {n}"), &mut out);
                out.into_iter().for_each(&mut *each);
            }
            stream::Piece::Element("claims", n, claim) => {
                api = true;
                let at = format!("claims {n}");
                found += api_entries(&serde_json::json!({ "claims": [claim] }), &at, each);
            }
            stream::Piece::Element(key, n, v) => found += review_entries(&v, &format!("{key} {n}"), each),
            stream::Piece::Rest(fields) => {
                let v = Value::Object(fields);
                let at = "the document";
                // The API's answer is read for its reviews only (its `results` are here).
                found += match api {
                    true => api_entries(&v, at, each),
                    false => review_entries(&v, at, each),
                };
                if found == 0 {
                    each(Err(Skip {
                        at: at.into(),
                        why: if api { NO_API_REVIEW } else { NO_REVIEW }.into(),
                    }));
                }
            }
        }
    });
    match result {
        Ok(()) => Ok(()),
        Err(stream::Stopped::Io(e)) => Err(format!("cannot read {name}: {e}")),
        Err(stream::Stopped::NotJson { error, .. }) if pieces == 0 => Err(format!("{name} is not JSON: {error}")),
        Err(e @ stream::Stopped::Over { .. }) if pieces == 0 => Err(format!("{name}: {e}")),
        Err(stream::Stopped::Over { at, max }) => {
            each(Err(Skip {
                at,
                why: format!("over {max} bytes; the rest of the document is not read"),
            }));
            Ok(())
        }
        Err(stream::Stopped::NotJson { at, error }) => {
            each(Err(Skip {
                at,
                why: format!("not JSON: {error}; the rest of the document is not read"),
            }));
            Ok(())
        }
    }
}

/// The `ClaimReview` objects of one piece of a document, each an entry or a skip at `at`
/// (", review 2" after it when there are more); how many there were.
fn review_entries(v: &Value, at: &str, each: &mut dyn FnMut(Result<Entry, Skip>)) -> usize {
    let objects = crate::extract::claimreview::review_objects(v);
    let many = objects.len() > 1;
    for (i, o) in objects.iter().enumerate() {
        let at = if many {
            format!("{at}, review {}", i + 1)
        } else {
            at.to_string()
        };
        let entry = match crate::extract::claimreview::review_object(o) {
            Some((review, title)) => finish(review, title),
            None if o.get("claimReviewed").is_none() => Err("no claimReviewed".to_string()),
            None => Err("no absolute http(s) url of the review".to_string()),
        };
        each(entry.map_err(|why| Skip { at, why }));
    }
    objects.len()
}

/// The reviews of (a part of) a Fact Check Tools API answer, each an entry or a skip at `at`;
/// how many there were.
fn api_entries(v: &Value, at: &str, each: &mut dyn FnMut(Result<Entry, Skip>)) -> usize {
    let reviews = crate::extract::claimreview::api_reviews_titled(v);
    let n = reviews.len();
    for (mut review, title) in reviews {
        review.source = ReviewSource::Corpus;
        each(finish(review, title).map_err(|why| Skip { at: at.into(), why }));
    }
    n
}

/// A CSV file, a record at a time through [`lines::CsvRecords`] (each at most
/// [`MAX_LINE_BYTES`]; see there for an unclosed quote), each record's fields read by the csv
/// crate; a record's place is the line it starts on ("row 7", the header being row 1). The
/// error names the file (`name`): unreadable, or a header without the columns needed.
fn read_csv(
    name: &str,
    reader: impl std::io::BufRead,
    sep: u8,
    each: &mut dyn FnMut(Result<Entry, Skip>),
) -> Result<(), String> {
    let mut records = lines::CsvRecords::new(reader, sep, MAX_LINE_BYTES);
    let cannot = |e: std::io::Error| format!("cannot read {name}: {e}");
    let header = match records.next_record().map_err(cannot)? {
        None => csv::StringRecord::new(),
        Some(lines::Record::Read { bytes, .. }) => {
            csv_fields(&bytes).map_err(|e| format!("{name} is neither JSON nor CSV: {e}"))?
        }
        Some(lines::Record::Long { .. }) => {
            return Err(format!(
                "{name} is neither JSON nor CSV: its first line is over {MAX_LINE_BYTES} bytes"
            ))
        }
        Some(lines::Record::Unclosed { .. }) => {
            return Err(format!(
                "{name} is neither JSON nor CSV: its header has a quote that is not closed"
            ))
        }
    };
    let columns = csv_columns(&header).map_err(|e| format!("{name}: {e}"))?;
    while let Some(record) = records.next_record().map_err(cannot)? {
        let (line, entry) = match record {
            lines::Record::Read { line, bytes } => (line, csv_fields(&bytes).and_then(|r| from_csv(&r, &columns))),
            lines::Record::Long { line } => (line, Err(format!("over {MAX_LINE_BYTES} bytes"))),
            lines::Record::Unclosed { line, at_end } => (
                line,
                Err(if at_end {
                    "a quote opened here is never closed; this line is skipped, and reading goes on at the next"
                        .to_string()
                } else {
                    format!(
                        "a quote opened here is not closed within {MAX_LINE_BYTES} bytes; this line is skipped, and reading goes on at the next"
                    )
                }),
            ),
        };
        each(entry.map_err(|why| Skip {
            at: format!("row {line}"),
            why,
        }));
    }
    Ok(())
}

/// The fields of one CSV record (its lines joined by `\n`, as [`lines::CsvRecords`] gives it).
fn csv_fields(bytes: &[u8]) -> Result<csv::StringRecord, String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .terminator(csv::Terminator::Any(b'\n'))
        .from_reader(bytes);
    let mut record = csv::StringRecord::new();
    match reader.read_record(&mut record) {
        Ok(_) => Ok(record),
        Err(e) => Err(format!("not CSV: {e}")),
    }
}

#[cfg(test)]
mod tests;
