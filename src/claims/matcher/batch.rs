//! The matcher's batch side, for the network watch's cheap path: many posts at once, words
//! first ([`Matcher::word_score`], a term dictionary lookup a word), vectors only for the few
//! (one embedding run and one scan a batch), and the "same claim" decision in the English space
//! by the learned head of [`crate::claims::same`] ([`Matcher::same_by_head`], each post's best
//! candidates read as pairs), elsewhere by the cosine bar ([`Matcher::best_of`]).

use tantivy::schema::Value;
use tantivy::{TantivyDocument, Term};

use super::{Matcher, Space, MAX_TERMS, STOPWORDS};
use crate::claims::{same, CorpusError, Entry};

/// The network watch's cheap path: many posts at once, words first, vectors only for the few.
impl Matcher {
    /// The words-only prefilter's score of `text`: the summed rarity (BM25's IDF) of its
    /// distinct words among the corpus's reviewed claims, in units of the rarest word's (one
    /// only one claim holds), so the bar means the same for 10 checks as for 200,000; 0 when
    /// none is there. A term dictionary lookup per word, no document read (cheap enough for
    /// every post).
    pub fn word_score(&self, searcher: &tantivy::Searcher, text: &str) -> f32 {
        let f = self.corpus.fields;
        let Ok(mut analyzer) = self.corpus.index.tokenizer_for_field(f.claim) else {
            return 0.0;
        };
        let n = searcher.num_docs() as f32;
        let rarest = (1.0 + (n - 0.5) / 1.5).ln();
        if rarest <= 0.0 {
            return 0.0;
        }
        let mut seen: Vec<String> = Vec::new();
        let mut score = 0.0;
        let mut stream = analyzer.token_stream(text);
        while let Some(t) = stream.next() {
            if seen.len() >= MAX_TERMS || seen.contains(&t.text) || STOPWORDS.contains(&t.text.as_str()) {
                continue;
            }
            seen.push(t.text.clone());
            let df = searcher.doc_freq(&Term::from_field_text(f.claim, &t.text)).unwrap_or(0) as f32;
            if df > 0.0 {
                score += (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            }
        }
        score / rarest
    }

    /// The distinct words of `text` as the claim field reads them (stopwords left out), each
    /// with its rarity among the corpus's claims (BM25's IDF; a word no claim holds gets the
    /// rarity of one only one claim holds): what [`crate::claims::same`] weighs shared words by.
    pub fn weighted_words(&self, searcher: &tantivy::Searcher, text: &str) -> Vec<same::Word> {
        let f = self.corpus.fields;
        let Ok(mut analyzer) = self.corpus.index.tokenizer_for_field(f.claim) else {
            return Vec::new();
        };
        let n = searcher.num_docs() as f32;
        let mut out: Vec<same::Word> = Vec::new();
        let mut stream = analyzer.token_stream(text);
        while let Some(t) = stream.next() {
            if out.len() >= MAX_TERMS || out.iter().any(|w| w.text == t.text) || STOPWORDS.contains(&t.text.as_str()) {
                continue;
            }
            let df = searcher.doc_freq(&Term::from_field_text(f.claim, &t.text)).unwrap_or(0) as f32;
            out.push(same::Word {
                text: t.text.clone(),
                idf: (1.0 + (n - df.max(1.0) + 0.5) / (df.max(1.0) + 0.5)).ln().max(0.0),
            });
        }
        out
    }

    /// The head of [`crate::claims::same`] when it applies to `space`: the English space, with
    /// the configured English model the one it was fitted with, the corpus's vectors that
    /// model's, and at least [`same::MIN_CORPUS`] reviews.
    pub fn same_head(&self, space: Space) -> Option<&'static same::Head> {
        let head = same::head()?;
        (self.same_head
            && space == Space::English
            && self.usable().0
            && head.model == self.models.model
            && self.corpus.reader.searcher().num_docs() >= same::MIN_CORPUS)
            .then_some(head)
    }

    /// For each of `texts` (posts of the English space, cleaned, embedded as `vectors`): the
    /// review [`same::Head`] decides is the post's claim among its best [`same::CANDIDATES`]
    /// by cosine, with that cosine — read only for a post whose best cosine reaches the head's
    /// floor. The watched post's job takes that review as the post's claim and reads it on its
    /// live page (`pipeline::muse::known::run_watched`).
    pub fn same_by_head(
        &self,
        head: &same::Head,
        searcher: &tantivy::Searcher,
        texts: &[String],
        vectors: &[Vec<f32>],
    ) -> Result<Vec<Option<(f32, Entry)>>, CorpusError> {
        let mut out = Vec::with_capacity(texts.len());
        for mut read in self.same_candidates(searcher, texts, vectors, head.floor)? {
            let xs: Vec<[f32; same::LEN]> = read.iter().map(|r| r.2).collect();
            out.push(head.choose(&xs).map(|(i, _)| {
                let (cosine, entry, _) = read.swap_remove(i);
                (cosine, entry)
            }));
        }
        Ok(out)
    }

    /// For each of `texts` (cleaned, embedded as `vectors` in the English space): its best
    /// [`same::CANDIDATES`] reviews by cosine (of the scan's best [`same::SCAN_DEPTH`], one
    /// review a cosine), each with that cosine and the features [`crate::claims::same`] reads —
    /// none for a post whose best cosine is below `floor`.
    #[allow(clippy::type_complexity)]
    pub fn same_candidates(
        &self,
        searcher: &tantivy::Searcher,
        texts: &[String],
        vectors: &[Vec<f32>],
        floor: f32,
    ) -> Result<Vec<Vec<(f32, Entry, [f32; same::LEN])>>, CorpusError> {
        self.same_candidates_except(searcher, texts, vectors, floor, &|_, _| false)
    }

    /// [`Matcher::same_candidates`] as if the reviews `skip` names (for the post at that
    /// index) were not in the corpus: what the head's fit reads a post whose claim no review
    /// holds by (its gold review left out).
    #[allow(clippy::type_complexity)]
    pub fn same_candidates_except(
        &self,
        searcher: &tantivy::Searcher,
        texts: &[String],
        vectors: &[Vec<f32>],
        floor: f32,
        skip: &dyn Fn(usize, &Entry) -> bool,
    ) -> Result<Vec<Vec<(f32, Entry, [f32; same::LEN])>>, CorpusError> {
        let f = self.corpus.fields;
        let queries: Vec<&[f32]> = vectors.iter().map(Vec::as_slice).collect();
        let found = self.vectors.top_many(searcher, &queries, same::SCAN_DEPTH)?;
        let mut out = Vec::with_capacity(texts.len());
        for (n, (text, scanned)) in texts.iter().zip(found).enumerate() {
            let mut read = Vec::new();
            if scanned.first().is_none_or(|t| t.0 < floor) {
                out.push(read);
                continue;
            }
            // Reviews whose vectors are one (a copy of a claim, the same claim imported twice)
            // are one candidate: the first of each cosine.
            let mut entries: Vec<(f32, Entry)> = Vec::with_capacity(same::CANDIDATES);
            let mut last = f32::NAN;
            for (cosine, address) in scanned {
                if entries.len() == same::CANDIDATES {
                    break;
                }
                if (last - cosine).abs() <= f32::EPSILON {
                    continue;
                }
                last = cosine;
                let doc: TantivyDocument = searcher.doc(address)?;
                if let Some(entry) = doc
                    .get_first(f.entry)
                    .and_then(|v| v.as_str())
                    .and_then(|s| serde_json::from_str::<Entry>(s).ok())
                    .filter(|e| !skip(n, e))
                {
                    entries.push((cosine, entry));
                }
            }
            let Some(best) = entries.first().map(|e| e.0).filter(|c| *c >= floor) else {
                out.push(read);
                continue;
            };
            let post = self.weighted_words(searcher, text);
            let claims: Vec<(Vec<same::Word>, Vec<same::Word>)> = entries
                .iter()
                .map(|(_, e)| {
                    (
                        self.weighted_words(searcher, &e.review.claim),
                        self.weighted_words(searcher, &e.title),
                    )
                })
                .collect();
            for (i, (cosine, entry)) in entries.iter().enumerate() {
                let rival = entries
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .map(|(_, (c, _))| *c)
                    .reduce(f32::max);
                let x = same::features(&same::Pair {
                    cosine: *cosine,
                    best,
                    rival,
                    post: &post,
                    claim: &claims[i].0,
                    title: &claims[i].1,
                });
                read.push((*cosine, entry.clone(), x));
            }
            out.push(read);
        }
        Ok(out)
    }

    /// The searcher of the latest commit (one per batch).
    pub fn searcher(&self) -> tantivy::Searcher {
        let _ = self.corpus.reader.reload();
        self.corpus.reader.searcher()
    }

    /// `texts` embedded by `space`'s model, one run; `None` without that model.
    pub fn embed_in(&self, space: Space, texts: &[String]) -> Result<Option<Vec<Vec<f32>>>, CorpusError> {
        let model = match space {
            Space::English => &self.embedder,
            Space::Multilingual => &self.multilingual,
            Space::WordsOnly => return Ok(None),
        };
        let Some(model) = model else {
            return Ok(None);
        };
        if texts.is_empty() {
            return Ok(Some(Vec::new()));
        }
        model
            .embed(texts)
            .map(Some)
            .map_err(|e| CorpusError::Tantivy(tantivy::TantivyError::InternalError(e.to_string())))
    }

    /// The same-claim decision by the cosine bar for vectors already embedded in `space` (by
    /// [`Matcher::embed_in`]): the best review at or above the space's threshold, with that
    /// cosine.
    pub fn best_of(
        &self,
        searcher: &tantivy::Searcher,
        vectors: &[Vec<f32>],
        space: Space,
    ) -> Result<Vec<Option<(f32, Entry)>>, CorpusError> {
        let cache = match space {
            Space::Multilingual => &self.vectors_multi,
            _ => &self.vectors,
        };
        let threshold = self.threshold(space);
        let f = self.corpus.fields;
        let mut out = Vec::with_capacity(vectors.len());
        for best in cache.best_many(searcher, vectors)? {
            let Some((cosine, address)) = best.filter(|(c, _)| *c >= threshold) else {
                out.push(None);
                continue;
            };
            let doc: TantivyDocument = searcher.doc(address)?;
            let entry = doc
                .get_first(f.entry)
                .and_then(|v| v.as_str())
                .and_then(|s| serde_json::from_str::<Entry>(s).ok());
            out.push(entry.map(|e| (cosine, e)));
        }
        Ok(out)
    }
}
