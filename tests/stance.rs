//! The shipped stance decision (`musebot::stance::decide_all`: the word rules, the cue
//! features and the multilingual embeddings through the pinned head) on the project's own
//! labelled pairs of `tests/data/stance/` (`pairs.jsonl`: real CheckThat! tweets and posts of
//! our own; `multilingual.jsonl`: our own posts in 12 languages), with the sandbox's
//! multilingual model. The head was fitted on their `dev` split (and the Emergent dev
//! headlines); the `test` split is posts whose claims it never saw, and that is what is
//! asserted here: no denial or question labelled, precision at least the floor below. The
//! texts of the CheckThat! rows and their claims are read from `../shared/data/claim-matching`
//! (skipped without it, except under `CI=true`). `cargo bench --bench stance` prints the full
//! figures beside the word rules'.

mod common;

use common::Sandbox;
use musebot::relevance::{Embedder, RelevanceConfig};
use musebot::stance::train::{read_own, Figures, Gold};
use musebot::stance::Stance;

/// The sandbox's multilingual model, which the stance model reads.
fn multilingual() -> Embedder {
    let sandbox = Sandbox::load();
    Embedder::load(&RelevanceConfig {
        onnxruntime: sandbox.get("MUSEBOT_ORT_DYLIB"),
        model: sandbox.get("MUSEBOT_EMBED_MODEL_MULTI"),
        tokenizer: sandbox.get("MUSEBOT_EMBED_TOKENIZER_MULTI"),
        ..RelevanceConfig::default()
    })
    .expect("the sandbox's multilingual model loads")
}

#[test]
fn stance_on_the_own_pairs_it_never_saw() {
    let Some(claim_matching) = common::sandbox::shared_data("claim-matching") else {
        return;
    };
    let pairs = read_own(std::path::Path::new(env!("CARGO_MANIFEST_DIR")), &claim_matching).unwrap();
    let test: Vec<_> = pairs.into_iter().filter(|p| p.split == "test").collect();
    assert!(test.len() >= 300, "{} pairs", test.len());
    let embedder = multilingual();
    let texts: Vec<(&str, &str)> = test.iter().map(|p| (p.post.as_str(), p.claim.as_str())).collect();
    let decided: Vec<Stance> = musebot::stance::decide_all(Some(&embedder), &texts)
        .into_iter()
        .map(|s| s.stance)
        .collect();
    for lang in ["en", "other"] {
        let (d, g): (Vec<Stance>, Vec<Gold>) = test
            .iter()
            .zip(&decided)
            .filter(|(p, _)| (p.lang == "en") == (lang == "en"))
            .map(|(p, s)| (*s, p.gold))
            .unzip();
        let f = Figures::of(&d, &g);
        println!(
            "stance on own test pairs ({lang}): label precision {:.3}, recall {:.3}, on {} pairs\n{}",
            f.precision(),
            f.recall(),
            d.len(),
            f.table_text()
        );
        for (p, s) in test.iter().zip(&decided) {
            if *s == Stance::Asserts && p.gold != Gold::For && (p.lang == "en") == (lang == "en") {
                println!("  labelled a {} post: {}", p.gold.as_str(), p.post);
            }
        }
        assert_eq!(f.against_labelled(), 0, "{lang}: a denial labelled");
        assert!(f.precision() >= 0.85, "{lang}: precision {:.3}", f.precision());
        assert!(f.tp > 0, "{lang}: nothing labelled");
    }
}

/// The examples a new user tries first (the Great Wall, the lemon water of the end-to-end
/// tests), in English and in other languages: only the asserting posts assert.
#[test]
fn the_first_examples_a_user_tries() {
    let embedder = multilingual();
    let wall = "The Great Wall of China is visible from the Moon with the naked eye";
    let lemon = "Drinking hot lemon water cures COVID-19";
    // The sandbox's check (`scripts/sandbox-web`), which `scripts/try.sh` asks about by default.
    let only = "The Great Wall of China is the only man-made structure visible from the Moon with the naked eye";
    let cases: &[(&str, &str, &[Stance])] = &[
        (only, "The Great Wall of China is the only man-made structure visible from the Moon with the naked eye.", &[Stance::Asserts]),
        (only, "It is a myth that the Great Wall of China is visible from the Moon with the naked eye. Astronauts have said so many times.", &[Stance::Denies]),
        (wall, "The Great Wall of China is visible from the Moon with the naked eye!", &[Stance::Asserts]),
        (wall, "It is a myth that the Great Wall of China is visible from the Moon with the naked eye. Astronauts have said so many times.", &[Stance::Denies]),
        (wall, "Is the Great Wall visible from the Moon?", &[Stance::Asks]),
        (wall, "Viral post claims the Great Wall is visible from the Moon", &[Stance::Mentions, Stance::Unclear]),
        (lemon, "Drinking hot lemon water cures COVID-19. My grandmother swears by it, share this!", &[Stance::Asserts]),
        (lemon, "It is a myth that drinking hot lemon water cures COVID-19. There is no evidence for it at all.", &[Stance::Denies]),
        (lemon, "Is it true that drinking hot lemon water cures COVID-19?", &[Stance::Asks]),
        (lemon, "A viral post claims that drinking hot lemon water cures COVID-19.", &[Stance::Mentions, Stance::Unclear]),
        (lemon, "Update: drinking hot lemon water does NOT cure COVID-19, that was a myth. Sorry for sharing it.", &[Stance::Denies]),
        (lemon, "¿Es verdad que el agua caliente con limón cura el COVID-19?", &[Stance::Asks]),
        (lemon, "C'est faux : l'eau chaude citronnée ne guérit pas le COVID-19.", &[Stance::Denies, Stance::Unclear]),
    ];
    let pairs: Vec<(&str, &str)> = cases.iter().map(|(c, p, _)| (*p, *c)).collect();
    let decided = musebot::stance::decide_all(Some(&embedder), &pairs);
    let mut wrong = Vec::new();
    for ((_, post, want), got) in cases.iter().zip(&decided) {
        println!("{} ({:.2}): {post}", got.stance.as_str(), got.score);
        if !want.contains(&got.stance) {
            wrong.push(format!("{post}: {:?} ({:.2}), wanted {want:?}", got.stance, got.score));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
