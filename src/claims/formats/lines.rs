//! Line-bounded reading for the line formats `index import` reads (JSONL and CSV), so that no
//! record can make the reader hold more than a bound. A line is held up to the bound and read
//! past beyond it. A CSV record may span lines inside a quoted field, so its lines are put
//! together here — up to the same bound — before the csv crate reads the record's fields. A
//! quote that is never closed would otherwise take the rest of the file as one field; here the
//! record is given up once its lines pass the bound or the file ends, only the line it opened
//! on is skipped, and reading starts again at the next line (the lines looked at meanwhile are
//! still held, so none of them is lost).

use std::collections::VecDeque;
use std::io::{self, BufRead};

/// The next line of at most `max` bytes, without its terminator `sep`, and whether it was
/// longer (then it is read past, never held, and the line is empty); `None` at the end.
pub fn bounded_line(r: &mut impl BufRead, sep: u8, max: usize) -> io::Result<Option<(Vec<u8>, bool)>> {
    let mut line = Vec::new();
    let mut over = false;
    let mut any = false;
    loop {
        let buf = match r.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(any.then_some((line, over)));
        }
        any = true;
        let (chunk, done) = match buf.iter().position(|b| *b == sep) {
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

/// One CSV record as it lies in the file, found by its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// The record's bytes (its lines joined by `\n`, without a terminator), from line `line`.
    Read { line: usize, bytes: Vec<u8> },
    /// Line `line` is over the bound: read past, never held.
    Long { line: usize },
    /// A quoted field opened on line `line` is not closed within the bound (`at_end`: before
    /// the file ends): that line is skipped; reading goes on at the next line.
    Unclosed { line: usize, at_end: bool },
}

/// A line read: its number (from 1), bytes, and whether it was over the bound.
struct Line {
    number: usize,
    bytes: Vec<u8>,
    long: bool,
}

/// The records of a CSV file, one at a time, each at most `max` bytes; at most one record's
/// worth of lines (the bound, plus the line that passed it, if not itself over) is held.
pub struct CsvRecords<R> {
    reader: R,
    sep: u8,
    max: usize,
    /// Lines read while looking for a quote's close and not yet taken.
    ahead: VecDeque<Line>,
    lines: usize,
}

impl<R: BufRead> CsvRecords<R> {
    /// `sep` ends a line (`\n`; a `\r` before it is dropped), or `\r` for a file with no `\n`.
    pub fn new(reader: R, sep: u8, max: usize) -> Self {
        CsvRecords {
            reader,
            sep,
            max,
            ahead: VecDeque::new(),
            lines: 0,
        }
    }

    /// The next line of the file (a byte-order mark before the first is dropped).
    fn pull(&mut self) -> io::Result<Option<Line>> {
        let Some((mut bytes, long)) = bounded_line(&mut self.reader, self.sep, self.max)? else {
            return Ok(None);
        };
        self.lines += 1;
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
        if self.lines == 1 && bytes.starts_with("\u{feff}".as_bytes()) {
            bytes.drain(..3);
        }
        Ok(Some(Line {
            number: self.lines,
            bytes,
            long,
        }))
    }

    /// The `i`-th line after those taken, read into `ahead` if it is not there yet.
    fn peek(&mut self, i: usize) -> io::Result<Option<&Line>> {
        while self.ahead.len() <= i {
            match self.pull()? {
                Some(line) => self.ahead.push_back(line),
                None => return Ok(None),
            }
        }
        Ok(self.ahead.get(i))
    }

    /// The next record; `None` at the end. Empty lines between records are passed over, as
    /// the csv crate does.
    pub fn next_record(&mut self) -> io::Result<Option<Record>> {
        loop {
            let first = match self.ahead.pop_front() {
                Some(line) => line,
                None => match self.pull()? {
                    Some(line) => line,
                    None => return Ok(None),
                },
            };
            if first.long {
                return Ok(Some(Record::Long { line: first.number }));
            }
            if first.bytes.is_empty() {
                continue;
            }
            if !still_quoted(&first.bytes, false) {
                return Ok(Some(Record::Read {
                    line: first.number,
                    bytes: first.bytes,
                }));
            }
            let mut size = first.bytes.len();
            let mut taken = 0;
            loop {
                let max = self.max;
                let Some(next) = self.peek(taken)? else {
                    return Ok(Some(Record::Unclosed {
                        line: first.number,
                        at_end: true,
                    }));
                };
                size += 1 + next.bytes.len();
                if next.long || size > max {
                    return Ok(Some(Record::Unclosed {
                        line: first.number,
                        at_end: false,
                    }));
                }
                let open = still_quoted(&next.bytes, true);
                taken += 1;
                if !open {
                    let mut bytes = first.bytes;
                    bytes.reserve(size - bytes.len());
                    for line in self.ahead.drain(..taken) {
                        bytes.push(b'\n');
                        bytes.extend_from_slice(&line.bytes);
                    }
                    return Ok(Some(Record::Read {
                        line: first.number,
                        bytes,
                    }));
                }
            }
        }
    }
}

/// Whether a CSV record is inside a quoted field at the end of `line`, given whether it was
/// at its start — as the csv crate reads quotes: a quote opens a field only at the field's
/// start (elsewhere it is a letter), `""` inside one is a quote, and the field's quote closes
/// at the next lone one.
pub fn still_quoted(line: &[u8], mut quoted: bool) -> bool {
    let mut field_start = !quoted;
    let mut i = 0;
    while i < line.len() {
        let b = line[i];
        if quoted {
            if b == b'"' {
                if line.get(i + 1) == Some(&b'"') {
                    i += 2;
                    continue;
                }
                quoted = false;
                field_start = false;
            }
        } else if b == b',' {
            field_start = true;
        } else if b == b'"' && field_start {
            quoted = true;
        } else {
            field_start = false;
        }
        i += 1;
    }
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(text: &str, max: usize) -> Vec<Record> {
        let mut r = CsvRecords::new(text.as_bytes(), b'\n', max);
        std::iter::from_fn(|| r.next_record().unwrap()).collect()
    }

    fn read(line: usize, s: &str) -> Record {
        Record::Read {
            line,
            bytes: s.as_bytes().to_vec(),
        }
    }

    #[test]
    fn quotes_are_read_as_the_csv_crate_reads_them() {
        assert!(!still_quoted(br#"a,"b,c",d"#, false));
        assert!(still_quoted(br#"a,"b,c"#, false));
        assert!(
            !still_quoted(br#"a,5" screen,c"#, false),
            "a quote inside a field is a letter"
        );
        assert!(!still_quoted(br#"a,"say ""hi""""#, false));
        assert!(still_quoted(br#"a,"say ""hi"#, false));
        assert!(!still_quoted(br#"end of it",x"#, true));
        assert!(still_quoted(br#"still "" in it"#, true));
    }

    #[test]
    fn a_record_spans_lines_inside_quotes_and_crlf_and_blank_lines_are_read() {
        let text = "h1,h2\r\n\r\n\"one\r\ntwo\",x\r\nlast,y";
        assert_eq!(
            records(text, 100),
            vec![read(1, "h1,h2"), read(3, "\"one\ntwo\",x"), read(5, "last,y")]
        );
    }

    #[test]
    fn an_unclosed_quote_skips_its_line_only_and_reading_resumes_at_the_next() {
        // Never closed before the end of the file.
        let text = "h\na,\"open\nb,1\nc,2\n";
        assert_eq!(
            records(text, 100),
            vec![
                read(1, "h"),
                Record::Unclosed { line: 2, at_end: true },
                read(3, "b,1"),
                read(4, "c,2")
            ]
        );
        // Not closed within the bound: given up once the bound is passed, nothing lost after.
        let rows: String = (0..50).map(|i| format!("r{i},{i}\n")).collect();
        let text = format!("h\na,\"open\n{rows}z,\"closes here\"\n");
        let got = records(&text, 64);
        assert_eq!(got[1], Record::Unclosed { line: 2, at_end: false });
        assert_eq!(got[2], read(3, "r0,0"));
        assert_eq!(got.len(), 2 + 50 + 1, "{got:?}");
        assert_eq!(got[52], read(53, "z,\"closes here\""));
    }

    #[test]
    fn a_line_over_the_bound_is_read_past() {
        let text = format!("h\n{}\nb,1\n\"open\n{}\nc,2\n", "x".repeat(200), "y".repeat(200));
        assert_eq!(
            records(&text, 100),
            vec![
                read(1, "h"),
                Record::Long { line: 2 },
                read(3, "b,1"),
                Record::Unclosed { line: 4, at_end: false },
                Record::Long { line: 5 },
                read(6, "c,2")
            ]
        );
    }

    #[test]
    fn a_file_with_only_carriage_returns_and_a_byte_order_mark() {
        let mut r = CsvRecords::new("\u{feff}h,i\ra,b\r".as_bytes(), b'\r', 100);
        let got: Vec<_> = std::iter::from_fn(|| r.next_record().unwrap()).collect();
        assert_eq!(got, vec![read(1, "h,i"), read(2, "a,b")]);
    }
}
