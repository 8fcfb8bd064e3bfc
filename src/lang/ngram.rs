//! A character n-gram naive Bayes model for the languages `whatlang` cannot tell apart on a
//! short post: Spanish, Portuguese, Catalan, Galician, Basque and English —
//! whatlang has no Galician and no Basque, and on a tweet it takes Catalan for Spanish and
//! Galician for Portuguese as often as not. Trained on TweetLID 2014's training split (13,931
//! real tweets with gold labels; its test split is held out), shipped as counts in
//! [`MODEL`] (`cargo bench --bench language_id -- --write-model` writes it), loaded once. The
//! counts are aggregate statistics of a dataset released for research use (features seen in
//! three or more tweets, no tweet in it): whoever redistributes the binary should check those
//! terms; `--write-model PATH` retrains from any file in the same columns.
//!
//! A text is normalised as a tweet needs ([`normalise`]: links, @handles and hashtags out,
//! lower case, letters only with Catalan's `l·l` and apostrophes kept, runs of three or more of
//! a letter squeezed to two, laughter such as "jajaja" dropped), and scored by its character
//! n-grams ([`MIN_ORDER`]..=[`MAX_ORDER`], across word boundaries, the text padded with a
//! space) and its whole words: multinomial naive Bayes with add-[`ALPHA`] smoothing over the six
//! languages and `und` (tweets in no language: names, laughter, emoji — a class of its own
//! measured better than a threshold), with the training split's class priors. The constants
//! were chosen by author-grouped 10-fold cross-validation on the training split (a Python
//! prototype, then this port). Per-class biases tuned on TweetLID (+9.6 nats for Spanish and
//! Portuguese) scored 0.016 macro F1 more there but read a short English post ("Vaccines
//! contain microchips.") as Spanish: they fit TweetLID's mix (58 % Spanish), not the
//! platforms', where English leads, so they are not shipped. The model answers the best
//! language with its posterior, and a second one when the text reads nearly as well in it
//! ([`Model::guess`]).

use std::collections::HashMap;
use std::sync::OnceLock;

/// The languages the model tells apart.
pub const LANGS: [&str; 6] = ["es", "pt", "ca", "gl", "eu", "en"];
/// Its classes, in the order of its counts: the languages, then `und` (no language).
pub const CLASSES: [&str; 7] = ["es", "pt", "ca", "gl", "eu", "en", "und"];
const N: usize = CLASSES.len();
/// Shortest and longest character n-grams.
pub const MIN_ORDER: usize = 1;
pub const MAX_ORDER: usize = 4;
/// Add-alpha smoothing of the counts.
pub const ALPHA: f64 = 0.1;
/// Counts are kept in half-units (a tweet in two languages counts half for each).
const UNIT: u32 = 2;
/// Features seen fewer times than this (whole tweets' worth) are left out of the model.
pub const MIN_COUNT: u32 = 3;
/// Letters a text needs (after normalising) before the model guesses.
pub const MIN_LETTERS: usize = 3;
/// A second language is named when its score per feature trails the first's by less than
/// this (a post written in two languages reads almost as well in either).
pub const SECOND_GAP: f64 = 0.03;
/// …and the text has at least this many features.
pub const SECOND_MIN_FEATURES: usize = 20;

/// The shipped counts (see [`Counts::to_text`]).
pub const MODEL: &str = include_str!("tweetlid.model");

/// Feature counts per language, as training leaves them.
#[derive(Debug, Default, Clone)]
pub struct Counts {
    /// Feature → count per class of [`CLASSES`], in half-units.
    pub table: HashMap<String, [u32; N]>,
    /// Training texts per class (the prior).
    pub docs: [f64; N],
    /// The SHA-256 of the file trained on (the bench cross-validates on that file).
    pub source: String,
}

impl Counts {
    /// Adds a text labelled with `classes` (two for a text in two languages: each counts
    /// half of it; `und` for a text in no language).
    pub fn add(&mut self, text: &str, classes: &[&str]) {
        let ids: Vec<usize> = classes
            .iter()
            .filter_map(|l| CLASSES.iter().position(|x| x == l))
            .collect();
        if ids.is_empty() {
            return;
        }
        let (weight, share) = if ids.len() == 1 { (UNIT, 1.0) } else { (1, 0.5) };
        let (normal, _) = normalise(text);
        for f in features(&normal) {
            let row = self.table.entry(f).or_default();
            for &i in &ids {
                row[i] += weight;
            }
        }
        for &i in &ids {
            self.docs[i] += share;
        }
    }

    /// The counts as text: a header line of document counts, then `feature TAB counts…` per
    /// feature seen at least `min_count` times, sorted (a stable file in git).
    pub fn to_text(&self, min_count: u32) -> String {
        let mut out = format!(
            "#source\t{}\n#docs\t{}\n",
            self.source,
            self.docs
                .iter()
                .map(|d| format!("{d:.1}"))
                .collect::<Vec<_>>()
                .join("\t")
        );
        let mut rows: Vec<(&String, &[u32; N])> = self
            .table
            .iter()
            .filter(|(_, c)| c.iter().sum::<u32>() >= min_count * UNIT)
            .collect();
        rows.sort();
        for (f, c) in rows {
            out.push_str(f);
            for n in c {
                out.push('\t');
                out.push_str(&n.to_string());
            }
            out.push('\n');
        }
        out
    }

    /// Reads [`Counts::to_text`]'s format.
    pub fn from_text(text: &str) -> Result<Counts, String> {
        let mut counts = Counts::default();
        for (n, line) in text.lines().enumerate() {
            let mut cells = line.split('\t');
            let key = cells.next().unwrap_or_default();
            if key == "#source" {
                counts.source = cells.next().unwrap_or_default().to_string();
                continue;
            }
            let values: Vec<&str> = cells.collect();
            if values.len() != N {
                return Err(format!("line {}: {} counts, want {N}", n + 1, values.len()));
            }
            if key == "#docs" {
                for (d, v) in counts.docs.iter_mut().zip(&values) {
                    *d = v.parse().map_err(|e| format!("line {}: {e}", n + 1))?;
                }
                continue;
            }
            let mut row = [0u32; N];
            for (c, v) in row.iter_mut().zip(&values) {
                *c = v.parse().map_err(|e| format!("line {}: {e}", n + 1))?;
            }
            counts.table.insert(key.to_string(), row);
        }
        Ok(counts)
    }

    /// The model these counts make: features seen [`MIN_COUNT`] times or more.
    pub fn model(&self) -> Model {
        let kept: Vec<(&String, &[u32; N])> = self
            .table
            .iter()
            .filter(|(_, c)| c.iter().sum::<u32>() >= MIN_COUNT * UNIT)
            .collect();
        let mut totals = [0f64; N];
        for (_, row) in &kept {
            for (t, c) in totals.iter_mut().zip(row.iter()) {
                *t += f64::from(*c) / f64::from(UNIT);
            }
        }
        let vocabulary = kept.len() as f64;
        let denominators: Vec<f64> = totals.iter().map(|t| (t + ALPHA * vocabulary).ln()).collect();
        let log = |row: &[u32; N]| {
            let mut out = [0f32; N];
            for i in 0..N {
                out[i] = ((f64::from(row[i]) / f64::from(UNIT) + ALPHA).ln() - denominators[i]) as f32;
            }
            out
        };
        let all: f64 = self.docs.iter().sum::<f64>().max(1.0);
        let mut prior = [0f64; N];
        for (p, d) in prior.iter_mut().zip(&self.docs) {
            *p = (d.max(0.5) / all).ln();
        }
        Model {
            table: kept.into_iter().map(|(k, v)| (k.clone(), log(v))).collect(),
            prior,
        }
    }
}

/// Log-probabilities of each feature per language, and the languages' priors.
pub struct Model {
    table: HashMap<String, [f32; N]>,
    /// Log prior.
    prior: [f64; N],
}

/// What the model reads in a text.
#[derive(Debug, Clone, PartialEq)]
pub struct Guess {
    /// The most likely class: a language of [`LANGS`], or `und` (no language).
    pub lang: &'static str,
    /// Its posterior probability among [`CLASSES`].
    pub probability: f64,
    /// A second language the text reads nearly as well in (a post in two languages).
    pub second: Option<&'static str>,
    /// Known features the text had (the evidence behind the guess).
    pub features: usize,
}

impl Model {
    /// The shipped model ([`MODEL`]), parsed once.
    pub fn shipped() -> &'static Model {
        static SHIPPED: OnceLock<Model> = OnceLock::new();
        SHIPPED.get_or_init(|| {
            Counts::from_text(MODEL)
                .expect("the shipped language model parses")
                .model()
        })
    }

    /// The SHA-256 of the file the shipped model was trained on.
    pub fn shipped_source() -> &'static str {
        MODEL
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("#source\t"))
            .unwrap_or_default()
    }

    /// The text's language among [`LANGS`]; `None` when it has too few letters or no feature
    /// the model knows.
    pub fn guess(&self, text: &str) -> Option<Guess> {
        let (normal, letters) = normalise(text);
        if letters < MIN_LETTERS {
            return None;
        }
        let mut scores = self.prior;
        let mut known = 0usize;
        for f in features(&normal) {
            if let Some(row) = self.table.get(&f) {
                known += 1;
                for (s, l) in scores.iter_mut().zip(row) {
                    *s += f64::from(*l);
                }
            }
        }
        if known == 0 {
            return None;
        }
        let mut order: Vec<usize> = (0..N).collect();
        order.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]));
        let (first, second) = (order[0], order[1]);
        let top = scores[first];
        let sum: f64 = scores.iter().map(|s| (s - top).exp()).sum();
        let gap = (scores[first] - scores[second]) / known as f64;
        let und = |i: usize| CLASSES[i] == "und";
        Some(Guess {
            lang: CLASSES[first],
            probability: 1.0 / sum,
            second: (!und(first) && !und(second) && known >= SECOND_MIN_FEATURES && gap < SECOND_GAP)
                .then_some(CLASSES[second]),
            features: known,
        })
    }
}

/// Whether a word is laughter ("jajaja", "hahah", "jejeje", "kkkk", "xd", "lol"): one of `j`
/// or `h` and one vowel, each at least twice, or a few fixed forms.
fn laughter(word: &str) -> bool {
    let chars: Vec<char> = word.chars().collect();
    if matches!(word, "lol" | "xd" | "xdd" | "jsjs" | "jsjsjs") || (chars.len() >= 2 && chars.iter().all(|c| *c == 'k'))
    {
        return true;
    }
    if chars.len() < 4 {
        return false;
    }
    let mut distinct: Vec<char> = chars.clone();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() != 2 {
        return false;
    }
    let (consonant, vowel) = match (distinct[0], distinct[1]) {
        (c @ ('h' | 'j'), v @ ('a' | 'e' | 'i' | 'o' | 'u')) | (v @ ('a' | 'e' | 'i' | 'o' | 'u'), c @ ('h' | 'j')) => {
            (c, v)
        }
        _ => return false,
    };
    let count = |x: char| chars.iter().filter(|c| **c == x).count();
    count(consonant) >= 2 && count(vowel) >= 2
}

/// A tweet as the model reads it: words of lower-case letters separated by one space, and
/// how many letters they hold.
pub fn normalise(text: &str) -> (String, usize) {
    let mut kept = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        let lower = word.to_lowercase();
        let link = lower.contains("://")
            || lower.starts_with("www.")
            || lower.split_once('/').is_some_and(|(host, _)| host.contains('.'));
        if link || word.starts_with(['@', '#']) || lower == "rt" {
            continue;
        }
        kept.push(' ');
        kept.push_str(&lower);
    }
    // Letters, apostrophes inside words and Catalan's middle dot between two l's.
    let chars: Vec<char> = kept.chars().collect();
    let mut cleaned = String::with_capacity(kept.len());
    for (i, &c) in chars.iter().enumerate() {
        let inside = |i: usize| {
            i > 0
                && chars.get(i - 1).is_some_and(|p| p.is_alphabetic())
                && chars.get(i + 1).is_some_and(|n| n.is_alphabetic())
        };
        if c.is_alphabetic() {
            cleaned.push(c);
        } else if matches!(c, '\'' | '’') && inside(i) {
            cleaned.push('\'');
        } else if matches!(c, '·' | '.') && inside(i) && chars[i - 1] == 'l' && chars[i + 1] == 'l' {
            cleaned.push('·');
        } else {
            cleaned.push(' ');
        }
    }
    let mut words = Vec::new();
    let mut letters = 0;
    for word in cleaned.split_whitespace() {
        // Runs of three or more of a character are squeezed to two ("siiii" → "sii").
        let mut squeezed = String::with_capacity(word.len());
        let mut last = None;
        let mut run = 0;
        for c in word.chars() {
            run = if Some(c) == last { run + 1 } else { 1 };
            last = Some(c);
            if run <= 2 {
                squeezed.push(c);
            }
        }
        if laughter(&squeezed) {
            continue;
        }
        letters += squeezed.chars().filter(|c| c.is_alphabetic()).count();
        words.push(squeezed);
    }
    (words.join(" "), letters)
}

/// The features of a normalised text: its character n-grams, the text padded with a space on
/// each side (so they cross word boundaries: "a c" is a feature), and each whole word
/// (prefixed `W`, so it never meets an n-gram).
pub fn features(normal: &str) -> Vec<String> {
    let mut out = Vec::new();
    if normal.is_empty() {
        return out;
    }
    let padded: Vec<char> = std::iter::once(' ')
        .chain(normal.chars())
        .chain(std::iter::once(' '))
        .collect();
    for n in MIN_ORDER..=MAX_ORDER {
        for window in padded.windows(n) {
            if n == 1 && window[0] == ' ' {
                continue;
            }
            out.push(window.iter().collect());
        }
    }
    out.extend(normal.split(' ').map(|w| format!("W{w}")));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tweets_are_normalised_as_the_model_was_trained() {
        assert_eq!(
            normalise("RT @ana: Siiiii!!! jajaja mira http://t.co/x #Barça l'amic col·legi t.co/y").0,
            "sii mira l'amic col·legi"
        );
        assert_eq!(normalise("@a http://t.co/b 123 :)"), (String::new(), 0));
        assert!(
            laughter("jajaja")
                && laughter("hahah")
                && laughter("kkkk")
                && laughter("jaja")
                && !laughter("jajo")
                && !laughter("haja")
        );
    }

    #[test]
    fn counts_round_trip_through_their_text() {
        let mut c = Counts::default();
        c.add("Bon dia a tothom", &["ca"]);
        c.add("Buenos días a todos", &["es"]);
        c.add("Good morning all", &["en", "es"]);
        let text = c.to_text(1);
        let back = Counts::from_text(&text).unwrap();
        assert_eq!(back.to_text(1), text);
        assert_eq!(back.docs[CLASSES.iter().position(|l| *l == "en").unwrap()], 0.5);
        assert!(Counts::from_text("a\t1\t2").is_err());
    }

    #[test]
    fn the_shipped_model_tells_the_iberian_languages_apart() {
        let m = Model::shipped();
        for (text, want) in [
            ("Bon dia a tothom, avui fa molt de fred a Barcelona", "ca"),
            ("Bos días a todos, hoxe vai moito frío en Compostela", "gl"),
            ("Egun on guztioi, gaur hotz handia egiten du Bilbon", "eu"),
            ("Bom dia a todos, hoje está muito frio em Lisboa", "pt"),
            ("Buenos días a todos, hoy hace mucho frío en Madrid", "es"),
            ("Good morning everyone, it is very cold in London today", "en"),
        ] {
            assert_eq!(m.guess(text).map(|g| g.lang), Some(want), "{text}");
        }
        assert_eq!(m.guess("@ana http://t.co/x"), None);
    }
}
