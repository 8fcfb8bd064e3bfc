//! The index's one writer: reads every feed of `[index]` (conditional GETs through the page
//! guard, `fetch::feed`), fetches each new item's page through the same guard, reads its text
//! and `ClaimReview` claims with the pages' extraction (`extract`), and adds it — one commit
//! per feed, with the feeds' validators as the commit's payload; then drops items past the age
//! and size bounds. A feed or page that fails is reported and skipped; the next refresh tries
//! again (an item lost to an outage keeps its feed's old validators, so it is not hidden
//! behind a 304). With a [`ClaimsSink`], the `ClaimReview`s of the items it holds join the
//! fact-check corpus (`claims::import`) after each feed's commit.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::time::Duration;

use chrono::Utc;
use serde::{Deserialize, Serialize};
use tantivy::schema::Value;
use tantivy::{DocAddress, IndexWriter, TantivyDocument, Term};
use tokio_util::sync::CancellationToken;

use super::{feeds, EvidenceIndex, IndexConfig, IndexError};
use crate::fetch::feed::{FeedAnswer, Validators};
use crate::fetch::{FetchConfig, Fetcher};
use crate::metrics::SharedMetrics;

/// Characters of a page's text indexed at most.
const MAX_TEXT_CHARS: usize = 60_000;
/// An extracted page with fewer words is indexed with its feed summary instead.
const MIN_PAGE_WORDS: usize = 20;
/// The writer's indexing memory (tantivy's floor is 15 MB per thread).
const WRITER_BYTES: usize = 20_000_000;

/// What the commit payload keeps per feed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct FeedState {
    #[serde(flatten)]
    validators: Validators,
    /// When the feed last answered (RFC 3339).
    #[serde(default)]
    last_read: Option<String>,
}

/// How one feed's read went. Closed: each is a `musebot_feed_reads_total` outcome.
#[derive(Debug, Clone, PartialEq)]
pub enum FeedOutcome {
    /// Read: `items` in the feed.
    Read { items: usize },
    /// 304 to the conditional GET.
    NotModified,
    /// The feed did not answer or did not parse: why.
    Failed(String),
}

impl FeedOutcome {
    pub fn as_str(&self) -> &'static str {
        match self {
            FeedOutcome::Read { .. } => "read",
            FeedOutcome::NotModified => "not_modified",
            FeedOutcome::Failed(_) => "failed",
        }
    }
}

/// One feed's read: its outcome, items added, items skipped with why.
#[derive(Debug, Clone)]
pub struct FeedReport {
    pub feed: String,
    pub outcome: FeedOutcome,
    pub added: usize,
    pub skipped: Vec<(String, String)>,
}

/// A whole refresh.
#[derive(Debug, Clone)]
pub struct Report {
    pub feeds: Vec<FeedReport>,
    /// Items dropped by the age and size bounds.
    pub pruned: usize,
    /// Items held after it.
    pub held: u64,
}

impl Report {
    /// One line per feed, its skipped items below it, then the totals.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for f in &self.feeds {
            let how = match &f.outcome {
                FeedOutcome::Read { items } => format!("read, {items} items, {} new", f.added),
                FeedOutcome::NotModified => "not modified (304)".to_string(),
                FeedOutcome::Failed(why) => format!("failed: {why}"),
            };
            out.push_str(&format!("{}: {how}\n", f.feed));
            for (url, why) in &f.skipped {
                out.push_str(&format!("  skipped {url}: {why}\n"));
            }
        }
        out.push_str(&format!(
            "index: {} items held, {} dropped by the bounds\n",
            self.held, self.pruned
        ));
        out
    }
}

/// Where the feeds' `ClaimReview`s go: the fact-check corpus (`claims::import`), embedded with
/// the pipeline's models. The corpus has one writer at a time: while an import holds it, the
/// reviews wait (at most [`MAX_WAITING_REVIEWS`]) for the next feed's commit.
pub struct ClaimsSink {
    pub dir: std::path::PathBuf,
    pub embedder: std::sync::Arc<crate::relevance::Embedder>,
    pub multilingual: Option<std::sync::Arc<crate::relevance::Embedder>>,
    pub models: crate::claims::Models,
    pub max_reviews: usize,
    waiting: Vec<crate::claims::Entry>,
}

/// Feed reviews kept while the corpus is busy.
pub const MAX_WAITING_REVIEWS: usize = 2_000;

impl ClaimsSink {
    pub fn new(
        dir: std::path::PathBuf,
        embedder: std::sync::Arc<crate::relevance::Embedder>,
        multilingual: Option<std::sync::Arc<crate::relevance::Embedder>>,
        models: crate::claims::Models,
        max_reviews: usize,
    ) -> ClaimsSink {
        ClaimsSink {
            dir,
            embedder,
            multilingual,
            models,
            max_reviews,
            waiting: Vec::new(),
        }
    }

    /// Adds `reviews` (and any waiting) to the corpus; on a busy corpus they wait.
    fn add(&mut self, reviews: Vec<crate::claims::Entry>) {
        self.waiting.extend(reviews);
        let over = self.waiting.len().saturating_sub(MAX_WAITING_REVIEWS);
        self.waiting.drain(..over);
        if self.waiting.is_empty() {
            return;
        }
        let opened = crate::claims::import::Importer::open(
            &self.dir,
            Some(self.embedder.clone()),
            self.multilingual.clone(),
            self.models.clone(),
            self.max_reviews,
        );
        let mut importer = match opened {
            Ok(i) => i,
            Err(e) => {
                tracing::info!(error = %e, waiting = self.waiting.len(), "the feeds' reviews wait for the fact-check corpus");
                return;
            }
        };
        let entries = std::mem::take(&mut self.waiting);
        let n = entries.len();
        let result = entries
            .into_iter()
            .try_for_each(|e| importer.offer(&e.review.url.clone(), e))
            .and_then(|_| importer.finish());
        match result {
            Ok(report) => tracing::info!(
                reviews = n,
                imported = report.imported,
                updated = report.updated,
                "the feeds' reviews added to the fact-check corpus"
            ),
            Err(e) => tracing::warn!(error = %e, "the feeds' reviews were not added to the fact-check corpus"),
        }
    }
}

pub struct Refresher {
    claims: Option<ClaimsSink>,
    index: EvidenceIndex,
    writer: IndexWriter,
    fetcher: Fetcher,
    config: IndexConfig,
    states: BTreeMap<String, FeedState>,
    metrics: Option<SharedMetrics>,
}

impl Refresher {
    /// Opens (or creates) the index in `dir` and takes its one writer.
    pub fn open(
        config: &IndexConfig,
        dir: &Path,
        fetch: &FetchConfig,
        metrics: Option<SharedMetrics>,
    ) -> anyhow::Result<Refresher> {
        let index = EvidenceIndex::open_rebuilding(dir)?;
        let writer = index
            .index
            .writer_with_num_threads(1, WRITER_BYTES)
            .map_err(|e| match e {
                tantivy::TantivyError::LockFailure(..) => IndexError::Busy(dir.display().to_string()),
                e => IndexError::Open {
                    dir: dir.display().to_string(),
                    reason: e.to_string(),
                },
            })?;
        let states = index
            .index
            .load_metas()
            .ok()
            .and_then(|m| m.payload)
            .and_then(|p| serde_json::from_str(&p).ok())
            .unwrap_or_default();
        let fetcher = Fetcher::new(fetch).map_err(anyhow::Error::msg)?;
        Ok(Refresher {
            claims: None,
            index,
            writer,
            fetcher,
            config: config.clone(),
            states,
            metrics,
        })
    }

    /// Sends the `ClaimReview`s the feeds' pages carry to the fact-check corpus too.
    pub fn with_claims(mut self, sink: ClaimsSink) -> Refresher {
        self.claims = Some(sink);
        self
    }

    /// Items held.
    pub fn len(&self) -> u64 {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads every feed once, then applies the bounds.
    pub async fn refresh(&mut self) -> Report {
        let mut feeds = Vec::new();
        for feed in self.config.feeds.clone() {
            let report = self.read_feed(&feed).await;
            if let Some(m) = &self.metrics {
                m.feed_read(report.outcome.as_str(), self.index.len());
            }
            match &report.outcome {
                FeedOutcome::Failed(why) => tracing::warn!(feed, reason = %why, "feed skipped"),
                outcome => tracing::info!(
                    feed,
                    outcome = outcome.as_str(),
                    added = report.added,
                    skipped = report.skipped.len(),
                    "feed read"
                ),
            }
            feeds.push(report);
        }
        let pruned = match tokio::task::block_in_place(|| self.prune(Utc::now().timestamp())) {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(error = %e, "index pruning failed; tried again at the next refresh");
                0
            }
        };
        Report {
            feeds,
            pruned,
            held: self.index.len(),
        }
    }

    async fn read_feed(&mut self, feed: &str) -> FeedReport {
        let mut report = FeedReport {
            feed: feed.to_string(),
            outcome: FeedOutcome::NotModified,
            added: 0,
            skipped: Vec::new(),
        };
        let known = self.states.get(feed).cloned().unwrap_or_default();
        let answer = self
            .fetcher
            .fetch_feed(feed, &known.validators, self.config.max_feed_bytes)
            .await;
        let (landed, body, validators) = match answer {
            Err(e) => {
                report.outcome = FeedOutcome::Failed(e.to_string());
                return report;
            }
            Ok(FeedAnswer::NotModified) => return report,
            Ok(FeedAnswer::Fresh { url, body, validators }) => (url, body, validators),
        };
        // Parsed on a blocking thread: a large or hostile feed must not hold an async worker.
        let at = landed.clone();
        let parsed = tokio::task::spawn_blocking(move || feeds::items(&body, &at))
            .await
            .unwrap_or_else(|e| Err(format!("the feed parser failed: {e}")));
        let items = match parsed {
            Ok(items) => items,
            Err(why) => {
                report.outcome = FeedOutcome::Failed(why);
                return report;
            }
        };
        report.outcome = FeedOutcome::Read { items: items.len() };
        let mut outage = false;
        let mut added_now = HashSet::new();
        let mut reviews: Vec<crate::claims::Entry> = Vec::new();
        // The newest items not held yet (an item held is skipped without counting, so a busy
        // feed's 21st new item is read too, up to `items_per_feed` new ones).
        let new: Vec<&feeds::Item> = items
            .iter()
            .filter(|i| !self.index.contains(&i.url))
            .take(self.config.items_per_feed)
            .collect();
        for item in new {
            if added_now.contains(&item.url) {
                continue;
            }
            let page = match self.fetcher.fetch(&item.url).await {
                Ok(page) => page,
                Err(e) => {
                    outage |= e.is_outage();
                    report.skipped.push((item.url.clone(), e.to_string()));
                    continue;
                }
            };
            let url = page.url.to_string();
            if url != item.url && (self.index.contains(&url) || added_now.contains(&url)) {
                continue;
            }
            // Untrusted HTML: the pages' bounded extraction (nesting bound, its own big-stack
            // thread, a time budget), off the async workers.
            let (html, at) = (page.html, url.clone());
            let read = match tokio::task::spawn_blocking(move || {
                crate::extract::extract_bounded(html, Some(at), crate::extract::EXTRACT_BUDGET)
            })
            .await
            {
                Ok(Ok(read)) => read,
                Ok(Err(e)) => {
                    report.skipped.push((item.url.clone(), format!("unreadable: {e}")));
                    continue;
                }
                Err(e) => {
                    report.skipped.push((item.url.clone(), format!("unreadable: {e}")));
                    continue;
                }
            };
            let text = if read.word_count >= MIN_PAGE_WORDS {
                read.text
            } else {
                item.summary.clone()
            };
            if text.trim().is_empty() {
                report.skipped.push((item.url.clone(), "no text".into()));
                continue;
            }
            let entry = super::Item {
                url: &url,
                link: &item.url,
                title: &feeds::cap_title(read.title.as_deref().unwrap_or(&item.title)),
                text: &text,
                claims: read.claim_reviews.iter().map(|r| r.claim.as_str()).collect(),
                published: read.date.or(item.published),
                feed,
            };
            if let Err(e) = self.add(&entry) {
                report.skipped.push((item.url.clone(), e.to_string()));
                continue;
            }
            let title = entry.title.to_string();
            reviews.extend(read.claim_reviews.iter().map(|r| crate::claims::Entry {
                review: r.clone(),
                title: title.clone(),
            }));
            added_now.insert(item.url.clone());
            added_now.insert(url);
            report.added += 1;
        }
        // An item lost to an outage must not hide behind the next 304.
        let state = FeedState {
            validators: if outage { known.validators } else { validators },
            last_read: Some(Utc::now().to_rfc3339()),
        };
        let before = self.states.insert(feed.to_string(), state);
        if let Err(e) = tokio::task::block_in_place(|| self.commit()) {
            // Its items were not kept: neither are the validators that would hide them.
            let _ = self.writer.rollback();
            match before {
                Some(old) => self.states.insert(feed.to_string(), old),
                None => self.states.remove(feed),
            };
            report.outcome = FeedOutcome::Failed(format!("commit failed: {e}"));
        } else if let Some(sink) = self.claims.as_mut() {
            // The items are held: their reviews join the fact-check corpus.
            tokio::task::block_in_place(|| sink.add(reviews));
        }
        report
    }

    /// Adds one item (visible after the next [`Refresher::commit`]).
    pub fn add(&mut self, item: &super::Item) -> Result<(), IndexError> {
        let f = self.index.fields;
        let mut doc = TantivyDocument::default();
        doc.add_text(f.url, item.url);
        doc.add_text(f.link, item.link);
        doc.add_text(f.title, item.title);
        doc.add_text(f.body, item.text.chars().take(MAX_TEXT_CHARS).collect::<String>());
        doc.add_text(f.claim, item.claims.join("\n"));
        doc.add_i64(f.published, item.published.map_or(0, |d| d.timestamp()));
        doc.add_i64(f.added, Utc::now().timestamp());
        doc.add_text(f.feed, item.feed);
        self.writer.add_document(doc)?;
        Ok(())
    }

    /// The index as searching sees it.
    pub fn index(&self) -> &EvidenceIndex {
        &self.index
    }

    /// One commit: the items added since the last one and the feeds' states, together.
    pub fn commit(&mut self) -> Result<(), IndexError> {
        let payload = serde_json::to_string(&self.states).unwrap_or_default();
        let mut prepared = self.writer.prepare_commit()?;
        prepared.set_payload(&payload);
        prepared.commit()?;
        self.index.reload()
    }

    /// Drops items indexed more than `max_age_days` ago, then the oldest beyond `max_items`.
    fn prune(&mut self, now: i64) -> Result<usize, IndexError> {
        let f = self.index.fields;
        let searcher = self.index.reader.searcher();
        let mut held: Vec<(i64, DocAddress)> = Vec::new();
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            let added = segment.fast_fields().i64("added")?;
            for doc in segment.doc_ids_alive() {
                held.push((added.first(doc).unwrap_or(0), DocAddress::new(ord as u32, doc)));
            }
        }
        held.sort_by_key(|(added, _)| *added);
        let cutoff = match self.config.max_age_days {
            0 => i64::MIN,
            days => now.saturating_sub((days as i64).saturating_mul(86_400)),
        };
        let over = held.len().saturating_sub(self.config.max_items);
        let mut doomed = 0;
        for (i, (added, address)) in held.iter().enumerate() {
            if i >= over && *added >= cutoff {
                break;
            }
            let doc: TantivyDocument = searcher.doc(*address)?;
            if let Some(url) = doc.get_first(f.url).and_then(|v| v.as_str()) {
                self.writer.delete_term(Term::from_field_text(f.url, url));
                doomed += 1;
            }
        }
        if doomed > 0 {
            self.commit()?;
        }
        Ok(doomed)
    }

    /// The daemon's task: a refresh at start, then every `refresh_secs`, until `shutdown`.
    pub async fn run(mut self, shutdown: CancellationToken) {
        let every = Duration::from_secs(self.config.refresh_secs);
        loop {
            let report = tokio::select! {
                r = self.refresh() => r,
                _ = shutdown.cancelled() => break,
            };
            let failed = report
                .feeds
                .iter()
                .filter(|f| matches!(f.outcome, FeedOutcome::Failed(_)))
                .count();
            let added: usize = report.feeds.iter().map(|f| f.added).sum();
            tracing::info!(
                feeds = report.feeds.len(),
                failed,
                added,
                pruned = report.pruned,
                held = report.held,
                "evidence index refreshed"
            );
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = shutdown.cancelled() => break,
            }
        }
        let writer = self.writer;
        // Merges finish (or stop) before the process ends; the last commit is already durable.
        let _ = tokio::task::spawn_blocking(move || writer.wait_merging_threads()).await;
    }
}
