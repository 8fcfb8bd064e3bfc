//! The stance model's features of one post–claim pair: English hedging and reporting words
//! one by one, cue groups in every language the bot answers in (`cues.txt`: hedging,
//! reporting, modal, denying and asking words), punctuation and length, the word rules'
//! decision, then the multilingual sentence embeddings — the post's, its difference from the
//! claim's, and their cosine. Training (`super::train`) and the daemon compute them here, so
//! the shipped weights always read the features they were fitted on.

use std::sync::OnceLock;

use super::rules::Stance;

/// Words whose presence in an English post each is a feature of its own (hedges, reporting,
/// denial and media words that tell a report of a claim from an assertion of it).
const WORDS: &[&str] = &[
    "reportedly",
    "report",
    "reports",
    "reported",
    "claim",
    "claims",
    "claimed",
    "allegedly",
    "alleged",
    "rumor",
    "rumors",
    "rumour",
    "rumoured",
    "rumored",
    "may",
    "might",
    "could",
    "possibly",
    "apparently",
    "supposedly",
    "says",
    "said",
    "say",
    "according",
    "sources",
    "source",
    "believed",
    "thought",
    "suggests",
    "appears",
    "seems",
    "purportedly",
    "considering",
    "considers",
    "plans",
    "planning",
    "expected",
    "would",
    "if",
    "hoax",
    "fake",
    "false",
    "not",
    "no",
    "denies",
    "denied",
    "deny",
    "debunk",
    "debunked",
    "myth",
    "isn't",
    "wasn't",
    "doesn't",
    "didn't",
    "never",
    "is it",
    "viral",
    "internet",
    "twitter",
    "photo",
    "video",
    "claiming",
];

/// The cue groups, in the order of their features.
pub const GROUPS: [&str; 5] = ["hedge", "report", "modal", "deny", "ask"];

/// Languages whose cues are matched inside words (no spaces between words).
const UNSPACED: [&str; 4] = ["ja", "ko", "zh-Hans", "zh-Hant"];

/// The embedding's dimension the head was fitted on (Universal Sentence Encoder multilingual v3).
pub const DIM: usize = 512;

/// Features before the embeddings.
pub const CUES: usize = WORDS.len() + GROUPS.len() + 4 + 4;

/// Every feature.
pub const LEN: usize = CUES + 2 * DIM + 1;

/// Cues of one group: (whole-word cues, in-word cues).
type Group = (Vec<String>, Vec<String>);

/// `cues.txt`, parsed once: per group of [`GROUPS`], the cues of every language.
fn groups() -> &'static [Group] {
    static GROUPS_CUES: OnceLock<Vec<Group>> = OnceLock::new();
    GROUPS_CUES.get_or_init(|| parse(include_str!("cues.txt")))
}

/// `[group]` headers, then `lang: cue, cue, …` lines; unknown groups are ignored.
fn parse(text: &str) -> Vec<Group> {
    let mut out: Vec<Group> = vec![(Vec::new(), Vec::new()); GROUPS.len()];
    let mut current = None;
    for line in text.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = GROUPS.iter().position(|g| *g == name);
            continue;
        }
        let (Some(g), Some((lang, cues))) = (current, line.split_once(':')) else {
            continue;
        };
        let inside = UNSPACED.contains(&lang.trim());
        for cue in cues
            .split(',')
            .map(|c| c.trim().to_lowercase())
            .filter(|c| !c.is_empty())
        {
            if inside {
                out[g].1.push(cue);
            } else {
                out[g].0.push(cue);
            }
        }
    }
    for g in &mut out {
        g.0.sort();
        g.0.dedup();
        g.1.sort();
        g.1.dedup();
    }
    out
}

/// The text as the cues read it: lower case, plain apostrophes, spaces around.
fn normalise(text: &str) -> String {
    let t = text.to_lowercase().replace(['’', '‘'], "'");
    format!(" {t} ")
}

/// Cues of `group` (one of [`GROUPS`]) in `text`, in any of the bot's languages.
pub fn group_count(text: &str, group: &str) -> usize {
    let Some(i) = GROUPS.iter().position(|g| *g == group) else {
        return 0;
    };
    let text = normalise(text);
    let (whole, inside) = &groups()[i];
    whole.iter().filter(|c| super::rules::has(&text, c)).count()
        + inside.iter().filter(|c| text.contains(c.as_str())).count()
}

/// The word features and the rules' one-hot (everything but the embeddings).
pub fn cues(post: &str, rule: Stance) -> Vec<f32> {
    let text = normalise(post);
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .collect();
    let mut f = Vec::with_capacity(LEN);
    for w in WORDS {
        let hit = if w.contains(' ') {
            super::rules::has(&text, w)
        } else {
            words.contains(w)
        };
        f.push(f32::from(u8::from(hit)));
    }
    for (whole, inside) in groups() {
        let n = whole.iter().filter(|c| super::rules::has(&text, c)).count()
            + inside.iter().filter(|c| text.contains(c.as_str())).count();
        f.push(n as f32);
    }
    let has = |cs: &[char]| f32::from(u8::from(post.contains(cs)));
    f.push(has(&['?', '？', '¿', '؟']));
    f.push(has(&[':', '：']));
    f.push(has(&['"', '“', '”', '«', '»', '„', '「', '」']));
    f.push(words.len() as f32 / 20.0);
    for s in [Stance::Asserts, Stance::Denies, Stance::Asks, Stance::Mentions] {
        f.push(f32::from(u8::from(rule == s)));
    }
    f
}

/// Every feature: [`cues`], the post's unit embedding, the post's minus the claim's, their
/// cosine. `None` when the embeddings are not of [`DIM`].
pub fn all(post: &str, rule: Stance, post_vector: &[f32], claim_vector: &[f32]) -> Option<Vec<f32>> {
    if post_vector.len() != DIM || claim_vector.len() != DIM {
        return None;
    }
    let mut f = cues(post, rule);
    f.extend_from_slice(post_vector);
    f.extend(post_vector.iter().zip(claim_vector).map(|(p, c)| p - c));
    f.push(post_vector.iter().zip(claim_vector).map(|(p, c)| p * c).sum());
    debug_assert_eq!(f.len(), LEN);
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_group_has_cues_in_every_language_of_the_bot() {
        let text = include_str!("cues.txt");
        for group in GROUPS {
            let block = text.split(&format!("[{group}]")).nth(1).expect(group);
            let block = block.split("\n[").next().unwrap_or(block);
            for (lang, _) in crate::words::BUILT_IN {
                assert!(
                    block.lines().any(|l| l.trim_start().starts_with(&format!("{lang}:"))),
                    "no {lang} cues for {group}"
                );
            }
        }
        assert_eq!(cues("A viral post claims it", Stance::Mentions).len(), CUES);
    }

    #[test]
    fn cues_are_counted_in_other_languages_and_scripts() {
        let hedge = WORDS.len();
        assert!(
            cues("Selon des rumeurs, il serait mort", Stance::Asserts)[hedge..hedge + 5]
                .iter()
                .any(|x| *x > 0.0)
        );
        assert!(cues("这是谣言", Stance::Asserts)[hedge..hedge + 5]
            .iter()
            .any(|x| *x > 0.0));
    }
}
