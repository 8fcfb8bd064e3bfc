//! The keyless evidence index: items of the feeds `[index]` follows (fact-checkers' and
//! credible publishers' RSS/Atom), their text and `ClaimReview` claims in an embedded
//! full-text index (`tantivy`), searched like a web search backend (`kind = "index"`, and the
//! last fallback of every search when feeds are configured). [`refresh`] fills it; this file
//! opens and searches it.
//!
//! tantivy's traps, and how each is handled:
//! - **one writer**: only [`refresh::Refresher`] opens an `IndexWriter` (the daemon's one task,
//!   or `musebot index refresh`); tantivy's lock file refuses a second one, which is reported
//!   as "another musebot is refreshing this index". Searches use readers: they take tantivy's
//!   meta lock only for the moment a reload reads `meta.json` (each search reloads first, so an
//!   item committed a moment ago is found).
//! - **batched commits**: one commit per feed read (never per item), carrying the feeds'
//!   validators (ETag, Last-Modified) as its payload, so what the index holds and what the
//!   conditional GETs claim to hold change together.
//! - **no writer left open after a crash**: a commit replaces `meta.json` atomically, so a
//!   `kill -9` leaves the last commit; the writer lock is an OS file lock, released with the
//!   process; files of an unfinished commit are deleted by the next writer's garbage collection.
//! - **a new schema or tantivy format**: the writer empties an index it cannot read (it is
//!   only a cache of the feeds) and the next refresh reads the feeds again.

pub mod cjk;
pub mod feeds;
pub mod refresh;

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, FAST, STORED, STRING};
use tantivy::{Index, IndexReader, ReloadPolicy, TantivyDocument, Term};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IndexConfig {
    /// RSS, Atom or JSON feeds followed; [] = no index.
    pub feeds: Vec<String>,
    /// Folder of the index ("" = `index/` in `daemon.state_dir`).
    pub path: String,
    /// Seconds between two reads of every feed.
    pub refresh_secs: u64,
    /// New items read per feed per refresh, newest first.
    pub items_per_feed: usize,
    /// Largest feed read, bytes.
    pub max_feed_bytes: usize,
    /// Items kept at most; the oldest indexed go first.
    pub max_items: usize,
    /// Items indexed more than this many days ago are dropped (0 = kept until `max_items`).
    pub max_age_days: u64,
}

/// The default feeds: IFCN fact-checkers and credible publishers, each the feed the site
/// itself announces (`<link rel="alternate">`). `musebot index refresh` says which answer.
pub const DEFAULT_FEEDS: [&str; 7] = [
    "https://www.snopes.com/feed/",
    "https://www.politifact.com/rss/factchecks/",
    "https://www.factcheck.org/feed/",
    "https://fullfact.org/feed/",
    "https://leadstories.com/atom.xml",
    "https://science.feedback.org/feed/",
    "https://www.lemonde.fr/les-decodeurs/rss_full.xml",
];

impl Default for IndexConfig {
    fn default() -> Self {
        IndexConfig {
            feeds: DEFAULT_FEEDS.iter().map(|f| f.to_string()).collect(),
            path: String::new(),
            refresh_secs: 1800,
            items_per_feed: 20,
            max_feed_bytes: 2_000_000,
            max_items: 50_000,
            max_age_days: 730,
        }
    }
}

impl IndexConfig {
    /// Whether an index is kept at all.
    pub fn enabled(&self) -> bool {
        !self.feeds.is_empty()
    }

    /// The index's folder.
    pub fn dir(&self, state_dir: &Path) -> PathBuf {
        if self.path.is_empty() {
            state_dir.join("index")
        } else {
            PathBuf::from(&self.path)
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("index.path: cannot open the index in {dir}: {reason} — make the folder writable by the bot's user, or delete it to start a new index")]
    Open { dir: String, reason: String },
    #[error("index.path: another musebot is refreshing the index in {0} (one writer at a time)")]
    Busy(String),
    #[error("index: {0}")]
    Tantivy(#[from] tantivy::TantivyError),
}

/// An item a search found (the search backends' `Hit` is made from it in `search/`, which
/// depends on this module, not the other way round).
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub url: String,
    pub title: String,
    /// The first characters of its text.
    pub snippet: String,
    pub published: Option<DateTime<Utc>>,
}

/// One item as indexed: where its page landed, its title and text, the claims its
/// `ClaimReview` markup reviews, its date, the feed it came from.
#[derive(Debug, Clone)]
pub struct Item<'a> {
    pub url: &'a str,
    /// The link the feed gave (before redirects).
    pub link: &'a str,
    pub title: &'a str,
    pub text: &'a str,
    pub claims: Vec<&'a str>,
    pub published: Option<DateTime<Utc>>,
    pub feed: &'a str,
}

/// The fields of one item.
#[derive(Clone, Copy)]
pub(crate) struct Fields {
    /// Where the item's page landed (after redirects): what a reply would cite.
    pub url: Field,
    /// The feed's link to it, before redirects (so a feed of redirecting links is not read
    /// again at every refresh).
    pub link: Field,
    pub title: Field,
    pub body: Field,
    /// The claims its `ClaimReview` markup reviews.
    pub claim: Field,
    /// The page's (or else the feed's) date, Unix seconds; 0 = unknown.
    pub published: Field,
    /// When it was indexed, Unix seconds (the age and size bounds).
    pub added: Field,
    pub feed: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    // Searched text: BM25 with positions, tokenised by [`cjk::Words`] (CJK as bigrams). An
    // index made with tantivy's default tokenizer has another schema and is made anew.
    let words = TextOptions::default().set_stored().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(cjk::NAME)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let fields = Fields {
        url: b.add_text_field("url", STRING | STORED),
        link: b.add_text_field("link", STRING),
        title: b.add_text_field("title", words.clone()),
        body: b.add_text_field("body", words.clone()),
        claim: b.add_text_field("claim", words),
        published: b.add_i64_field("published", STORED | FAST),
        added: b.add_i64_field("added", STORED | FAST),
        feed: b.add_text_field("feed", STRING | STORED),
    };
    (b.build(), fields)
}

/// Query words used at most (a longer query adds little but cost).
const MAX_TERMS: usize = 48;
/// Characters of an item's text shown as a hit's snippet.
const SNIPPET_CHARS: usize = 300;

/// An open index, for searching (any number per process) and for the one refresher.
pub struct EvidenceIndex {
    pub(crate) index: Index,
    pub(crate) reader: IndexReader,
    pub(crate) fields: Fields,
    dir: PathBuf,
}

impl EvidenceIndex {
    /// Opens the index in `dir`, creating the folder and an empty index when there is none.
    pub fn open(dir: &Path) -> Result<EvidenceIndex, IndexError> {
        Self::open_with(dir, false)
    }

    /// [`EvidenceIndex::open`] for the writer: an index of another schema or tantivy format
    /// (made by an older musebot) is only a cache of the feeds, so it is emptied and made
    /// anew — the next refresh reads the feeds again — instead of refusing to start.
    pub(crate) fn open_rebuilding(dir: &Path) -> Result<EvidenceIndex, IndexError> {
        Self::open_with(dir, true)
    }

    fn open_with(dir: &Path, rebuild: bool) -> Result<EvidenceIndex, IndexError> {
        let fail = |reason: String| IndexError::Open {
            dir: dir.display().to_string(),
            reason,
        };
        std::fs::create_dir_all(dir).map_err(|e| fail(e.to_string()))?;
        let (schema, fields) = schema();
        let directory = tantivy::directory::MmapDirectory::open(dir).map_err(|e| fail(e.to_string()))?;
        let index = match Index::open_or_create(directory, schema.clone()) {
            Ok(index) => index,
            Err(
                e @ (tantivy::TantivyError::SchemaError(_)
                | tantivy::TantivyError::IncompatibleIndex(_)
                | tantivy::TantivyError::DataCorruption(_)),
            ) if rebuild && dir.join("meta.json").exists() => {
                tracing::warn!(dir = %dir.display(), error = %e, "the evidence index is of another format; emptied, to be read again from the feeds");
                // Only tantivy's own files: an operator may have pointed `index.path` at a
                // folder that holds other things (the state folder, sled's files).
                for entry in std::fs::read_dir(dir).map_err(|e| fail(e.to_string()))?.flatten() {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    if entry.path().is_file() && tantivy_file(&name) {
                        std::fs::remove_file(entry.path()).map_err(|e| fail(e.to_string()))?;
                    }
                }
                let directory = tantivy::directory::MmapDirectory::open(dir).map_err(|e| fail(e.to_string()))?;
                Index::open_or_create(directory, schema).map_err(|e| fail(e.to_string()))?
            }
            Err(e) => return Err(fail(e.to_string())),
        };
        index.tokenizers().register(cjk::NAME, cjk::analyzer());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::OnCommitWithDelay)
            .try_into()
            .map_err(|e: tantivy::TantivyError| fail(e.to_string()))?;
        Ok(EvidenceIndex {
            index,
            reader,
            fields,
            dir: dir.to_path_buf(),
        })
    }

    /// Opens the index in `dir` for searching only: `None` when none was made there yet (no
    /// folder is created for it). Reading takes tantivy's meta lock file in the folder, so a
    /// user who cannot write there gets an error (the pipeline then leaves the index out).
    pub fn open_existing(dir: &Path) -> Result<Option<EvidenceIndex>, IndexError> {
        if !dir.join("meta.json").exists() {
            return Ok(None);
        }
        EvidenceIndex::open(dir).map(Some)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Items held (as of the last commit this reader has seen).
    pub fn len(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether an item is held whose page landed at `url` or whose feed linked to it (deleted
    /// items do not count: a count query, not the term's document frequency, which keeps
    /// them until a merge).
    pub fn contains(&self, url: &str) -> bool {
        let searcher = self.reader.searcher();
        [self.fields.url, self.fields.link].into_iter().any(|field| {
            let query = TermQuery::new(Term::from_field_text(field, url), IndexRecordOption::Basic);
            searcher.search(&query, &tantivy::collector::Count).is_ok_and(|n| n > 0)
        })
    }

    /// Sees the latest commit now (the refresher, after its own commits).
    pub fn reload(&self) -> Result<(), IndexError> {
        Ok(self.reader.reload()?)
    }

    /// The `n` items that best match `query` (BM25 over title, reviewed claims and text; the
    /// query is only words — no query syntax, so a query the model wrote cannot pick fields or
    /// operators), published before `before` when given (items of unknown date pass, as for
    /// the web engines, and are judged by the page's own date later).
    pub fn search(&self, query: &str, before: Option<DateTime<Utc>>, n: usize) -> Result<Vec<Found>, IndexError> {
        let f = self.fields;
        let mut analyzer = self.index.tokenizer_for_field(f.body)?;
        let mut words = Vec::new();
        let mut stream = analyzer.token_stream(query);
        while let Some(token) = stream.next() {
            if !words.contains(&token.text) && words.len() < MAX_TERMS {
                words.push(token.text.clone());
            }
        }
        if words.is_empty() || n == 0 {
            return Ok(Vec::new());
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for word in &words {
            for (field, boost) in [(f.title, 2.0), (f.claim, 3.0), (f.body, 1.0)] {
                let term = TermQuery::new(Term::from_field_text(field, word), IndexRecordOption::WithFreqs);
                clauses.push((Occur::Should, Box::new(BoostQuery::new(Box::new(term), boost))));
            }
        }
        let query = BooleanQuery::new(clauses);
        // The refresher's latest commit, even one made a moment ago (the reload policy's
        // watcher looks only every half second); a failed reload searches the last one seen.
        let _ = self.reader.reload();
        let searcher = self.reader.searcher();
        // Dated-too-late items are dropped after ranking: ask for more when bounded.
        let want = if before.is_some() { n * 4 } else { n };
        let top = searcher.search(&query, &TopDocs::with_limit(want))?;
        let mut hits = Vec::new();
        for (_, address) in top {
            let doc: TantivyDocument = searcher.doc(address)?;
            let text = |field| doc.get_first(field).and_then(|v| v.as_str()).unwrap_or("").to_string();
            let published = doc
                .get_first(f.published)
                .and_then(|v| v.as_i64())
                .filter(|s| *s > 0)
                .and_then(|s| DateTime::from_timestamp(s, 0));
            if let (Some(b), Some(p)) = (before, published) {
                if p >= b {
                    continue;
                }
            }
            let body = text(f.body);
            hits.push(Found {
                url: text(f.url),
                title: text(f.title),
                snippet: body.chars().take(SNIPPET_CHARS).collect(),
                published,
            });
            if hits.len() == n {
                break;
            }
        }
        Ok(hits)
    }
}

/// Whether a file name is one tantivy makes in an index folder: `meta.json`, `.managed.json`,
/// its lock files, and segment files (`<32 hex digits>.<ext>`, deletes `<32 hex>.<opstamp>.del`).
fn tantivy_file(name: &str) -> bool {
    if matches!(
        name,
        "meta.json" | ".managed.json" | ".tantivy-meta.lock" | ".tantivy-writer.lock"
    ) {
        return true;
    }
    let Some((id, _)) = name.split_once('.') else {
        return false;
    };
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::refresh::Refresher;
    use super::*;

    fn item<'a>(url: &'a str, title: &'a str, text: &'a str, claims: Vec<&'a str>, day: &str) -> Item<'a> {
        Item {
            url,
            link: url,
            title,
            text,
            claims,
            published: Some(format!("{day}T00:00:00Z").parse().unwrap()),
            feed: "https://feed.example/",
        }
    }

    #[test]
    fn search_ranks_by_words_bounds_by_date_and_reads_no_query_syntax() {
        let dir = tempfile::tempdir().unwrap();
        let config = IndexConfig::default();
        let fetch = crate::fetch::FetchConfig::default();
        let mut w = Refresher::open(&config, dir.path(), &fetch, None).unwrap();
        w.add(&item(
            "https://a.example/wall",
            "Great Wall myth",
            "The wall cannot be seen from the Moon.",
            vec!["The Great Wall is visible from the Moon"],
            "2024-05-01",
        ))
        .unwrap();
        w.add(&item(
            "https://a.example/budget",
            "Budget",
            "The council's budget for schools and roads.",
            vec![],
            "2025-01-01",
        ))
        .unwrap();
        w.add(&item(
            "https://a.example/moon",
            "Moon rocks",
            "Apollo brought back rocks from the Moon.",
            vec![],
            "2025-06-01",
        ))
        .unwrap();
        w.commit().unwrap();
        let index = w.index();
        assert_eq!(index.len(), 3);
        assert!(index.contains("https://a.example/budget"));
        assert!(!index.contains("https://a.example/other"));
        let urls = |hits: Vec<Found>| hits.into_iter().map(|h| h.url).collect::<Vec<_>>();
        let hits = urls(
            index
                .search("is the great wall visible from the moon", None, 10)
                .unwrap(),
        );
        assert_eq!(hits[0], "https://a.example/wall", "{hits:?}");
        assert!(hits.contains(&"https://a.example/moon".to_string()));
        // "the" is in the budget item too; it ranks last.
        assert_ne!(hits.iter().position(|u| u.ends_with("budget")), Some(0));
        assert_eq!(
            hits.last().map(String::as_str),
            Some("https://a.example/budget"),
            "{hits:?}"
        );
        let before = "2025-01-01T00:00:00Z".parse().unwrap();
        assert_eq!(
            urls(index.search("moon", Some(before), 10).unwrap()),
            ["https://a.example/wall"]
        );
        // Field names and operators are words like any other: nothing matches them here.
        assert!(index.search("url:* OR title:budget*", None, 10).unwrap().len() <= 1);
        assert!(index.search("", None, 10).unwrap().is_empty());
        assert!(index.search("  ¿?  ", None, 10).unwrap().is_empty());
    }

    /// A Japanese or Chinese post finds a fact-check in its language by words:
    /// with tantivy's default tokenizer each unspaced run was one token, so the post's
    /// wording had to repeat the item's runs exactly and neither query below found anything.
    #[test]
    fn cjk_posts_find_cjk_items_by_words() {
        let dir = tempfile::tempdir().unwrap();
        let (config, fetch) = (IndexConfig::default(), crate::fetch::FetchConfig::default());
        let mut w = Refresher::open(&config, dir.path(), &fetch, None).unwrap();
        w.add(&item(
            "https://fc.example/ja/great-wall",
            "万里の長城は月から見えるのか",
            "宇宙飛行士によると、万里の長城は月から肉眼では見えない。",
            vec!["万里の長城は月から見える"],
            "2024-05-01",
        ))
        .unwrap();
        w.add(&item(
            "https://fc.example/zh/vaccine",
            "疫苗会改变人类基因吗",
            "mRNA疫苗不会进入细胞核，也不会改变人类的基因。",
            vec!["新冠疫苗会改变基因"],
            "2024-06-01",
        ))
        .unwrap();
        w.add(&item(
            "https://fc.example/ja/weather",
            "明日の天気",
            "東京は晴れのち曇り。",
            vec![],
            "2024-07-01",
        ))
        .unwrap();
        w.commit().unwrap();
        let index = w.index();
        let first = |q: &str| index.search(q, None, 3).unwrap().first().map(|h| h.url.clone());
        assert_eq!(
            first("NASAによると長城が月から見えると宇宙飛行士が確認したそうです").as_deref(),
            Some("https://fc.example/ja/great-wall")
        );
        assert_eq!(
            first("听说打了疫苗以后基因就被改变了").as_deref(),
            Some("https://fc.example/zh/vaccine")
        );
        // Latin words in a CJK text still match whole.
        assert_eq!(first("mRNA").as_deref(), Some("https://fc.example/zh/vaccine"));
    }

    #[test]
    fn the_writer_makes_anew_an_index_of_another_schema() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut b = Schema::builder();
            b.add_text_field("old", STRING | STORED);
            let old = Index::create_in_dir(dir.path(), b.build()).unwrap();
            let mut w: tantivy::IndexWriter = old.writer_with_num_threads(1, 15_000_000).unwrap();
            w.commit().unwrap();
        }
        let read = EvidenceIndex::open_existing(dir.path()).err().unwrap().to_string();
        assert!(read.contains("schema does not match"), "{read}");
        let (config, fetch) = (IndexConfig::default(), crate::fetch::FetchConfig::default());
        let w = Refresher::open(&config, dir.path(), &fetch, None).unwrap();
        assert!(w.is_empty());
        drop(w);
        assert!(EvidenceIndex::open_existing(dir.path()).unwrap().is_some());
    }

    #[test]
    fn a_second_writer_is_refused_by_name_and_a_reader_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (config, fetch) = (IndexConfig::default(), crate::fetch::FetchConfig::default());
        let _first = Refresher::open(&config, dir.path(), &fetch, None).unwrap();
        let second = Refresher::open(&config, dir.path(), &fetch, None)
            .err()
            .unwrap()
            .to_string();
        assert!(second.contains("another musebot is refreshing"), "{second}");
        assert!(EvidenceIndex::open_existing(dir.path()).unwrap().is_some());
        let empty = tempfile::tempdir().unwrap();
        assert!(EvidenceIndex::open_existing(&empty.path().join("none"))
            .unwrap()
            .is_none());
        assert!(!empty.path().join("none").exists(), "a reader creates nothing");
    }

    /// An index of another format is emptied of tantivy's files only: whatever else
    /// the folder holds — sled's files, if an operator pointed `index.path` at the state
    /// folder — stays.
    #[test]
    fn rebuilding_deletes_only_what_tantivy_made() {
        assert!(tantivy_file("meta.json") && tantivy_file(".managed.json"));
        assert!(tantivy_file("0123456789abcdef0123456789abcdef.idx"));
        assert!(tantivy_file("0123456789abcdef0123456789abcdef.7.del"));
        for other in [
            "db",
            "conf",
            "snap.0000000000012F2C",
            "blobs",
            "notes.txt",
            "meta.json.bak",
            "abc.idx",
        ] {
            assert!(!tantivy_file(other), "{other}");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("meta.json"), b"{not an index").unwrap();
        std::fs::write(dir.path().join("db"), b"sled").unwrap();
        std::fs::write(dir.path().join("conf"), b"sled").unwrap();
        let index = EvidenceIndex::open_rebuilding(dir.path()).unwrap();
        assert_eq!(index.len(), 0);
        assert_eq!(std::fs::read(dir.path().join("db")).unwrap(), b"sled");
        assert_eq!(std::fs::read(dir.path().join("conf")).unwrap(), b"sled");
    }
}
