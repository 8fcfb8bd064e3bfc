//! Relevance: sentence embeddings with ONNX Runtime (`ort`, loaded dynamically from the path
//! the operator configures) and a HuggingFace tokenizer (`tokenizers`; a Unigram vocabulary in
//! the compact form of [`unigram`], with the same ids), L2-normalised so a dot
//! product is a cosine. Two kinds of model, told apart by their inputs ([`Kind`]): a BERT-style
//! encoder (all-MiniLM-L6-v2, English: its tokens mean-pooled) and a sentence encoder fed
//! token ids and row splits (Universal Sentence Encoder multilingual v3: a post in one language
//! against pages in another; `scripts/convert_use_m3.py`). A page is cut into short
//! passages; a lexical prefilter (BM25 of the post's terms, [`lexical_top`]) picks the few worth
//! embedding, so the model runs on a handful of passages per page instead of all of them, in
//! two stages where the first decides ([`staged`]). A page
//! is scored by its best embedded passage; the best ones are what the evidence stage reads.
//! A model file `musebot models install` recorded is loaded only with its recorded SHA-256
//! (`crate::pins::verify`).

use std::path::Path;
use std::sync::Mutex;

use ndarray::{Array2, Ix3};
use ort::session::builder::GraphOptimizationLevel;
use ort::session::Session;
use ort::value::Tensor;
use serde::{Deserialize, Serialize};
use tokenizers::Encoding;

mod staged;
pub mod unigram;
pub use staged::Staged;
use unigram::TextTokenizer;

/// Tokens per text the model sees (all-MiniLM-L6-v2 was trained on 128-token inputs; a
/// 60-word passage is ~80 tokens, so only unusual text is cut).
pub const MAX_TOKENS: usize = 128;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RelevanceConfig {
    /// ONNX Runtime shared library (e.g. site-packages/onnxruntime/capi/libonnxruntime.so.1.32.0).
    pub onnxruntime: String,
    /// Sentence-embedding model (ONNX; inputs input_ids, attention_mask, token_type_ids; output
    /// last_hidden_state), e.g. all-MiniLM-L6-v2.
    pub model: String,
    /// The model's tokenizer.json.
    pub tokenizer: String,
    /// Pages whose best passage scores below this cosine are dropped (calibration: ARCHITECTURE.md).
    pub threshold: f32,
    /// A multilingual model for posts not in English (pages in any language), e.g. Universal
    /// Sentence Encoder multilingual v3 as `scripts/convert_use_m3.py` makes it; "" = the
    /// model above for every post.
    pub multilingual_model: String,
    /// Its tokenizer.json.
    pub multilingual_tokenizer: String,
    /// Its threshold (calibrated as the one above).
    pub multilingual_threshold: f32,
    /// Words per passage.
    pub passage_words: usize,
    /// Passages of a page the lexical prefilter hands to the embedding model (0: all of them).
    pub prefilter: usize,
    /// Of those, the best this many by BM25 are embedded first; the rest only for a page they
    /// leave below the threshold, so a page passes exactly when it would with all of them
    /// embedded (only which passages reach the evidence step can differ; calibration:
    /// ARCHITECTURE.md). 0, or `prefilter` or more: all of them at once.
    pub prefilter_first: usize,
    /// Passages of a page sent to the evidence stage.
    pub max_passages: usize,
    /// Pages are read, tier first, until this many pass the threshold; the rest are not fetched.
    pub max_pages: usize,
    /// CPU threads for embedding: one single-threaded model session each, texts shared among them.
    pub threads: usize,
    /// An image-embedding model (ONNX, input NCHW float, output the embedding) for visual
    /// relevance, e.g. DINO ViT-B/8; "" = the perceptual hash decides.
    pub image_model: String,
    /// Its input size (square), pixels.
    pub image_size: u32,
    /// A page whose main image scores this cosine with the post's picture is relevant (Muse: 0.7).
    pub image_threshold: f32,
    /// Evidence calls (two pages each) made at once; Muse's early stop is checked between
    /// rounds. 1 = Muse's order, fewest tokens; 2 = one call less in sequence when the first
    /// pages do not suffice, one call more when they do.
    pub evidence_parallel: usize,
}

impl Default for RelevanceConfig {
    fn default() -> Self {
        RelevanceConfig {
            onnxruntime: String::new(),
            model: String::new(),
            tokenizer: String::new(),
            threshold: 0.28,
            multilingual_model: String::new(),
            multilingual_tokenizer: String::new(),
            multilingual_threshold: 0.29,
            passage_words: 60,
            prefilter: 3,
            prefilter_first: 2,
            max_passages: 2,
            max_pages: 6,
            threads: 2,
            image_model: String::new(),
            image_size: 224,
            image_threshold: 0.7,
            evidence_parallel: 1,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RelevanceError {
    #[error("relevance.{key}: {problem} — {fix}")]
    Config {
        key: &'static str,
        problem: String,
        fix: &'static str,
    },
    #[error("embedding failed: {0}")]
    Run(String),
}

/// Only one ONNX Runtime environment may exist per process.
static ORT_ENV: Mutex<Option<ort::environment::Environment>> = Mutex::new(None);

pub(crate) fn environment(dylib: &Path) -> ort::Result<ort::environment::Environment> {
    let mut env = ORT_ENV.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(e) = env.as_ref() {
        return Ok(e.clone());
    }
    let built = ort::init_from(dylib)
        .map_err(ort::Error::wrap)?
        .with_name("musebot")
        .with_telemetry(false)
        .build()?;
    *env = Some(built.clone());
    Ok(built)
}

pub(crate) fn session(env: &ort::environment::Environment, model: &Path) -> ort::Result<Session> {
    Session::builder(env)?
        .with_optimization_level(GraphOptimizationLevel::Level3)?
        .with_intra_threads(1)?
        .with_inter_threads(1)?
        .commit_from_file(model)
}

/// Runs the model on one text at a time. A dynamically quantized model (the sandbox's)
/// quantizes activations per run, so a text batched with others would get a slightly different
/// vector (cosine ~0.996) and relevance would depend on which pages shared a wave; alone, it
/// never does, and there is no padding. Parallelism comes from `threads` sessions of one thread
/// each, which measured faster than one two-thread session on batches (3.3 vs 3.7 ms a passage).
pub struct Embedder {
    sessions: Vec<Mutex<Session>>,
    tokenizer: TextTokenizer,
    kind: Kind,
}

/// What a model takes and gives, read from its inputs when it is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `input_ids`, `attention_mask`, `token_type_ids` → `last_hidden_state`, mean-pooled.
    TokenEmbeddings,
    /// `token_ids` (int32, the texts' tokens one after another) and `row_splits` (int64) →
    /// `outputs`, one sentence embedding per text.
    SentenceEmbeddings,
}

impl Embedder {
    pub fn load(config: &RelevanceConfig) -> Result<Embedder, RelevanceError> {
        // Present, and — when `musebot models install` recorded it (`crate::pins`) — still the
        // file it installed.
        let need = |key: &'static str, path: &str, fix: &'static str| {
            if path.is_empty() || !Path::new(path).exists() {
                Err(RelevanceError::Config {
                    key,
                    problem: format!("`{path}` does not exist"),
                    fix,
                })
            } else {
                crate::pins::verify(Path::new(path)).map_err(|problem| RelevanceError::Config {
                    key,
                    problem,
                    fix: "run `musebot models install` again, or point at another file",
                })
            }
        };
        need(
            "onnxruntime",
            &config.onnxruntime,
            "pip install onnxruntime and point at capi/libonnxruntime.so.*",
        )?;
        need(
            "model",
            &config.model,
            "point at a sentence-embedding model.onnx (scripts/setup-sandbox.sh installs one)",
        )?;
        need("tokenizer", &config.tokenizer, "point at the model's tokenizer.json")?;
        let env = environment(Path::new(&config.onnxruntime)).map_err(|e| RelevanceError::Config {
            key: "onnxruntime",
            problem: format!("cannot load `{}`: {e}", config.onnxruntime),
            fix: "use ONNX Runtime 1.22 or newer",
        })?;
        let sessions = (0..config.threads.max(1))
            .map(|_| session(&env, Path::new(&config.model)).map(Mutex::new))
            .collect::<ort::Result<Vec<_>>>()
            .map_err(|e| RelevanceError::Config {
                key: "model",
                problem: format!("cannot load `{}`: {e}", config.model),
                fix: "use an ONNX sentence-embedding model",
            })?;
        // A Unigram vocabulary (the multilingual model's) is kept compact (`unigram`).
        let mut tokenizer =
            TextTokenizer::from_file(Path::new(&config.tokenizer)).map_err(|e| RelevanceError::Config {
                key: "tokenizer",
                problem: format!("cannot load `{}`: {e}", config.tokenizer),
                fix: "use the model's tokenizer.json",
            })?;
        tokenizer.truncate_at(MAX_TOKENS).map_err(RelevanceError::Run)?;
        let kind = {
            let first = sessions[0].lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let names: Vec<&str> = first.inputs().iter().map(|i| i.name()).collect();
            if names.contains(&"row_splits") && names.contains(&"token_ids") {
                Kind::SentenceEmbeddings
            } else if names.contains(&"input_ids") {
                Kind::TokenEmbeddings
            } else {
                return Err(RelevanceError::Config {
                    key: "model",
                    problem: format!("`{}` takes {names:?}", config.model),
                    fix: "use a BERT-style model (input_ids, attention_mask, token_type_ids) or the converted multilingual one (token_ids, row_splits)",
                });
            }
        };
        Ok(Embedder {
            sessions,
            tokenizer,
            kind,
        })
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Unit-length embeddings of `texts` (CPU-bound: call from a blocking thread). Texts are
    /// dealt to the sessions longest first, each session on its own scoped thread.
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, RelevanceError> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.iter().map(String::as_str).collect::<Vec<_>>(), true)
            .map_err(|e| RelevanceError::Run(e.to_string()))?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(encodings[i].len()));
        let k = self.sessions.len().min(order.len()).max(1);
        let run_share = |share: usize| -> Share {
            // A session is stateless between runs: a panic elsewhere does not spoil it.
            let mut session = self.sessions[share]
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            order
                .iter()
                .skip(share)
                .step_by(k)
                .map(|&i| Ok((i, self.run(&mut session, &encodings[i])?)))
                .collect()
        };
        let shares: Vec<Share> = if k == 1 {
            vec![run_share(0)]
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = (0..k).map(|share| scope.spawn(move || run_share(share))).collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join()
                            .unwrap_or_else(|_| Err(RelevanceError::Run("embedding thread panicked".into())))
                    })
                    .collect()
            })
        };
        let mut out = vec![Vec::new(); texts.len()];
        for share in shares {
            for (i, v) in share? {
                out[i] = v;
            }
        }
        Ok(out)
    }

    /// One tokenised text through one of the sessions, as this kind of model takes it.
    fn run(&self, session: &mut Session, encoding: &Encoding) -> Result<Vec<f32>, RelevanceError> {
        match self.kind {
            Kind::TokenEmbeddings => embed_one(session, encoding),
            Kind::SentenceEmbeddings => embed_sentence(session, encoding),
        }
    }
}

/// One session's embeddings, by text index.
type Share = Result<Vec<(usize, Vec<f32>)>, RelevanceError>;

/// One text through the model: mean pooling over its tokens, then L2 normalisation.
fn embed_one(session: &mut Session, encoding: &Encoding) -> Result<Vec<f32>, RelevanceError> {
    let run = |e: String| RelevanceError::Run(e);
    let n = encoding.len();
    let row = |v: &[u32]| Array2::from_shape_fn((1, n), |(_, j)| v[j] as i64);
    let inputs = ort::inputs![
        "input_ids" => Tensor::from_array(row(encoding.get_ids())).map_err(|e| run(e.to_string()))?,
        "attention_mask" => Tensor::from_array(row(encoding.get_attention_mask())).map_err(|e| run(e.to_string()))?,
        "token_type_ids" => Tensor::from_array(row(encoding.get_type_ids())).map_err(|e| run(e.to_string()))?,
    ];
    let outputs = session.run(inputs).map_err(|e| run(e.to_string()))?;
    let hidden = outputs
        .get("last_hidden_state")
        .ok_or_else(|| run("the model has no last_hidden_state output".into()))?
        .try_extract_array::<f32>()
        .map_err(|e| run(e.to_string()))?
        .into_dimensionality::<Ix3>()
        .map_err(|e| run(e.to_string()))?;
    let dim = hidden.shape()[2];
    let mut v = vec![0f32; dim];
    for t in 0..n {
        for (d, x) in v.iter_mut().enumerate() {
            *x += hidden[[0, t, d]];
        }
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= norm);
    Ok(v)
}
/// One text through a sentence encoder (token ids and row splits in, the embedding out), then
/// L2 normalisation.
fn embed_sentence(session: &mut Session, encoding: &Encoding) -> Result<Vec<f32>, RelevanceError> {
    let run = |e: String| RelevanceError::Run(e);
    let ids: Vec<i32> = encoding.get_ids().iter().map(|&i| i as i32).collect();
    let n = ids.len() as i64;
    let inputs = ort::inputs![
        "token_ids" => Tensor::from_array(ndarray::Array1::from(ids)).map_err(|e| run(e.to_string()))?,
        "row_splits" => Tensor::from_array(ndarray::Array1::from(vec![0i64, n])).map_err(|e| run(e.to_string()))?,
    ];
    let outputs = session.run(inputs).map_err(|e| run(e.to_string()))?;
    let out = outputs
        .get("outputs")
        .ok_or_else(|| run("the model has no `outputs` output".into()))?
        .try_extract_array::<f32>()
        .map_err(|e| run(e.to_string()))?;
    let mut v: Vec<f32> = out.iter().copied().collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= norm);
    Ok(v)
}

/// Dot product (a cosine for unit vectors).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// BM25 saturation and length normalisation (the usual Lucene values).
const BM25_K1: f32 = 1.2;
const BM25_B: f32 = 0.75;

/// Function words that would otherwise make every passage match.
const STOPWORDS: &[&str] = &[
    "the", "and", "for", "that", "with", "this", "from", "are", "was", "were", "have", "has", "had", "not", "but",
    "its", "they", "them", "their", "there", "what", "which", "who", "whom", "will", "would", "can", "could", "should",
    "into", "about", "over", "than", "then", "just", "also", "been", "being", "you", "your", "our", "out", "all",
    "any", "more", "most", "some", "such", "only", "other", "when", "where", "while", "how", "why", "these", "those",
    "said", "says", "after", "before", "very",
];

/// Lower-cased words of three letters or more, stopwords left out.
pub fn terms(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .collect()
}

/// Indices, in page order, of the `k` passages whose BM25 score for `query`'s terms is highest
/// (document frequencies from the page's own passages; ties keep page order, so a page that
/// shares no word with the query yields its first passages, usually the lead). All of them when
/// `k` is 0 or the page has no more than `k`. `scripts/calibrate_relevance.py` mirrors this.
pub fn lexical_top(query: &str, passages: &[String], k: usize) -> Vec<usize> {
    let mut top = lexical_ranked(query, passages, k);
    top.sort_unstable();
    top
}

/// The passages [`lexical_top`] picks, best BM25 score first (ties in page order; page order
/// when it picks them all).
pub fn lexical_ranked(query: &str, passages: &[String], k: usize) -> Vec<usize> {
    let n = passages.len();
    if k == 0 || n <= k {
        return (0..n).collect();
    }
    let query: std::collections::HashSet<String> = terms(query).into_iter().collect();
    let docs: Vec<Vec<String>> = passages.iter().map(|p| terms(p)).collect();
    let avg = (docs.iter().map(Vec::len).sum::<usize>() as f32 / n as f32).max(1e-9);
    let df = |t: &String| docs.iter().filter(|d| d.contains(t)).count() as f32;
    let idf: std::collections::HashMap<&String, f32> = query
        .iter()
        .map(|t| (t, (1.0 + (n as f32 - df(t) + 0.5) / (df(t) + 0.5)).ln()))
        .collect();
    let scores: Vec<f32> = docs
        .iter()
        .map(|d| {
            // Summed in term order, so equal scores (and the ties they decide) never depend on
            // hashing order.
            let mut tf: std::collections::BTreeMap<&String, f32> = std::collections::BTreeMap::new();
            for t in d.iter().filter(|t| query.contains(*t)) {
                *tf.entry(t).or_default() += 1.0;
            }
            let norm = BM25_K1 * (1.0 - BM25_B + BM25_B * d.len() as f32 / avg);
            tf.iter().map(|(t, f)| idf[t] * f * (BM25_K1 + 1.0) / (f + norm)).sum()
        })
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    order.truncate(k);
    order
}

/// Splits a page's text into passages of consecutive paragraphs, at most `max_words` words
/// each (a longer paragraph is cut at word boundaries), and at most [`PASSAGE_CHARS_PER_WORD`]
/// × `max_words` characters each (a passage of giant "words" is cut there).
pub fn passages(text: &str, max_words: usize) -> Vec<String> {
    let max_chars = max_words.max(10) * PASSAGE_CHARS_PER_WORD;
    passages_by_words(text, max_words)
        .into_iter()
        .map(|p| crate::prompts::cap_chars(p, max_chars))
        .collect()
}

/// Characters a passage may have per word of its budget.
pub const PASSAGE_CHARS_PER_WORD: usize = 12;

fn passages_by_words(text: &str, max_words: usize) -> Vec<String> {
    let max_words = max_words.max(10);
    let mut out = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for para in text.split('\n').map(str::trim).filter(|p| !p.is_empty()) {
        let words: Vec<&str> = para.split_whitespace().collect();
        if !current.is_empty() && current.len() + words.len() > max_words {
            out.push(current.join(" "));
            current.clear();
        }
        for chunk in words.chunks(max_words) {
            if chunk.len() == max_words {
                if !current.is_empty() {
                    out.push(current.join(" "));
                    current.clear();
                }
                out.push(chunk.join(" "));
            } else {
                current.extend_from_slice(chunk);
            }
        }
    }
    if !current.is_empty() {
        out.push(current.join(" "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_top_prefers_passages_sharing_the_posts_rare_words() {
        let passages: Vec<String> = [
            "The weather was mild across the region on Tuesday.",
            "Officials said the vaccine trial enrolled 40,000 volunteers.",
            "Local sports results and the weekend weather outlook.",
            "The trial found the vaccine 95 percent effective; the vaccine was approved.",
            "Advertising and subscription offers.",
        ]
        .map(String::from)
        .to_vec();
        let post = "The vaccine trial was faked, nobody was enrolled!";
        assert_eq!(lexical_top(post, &passages, 2), vec![1, 3]);
        // No shared word: the page's first passages (its lead).
        assert_eq!(lexical_top("zebra quagga", &passages, 2), vec![0, 1]);
        // k 0 or k ≥ passages: everything, in order.
        assert_eq!(lexical_top(post, &passages, 0), vec![0, 1, 2, 3, 4]);
        assert_eq!(lexical_top(post, &passages, 9), vec![0, 1, 2, 3, 4]);
        assert_eq!(
            terms("The Vaccine's U.S. trial, 2024"),
            vec!["vaccine", "trial", "2024"]
        );
    }

    #[test]
    fn passages_of_giant_words_are_cut_in_characters() {
        let text = vec!["x".repeat(40_000); 100].join(" ");
        let p = passages(&text, 60);
        assert!(
            p.iter().all(|p| p.chars().count() <= 60 * PASSAGE_CHARS_PER_WORD),
            "{}",
            p[0].len()
        );
        assert!(p.iter().map(String::len).sum::<usize>() <= 100 * 60 * PASSAGE_CHARS_PER_WORD);
    }

    #[test]
    fn passages_group_paragraphs_within_the_word_budget() {
        let text = "a b c\n\nd e\nf g h i j k l m n o p q r s t u v w x y z\n\nlast one";
        let p = passages(text, 10);
        assert_eq!(
            p,
            vec!["a b c d e", "f g h i j k l m n o", "p q r s t u v w x y", "z last one"]
        );
        assert!(passages("", 10).is_empty());
        let words: usize = p.iter().map(|s| s.split_whitespace().count()).sum();
        assert_eq!(words, text.split_whitespace().count());
    }
}
