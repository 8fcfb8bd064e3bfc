//! Known claims: the fact-check corpus and the claim matcher. Most viral claims
//! recur, and the strongest evidence for one is the published fact-check of that very claim.
//! [`Corpus`] is its own tantivy index (`claims/` in the state folder) — one document per
//! review URL, the review as JSON, its claim and headline as BM25 text, the reviewed claim's
//! embedding (int8, one per relevance model) — filled by [`import::Importer`] (`musebot index
//! import`, and the refresher with the feeds' reviews) and read by [`matcher::Matcher`].
//!
//! Unlike the evidence index (a cache of the feeds), an operator's import cannot be read again,
//! so a corpus of another schema is refused by name, never emptied. The commit payload names
//! the models the vectors were made with: a matcher whose model is another ranks by words only
//! and decides nothing, saying so.

pub mod formats;
pub mod import;
pub mod matcher;
pub mod prescan;
pub mod same;
pub mod vectors;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tantivy::schema::{Field, Schema, FAST, STORED, STRING, TEXT};
use tantivy::{Index, IndexReader, ReloadPolicy};

use crate::model::ClaimReview;
use crate::relevance::Embedder;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClaimsConfig {
    /// Match every post against the corpus (with a relevance model configured).
    pub enabled: bool,
    /// Folder of the corpus ("" = `claims/` in `daemon.state_dir`).
    pub path: String,
    /// Reviews kept at most; past it an import drops the oldest reviewed first.
    pub max_reviews: usize,
    /// The "same claim" decision: the cosine of the post with the reviewed claim at or above
    /// which a review may decide the reply, for `relevance.model` (calibrated for precision ≥
    /// 0.95 on the CheckThat! 2022 train split with all-MiniLM-L6-v2: `cargo bench --bench
    /// claim_matching`). Another model needs its own.
    pub same_claim: f32,
    /// The same for `relevance.multilingual_model` (posts not in English).
    pub same_claim_multilingual: f32,
    /// Candidates a match returns (the top ones are shown by `check` and `index match`).
    pub candidates: usize,
}

impl Default for ClaimsConfig {
    fn default() -> Self {
        ClaimsConfig {
            enabled: true,
            path: String::new(),
            max_reviews: 500_000,
            same_claim: 0.70,
            same_claim_multilingual: 0.70,
            candidates: 5,
        }
    }
}

impl ClaimsConfig {
    pub fn dir(&self, state_dir: &Path) -> PathBuf {
        if self.path.is_empty() {
            state_dir.join("claims")
        } else {
            PathBuf::from(&self.path)
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("claims.path: cannot open the fact-check corpus in {dir}: {reason} — {fix}")]
    Open {
        dir: String,
        reason: String,
        fix: &'static str,
    },
    #[error("claims.path: another musebot is writing the fact-check corpus in {0} (an import or the feeds' refresher); try again when it is done")]
    Busy(String),
    #[error("claims: {0}")]
    Tantivy(#[from] tantivy::TantivyError),
}

/// The fields of one review.
#[derive(Clone, Copy)]
pub(crate) struct Fields {
    /// The review's URL: the key (one document per review).
    pub url: Field,
    pub claim: Field,
    /// The review's headline.
    pub title: Field,
    /// The [`Entry`] as JSON.
    pub entry: Field,
    /// A hash of the entry (an unchanged re-import writes nothing).
    pub digest: Field,
    /// Reviewed, Unix seconds (0 = unknown): the oldest go first past `max_reviews`.
    pub reviewed: Field,
    /// The claim's int8 embedding by `relevance.model` / `relevance.multilingual_model`.
    pub vector: Field,
    pub vector_multi: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let fields = Fields {
        url: b.add_text_field("url", STRING | STORED),
        claim: b.add_text_field("claim", TEXT),
        title: b.add_text_field("title", TEXT),
        entry: b.add_text_field("entry", STORED),
        digest: b.add_text_field("digest", STRING | STORED),
        reviewed: b.add_i64_field("reviewed", STORED | FAST),
        vector: b.add_bytes_field("vector", STORED),
        vector_multi: b.add_bytes_field("vector_multi", STORED),
    };
    (b.build(), fields)
}

/// One review as the corpus keeps it: the review and its headline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub review: ClaimReview,
    #[serde(default)]
    pub title: String,
}

/// What the commit payload records: the models the vectors were made with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Models {
    /// `relevance.model`'s identity ([`model_id`]); empty = no vectors.
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub multilingual: String,
}

/// A model file's identity for the payload: its name and size (the pins check its bytes).
pub fn model_id(path: &str) -> String {
    if path.is_empty() {
        return String::new();
    }
    let name = Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    format!("{name}:{size}")
}

/// The relevance models the corpus's vectors are made with (`relevance.model`, and
/// `relevance.multilingual_model` when set), loaded, with their identities.
pub fn load_models(
    r: &crate::relevance::RelevanceConfig,
) -> Result<(Arc<Embedder>, Option<Arc<Embedder>>, Models), crate::relevance::RelevanceError> {
    let english = Arc::new(Embedder::load(r)?);
    let multilingual = if r.multilingual_model.is_empty() {
        None
    } else {
        let own = crate::relevance::RelevanceConfig {
            model: r.multilingual_model.clone(),
            tokenizer: r.multilingual_tokenizer.clone(),
            ..r.clone()
        };
        Some(Arc::new(Embedder::load(&own).map_err(|e| match e {
            crate::relevance::RelevanceError::Config { key, problem, fix } => {
                crate::relevance::RelevanceError::Config {
                    key: match key {
                        "model" => "multilingual_model",
                        "tokenizer" => "multilingual_tokenizer",
                        k => k,
                    },
                    problem,
                    fix,
                }
            }
            e => e,
        })?))
    };
    let models = Models {
        model: model_id(&r.model),
        multilingual: if multilingual.is_some() {
            model_id(&r.multilingual_model)
        } else {
            String::new()
        },
    };
    Ok((english, multilingual, models))
}

/// The open corpus, for matching (any number per process) and for the one writer.
pub struct Corpus {
    pub(crate) index: Index,
    pub(crate) reader: IndexReader,
    pub(crate) fields: Fields,
    dir: PathBuf,
}

impl Corpus {
    /// Opens the corpus in `dir`, creating an empty one when there is none.
    pub fn open(dir: &Path) -> Result<Corpus, CorpusError> {
        let fail = |reason: String, fix| CorpusError::Open {
            dir: dir.display().to_string(),
            reason,
            fix,
        };
        let writable = "make the folder writable by the bot's user";
        std::fs::create_dir_all(dir).map_err(|e| fail(e.to_string(), writable))?;
        let (schema, fields) = schema();
        let directory = tantivy::directory::MmapDirectory::open(dir).map_err(|e| fail(e.to_string(), writable))?;
        let index = Index::open_or_create(directory, schema).map_err(|e| {
            fail(
                e.to_string(),
                "it was made by another musebot version: move the folder aside and import the dumps again",
            )
        })?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e: tantivy::TantivyError| fail(e.to_string(), writable))?;
        Ok(Corpus {
            index,
            reader,
            fields,
            dir: dir.to_path_buf(),
        })
    }

    /// Opens the corpus for reading only: `None` when none was made in `dir` yet.
    pub fn open_existing(dir: &Path) -> Result<Option<Corpus>, CorpusError> {
        if !dir.join("meta.json").exists() {
            return Ok(None);
        }
        Corpus::open(dir).map(Some)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Reviews held (as of the last commit seen).
    pub fn len(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sees the latest commit (another process's import included).
    pub fn reload(&self) -> Result<(), CorpusError> {
        Ok(self.reader.reload()?)
    }

    /// The corpus's generation: the last commit's opstamp (any process's), which grows with
    /// every import batch and feed commit.
    pub fn generation(&self) -> u64 {
        self.index.load_metas().map(|m| m.opstamp).unwrap_or(0)
    }

    /// The models of the last commit's vectors.
    pub fn models(&self) -> Models {
        self.index
            .load_metas()
            .ok()
            .and_then(|m| m.payload)
            .and_then(|p| serde_json::from_str(&p).ok())
            .unwrap_or_default()
    }

    /// Bytes on disk.
    pub fn disk_bytes(&self) -> u64 {
        std::fs::read_dir(&self.dir)
            .map(|d| d.flatten().filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum())
            .unwrap_or(0)
    }
}
