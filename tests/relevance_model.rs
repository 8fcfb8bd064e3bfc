//! The relevance model for real: all-MiniLM-L6-v2 (int8 ONNX from PyPI, run by ONNX Runtime
//! through `ort`) as the sandbox installs it. Scores must order related over unrelated text, and
//! a text's embedding must not depend on what else shares its batch (padding, length-grouped
//! batches, truncation).

mod common;

use common::Sandbox;
use musebot::relevance::{cosine, Embedder, RelevanceConfig, MAX_TOKENS};

fn embedder() -> Embedder {
    let sandbox = Sandbox::load();
    Embedder::load(&RelevanceConfig {
        onnxruntime: sandbox.get("MUSEBOT_ORT_DYLIB"),
        model: sandbox.get("MUSEBOT_EMBED_MODEL"),
        tokenizer: sandbox.get("MUSEBOT_EMBED_TOKENIZER"),
        ..RelevanceConfig::default()
    })
    .expect("the sandbox's model loads")
}

#[test]
fn related_text_scores_above_unrelated_and_batches_do_not_change_vectors() {
    let e = embedder();
    let texts: Vec<String> = [
        "The Great Wall of China is visible from the Moon with the naked eye.",
        "Astronauts say the Great Wall cannot be seen from the Moon without aid.",
        "Mix the flour, water and yeast, then let the pizza dough rest overnight.",
    ]
    .map(String::from)
    .to_vec();
    let v = e.embed(&texts).unwrap();
    let (related, unrelated) = (cosine(&v[0], &v[1]), cosine(&v[0], &v[2]));
    assert!(related > 0.5, "related pair scored {related}");
    assert!(unrelated < 0.2, "unrelated pair scored {unrelated}");
    for x in &v {
        let norm: f32 = x.iter().map(|a| a * a).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
    }

    // The same text alone and among texts of very different lengths (several batches, each
    // padded to its own longest text) gets the same vector.
    let long = |n: usize| (0..n).map(|i| format!("word{i}")).collect::<Vec<_>>().join(" ");
    let mut mixed = vec![long(400), texts[0].clone(), long(30), long(5), texts[2].clone()];
    mixed.extend((0..20).map(|i| long(10 + i * 3)));
    let w = e.embed(&mixed).unwrap();
    assert_eq!(w.len(), mixed.len());
    for (alone, batched) in [(&v[0], &w[1]), (&v[2], &w[4])] {
        let same = cosine(alone, batched);
        assert!(same > 0.9999, "batching changed a vector: cosine {same}");
    }
    // A text longer than the model's window is cut to MAX_TOKENS, not refused: what lies past
    // the cut changes nothing.
    assert!(long(400).split(' ').count() > MAX_TOKENS);
    let cut = e
        .embed(&[long(400), format!("{} and then pizza dough recipes", long(400))])
        .unwrap();
    assert!(cosine(&cut[0], &cut[1]) > 0.9999, "the tail past MAX_TOKENS was read");
    assert!(cosine(&cut[0], &w[0]) > 0.9999);
    assert!(e.embed(&[]).unwrap().is_empty());
}
