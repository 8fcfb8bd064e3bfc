//! The watch's cheap path over one batch of posts, cheapest test first: language and length,
//! then the words-only prefilter (the summed rarity of the post's words among the corpus's
//! claims: a term dictionary lookup a word), then — only for what passed — one embedding run
//! and one scan of the claims' vectors for the whole batch, and the "same claim" decision:
//! in the English space the learned one (`claims::same`: the best candidates read as pairs,
//! `Matcher::same_by_head`), elsewhere the cosine at `claims.same_claim` +
//! `watch.same_claim_margin` (`Matcher::best_of`), then the
//! stance of each post that matched (`crate::stance::decide_all`: one multilingual embedding
//! run for the matches of the batch). A post is read up to `crate::stance::MAX_CHARS`. No LLM
//! call, no request, no write: a pure function of the corpus and the posts, which the bench
//! runs as the daemon does ([`decide_timed`] adds where the time went, by [`Phases`]).

use crate::claims::matcher::{clean_post, Matcher, Space};
use crate::claims::CorpusError;
use crate::config::WatchConfig;
use crate::model::Seen;

use crate::model::PostStance;

/// What the cheap path made of one post. Closed: the metrics name each.
#[derive(Debug, Clone, PartialEq)]
pub enum Fate {
    /// Not in a watched language.
    Language,
    /// Too short to hold a claim, or too old when seen.
    Length,
    /// Its words are not the corpus's claims' words.
    Words,
    /// Embedded and scanned: no review of its claim.
    NoMatch,
    /// It matched a review's claim but does not assert it.
    NotAsserted { review: String, stance: PostStance },
    /// It asserts the claim of the review at `review` (its URL), with that cosine.
    Asserts { review: String, claim: String, cosine: f32 },
}

impl Fate {
    pub fn as_str(&self) -> &'static str {
        match self {
            Fate::Language => "language",
            Fate::Length => "length",
            Fate::Words => "words",
            Fate::NoMatch => "no_match",
            Fate::NotAsserted { .. } => "not_asserted",
            Fate::Asserts { .. } => "asserts",
        }
    }
}

/// Where a batch's time went, summed over the batches [`decide_timed`] saw, with how many
/// posts each phase took: the cheap tests (cleaning, language, length, the words prefilter),
/// the embedding runs of each model (tokenising included), the scan of the claims' vectors
/// (and reading the matched reviews), and the stance of the matches.
#[derive(Debug, Clone, Default)]
pub struct Phases {
    pub batches: usize,
    pub cheap: (std::time::Duration, usize),
    pub embed_english: (std::time::Duration, usize),
    pub embed_multilingual: (std::time::Duration, usize),
    pub scan: (std::time::Duration, usize),
    pub stance: (std::time::Duration, usize),
}

/// The fate of each of `posts`, in order (CPU-bound: call from a blocking thread).
pub fn decide(
    matcher: &Matcher,
    config: &WatchConfig,
    posts: &[Seen],
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Vec<Fate>, CorpusError> {
    decide_timed(matcher, config, posts, now, &mut Phases::default())
}

/// [`decide`], adding to `phases` where the time went.
pub fn decide_timed(
    matcher: &Matcher,
    config: &WatchConfig,
    posts: &[Seen],
    now: chrono::DateTime<chrono::Utc>,
    phases: &mut Phases,
) -> Result<Vec<Fate>, CorpusError> {
    let add = |phase: &mut (std::time::Duration, usize), since: std::time::Instant, n: usize| {
        phase.0 += since.elapsed();
        phase.1 += n;
    };
    phases.batches += 1;
    let started = std::time::Instant::now();
    let searcher = matcher.searcher();
    let mut fates: Vec<Option<Fate>> = vec![None; posts.len()];
    // The posts left for the vectors, by space: (index, cleaned text).
    let mut english: Vec<(usize, String)> = Vec::new();
    let mut multilingual: Vec<(usize, String)> = Vec::new();
    let max_age = chrono::Duration::seconds(config.max_age_secs as i64);
    let mut entry_cosines: Vec<f32> = Vec::new();
    for (i, post) in posts.iter().enumerate() {
        let text = clean_post(crate::stance::capped(&post.text));
        if text.chars().count() < config.min_chars || now - post.created_at > max_age {
            fates[i] = Some(Fate::Length);
            continue;
        }
        let language = crate::lang::of(post.langs.first().map(String::as_str), &text);
        // A post whose language is not tagged nor sure from its words is left to the words and
        // the vectors (the English model's space): a short post is often too short to tell.
        let watched = match language.as_deref().and_then(|l| crate::lang::primary(Some(l))) {
            Some(l) => config.languages.iter().any(|w| w.eq_ignore_ascii_case(&l)),
            None => true,
        };
        if !watched {
            fates[i] = Some(Fate::Language);
            continue;
        }
        if matcher.word_score(&searcher, &text) < config.min_word_score {
            fates[i] = Some(Fate::Words);
            continue;
        }
        match matcher.space(crate::lang::primary(language.as_deref()).as_deref()) {
            Space::English => english.push((i, text)),
            Space::Multilingual => multilingual.push((i, text)),
            // No vectors for this language: nothing can be decided the same claim.
            Space::WordsOnly => fates[i] = Some(Fate::NoMatch),
        }
    }
    add(&mut phases.cheap, started, posts.len());
    // The matches of the batch, their stances decided together: (index, review).
    let mut matched: Vec<(usize, crate::claims::Entry)> = Vec::new();
    for (space, group) in [(Space::English, english), (Space::Multilingual, multilingual)] {
        if group.is_empty() {
            continue;
        }
        let texts: Vec<String> = group.iter().map(|(_, t)| t.clone()).collect();
        let embedding = std::time::Instant::now();
        let vectors = matcher.embed_in(space, &texts)?;
        let phase = match space {
            Space::Multilingual => &mut phases.embed_multilingual,
            _ => &mut phases.embed_english,
        };
        add(phase, embedding, texts.len());
        let scanning = std::time::Instant::now();
        // The learned decision where it applies (the English space, its model); the cosine bar
        // elsewhere.
        let head = matcher.same_head(space);
        let found = match (vectors, head) {
            (Some(v), Some(head)) => matcher.same_by_head(head, &searcher, &texts, &v)?,
            (Some(v), None) => matcher.best_of(&searcher, &v, space)?,
            (None, _) => vec![None; texts.len()],
        };
        add(&mut phases.scan, scanning, texts.len());
        let bar = match head {
            Some(_) => f32::MIN,
            None => matcher.threshold(space) + config.same_claim_margin,
        };
        for ((i, _), best) in group.into_iter().zip(found) {
            match best.filter(|(cosine, _)| *cosine >= bar) {
                None => fates[i] = Some(Fate::NoMatch),
                Some((cosine, entry)) => {
                    entry_cosines.push(cosine);
                    matched.push((i, entry));
                }
            }
        }
    }
    let pairs: Vec<(&str, &str)> = matched
        .iter()
        .map(|(i, e)| (posts[*i].text.as_str(), e.review.claim.as_str()))
        .collect();
    let deciding = std::time::Instant::now();
    let stances = crate::stance::decide_all(matcher.multilingual().map(|m| m.as_ref()), &pairs);
    add(&mut phases.stance, deciding, pairs.len());
    for (((i, entry), stance), cosine) in matched.into_iter().zip(stances).zip(entry_cosines) {
        fates[i] = Some(if stance.asserts() {
            Fate::Asserts {
                review: entry.review.url,
                claim: entry.review.claim,
                cosine,
            }
        } else {
            Fate::NotAsserted {
                review: entry.review.url,
                stance,
            }
        });
    }
    Ok(fates.into_iter().map(|f| f.unwrap_or(Fate::NoMatch)).collect())
}
