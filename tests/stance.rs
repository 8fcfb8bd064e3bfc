//! The shipped stance decision (`musebot::stance::decide_all`: the pair model over the cue
//! features and the multilingual embeddings through the pinned head, one threshold per
//! sentence) on the project's own labelled pairs of `tests/data/stance/` (`pairs.jsonl`: real
//! CheckThat! tweets and posts of our own; `multilingual.jsonl`: our own posts in 12 languages;
//! `contrastive.jsonl`: a claim and its negation, and the shapes that fool word cues;
//! `tweets.jsonl`: CheckThat! tweets the project labelled), with the
//! sandbox's multilingual model. The head was fitted on their `dev` split (and the Emergent
//! dev headlines and the RumourEval 2017 replies); the `test` split is posts whose claims it
//! never saw, and that is what is asserted here: each sentence at least as precise as the
//! floors below (what `cargo bench --bench stance` measured, less a margin), and the examples a
//! user tries first. The texts of the CheckThat! rows and their claims are read from
//! `../shared/data/claim-matching` (skipped without it, except under `CI=true`).

mod common;

use common::Sandbox;
use musebot::relevance::{Embedder, RelevanceConfig};
use musebot::stance::train::{read_own, read_tweets, Figures, Gold, Pair};
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

/// The test split of a file of labelled pairs (`read`: `read_own` or `read_tweets`), at least
/// `least` pairs, as the shipped head decides it: the pairs, each one's sentence and gold, and
/// the figures (printed under `what`). `None` without the shared data (outside CI).
#[allow(clippy::type_complexity)]
fn decided_on(
    read: fn(&std::path::Path, &std::path::Path) -> Result<Vec<Pair>, String>,
    least: usize,
    what: &str,
) -> Option<(Vec<Pair>, Vec<Stance>, Vec<Gold>, Figures)> {
    let claim_matching = common::sandbox::shared_data("claim-matching")?;
    let pairs = read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")), &claim_matching).unwrap();
    let test: Vec<Pair> = pairs.into_iter().filter(|p| p.split == "test").collect();
    assert!(test.len() >= least, "{} pairs", test.len());
    let embedder = multilingual();
    let texts: Vec<(&str, &str)> = test.iter().map(|p| (p.post.as_str(), p.claim.as_str())).collect();
    let decided: Vec<Stance> = musebot::stance::decide_all(Some(&embedder), &texts)
        .into_iter()
        .map(|s| s.stance)
        .collect();
    let gold: Vec<Gold> = test.iter().map(|p| p.gold).collect();
    let f = Figures::of(&decided, &gold);
    println!("stance on {what}: {}\n{}", f.sentences_text(), f.table_text());
    Some((test, decided, gold, f))
}

#[test]
fn stance_on_the_own_pairs_it_never_saw() {
    let Some((test, decided, gold, f)) = decided_on(read_own, 500, "own test pairs") else {
        return;
    };
    for (p, s) in test.iter().zip(&decided) {
        if *s == Stance::Asserts && p.gold != Gold::For {
            println!("  labelled a {} post: {}", p.gold.as_str(), p.post);
        }
    }
    // Each sentence said is right at least this often (measured: asserts 0.827 at recall 0.393,
    // denies 0.769, asks or reports 0.936), and each is said.
    let precision = |stances: &[Stance], g: Gold| {
        let said: Vec<&Gold> = decided
            .iter()
            .zip(&gold)
            .filter(|(s, _)| stances.contains(s))
            .map(|(_, g)| g)
            .collect();
        assert!(!said.is_empty(), "{stances:?} never said");
        said.iter().filter(|x| ***x == g).count() as f64 / said.len() as f64
    };
    assert!(
        precision(&[Stance::Asserts], Gold::For) >= 0.75,
        "{}",
        f.sentences_text()
    );
    assert!(
        precision(&[Stance::Denies], Gold::Against) >= 0.70,
        "{}",
        f.sentences_text()
    );
    assert!(
        precision(&[Stance::Asks, Stance::Mentions], Gold::Observing) >= 0.85,
        "{}",
        f.sentences_text()
    );
    // Measured: 12, ten of them contrastive pairs whose opposition is not a negating word (an
    // antonym: "died" against "is still alive", a story of a child's autism against "Vaccines
    // do not cause autism") — a limit of the model, in the book.
    assert!(f.against_labelled() <= 13, "denials labelled: {}", f.against_labelled());
}

/// The CheckThat! dev tweets the project labelled (`tweets.jsonl`, test split): real posts
/// that repeat a fact-checked claim, as the network watch meets them, whose claims the head
/// never saw. Most assert the claim; the head must say so for many of them and never for one
/// that does not.
#[test]
fn stance_on_real_tweets_that_repeat_a_checked_claim() {
    let Some((_, _, _, f)) = decided_on(read_tweets, 80, "the labelled CheckThat! dev tweets") else {
        return;
    };
    // Measured: precision 1.000 (41 of 41), recall 0.500.
    assert!(f.precision() >= 0.95, "{}", f.sentences_text());
    assert!(f.recall() >= 0.35, "{}", f.sentences_text());
}

/// A true post against a false claim phrased as the negation of what it says (and the other
/// way): the polarity guard keeps *asserts* off, whatever the embeddings read.
#[test]
fn a_true_post_is_never_said_to_assert_a_negated_false_claim() {
    let embedder = multilingual();
    let cases = [
        (
            "The MMR vaccine is not safe for children",
            "The MMR vaccine is safe for children.",
        ),
        ("The earth is not round", "The earth is round."),
        (
            "Masks do not reduce the spread of COVID-19",
            "Masks reduce the spread of COVID-19.",
        ),
        (
            "Barack Obama was not born in Hawaii",
            "Barack Obama was born in Hawaii.",
        ),
        ("Vaccines are safe", "Vaccines are not safe, do your own research"),
        (
            "La vacuna triple vírica no es segura para los niños",
            "La vacuna triple vírica es segura para los niños.",
        ),
    ];
    let pairs: Vec<(&str, &str)> = cases.iter().map(|(c, p)| (*p, *c)).collect();
    for ((claim, post), got) in cases.iter().zip(musebot::stance::decide_all(Some(&embedder), &pairs)) {
        assert_ne!(got.stance, Stance::Asserts, "{post} / {claim}: {got:?}");
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
    // What each may be told: its own sentence or the neutral one — never another's.
    let u = Stance::Unclear;
    let cases: &[(&str, &str, &[Stance])] = &[
        // `scripts/try.sh`'s default post and the README's denial: their own sentences; an
        // earlier README denial: its own or the neutral one (p 0.92, below the posts' *denies*
        // threshold of 0.94).
        (only, "The Great Wall of China is the only man-made structure visible from the Moon with the naked eye!", &[Stance::Asserts]),
        (only, "No, the Great Wall of China is not visible from the Moon with the naked eye. That viral claim is a myth.", &[Stance::Denies]),
        (only, "Astronauts have said it many times: you cannot see the Great Wall from the Moon. It's a myth.", &[Stance::Denies, u]),
        (only, "The Great Wall of China is the only man-made structure visible from the Moon with the naked eye.", &[Stance::Asserts, u]),
        (only, "It is a myth that the Great Wall of China is visible from the Moon with the naked eye. Astronauts have said so many times.", &[Stance::Denies, u]),
        (wall, "The Great Wall of China is visible from the Moon with the naked eye!", &[Stance::Asserts]),
        (wall, "It is a myth that the Great Wall of China is visible from the Moon with the naked eye. Astronauts have said so many times.", &[Stance::Denies, u]),
        (wall, "Is the Great Wall visible from the Moon?", &[Stance::Asks]),
        (wall, "Viral post claims the Great Wall is visible from the Moon", &[Stance::Mentions, u]),
        (lemon, "Drinking hot lemon water cures COVID-19. My grandmother swears by it, share this!", &[Stance::Asserts, u]),
        (lemon, "It is a myth that drinking hot lemon water cures COVID-19. There is no evidence for it at all.", &[Stance::Denies, u]),
        (lemon, "Is it true that drinking hot lemon water cures COVID-19?", &[Stance::Asks]),
        (lemon, "A viral post claims that drinking hot lemon water cures COVID-19.", &[Stance::Mentions, u]),
        (lemon, "Update: drinking hot lemon water does NOT cure COVID-19, that was a myth. Sorry for sharing it.", &[Stance::Denies, u]),
        (lemon, "¿Es verdad que el agua caliente con limón cura el COVID-19?", &[Stance::Asks, u]),
        (lemon, "C'est faux : l'eau chaude citronnée ne guérit pas le COVID-19.", &[Stance::Denies, u]),
        // Cue words in an assertion never make it a denial or a question; a link's query is no question.
        (lemon, "LOL they don't want you to know: drinking hot lemon water cures COVID-19!!! Big pharma lies", &[Stance::Asserts, u]),
        (lemon, "Drinking hot lemon water cures COVID-19, watch https://www.youtube.com/watch?v=dQw4w9WgXcQ", &[Stance::Asserts, Stance::Mentions, u]),
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
