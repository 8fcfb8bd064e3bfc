//! The formats `index import` reads, through `read` as the command reads a file: every shape
//! of JSON, JSONL and CSV, and the bounds — a CSV quote never closed, a record over the line
//! bound, a JSON document read piece by piece.

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

/// `n` CSV rows of good reviews, numbered from `from`.
fn rows(from: usize, n: usize) -> String {
    (from..from + n)
        .map(|i| format!("https://fullfact.org/check/{i},Claim number {i} about tea,False,Full Fact\n"))
        .collect()
}

#[test]
fn an_unclosed_csv_quote_costs_its_line_and_every_row_after_it_is_read() {
    let header = "url,claim,rating,publisher\n";
    let bad = "https://fullfact.org/check/bad,\"A claim whose quote is never closed,False,Full Fact\n";
    // The quote is still open at the end of the file.
    let text = format!("{header}{}{bad}{}", rows(0, 10), rows(10, 1_000));
    let (f, out) = all(write(&text).path());
    assert_eq!(f, Format::Csv);
    let skips: Vec<&Skip> = out.iter().filter_map(|r| r.as_ref().err()).collect();
    assert_eq!(skips.len(), 1, "{skips:?}");
    assert_eq!(skips[0].at, "row 12");
    assert!(skips[0].why.contains("never closed"), "{skips:?}");
    assert_eq!(out.iter().filter(|r| r.is_ok()).count(), 1_010);
    assert_eq!(
        out.last().unwrap().as_ref().unwrap().review.url,
        "https://fullfact.org/check/1009"
    );
    // More than the bound follows the quote: it is given up at the bound, and the rows it
    // looked at on the way are still read.
    let after = MAX_LINE_BYTES / 60 + 1_000;
    let text = format!("{header}{}{bad}{}", rows(0, 10), rows(10, after));
    assert!(text.len() > MAX_LINE_BYTES + 10_000);
    let (_, out) = all(write(&text).path());
    let skips: Vec<&Skip> = out.iter().filter_map(|r| r.as_ref().err()).collect();
    assert_eq!(skips.len(), 1, "{:?}", &skips[..skips.len().min(3)]);
    assert_eq!(skips[0].at, "row 12");
    assert!(
        skips[0]
            .why
            .contains(&format!("not closed within {MAX_LINE_BYTES} bytes")),
        "{skips:?}"
    );
    assert_eq!(out.iter().filter(|r| r.is_ok()).count(), 10 + after);
}

#[test]
fn a_csv_record_over_the_bound_is_skipped_and_a_quoted_field_may_span_lines() {
    let long = format!(
        "https://fullfact.org/check/long,\"{}\",False,Full Fact\n",
        "a".repeat(MAX_LINE_BYTES)
    );
    let spanning =
        "https://fullfact.org/check/lines,\"A claim\r\non two lines, with \"\"quotes\"\"\",False,Full Fact\r\n";
    let text = format!(
        "url,claim,rating,publisher\n{}{long}{spanning}{}",
        rows(0, 3),
        rows(3, 3)
    );
    let (_, out) = all(write(&text).path());
    assert_eq!(
        out.len(),
        8,
        "{:?}",
        out.iter().map(|r| r.as_ref().err()).collect::<Vec<_>>()
    );
    let skip = out[3].as_ref().unwrap_err();
    assert_eq!(
        (skip.at.as_str(), skip.why.as_str()),
        ("row 5", format!("over {MAX_LINE_BYTES} bytes").as_str())
    );
    let e = out[4].as_ref().unwrap();
    assert_eq!(e.review.claim, "A claim on two lines, with \"quotes\"");
    assert!(out.iter().enumerate().all(|(i, r)| i == 3 || r.is_ok()));
    // A header that opens a quote and never closes it is not a CSV file.
    let err = read(write("\"url,claim\nx,y\n").path(), &mut |_| {}).unwrap_err();
    assert!(err.contains("not closed"), "{err}");
}

#[test]
fn a_json_document_is_read_piece_by_piece_and_a_cut_short_one_keeps_what_came_before() {
    let review = |i: usize| REVIEW.replace("moon-wall/", &format!("moon-wall/{i}"));
    let items: Vec<String> = (0..300).map(review).collect();
    // An array cut short in its 301st item: the 300 before it are read, then a skip says where
    // the document stopped.
    let text = format!("[{}, {{\"@type\": \"ClaimRev", items.join(",\n"));
    let (f, out) = all(write(&text).path());
    assert_eq!(f, Format::Json);
    assert_eq!(out.iter().filter(|r| r.is_ok()).count(), 300);
    let skip = out.last().unwrap().as_ref().unwrap_err();
    assert_eq!(skip.at, "item 301");
    assert!(skip.why.contains("the rest of the document is not read"), "{skip:?}");
    // A DataFeed cut short the same way.
    let elements: Vec<String> = items
        .iter()
        .map(|r| format!(r#"{{"@type":"DataFeedItem","item":[{r}]}}"#))
        .collect();
    let feed = format!(
        r#"{{"@context":"https://schema.org","@type":"DataFeed","dataFeedElement":[{}, {{"item": [garbage"#,
        elements.join(",")
    );
    let (_, out) = all(write(&feed).path());
    assert_eq!(out.iter().filter(|r| r.is_ok()).count(), 300);
    assert_eq!(out.last().unwrap().as_ref().unwrap_err().at, "dataFeedElement 301");
    // A reader whose tail is an I/O error: the reviews before it came out first.
    struct FailingTail(std::io::Cursor<Vec<u8>>);
    impl std::io::Read for FailingTail {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match self.0.read(buf)? {
                0 => Err(std::io::Error::other("the disk went away")),
                n => Ok(n),
            }
        }
    }
    let head = format!("[{},", items.join(","));
    let mut got = Vec::new();
    let err = read_json(
        "dump.json",
        FailingTail(std::io::Cursor::new(head.into_bytes())),
        &mut |r| got.push(r),
    )
    .unwrap_err();
    assert_eq!(got.iter().filter(|r| r.is_ok()).count(), 300);
    assert!(err.contains("cannot read dump.json") && err.contains("disk"), "{err}");
    // Not JSON from the start: the file's error, as before.
    let err = read(write("[nonsense").path(), &mut |_| {}).unwrap_err();
    assert!(err.contains("is not JSON"), "{err}");
}

#[test]
fn a_single_review_and_an_object_without_reviews() {
    let (_, out) = all(write(REVIEW).path());
    assert_eq!(out.len(), 1);
    assert!(out[0].is_ok());
    let (_, out) = all(write("{\"@type\": \"WebPage\",\n \"name\": \"x\"}").path());
    assert_eq!(out.len(), 1);
    let skip = out[0].as_ref().unwrap_err();
    assert_eq!(skip.at, "the document");
    assert!(skip.why.contains("no ClaimReview"), "{skip:?}");
    let (_, out) = all(write(r#"{"claims": [{"text": "x", "claimReview": [{"title": "no url"}]}]}"#).path());
    assert_eq!(out[0].as_ref().unwrap_err().why, NO_API_REVIEW);
}
