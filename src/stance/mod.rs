//! A post's stance toward the claim it matched (asserts / denies / asks / mentions / unclear,
//! `crate::model::Stance`), decided once per answer by [`decide`] and used wherever a
//! fact-check becomes a statement about a post: the reply's wording, labels, the watch, the
//! moderators' findings, re-checks.
//!
//! The model is the project's own pair model: a softmax head ([`Head`], `head.json`, pinned by
//! SHA-256 in `crate::pins::STANCE_HEAD`) over the features of one post–claim pair
//! ([`features`]: word cues of the bot's 19 languages in the post and in the claim, polarity,
//! the word rules' reading, the words they share, and the multilingual sentence embeddings of
//! both read as a pair), which gives the probability that the post asserts the claim, denies
//! it, or only observes it (asks or reports): two experts (posts and headlines; conversational
//! replies) mixed by a gate that reads what kind of text the post is (a post, a news headline,
//! a reply). Each sentence has its own threshold for each kind, chosen for its precision on dev
//! data (`scripts/train-stance.sh`, [`train`]); below it the post gets the
//! neutral sentence ([`Stance::Unclear`]: "a claim this post touches on has been
//! fact-checked"), which is true of any post. The model reads what a person sees
//! ([`visible`]): no links, no leading mentions, no invisible characters. Word cues are
//! features, never a decision: without the multilingual model (or with a damaged head) every
//! post is `Unclear`, and the start-up says so once ([`availability`]).
//!
//! Pure and CPU-light (nine dot products over ~1,700 features): the caller embeds.

pub mod features;
pub mod fit;
pub mod rules;
pub mod train;
pub mod visible;

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

pub use crate::model::{PostStance, Stance, StanceBy};

/// The shipped head, as `scripts/train-stance.sh` wrote it.
pub const HEAD_JSON: &str = include_str!("head.json");

/// Characters of a post the stance reads (no platform allows more in one post).
pub const MAX_CHARS: usize = 5_000;

/// The classes the head scores, in the order of its weights: `for`, `against`, `observing`.
pub const CLASSES: usize = 3;

/// The probability each sentence needs, chosen on dev data for its precision.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sentences {
    /// "This post is false." (and every label).
    pub asserts: f32,
    /// "This post agrees with the fact-checkers".
    pub denies: f32,
    /// "This post asks about a claim …" (an observing post with a question).
    pub asks: f32,
    /// "This post reports a claim …" (any other observing post).
    pub reports: f32,
}

impl Sentences {
    /// Every sentence at the same threshold.
    pub const fn all(t: f32) -> Sentences {
        Sentences {
            asserts: t,
            denies: t,
            asks: t,
            reports: t,
        }
    }
}

/// The sentences' thresholds for each kind of post the gate tells apart ([`Domain`]): a post
/// that states or reports a claim in its own words, a news headline, a conversational reply
/// (where a sentence whose precision no threshold reaches on the dev files is never said: 1.01).
/// Each kind has its own, because the same probability is right more or less often in each: a
/// headline that reads as asserting a rumour often only relays it, a reply on topic often
/// only comments.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    pub posts: Sentences,
    pub headlines: Sentences,
    pub replies: Sentences,
}

impl Thresholds {
    /// The sentences of a domain.
    pub fn of(&self, domain: Domain) -> &Sentences {
        match domain {
            Domain::Post => &self.posts,
            Domain::Headline => &self.headlines,
            Domain::Reply => &self.replies,
        }
    }

    /// The sentences of a domain, to change.
    pub fn of_mut(&mut self, domain: Domain) -> &mut Sentences {
        match domain {
            Domain::Post => &mut self.posts,
            Domain::Headline => &mut self.headlines,
            Domain::Reply => &mut self.replies,
        }
    }
}

/// What kind of text the gate reads a post as (its classes, in order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Domain {
    /// A post that states, disputes or relays a claim in its own words.
    Post,
    /// A news headline.
    Headline,
    /// A conversational reply.
    Reply,
}

impl Domain {
    pub const ALL: [Domain; 3] = [Domain::Post, Domain::Headline, Domain::Reply];

    /// The gate's class index.
    pub fn class(self) -> usize {
        self as usize
    }
}

/// What the head reads in a pair: the probabilities of `for`, `against` and `observing`, how
/// reply-like the post is (the gate's *reply*, 0 to 1, which mixes the experts), and the kind
/// of post the gate reads it as (its most probable class, whose thresholds apply).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    pub p: [f32; CLASSES],
    pub reply: f32,
    pub domain: Domain,
}

/// The polarity guard: a post that negates where the claim does not, or the other way
/// ([`features::opposed`]: "The MMR vaccine is safe" against "The MMR vaccine is not safe"), is
/// never said to assert the claim — it gets the neutral sentence. A guard toward saying less,
/// never a sentence of its own; the embeddings read a claim and its negation as one topic.
pub const POLARITY_GUARD: bool = true;

/// One softmax layer over the features: `softmax(weights · features + bias)`, a row of
/// [`features::LEN`] weights per class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Linear {
    pub bias: Vec<f32>,
    pub weights: Vec<Vec<f32>>,
}

impl Linear {
    /// The class probabilities (`N` classes) for these features.
    pub fn probabilities<const N: usize>(&self, features: &[f32]) -> [f32; N] {
        let mut z = [0f32; N];
        for (k, (row, b)) in self.weights.iter().zip(&self.bias).enumerate().take(N) {
            z[k] = row.iter().zip(features).map(|(w, x)| w * x).sum::<f32>() + b;
        }
        softmax(z)
    }

    fn well_formed(&self, classes: usize) -> bool {
        self.bias.len() == classes
            && self.weights.len() == classes
            && self.weights.iter().all(|r| r.len() == features::LEN)
    }
}

/// The stance head: two experts — one fitted on posts and headlines that state or report
/// claims, one on conversational replies — mixed by a gate that reads what kind of text the
/// post is ([`Domain`]: post, headline, reply): `p = (1 - r) · posts(f) + r · replies(f)`,
/// `r = gate(f)[reply]`. A reply that only comments on a claim's subject reads like the second
/// expert's data, where topic is not assertion; a headline or a plain post like the first's.
/// The gate's most probable class picks the thresholds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Head {
    pub version: u32,
    pub thresholds: Thresholds,
    /// Three classes, [`Domain`]'s: a post (0), a headline (1), a conversational reply (2).
    pub gate: Linear,
    /// [`CLASSES`] classes each: the posts' expert, the replies' expert.
    pub experts: Vec<Linear>,
    /// What it was fitted on and how it scored (for the record; not read by the decision).
    #[serde(default)]
    pub trained: serde_json::Value,
}

impl Head {
    /// What the head reads in a pair with these features.
    pub fn read(&self, features: &[f32]) -> Reading {
        let g = self.gate.probabilities::<3>(features);
        let r = g[Domain::Reply.class()];
        let a = self.experts[0].probabilities::<CLASSES>(features);
        let b = self.experts[1].probabilities::<CLASSES>(features);
        let best = (0..3).max_by(|x, y| g[*x].total_cmp(&g[*y])).unwrap_or(0);
        Reading {
            p: std::array::from_fn(|k| (1.0 - r) * a[k] + r * b[k]),
            reply: r,
            domain: Domain::ALL[best],
        }
    }

    /// Whether the head has its shape (a gate of three classes, two experts of [`CLASSES`]).
    fn well_formed(&self) -> bool {
        self.gate.well_formed(3) && self.experts.len() == 2 && self.experts.iter().all(|e| e.well_formed(CLASSES))
    }
}

/// The sentence a reading earns at `t`: the most probable class, when its probability reaches
/// that sentence's threshold (those of the kind of post the gate reads, [`Domain`]); otherwise the
/// neutral `Unclear`. `question`: the post asks (an observing post is then *asks*, else
/// *reports*); `opposed`: the post and the claim differ in polarity (no *asserts* when
/// `guard`, [`POLARITY_GUARD`]). Returns the stance and the probability it was decided on.
pub fn sentence(t: &Thresholds, r: Reading, question: bool, opposed: bool, guard: bool) -> (Stance, f32) {
    let s = t.of(r.domain);
    let p = r.p;
    let best = (0..CLASSES).max_by(|a, b| p[*a].total_cmp(&p[*b])).unwrap_or(2);
    let vetoed = guard && opposed;
    let stance = match best {
        0 if p[0] >= s.asserts && !vetoed => Stance::Asserts,
        1 if p[1] >= s.denies => Stance::Denies,
        2 if question && p[2] >= s.asks => Stance::Asks,
        2 if !question && p[2] >= s.reports => Stance::Mentions,
        _ => Stance::Unclear,
    };
    (stance, p[best])
}

/// A numerically stable softmax.
pub fn softmax<const N: usize>(z: [f32; N]) -> [f32; N] {
    let max = z.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut e = z.map(|v| (v - max).exp());
    let sum: f32 = e.iter().sum();
    for v in &mut e {
        *v /= sum.max(f32::MIN_POSITIVE);
    }
    e
}

/// The shipped head, once its bytes matched their pin; `None` (logged once) otherwise.
pub fn head() -> Option<&'static Head> {
    static HEAD: OnceLock<Option<Head>> = OnceLock::new();
    HEAD.get_or_init(|| {
        let sha = crate::pins::sha256_bytes(HEAD_JSON.as_bytes());
        if sha != crate::pins::STANCE_HEAD {
            tracing::error!(%sha, pinned = crate::pins::STANCE_HEAD, "the stance head does not match its pin; every post gets the neutral sentence");
            return None;
        }
        match serde_json::from_str::<Head>(HEAD_JSON) {
            Ok(h) if h.well_formed() => Some(h),
            Ok(_) => {
                tracing::error!("the stance head has the wrong size; every post gets the neutral sentence");
                None
            }
            Err(e) => {
                tracing::error!(error = %e, "the stance head does not parse; every post gets the neutral sentence");
                None
            }
        }
    })
    .as_ref()
}

/// The post's first [`MAX_CHARS`] characters.
pub fn capped(text: &str) -> &str {
    match text.char_indices().nth(MAX_CHARS) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// What the stance reads of a post: its [`visible::visible`] text, up to [`MAX_CHARS`].
pub fn seen(post: &str) -> String {
    visible::visible(capped(post))
}

/// The texts embedded for one pair, in order: the post's [`seen`] text, the claim, then the
/// claim in each of [`features::PROBES`] ([`features::PAIR_TEXTS`] in all).
pub fn pair_texts(post: &str, claim: &str) -> Vec<String> {
    let claim = capped(claim).trim();
    let mut out = vec![seen(post), claim.to_string()];
    out.extend(
        features::PROBES
            .iter()
            .map(|t| t.replace("{claim}", claim.trim_end_matches(['.', '!']))),
    );
    out
}

/// The post's stance toward `claim`. `vectors`: the unit multilingual embeddings of
/// [`pair_texts`] (`None`: no multilingual model; every post `Unclear`).
pub fn decide(post: &str, claim: &str, vectors: Option<&[Vec<f32>]>) -> PostStance {
    decide_with(head(), post, claim, vectors)
}

/// The word rules' reading of a post in any of the bot's languages (a feature of the model,
/// never a decision): the English rules ([`rules::stance`]), then the asking and denying cues
/// of every language (`cues.txt`) that the claim itself does not carry.
pub fn reading(post: &str, claim: &str) -> Stance {
    let rule = rules::stance(post, claim);
    if matches!(rule, Stance::Denies | Stance::Asks) {
        return rule;
    }
    let more = |group: &str| features::group_count(post, group) > features::group_count(claim, group);
    if more("ask") || asks(post) {
        Stance::Asks
    } else if more("deny") {
        Stance::Denies
    } else {
        rule
    }
}

/// Whether a post's visible text asks (a question mark in any script): what tells an observing
/// post's *asks* from *reports*.
pub fn asks(seen: &str) -> bool {
    seen.contains(['?', '？', '¿', '؟'])
}

/// [`decide`] with a given head (the bench's cross-validated folds). `post` is the post as
/// written; it is read as [`seen`].
pub fn decide_with(head: Option<&Head>, post: &str, claim: &str, vectors: Option<&[Vec<f32>]>) -> PostStance {
    let post = seen(post);
    let scored = match (head, vectors) {
        (Some(h), Some(v)) if !post.trim().is_empty() => {
            let rule = reading(&post, claim);
            let opposed = features::opposed(&post, claim);
            features::all(&post, claim, rule, v)
                .map(|f| sentence(&h.thresholds, h.read(&f), asks(&post), opposed, POLARITY_GUARD))
        }
        _ => None,
    };
    let (stance, score, by) = match scored {
        Some((stance, score)) => (stance, score, StanceBy::Model),
        None => (Stance::Unclear, 0.0, StanceBy::Rules),
    };
    PostStance {
        stance,
        score,
        claim: claim.chars().take(MAX_CHARS).collect(),
        by,
        second_opinion: None,
    }
}

/// Whether the stance model can run here, said once at start-up and by `config check`:
/// `Err` names what is missing and which sentences the bot will not say.
pub fn availability(multilingual_configured: bool) -> Result<(), String> {
    if head().is_none() {
        return Err("the stance head does not load (see the error above): every post gets the neutral sentence — no \"This post is false.\", no \"agrees with the fact-checkers\", no label".into());
    }
    if !multilingual_configured {
        return Err("relevance.multilingual_model is not set: the stance model needs it, so every post gets the neutral sentence (\"A claim this post touches on has been fact-checked\") — no \"This post is false.\", no \"agrees with the fact-checkers\", no label. Fix: run `musebot models install` and set relevance.multilingual_model and relevance.multilingual_tokenizer".into());
    }
    Ok(())
}

/// The stances of `(post, claim)` pairs, every distinct text embedded once in one run of
/// `embedder` (the multilingual model; CPU-bound: a blocking thread). A failed run: every post
/// `Unclear`.
pub fn decide_all(embedder: Option<&crate::relevance::Embedder>, pairs: &[(&str, &str)]) -> Vec<PostStance> {
    let embedded = embedder.filter(|_| !pairs.is_empty()).and_then(|e| {
        let (texts, index) = distinct_texts(pairs);
        e.embed(&texts)
            .map_err(|e| tracing::warn!(error = %e, "stance: the embedding failed; the posts get the neutral sentence"))
            .ok()
            .filter(|v| v.len() == texts.len())
            .map(|v| (v, index))
    });
    pairs
        .iter()
        .enumerate()
        .map(|(i, (post, claim))| {
            let mine: Option<Vec<Vec<f32>>> = embedded
                .as_ref()
                .map(|(v, index)| index[i].iter().map(|j| v[*j].clone()).collect());
            decide(post, claim, mine.as_deref())
        })
        .collect()
}

/// The [`pair_texts`] of every pair, each distinct text once (posts matched to one claim
/// share it), and for each pair the index of each of its texts in that list.
pub fn distinct_texts(pairs: &[(&str, &str)]) -> (Vec<String>, Vec<Vec<usize>>) {
    let mut texts: Vec<String> = Vec::new();
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let index = pairs
        .iter()
        .map(|(post, claim)| {
            pair_texts(post, claim)
                .into_iter()
                .map(|t| {
                    *at.entry(t).or_insert_with_key(|t| {
                        texts.push(t.clone());
                        texts.len() - 1
                    })
                })
                .collect()
        })
        .collect();
    (texts, index)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLAIM: &str = "The Great Wall of China is visible from the Moon with the naked eye";

    #[test]
    fn each_distinct_text_is_embedded_once_and_each_pair_gets_its_own() {
        let (texts, index) = distinct_texts(&[("It is!", CLAIM), ("Is it?", CLAIM), ("It is!", CLAIM)]);
        assert_eq!(texts, vec!["It is!".to_string(), CLAIM.into(), "Is it?".into()]);
        assert_eq!(index, vec![vec![0, 1], vec![2, 1], vec![0, 1]]);
    }

    /// A head that gives class `k` probability ~1 whatever the features.
    fn always(k: usize) -> Head {
        let mut bias = vec![-20.0; CLASSES];
        bias[k] = 20.0;
        let expert = Linear {
            bias,
            weights: vec![vec![0.0; features::LEN]; CLASSES],
        };
        Head {
            version: 4,
            thresholds: Thresholds {
                posts: Sentences::all(0.9),
                headlines: Sentences::all(0.9),
                replies: Sentences::all(0.9),
            },
            // A post, never a headline or a reply.
            gate: Linear {
                bias: vec![20.0, -20.0, -20.0],
                weights: vec![vec![0.0; features::LEN]; 3],
            },
            experts: vec![expert.clone(), expert],
            trained: serde_json::Value::Null,
        }
    }

    #[test]
    fn the_shipped_head_matches_its_pin_and_its_features() {
        let head = head().expect("the shipped head loads");
        assert!(head.well_formed());
        for s in [
            head.thresholds.posts,
            head.thresholds.headlines,
            head.thresholds.replies,
        ] {
            for t in [s.asserts, s.denies, s.asks, s.reports] {
                assert!(t > 0.0 && t <= 1.01, "threshold {t}");
            }
        }
    }

    #[test]
    fn without_the_model_no_word_ever_decides_a_sentence() {
        // The cue words of a denial, a question and a plain assertion: all neutral.
        for post in [
            "The Great Wall of China is visible from the Moon!",
            "No, the Great Wall is not visible from the Moon. It's a myth.",
            "Is the Great Wall visible from the Moon?",
            "LEMONS KILL CANCER CELLS … BIG PHARMA DOESN'T WANT YOU TO KNOW!!! lol",
        ] {
            let s = decide(post, CLAIM, None);
            assert_eq!((s.stance, s.by), (Stance::Unclear, StanceBy::Rules), "{post}");
        }
        assert!(availability(false)
            .unwrap_err()
            .contains("relevance.multilingual_model"));
    }

    #[test]
    fn each_sentence_needs_its_class_and_its_threshold() {
        let v = vec![vec![0.0f32; features::DIM]; features::PAIR_TEXTS];
        let d = |h: &Head, post: &str| decide_with(Some(h), post, CLAIM, Some(&v)).stance;
        // Cue words never decide a sentence: not *asserts* ...
        assert_eq!(
            d(&always(0), "It is a myth? lol, it is visible from the Moon"),
            Stance::Asserts
        );
        // ... but a post that negates what the claim does not is never said to assert it.
        assert_eq!(
            d(&always(0), "The Great Wall is not visible from the Moon"),
            Stance::Unclear
        );
        assert_eq!(
            decide_with(
                Some(&always(0)),
                "The MMR vaccine is safe for children",
                "The MMR vaccine is not safe for children",
                Some(&v)
            )
            .stance,
            Stance::Unclear
        );
        assert_eq!(
            d(&always(1), "Is the Great Wall visible from the Moon?"),
            Stance::Denies
        );
        assert_eq!(
            d(
                &always(0),
                "The Great Wall is visible from the Moon, astronauts confirmed"
            ),
            Stance::Asserts
        );
        assert_eq!(
            d(&always(1), "The Great Wall is visible from the Moon!"),
            Stance::Denies
        );
        assert_eq!(d(&always(2), "Is the Great Wall visible from the Moon?"), Stance::Asks);
        assert_eq!(
            d(&always(2), "A viral post says the Great Wall is visible from the Moon."),
            Stance::Mentions
        );
        // A question mark inside a link is not a question.
        assert_eq!(
            d(
                &always(2),
                "The Great Wall is visible from the Moon https://www.youtube.com/watch?v=abc"
            ),
            Stance::Mentions
        );
        // Below its threshold, the neutral sentence.
        let mut unsure = always(0);
        for e in &mut unsure.experts {
            e.bias = vec![0.5, 0.0, 0.0];
        }
        assert_eq!(d(&unsure, "The Great Wall is visible from the Moon!"), Stance::Unclear);
        unsure.thresholds.posts.asserts = 0.3;
        assert_eq!(d(&unsure, "The Great Wall is visible from the Moon!"), Stance::Asserts);
        // A post the gate reads as a reply (or a headline) is held to that kind's thresholds.
        for (domain, bias) in [
            (Domain::Reply, [-20.0, -20.0, 20.0]),
            (Domain::Headline, [-20.0, 20.0, -20.0]),
        ] {
            let mut other = always(0);
            other.gate.bias = bias.to_vec();
            other.thresholds.of_mut(domain).asserts = 1.01;
            assert_eq!(d(&other, "The Great Wall is visible from the Moon!"), Stance::Unclear);
            other.thresholds.of_mut(domain).asserts = 0.5;
            assert_eq!(d(&other, "The Great Wall is visible from the Moon!"), Stance::Asserts);
        }
        // Only a link, or only mentions: nothing a person reads, nothing said.
        assert_eq!(
            d(&always(0), "@alice @bob https://example.com/the-wall-is-visible"),
            Stance::Unclear
        );
        // Vectors of another model's size: no model.
        let short = vec![vec![0.0f32; 3]; features::PAIR_TEXTS];
        let s = decide_with(
            Some(&always(0)),
            "The Great Wall is visible from the Moon.",
            CLAIM,
            Some(&short),
        );
        assert_eq!((s.stance, s.by), (Stance::Unclear, StanceBy::Rules));
    }

    #[test]
    fn a_huge_post_is_read_up_to_the_cap() {
        let post = "a".repeat(3 * MAX_CHARS);
        assert_eq!(capped(&post).len(), MAX_CHARS);
        let _ = decide(&post, CLAIM, None);
    }
}
