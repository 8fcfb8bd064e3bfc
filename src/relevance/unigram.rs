//! A Unigram tokenizer model kept compact: the pieces in one hash map (piece → id) beside their
//! scores, instead of the `tokenizers` crate's byte trie of hash maps. On the multilingual
//! model's 128,000 pieces that trie takes about 127 MB once loaded, and this takes about a tenth.
//! The segmentation is the crate's optimised Viterbi step for step: the same pieces tried at
//! each character (shortest first), the same score kept on ties, unknown characters scored
//! `min_score - 10` and fused, and a fused run that spells a piece is that piece. So the ids are
//! the crate's, which `tests/relevance_model.rs` checks on real text in many languages. The
//! normaliser, pre-tokeniser, post-processor and decoder are still the crate's, read from the
//! same `tokenizer.json` ([`load`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::de::IgnoredAny;
use serde::Deserialize;
use tokenizers::decoders::DecoderWrapper;
use tokenizers::models::unigram::UnigramTrainer;
use tokenizers::normalizers::NormalizerWrapper;
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::processors::PostProcessorWrapper;
use tokenizers::{Encoding, Model, Token, TokenizerImpl};

/// What the crate's Unigram scores a character no piece covers, below the lowest piece.
const UNK_PENALTY: f64 = 10.0;

/// A tokenizer over [`Compact`]: the crate's own parts around it.
pub type CompactTokenizer =
    TokenizerImpl<Compact, NormalizerWrapper, PreTokenizerWrapper, PostProcessorWrapper, DecoderWrapper>;

/// The Unigram model: piece → id, each id's piece and score, the lowest score, the unknown
/// piece's id and the longest piece in bytes (how far a match is looked for).
pub struct Compact {
    ids: HashMap<Box<str>, u32>,
    vocab: Vec<(Box<str>, f64)>,
    min_score: f64,
    unk_id: Option<u32>,
    longest: usize,
}

#[derive(Deserialize)]
struct File {
    model: ModelFile,
}

#[derive(Deserialize)]
struct ModelFile {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    unk_id: Option<u32>,
    #[serde(default)]
    byte_fallback: bool,
    vocab: Vec<(String, f64)>,
}

/// The file's parts other than its model, as the crate reads them (the model skipped unread).
#[derive(Deserialize)]
struct Parts {
    #[serde(default)]
    normalizer: Option<NormalizerWrapper>,
    #[serde(default)]
    pre_tokenizer: Option<PreTokenizerWrapper>,
    #[serde(default)]
    post_processor: Option<PostProcessorWrapper>,
    #[serde(default)]
    decoder: Option<DecoderWrapper>,
    #[serde(default)]
    added_tokens: Vec<IgnoredAny>,
    #[allow(dead_code)]
    model: IgnoredAny,
}

/// The tokenizer at `path` with a [`Compact`] model, when its model is a Unigram this model
/// reads exactly as the crate does (no byte fallback, no added tokens); `Ok(None)` otherwise,
/// for the crate to load.
pub fn load(path: &Path) -> Result<Option<CompactTokenizer>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    // The type first, cheaply: only a Unigram's vocabulary is read whole.
    #[derive(Deserialize)]
    struct Kind {
        model: KindOf,
    }
    #[derive(Deserialize)]
    struct KindOf {
        #[serde(rename = "type")]
        kind: Option<String>,
    }
    let kind: Kind = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    if kind.model.kind.as_deref() != Some("Unigram") {
        return Ok(None);
    }
    let file: File = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let parts: Parts = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    if file.model.kind != "Unigram" || file.model.byte_fallback || !parts.added_tokens.is_empty() {
        return Ok(None);
    }
    let model = Compact::new(file.model.vocab, file.model.unk_id)?;
    let mut tokenizer = TokenizerImpl::new(model);
    tokenizer
        .with_normalizer(parts.normalizer)
        .with_pre_tokenizer(parts.pre_tokenizer)
        .with_post_processor(parts.post_processor)
        .with_decoder(parts.decoder);
    Ok(Some(tokenizer))
}

/// The tokenizer an [`crate::relevance::Embedder`] runs: the crate's, or its parts around a
/// [`Compact`] Unigram model.
pub enum TextTokenizer {
    Crate(Box<tokenizers::Tokenizer>),
    Compact(Box<CompactTokenizer>),
}

impl TextTokenizer {
    /// The tokenizer at `path`: [`load`]'s where it can, the crate's otherwise.
    pub fn from_file(path: &Path) -> Result<TextTokenizer, String> {
        match load(path)? {
            Some(t) => Ok(TextTokenizer::Compact(Box::new(t))),
            None => tokenizers::Tokenizer::from_file(path)
                .map(|t| TextTokenizer::Crate(Box::new(t)))
                .map_err(|e| e.to_string()),
        }
    }

    /// Cut at `max_length` tokens, never padded.
    pub fn truncate_at(&mut self, max_length: usize) -> Result<(), String> {
        let params = Some(tokenizers::TruncationParams {
            max_length,
            ..Default::default()
        });
        match self {
            TextTokenizer::Crate(t) => {
                t.with_truncation(params).map_err(|e| e.to_string())?;
                t.with_padding(None);
            }
            TextTokenizer::Compact(t) => {
                t.with_truncation(params).map_err(|e| e.to_string())?;
                t.with_padding(None);
            }
        }
        Ok(())
    }

    pub fn encode(&self, text: &str, special: bool) -> tokenizers::Result<Encoding> {
        match self {
            TextTokenizer::Crate(t) => t.encode(text, special),
            TextTokenizer::Compact(t) => t.encode(text, special),
        }
    }

    pub fn encode_batch(&self, texts: Vec<&str>, special: bool) -> tokenizers::Result<Vec<Encoding>> {
        match self {
            TextTokenizer::Crate(t) => t.encode_batch(texts, special),
            TextTokenizer::Compact(t) => t.encode_batch(texts, special),
        }
    }
}

impl Compact {
    pub fn new(vocab: Vec<(String, f64)>, unk_id: Option<u32>) -> Result<Compact, String> {
        if unk_id.is_some_and(|u| u as usize >= vocab.len()) {
            return Err("the unknown piece's id is not in the vocabulary".into());
        }
        let mut ids = HashMap::with_capacity(vocab.len());
        let (mut min_score, mut longest) = (f64::INFINITY, 0);
        let vocab: Vec<(Box<str>, f64)> = vocab.into_iter().map(|(p, s)| (p.into_boxed_str(), s)).collect();
        for (id, (piece, score)) in vocab.iter().enumerate() {
            // A piece listed twice keeps its last id, as the crate's map does.
            ids.insert(piece.clone(), id as u32);
            min_score = min_score.min(*score);
            longest = longest.max(piece.len());
        }
        Ok(Compact {
            ids,
            vocab,
            min_score,
            unk_id,
            longest,
        })
    }

    /// The pieces of `sentence`, as the crate's optimised Unigram cuts it.
    fn pieces<'s>(&self, sentence: &'s str) -> Result<Vec<&'s str>, String> {
        #[derive(Clone, Copy)]
        struct Best {
            id: u32,
            score: f64,
            starts_at: Option<usize>,
        }
        let size = sentence.len();
        let unk_score = self.min_score - UNK_PENALTY;
        let mut best = vec![
            Best {
                id: 0,
                score: 0.0,
                starts_at: None
            };
            size + 1
        ];
        let mut starts_at = 0;
        while starts_at < size {
            let till_here = best[starts_at].score;
            let rest = &sentence[starts_at..];
            let first = rest.chars().next().map_or(1, char::len_utf8);
            let mut single = false;
            // Every piece that starts here, shortest first (each ends on a character boundary).
            for end in rest
                .char_indices()
                .map(|(i, _)| i)
                .skip(1)
                .chain(std::iter::once(rest.len()))
                .take_while(|end| *end <= self.longest)
            {
                let Some(&id) = self.ids.get(&rest[..end]) else {
                    continue;
                };
                let candidate = self.vocab[id as usize].1 + till_here;
                let target = &mut best[starts_at + end];
                if target.starts_at.is_none() || candidate > target.score {
                    *target = Best {
                        id,
                        score: candidate,
                        starts_at: Some(starts_at),
                    };
                }
                single |= end == first;
            }
            if !single {
                let candidate = unk_score + till_here;
                let target = &mut best[starts_at + first];
                if target.starts_at.is_none() || candidate > target.score {
                    // As the crate: an error only where the unknown piece would be taken.
                    let unk = self.unk_id.ok_or("a character no piece covers, and no unknown piece")?;
                    *target = Best {
                        id: unk,
                        score: candidate,
                        starts_at: Some(starts_at),
                    };
                }
            }
            starts_at += first;
        }
        // Back from the end; a run of unknown pieces is one.
        let mut out: Vec<&str> = Vec::new();
        let (mut ends_at, mut unknown_from) = (size, None::<usize>);
        while ends_at > 0 {
            let node = best[ends_at];
            let from = node.starts_at.ok_or("no path through the text")?;
            if Some(node.id) == self.unk_id {
                unknown_from.get_or_insert(ends_at);
            } else {
                if let Some(end) = unknown_from.take() {
                    out.push(&sentence[ends_at..end]);
                }
                out.push(&sentence[from..ends_at]);
            }
            ends_at = from;
        }
        if let Some(end) = unknown_from {
            out.push(&sentence[..end]);
        }
        out.reverse();
        Ok(out)
    }
}

impl Model for Compact {
    type Trainer = UnigramTrainer;

    fn tokenize(&self, sequence: &str) -> tokenizers::Result<Vec<Token>> {
        let mut offset = 0;
        let mut tokens = Vec::new();
        for piece in self.pieces(sequence)? {
            // A fused run of unknown characters that spells a piece is that piece.
            let id = match self.ids.get(piece) {
                Some(id) => *id,
                None => self.unk_id.ok_or("no unknown piece")?,
            };
            tokens.push(Token::new(id, piece.to_string(), (offset, offset + piece.len())));
            offset += piece.len();
        }
        Ok(tokens)
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        self.ids.get(token).copied()
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        self.vocab.get(id as usize).map(|(p, _)| p.to_string())
    }

    fn get_vocab(&self) -> HashMap<String, u32> {
        self.ids.iter().map(|(p, id)| (p.to_string(), *id)).collect()
    }

    fn get_vocab_size(&self) -> usize {
        self.vocab.len()
    }

    fn save(&self, _: &Path, _: Option<&str>) -> tokenizers::Result<Vec<PathBuf>> {
        Err("the compact Unigram model is read from tokenizer.json, never saved".into())
    }

    fn get_trainer(&self) -> UnigramTrainer {
        UnigramTrainer::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(model: &impl Model, text: &str) -> Vec<(u32, String)> {
        model
            .tokenize(text)
            .unwrap()
            .into_iter()
            .map(|t| (t.id, t.value))
            .collect()
    }

    /// The same pieces and ids as the crate's Unigram on a small vocabulary: ties, unknown
    /// characters fused (and a fused run that is a piece), multi-byte characters.
    #[test]
    fn it_cuts_as_the_crates_unigram_does() {
        let vocab: Vec<(String, f64)> = [
            ("<unk>", 0.0),
            ("a", -1.0),
            ("b", -1.5),
            ("ab", -2.0),
            ("abc", -2.4),
            ("c", -1.2),
            ("ç", -3.0),
            ("éé", -0.5),
            ("xy", -9.0),
            ("bc", -2.0),
        ]
        .iter()
        .map(|(p, s)| (p.to_string(), *s))
        .collect();
        let ours = Compact::new(vocab.clone(), Some(0)).unwrap();
        let theirs = tokenizers::models::unigram::Unigram::from(vocab, Some(0), false).unwrap();
        for text in [
            "abc", "abcabc", "aébc", "ééé", "çaxyz", "zzab", "", "xyxy", "ab ç c", "é",
        ] {
            assert_eq!(cut(&ours, text), cut(&theirs, text), "{text:?}");
        }
        // With no unknown piece: the crate fails only where an unknown character would be
        // taken, and so does this model.
        let vocab: Vec<(String, f64)> = vec![("a".into(), -1.0), ("ab".into(), -2.0)];
        let ours = Compact::new(vocab.clone(), None).unwrap();
        let theirs = tokenizers::models::unigram::Unigram::from(vocab, None, false).unwrap();
        assert_eq!(ours.tokenize("ab").unwrap()[0].value, "ab");
        assert_eq!(theirs.tokenize("ab").unwrap()[0].value, "ab");
        assert!(ours.tokenize("abz").is_err() && theirs.tokenize("abz").is_err());
    }
}
