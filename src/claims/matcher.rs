//! Claim matching: for a post (its text, its images' text and descriptions), the reviews whose
//! reviewed claim is the post's claim. A hybrid: the full-text index (BM25 over the reviewed
//! claim and the review's headline) and the flat scan of the claims' stored embeddings each
//! bring their best [`DEPTH`] candidates; each candidate is scored `cosine + W × bm25 / best
//! bm25` (W tuned on the CheckThat! train split), best first. The decision that a review is of
//! *this* claim (`same_claim`) is the cosine alone at or above the model's calibrated threshold
//! (`claims.same_claim`: precision ≥ 0.95 on train), so it means the same for a review found
//! here and for one read from a page's markup. A post not in English is embedded by the
//! multilingual model against the claims' multilingual vectors, when both are there. The
//! network watch's batch side (many posts at once, and its own "same claim" decision) is in
//! `batch`.

use std::path::Path;
use std::sync::Arc;

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{IndexRecordOption, Value};
use tantivy::{DocAddress, TantivyDocument, Term};

use super::vectors::VectorCache;
use super::{ClaimsConfig, Corpus, CorpusError, Entry, Models};
use crate::relevance::Embedder;

mod batch;

/// Candidates each side brings.
pub const DEPTH: usize = 100;
/// The weight of the normalised BM25 score beside the normalised cosine (tuned on the train
/// split: 0.4 BM25 + 0.6 cosine).
pub const BM25_WEIGHT: f32 = 0.4;
/// The headline's boost beside the reviewed claim's in BM25.
pub const TITLE_BOOST: f32 = 0.5;
/// Query words used at most.
const MAX_TERMS: usize = 64;

/// One review a match found, with its scores.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub entry: Entry,
    /// The fused score the candidates are ranked by.
    pub score: f32,
    /// The cosine of the post with the reviewed claim (none without vectors).
    pub cosine: Option<f32>,
    /// BM25 over claim and headline (0 when only the vectors found it).
    pub bm25: f32,
    /// The cosine is at or above the calibrated threshold: a review of this claim.
    pub same_claim: bool,
}

/// Which model space a match ran in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    English,
    Multilingual,
    /// No vectors for this post (no model, or the corpus's are another model's): words only,
    /// and no review is decided to be the same claim.
    WordsOnly,
}

impl Space {
    /// The name a kept answer's vector carries (vectors of two spaces are never compared).
    pub fn as_str(self) -> &'static str {
        match self {
            Space::English => "english",
            Space::Multilingual => "multilingual",
            Space::WordsOnly => "words",
        }
    }
}

pub struct Matcher {
    corpus: Corpus,
    vectors: VectorCache,
    vectors_multi: VectorCache,
    embedder: Option<Arc<Embedder>>,
    multilingual: Option<Arc<Embedder>>,
    /// The configured models' identities: the corpus's vectors are used only when they are
    /// these models' (checked at each match: an import may have changed them).
    models: Models,
    config: ClaimsConfig,
    /// Whether the watch's learned "same claim" head may decide (the bench turns it off to
    /// measure the cosine bar beside it).
    same_head: bool,
}

impl Matcher {
    /// Opens (or creates, empty) the corpus in `dir` for matching: the daemon's, which the
    /// feeds' reviews and later imports fill while it runs.
    pub fn open_or_create(
        dir: &Path,
        embedder: Option<Arc<Embedder>>,
        multilingual: Option<Arc<Embedder>>,
        models: &Models,
        config: &ClaimsConfig,
    ) -> Result<Matcher, CorpusError> {
        drop(Corpus::open(dir)?);
        Ok(Matcher::open(dir, embedder, multilingual, models, config)?.expect("just made"))
    }

    /// Opens the corpus in `dir` for matching; `None` when none was imported there yet.
    pub fn open(
        dir: &Path,
        embedder: Option<Arc<Embedder>>,
        multilingual: Option<Arc<Embedder>>,
        models: &Models,
        config: &ClaimsConfig,
    ) -> Result<Option<Matcher>, CorpusError> {
        let Some(corpus) = Corpus::open_existing(dir)? else {
            return Ok(None);
        };
        let f = corpus.fields;
        let m = Matcher {
            vectors: VectorCache::new(f.vector, Some(dir)),
            vectors_multi: VectorCache::new(f.vector_multi, Some(dir)),
            corpus,
            embedder,
            multilingual,
            models: models.clone(),
            config: config.clone(),
            same_head: true,
        };
        let (english, _) = m.usable();
        if m.embedder.is_some() && !english && !m.corpus.is_empty() {
            tracing::warn!(corpus = %m.corpus.models().model, configured = %models.model, "the fact-check corpus's vectors are another model's: claims are matched by words only and none decides a reply — run `musebot index import` on the dumps again");
        }
        Ok(Some(m))
    }

    /// This matcher with the watch's "same claim" decided by the cosine bar alone, never by the
    /// learned head (what the watch bench measures the head against).
    pub fn without_same_head(mut self) -> Matcher {
        self.same_head = false;
        self
    }

    pub fn corpus(&self) -> &Corpus {
        &self.corpus
    }

    /// Whether the corpus's vectors are the configured models' (English, multilingual).
    fn usable(&self) -> (bool, bool) {
        let held = self.corpus.models();
        (
            self.embedder.is_some() && !self.models.model.is_empty() && held.model == self.models.model,
            self.multilingual.is_some()
                && !self.models.multilingual.is_empty()
                && held.multilingual == self.models.multilingual,
        )
    }

    /// Loads every vector now (the daemon at start), returning how many.
    pub fn warm(&self) -> Result<usize, CorpusError> {
        let searcher = self.corpus.reader.searcher();
        let mut n = self.vectors.warm(&searcher)?;
        if self.usable().1 {
            n += self.vectors_multi.warm(&searcher)?;
        }
        Ok(n)
    }

    /// The space a post in `language` is matched in: English (or untagged) by the English
    /// model; another language by the multilingual one, and by words only (deciding nothing)
    /// without it — the English model's threshold means nothing across languages.
    pub fn space(&self, language: Option<&str>) -> Space {
        let english = language.is_none_or(|l| l == "en");
        match (english, self.usable()) {
            (false, (_, true)) => Space::Multilingual,
            (true, (true, _)) => Space::English,
            _ => Space::WordsOnly,
        }
    }

    /// The space a post's own vector is made in for claim memory (kept answers against new
    /// posts): the configured models, whatever the corpus holds.
    pub fn memory_space(&self, language: Option<&str>) -> Space {
        let english = language.is_none_or(|l| l == "en");
        match (english, self.embedder.is_some(), self.multilingual.is_some()) {
            (false, _, true) => Space::Multilingual,
            (true, true, _) => Space::English,
            _ => Space::WordsOnly,
        }
    }

    /// The threshold of a space.
    pub fn threshold(&self, space: Space) -> f32 {
        match space {
            Space::Multilingual => self.config.same_claim_multilingual,
            _ => self.config.same_claim,
        }
    }

    /// The multilingual model, which the stance model reads (`crate::stance`).
    pub fn multilingual(&self) -> Option<&Arc<Embedder>> {
        self.multilingual.as_ref()
    }

    /// Embeds `text` in `space` (CPU-bound: a blocking thread).
    pub fn embed(&self, text: &str, space: Space) -> Result<Option<Vec<f32>>, CorpusError> {
        let model = match space {
            Space::English => &self.embedder,
            Space::Multilingual => &self.multilingual,
            Space::WordsOnly => return Ok(None),
        };
        let Some(model) = model else { return Ok(None) };
        let v = model
            .embed(&[text.to_string()])
            .map_err(|e| CorpusError::Tantivy(tantivy::TantivyError::InternalError(e.to_string())))?;
        Ok(v.into_iter().next())
    }

    /// The cosine of each of `claims` with `post` (a post's vector in `space`), each claim
    /// embedded in the same space: what the same-claim decision reads for a review read from
    /// a page (compared with [`Matcher::threshold`]). `None` without a model for the space
    /// (CPU-bound: a blocking thread).
    pub fn cosines(&self, post: &[f32], claims: &[String], space: Space) -> Result<Option<Vec<f32>>, CorpusError> {
        let model = match space {
            Space::English => &self.embedder,
            Space::Multilingual => &self.multilingual,
            Space::WordsOnly => return Ok(None),
        };
        let Some(model) = model else { return Ok(None) };
        if claims.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let vectors = model
            .embed(claims)
            .map_err(|e| CorpusError::Tantivy(tantivy::TantivyError::InternalError(e.to_string())))?;
        Ok(Some(
            vectors.iter().map(|v| crate::relevance::cosine(post, v)).collect(),
        ))
    }

    /// The `k` best candidates for `text` (a post's text with its images' text), best first
    /// (CPU-bound: call from a blocking thread). Sees the latest commit first.
    pub fn find(&self, text: &str, language: Option<&str>, k: usize) -> Result<(Space, Vec<Candidate>), CorpusError> {
        self.find_with_vector(text, language, k).map(|(s, c, _)| (s, c))
    }

    /// [`Matcher::find`], with the post's own vector in its space (what a kept answer is
    /// remembered by).
    #[allow(clippy::type_complexity)]
    pub fn find_with_vector(
        &self,
        text: &str,
        language: Option<&str>,
        k: usize,
    ) -> Result<(Space, Vec<Candidate>, Option<Vec<f32>>), CorpusError> {
        let _ = self.corpus.reader.reload();
        let text = clean_post(text);
        let space = self.space(language);
        let query_vec = self.embed(&text, space)?;
        let searcher = self.corpus.reader.searcher();
        let cache = match space {
            Space::Multilingual => &self.vectors_multi,
            _ => &self.vectors,
        };
        // BM25 side.
        let f = self.corpus.fields;
        let mut analyzer = self.corpus.index.tokenizer_for_field(f.claim)?;
        let mut words: Vec<String> = Vec::new();
        let mut stream = analyzer.token_stream(&text);
        while let Some(t) = stream.next() {
            if !words.contains(&t.text) && words.len() < MAX_TERMS && !STOPWORDS.contains(&t.text.as_str()) {
                words.push(t.text.clone());
            }
        }
        let mut found: Vec<(DocAddress, f32, Option<f32>)> = Vec::new();
        if !words.is_empty() {
            let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
            for w in &words {
                for (field, boost) in [(f.claim, 1.0), (f.title, TITLE_BOOST)] {
                    let q = TermQuery::new(Term::from_field_text(field, w), IndexRecordOption::WithFreqs);
                    clauses.push((Occur::Should, Box::new(BoostQuery::new(Box::new(q), boost))));
                }
            }
            for (score, address) in searcher.search(&BooleanQuery::new(clauses), &TopDocs::with_limit(DEPTH))? {
                found.push((address, score, None));
            }
        }
        // Vector side.
        if let Some(q) = &query_vec {
            for (cos, address) in cache.top(&searcher, q, DEPTH)? {
                match found.iter_mut().find(|(a, _, _)| *a == address) {
                    Some(c) => c.2 = Some(cos),
                    None => found.push((address, 0.0, Some(cos))),
                }
            }
            for c in found.iter_mut().filter(|c| c.2.is_none()) {
                c.2 = cache.cosine(&searcher, c.0, q)?;
            }
        }
        // Each side min-max normalised over the candidates, then weighed.
        let range =
            |xs: &mut dyn Iterator<Item = f32>| xs.fold((f32::MAX, f32::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
        let norm = |x: f32, (lo, hi): (f32, f32)| if hi > lo { (x - lo) / (hi - lo) } else { 1.0 };
        let b_range = range(&mut found.iter().map(|c| c.1));
        let c_range = range(&mut found.iter().filter_map(|c| c.2));
        let threshold = self.threshold(space);
        let mut scored: Vec<(f32, DocAddress, f32, Option<f32>)> = found
            .into_iter()
            .map(|(a, bm25, cos)| {
                let score = match cos {
                    Some(c) => BM25_WEIGHT * norm(bm25, b_range) + (1.0 - BM25_WEIGHT) * norm(c, c_range),
                    None if query_vec.is_some() => BM25_WEIGHT * norm(bm25, b_range),
                    None => norm(bm25, b_range),
                };
                (score, a, bm25, cos)
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored.truncate(k);
        let mut out = Vec::new();
        for (score, address, bm25, cosine) in scored {
            let doc: TantivyDocument = searcher.doc(address)?;
            let Some(entry) = doc
                .get_first(f.entry)
                .and_then(|v| v.as_str())
                .and_then(|s| serde_json::from_str::<Entry>(s).ok())
            else {
                continue;
            };
            out.push(Candidate {
                entry,
                score,
                cosine,
                bm25,
                same_claim: space != Space::WordsOnly && cosine.is_some_and(|c| c >= threshold),
            });
        }
        Ok((space, out, query_vec))
    }
}

/// Words too common to say anything about a claim (BM25 weighs them low anyway; leaving them
/// out keeps a long post's query short).
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "he", "her", "his", "i", "in", "is",
    "it", "its", "of", "on", "or", "she", "that", "the", "their", "they", "this", "to", "was", "we", "were", "with",
    "you",
];

/// A post as claims are matched: without links (`scheme://…`, `www.…`, `pic.twitter.com/…`),
/// each `#tag` and `@handle` split into its words ("#AustralianFires" → "Australian Fires",
/// "@real_donald" → "real donald": tuning found them worth more as words than removed);
/// whitespace collapsed.
pub fn clean_post(text: &str) -> String {
    text.split_whitespace()
        .filter(|w| {
            let l = w.to_ascii_lowercase();
            !(l.contains("://") || l.starts_with("www.") || l.contains("pic.twitter.com"))
        })
        .map(|w| {
            let bare = w.trim_start_matches(['(', '#', '@', '＠', '＃']);
            if bare.len() == w.len() {
                return w.to_string();
            }
            // camelCase and snake_case → words.
            let mut out = String::new();
            let mut prev_lower = false;
            for c in bare.chars() {
                if c == '_' {
                    out.push(' ');
                    prev_lower = false;
                    continue;
                }
                if c.is_uppercase() && prev_lower {
                    out.push(' ');
                }
                prev_lower = c.is_lowercase();
                out.push(c);
            }
            out
        })
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_post_is_cleaned_of_links_handles_and_hash_marks() {
        assert_eq!(
            clean_post("Look #AustralianFires https://t.co/x pic.twitter.com/abc — Bio (@CenterForBioDiv) January 14, 2020 @real_donald"),
            "Look Australian Fires — Bio Center For Bio Div) January 14, 2020 real donald"
        );
    }
}
