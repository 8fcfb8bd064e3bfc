//! One JSON document (a `DataFeed`, an array of reviews, an API answer) read piece by piece,
//! so that a dump of any size is never parsed into one tree: the elements of a top-level array,
//! and of the arrays a top-level object holds its reviews in (a `DataFeed`'s
//! `dataFeedElement`, a `@graph`, the API's `claims`, …), are each parsed and handed on alone;
//! the object's other fields are handed on last, as one object. Each piece is read up to a
//! bound (a piece over it stops the reading: a document cannot be resynchronised inside). The
//! bytes are taken as UTF-8 with anything else replaced (U+FFFD), as a whole-file read did, and
//! a byte-order mark is dropped.

use std::cell::Cell;
use std::fmt;
use std::io::{self, Read};
use std::rc::Rc;

use serde::de::{self, DeserializeSeed, Deserializer as _, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

/// The keys of a top-level object whose arrays are read element by element (where the
/// schema.org shapes keep reviews, and the Fact Check Tools API's `claims`).
pub const STREAMED: &[&str] = &[
    "dataFeedElement",
    "@graph",
    "itemListElement",
    "hasPart",
    "mainEntity",
    "review",
    "item",
    "claims",
];

/// What a document gives, in the order it lies in the file.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    /// Element `n` (from 1) of the top-level array.
    Item(usize, Value),
    /// Element `n` (from 1) of the array under one of the [`STREAMED`] keys of the top-level
    /// object.
    Element(&'static str, usize, Value),
    /// The top-level object without the arrays handed on as elements.
    Rest(Map<String, Value>),
}

/// Why a document stopped being read.
#[derive(Debug, thiserror::Error)]
pub enum Stopped {
    #[error("{0}")]
    Io(io::Error),
    #[error("{at} is over {max} bytes")]
    Over { at: String, max: u64 },
    #[error("{at}: not JSON: {error}")]
    NotJson { at: String, error: serde_json::Error },
}

/// Reads the document from `reader`, each piece through `each`, each at most `max` bytes.
/// The pieces before a stop have been handed on.
pub fn read(reader: impl Read, max: u64, each: &mut dyn FnMut(Piece)) -> Result<(), Stopped> {
    let budget = Rc::new(Budget::default());
    let mut de = serde_json::Deserializer::from_reader(Source::new(reader, budget.clone()));
    let mut state = State {
        each,
        at: "the document".into(),
        budget: budget.clone(),
        max,
        rest_used: 0,
    };
    budget.start(max);
    let result = de.deserialize_any(Doc(&mut state)).and_then(|()| {
        state.at = "the end of the document".into();
        de.end()
    });
    result.map_err(|error| {
        if budget.over.get() {
            Stopped::Over { at: state.at, max }
        } else if error.is_io() {
            Stopped::Io(error.into())
        } else {
            Stopped::NotJson { at: state.at, error }
        }
    })
}

/// The bytes a piece may still take: counted on every read, an error past the limit.
#[derive(Default)]
struct Budget {
    used: Cell<u64>,
    limit: Cell<u64>,
    over: Cell<bool>,
}

impl Budget {
    fn start(&self, limit: u64) {
        self.used.set(0);
        self.limit.set(limit);
    }
}

/// The file's bytes as UTF-8 (invalid sequences → U+FFFD, a leading byte-order mark dropped),
/// counted against the [`Budget`].
struct Source<R> {
    inner: R,
    budget: Rc<Budget>,
    /// Bytes read and not yet decoded (an incomplete character at a read's end).
    raw: Vec<u8>,
    /// Decoded bytes not yet given out, from `at`.
    out: Vec<u8>,
    at: usize,
    eof: bool,
    first: bool,
}

const CHUNK: usize = 64 * 1024;
const REPLACEMENT: &[u8] = "\u{fffd}".as_bytes();

impl<R: Read> Source<R> {
    fn new(inner: R, budget: Rc<Budget>) -> Self {
        Source {
            inner,
            budget,
            raw: Vec::new(),
            out: Vec::new(),
            at: 0,
            eof: false,
            first: true,
        }
    }

    /// Reads a chunk and decodes what is complete of it into `out`.
    fn refill(&mut self) -> io::Result<()> {
        let start = self.raw.len();
        self.raw.resize(start + CHUNK, 0);
        let n = loop {
            match self.inner.read(&mut self.raw[start..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.raw.truncate(start);
                    return Err(e);
                }
            }
        };
        self.raw.truncate(start + n);
        self.eof = n == 0;
        self.out.clear();
        self.at = 0;
        let mut rest: &[u8] = &self.raw;
        while !rest.is_empty() {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    self.out.extend_from_slice(s.as_bytes());
                    rest = &[];
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    self.out.extend_from_slice(valid);
                    match e.error_len() {
                        Some(bad) => {
                            self.out.extend_from_slice(REPLACEMENT);
                            rest = &after[bad..];
                        }
                        // The end of the file cuts a character short.
                        None if self.eof => {
                            self.out.extend_from_slice(REPLACEMENT);
                            rest = &[];
                        }
                        // The rest of the character is in the next chunk.
                        None => {
                            rest = after;
                            break;
                        }
                    }
                }
            }
        }
        let keep = rest.len();
        self.raw.drain(..self.raw.len() - keep);
        if self.first && !self.out.is_empty() {
            self.first = false;
            if self.out.starts_with("\u{feff}".as_bytes()) {
                self.at = 3;
            }
        }
        Ok(())
    }
}

impl<R: Read> Read for Source<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.out.len() {
            if self.eof {
                return Ok(0);
            }
            self.refill()?;
        }
        let n = buf.len().min(self.out.len() - self.at);
        let used = self.budget.used.get() + n as u64;
        if used > self.budget.limit.get() {
            self.budget.over.set(true);
            return Err(io::Error::other("over the bound of one piece"));
        }
        self.budget.used.set(used);
        buf[..n].copy_from_slice(&self.out[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// What the visitors share: where they hand pieces, where the reading is (for a stop), and
/// the budget (the top-level object's own fields share one [`Budget`] between its elements).
struct State<'e> {
    each: &'e mut dyn FnMut(Piece),
    at: String,
    budget: Rc<Budget>,
    max: u64,
    rest_used: u64,
}

/// The top-level value: an array or an object.
struct Doc<'s, 'e>(&'s mut State<'e>);

impl<'de> Visitor<'de> for Doc<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array or object")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        for n in 1.. {
            self.0.at = format!("item {n}");
            self.0.budget.start(self.0.max);
            match seq.next_element::<Value>()? {
                Some(v) => (self.0.each)(Piece::Item(n, v)),
                None => break,
            }
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut rest = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match STREAMED.iter().find(|k| **k == key) {
                Some(k) => {
                    if let Some(v) = map.next_value_seed(Streamed {
                        key: k,
                        state: &mut *self.0,
                    })? {
                        rest.insert(key, v);
                    }
                }
                None => {
                    let v = map.next_value::<Value>()?;
                    rest.insert(key, v);
                }
            }
        }
        self.0.at = "the document".into();
        (self.0.each)(Piece::Rest(rest));
        Ok(())
    }
}

/// The value under a [`STREAMED`] key: an array is handed on element by element (`None`
/// back); anything else comes back whole, for the rest of the object.
struct Streamed<'s, 'e> {
    key: &'static str,
    state: &'s mut State<'e>,
}

impl<'de> DeserializeSeed<'de> for Streamed<'_, '_> {
    type Value = Option<Value>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Option<Value>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Streamed<'_, '_> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<Value>, A::Error> {
        let s = self.state;
        for n in 1.. {
            // The object's own fields so far are counted apart from the elements.
            s.rest_used += s.budget.used.get();
            s.at = format!("{} {n}", self.key);
            s.budget.start(s.max);
            let next = seq.next_element::<Value>()?;
            s.budget.start(s.max.saturating_sub(s.rest_used));
            match next {
                Some(v) => (s.each)(Piece::Element(self.key, n, v)),
                None => break,
            }
        }
        s.at = "the document".into();
        Ok(None)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Option<Value>, A::Error> {
        Value::deserialize(de::value::MapAccessDeserializer::new(map)).map(Some)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Option<Value>, E> {
        Ok(Some(Value::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Option<Value>, E> {
        Ok(Some(Value::from(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Option<Value>, E> {
        Ok(Some(Value::from(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Option<Value>, E> {
        Ok(Some(Value::from(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<Value>, E> {
        Ok(Some(Value::String(v.to_string())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Option<Value>, E> {
        Ok(Some(Value::String(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Option<Value>, E> {
        Ok(Some(Value::Null))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `head`, then an I/O error: the tail of the document is never there to be read.
    struct FailingTail<'a>(&'a [u8]);

    impl Read for FailingTail<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() {
                return Err(io::Error::other("the disk went away"));
            }
            let n = buf.len().min(self.0.len()).min(1000);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn pieces(reader: impl Read, max: u64) -> (Vec<Piece>, Result<(), Stopped>) {
        let mut out = Vec::new();
        let result = read(reader, max, &mut |p| out.push(p));
        (out, result)
    }

    fn many(n: usize) -> String {
        (0..n)
            .map(|i| format!(r#"{{"@type":"ClaimReview","url":"https://x.org/{i}"}}"#))
            .collect::<Vec<_>>()
            .join(",\n")
    }

    #[test]
    fn an_array_is_handed_on_item_by_item_before_its_tail_fails() {
        // An I/O error after 2,000 items: those items came out one at a time.
        let head = format!("[{},", many(2_000));
        let (got, result) = pieces(FailingTail(head.as_bytes()), 1 << 20);
        assert_eq!(got.len(), 2_000);
        assert_eq!(
            got[1999],
            Piece::Item(
                2000,
                serde_json::json!({"@type":"ClaimReview","url":"https://x.org/1999"})
            )
        );
        assert!(
            matches!(result, Err(Stopped::Io(ref e)) if e.to_string().contains("disk")),
            "{result:?}"
        );
        // Garbage after 500 items: the items, then where it stopped.
        let text = format!("[{}, {{\"a\": nonsense}}]", many(500));
        let (got, result) = pieces(text.as_bytes(), 1 << 20);
        assert_eq!(got.len(), 500);
        match result {
            Err(Stopped::NotJson { at, .. }) => assert_eq!(at, "item 501"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_data_feed_is_handed_on_element_by_element_and_its_own_fields_last() {
        let feed = format!(
            "\u{feff}{{\"@context\":\"https://schema.org\",\"@type\":\"DataFeed\",\"dataFeedElement\":[{}],\"name\":\"caf\u{e9}\",\"review\":{{\"x\":1}}}}",
            many(3)
        );
        let (got, result) = pieces(feed.as_bytes(), 1 << 20);
        result.unwrap();
        assert_eq!(got.len(), 4);
        assert!(matches!(&got[2], Piece::Element("dataFeedElement", 3, v) if v["url"] == "https://x.org/2"));
        let Piece::Rest(rest) = &got[3] else { panic!("{got:?}") };
        assert_eq!(rest["@type"], "DataFeed");
        assert_eq!(rest["name"], "café");
        assert_eq!(
            rest["review"],
            serde_json::json!({"x": 1}),
            "a streamed key that is not an array stays"
        );
        assert!(!rest.contains_key("dataFeedElement"));
        // A DataFeed cut short: its elements so far came out.
        let cut = &feed[..feed.find("https://x.org/2").unwrap()];
        let (got, result) = pieces(cut.as_bytes(), 1 << 20);
        assert_eq!(got.len(), 2);
        assert!(matches!(result, Err(Stopped::NotJson { ref at, .. }) if at == "dataFeedElement 3"));
    }

    #[test]
    fn a_piece_over_the_bound_stops_the_reading_and_bytes_not_utf8_are_replaced() {
        let big = format!(
            r#"[{{"a":"{}"}}, {{"b":1}}, {{"c":"{}"}}]"#,
            "x".repeat(50),
            "y".repeat(500)
        );
        let (got, result) = pieces(big.as_bytes(), 200);
        assert_eq!(got.len(), 2);
        assert!(
            matches!(result, Err(Stopped::Over { ref at, max: 200 }) if at == "item 3"),
            "{result:?}"
        );
        // The object's own fields count together, apart from its elements.
        let fields = format!(
            r#"{{"a":"{}","claims":[1,2],"b":"{}"}}"#,
            "x".repeat(120),
            "y".repeat(120)
        );
        let (got, result) = pieces(fields.as_bytes(), 200);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(matches!(result, Err(Stopped::Over { .. })), "{result:?}");

        let mut bytes = b"[{\"a\":\"caf".to_vec();
        bytes.extend_from_slice(&[0xe9, b'"', b'}', b']']);
        let (got, result) = pieces(bytes.as_slice(), 200);
        result.unwrap();
        assert_eq!(got, vec![Piece::Item(1, serde_json::json!({"a": "caf\u{fffd}"}))]);
    }

    #[test]
    fn a_character_split_between_reads_is_whole() {
        struct OneByte<'a>(&'a [u8]);
        impl Read for OneByte<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(1).min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let (got, result) = pieces(OneByte("[\"Łódź ✓ 🙂\"]".as_bytes()), 200);
        result.unwrap();
        assert_eq!(got, vec![Piece::Item(1, Value::String("Łódź ✓ 🙂".into()))]);
    }
}
