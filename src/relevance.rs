//! Relevance: sentence embeddings with ONNX Runtime (`ort`, loaded dynamically from the path
//! the operator configures) and a HuggingFace tokenizer (`tokenizers`), mean pooling over the
//! attention mask and L2 normalisation, so a dot product is a cosine. A page is scored by its
//! best passage; the best passages are also what the evidence stage sends to the LLM.

use std::path::Path;
use std::sync::Mutex;

use ndarray::{Array2, Ix3};
use ort::session::builder::GraphOptimizationLevel;
use ort::session::Session;
use ort::value::Tensor;
use serde::{Deserialize, Serialize};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

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
    /// Words per passage.
    pub passage_words: usize,
    /// Passages of a page sent to the evidence stage.
    pub max_passages: usize,
    /// CPU threads one embedding batch may use (ONNX Runtime intra-op threads).
    pub threads: usize,
}

impl Default for RelevanceConfig {
    fn default() -> Self {
        RelevanceConfig {
            onnxruntime: String::new(),
            model: String::new(),
            tokenizer: String::new(),
            threshold: 0.29,
            passage_words: 120,
            max_passages: 4,
            threads: 2,
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

fn environment(dylib: &Path) -> ort::Result<ort::environment::Environment> {
    let mut env = ORT_ENV.lock().expect("ort env lock");
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

fn session(env: &ort::environment::Environment, model: &Path, threads: usize) -> ort::Result<Session> {
    Session::builder(env)?
        .with_optimization_level(GraphOptimizationLevel::Level3)?
        .with_intra_threads(threads.max(1))?
        .with_inter_threads(1)?
        .commit_from_file(model)
}

pub struct Embedder {
    session: Mutex<Session>,
    tokenizer: Tokenizer,
}

impl Embedder {
    pub fn load(config: &RelevanceConfig) -> Result<Embedder, RelevanceError> {
        let need = |key: &'static str, path: &str, fix: &'static str| {
            if path.is_empty() || !Path::new(path).exists() {
                Err(RelevanceError::Config {
                    key,
                    problem: format!("`{path}` does not exist"),
                    fix,
                })
            } else {
                Ok(())
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
        let session = session(&env, Path::new(&config.model), config.threads).map_err(|e| RelevanceError::Config {
            key: "model",
            problem: format!("cannot load `{}`: {e}", config.model),
            fix: "use an ONNX sentence-embedding model",
        })?;
        let mut tokenizer = Tokenizer::from_file(&config.tokenizer).map_err(|e| RelevanceError::Config {
            key: "tokenizer",
            problem: format!("cannot load `{}`: {e}", config.tokenizer),
            fix: "use the model's tokenizer.json",
        })?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: 256,
                ..Default::default()
            }))
            .map_err(|e| RelevanceError::Run(e.to_string()))?;
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..Default::default()
        }));
        Ok(Embedder {
            session: Mutex::new(session),
            tokenizer,
        })
    }

    /// Unit-length embeddings of `texts` (CPU-bound: call from a blocking thread).
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, RelevanceError> {
        // Batches of similar length waste little on padding.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(16) {
            let batch: Vec<String> = chunk.iter().map(|&i| texts[i].clone()).collect();
            for (&i, v) in chunk.iter().zip(self.embed_batch(&batch)?) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    fn embed_batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, RelevanceError> {
        let run = |e: String| RelevanceError::Run(e);
        let encodings = self
            .tokenizer
            .encode_batch(texts.iter().map(String::as_str).collect::<Vec<_>>(), true)
            .map_err(|e| run(e.to_string()))?;
        let (b, n) = (encodings.len(), encodings.first().map_or(0, |e| e.get_ids().len()));
        let mut ids = Array2::<i64>::zeros((b, n));
        let mut mask = Array2::<i64>::zeros((b, n));
        let mut types = Array2::<i64>::zeros((b, n));
        for (i, e) in encodings.iter().enumerate() {
            for (j, ((id, m), t)) in e
                .get_ids()
                .iter()
                .zip(e.get_attention_mask())
                .zip(e.get_type_ids())
                .enumerate()
            {
                ids[[i, j]] = *id as i64;
                mask[[i, j]] = *m as i64;
                types[[i, j]] = *t as i64;
            }
        }
        let maskf = mask.mapv(|v| v as f32);
        let mut session = self.session.lock().expect("session lock");
        let inputs = ort::inputs![
            "input_ids" => Tensor::from_array(ids).map_err(|e| run(e.to_string()))?,
            "attention_mask" => Tensor::from_array(mask).map_err(|e| run(e.to_string()))?,
            "token_type_ids" => Tensor::from_array(types).map_err(|e| run(e.to_string()))?,
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
        let mut result = Vec::with_capacity(b);
        for i in 0..b {
            let m = maskf.row(i);
            let count = m.sum().max(1e-9);
            let mut v = vec![0f32; dim];
            for t in 0..n {
                if m[t] > 0.0 {
                    for (d, x) in v.iter_mut().enumerate() {
                        *x += hidden[[i, t, d]];
                    }
                }
            }
            v.iter_mut().for_each(|x| *x /= count);
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
            v.iter_mut().for_each(|x| *x /= norm);
            result.push(v);
        }
        Ok(result)
    }
}

/// Dot product (a cosine for unit vectors).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Splits a page's text into passages of consecutive paragraphs, at most `max_words` words
/// each (a longer paragraph is cut at word boundaries).
pub fn passages(text: &str, max_words: usize) -> Vec<String> {
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
