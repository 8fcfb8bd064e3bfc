//! The stance model's features of one post–claim pair, read from the post's visible text
//! (`super::visible`): English hedging and reporting words one by one, cue groups in every
//! language the bot answers in (`cues.txt`: hedging, reporting, modal, denying, asking and
//! negating words) in the post and in the claim, the polarity pair (one side negates, the other
//! does not), punctuation and shape, the word rules' reading, the words the two share, then the
//! multilingual sentence embeddings read as a pair (the post's, `post - claim`,
//! `post * claim`, the cosine). Cues are features only: no word alone decides a sentence.
//! Training (`super::train`) and the daemon compute them here, so the shipped weights always
//! read the features they were fitted on.

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
pub const GROUPS: [&str; 6] = ["hedge", "report", "modal", "deny", "ask", "negate"];

/// Languages whose cues are matched inside words (no spaces between words).
const UNSPACED: [&str; 4] = ["ja", "ko", "zh-Hans", "zh-Hant"];

/// The embedding's dimension the head was fitted on (Universal Sentence Encoder multilingual v3).
pub const DIM: usize = 512;

/// Features before the embeddings: the words, the groups in the post and in the claim, the
/// polarity pair, punctuation and shape, the rules' one-hot, the lexical overlap pair.
pub const CUES: usize = WORDS.len() + 2 * GROUPS.len() + 2 + 5 + 4 + 2;

/// Templates of the claim restated (a denial, a question, a report: `"It is false that
/// {claim}."`, …), each embedded beside the claim so the post's nearness to it is a feature.
/// None ship: measured on the dev files they gave no precision at any recall and cost two and a
/// half times the embedding (decision 0050); the bench can try a list again.
pub const PROBES: [&str; 0] = [];

/// Texts embedded for one pair: the post, the claim, the probes.
pub const PAIR_TEXTS: usize = 2 + PROBES.len();

/// Every feature: the cues, then the post's embedding, the difference and the element-wise
/// product of the post's and the claim's, their cosine, and per probe the post's cosine with
/// it and that minus the claim's.
pub const LEN: usize = CUES + 3 * DIM + 1 + 2 * PROBES.len();

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

/// Counts of every group of [`GROUPS`] in `text`.
fn group_counts(text: &str) -> Vec<usize> {
    let text = normalise(text);
    groups()
        .iter()
        .map(|(whole, inside)| {
            whole.iter().filter(|c| super::rules::has(&text, c)).count()
                + inside.iter().filter(|c| text.contains(c.as_str())).count()
        })
        .collect()
}

/// Whether the post and the claim differ in polarity: one carries a negating word of any of
/// the bot's languages (`cues.txt` `[negate]`) and the other none.
pub fn opposed(post: &str, claim: &str) -> bool {
    (group_count(post, "negate") > 0) != (group_count(claim, "negate") > 0)
}

/// Lower-case words of three characters or more (or any CJK character), for the overlap.
fn content_words(text: &str) -> std::collections::BTreeSet<String> {
    let text = text.to_lowercase();
    let mut out = std::collections::BTreeSet::new();
    for w in text.split(|c: char| !c.is_alphanumeric()) {
        if w.chars().count() >= 3 {
            out.insert(w.to_string());
        } else {
            out.extend(w.chars().filter(|c| (*c as u32) >= 0x3040).map(String::from));
        }
    }
    out
}

/// The share of `a`'s words found in `b` (0 for no words).
fn coverage(a: &std::collections::BTreeSet<String>, b: &std::collections::BTreeSet<String>) -> f32 {
    if a.is_empty() {
        0.0
    } else {
        a.iter().filter(|w| b.contains(*w)).count() as f32 / a.len() as f32
    }
}

/// The pair's word features (everything but the embeddings): the post's `visible` text
/// against the claim. Cues are features, never a decision of their own. Case is not read
/// (an edit of case alone re-checks nothing: the living replies' words digest).
pub fn cues(post: &str, claim: &str, rule: Stance) -> Vec<f32> {
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
    let in_post = group_counts(post);
    let in_claim = group_counts(claim);
    f.extend(in_post.iter().map(|n| *n as f32));
    f.extend(in_claim.iter().map(|n| *n as f32));
    // Polarity: one of the two negates and the other does not ("X is safe" against "X is not
    // safe" reads as the same topic to the embeddings).
    let negate = GROUPS.len() - 1;
    let (post_neg, claim_neg) = (in_post[negate] > 0, in_claim[negate] > 0);
    f.push(f32::from(u8::from(post_neg && !claim_neg)));
    f.push(f32::from(u8::from(claim_neg && !post_neg)));
    let has = |cs: &[char]| f32::from(u8::from(post.contains(cs)));
    f.push(has(&['?', '？', '¿', '؟']));
    f.push(has(&[':', '：']));
    f.push(has(&['"', '“', '”', '«', '»', '„', '「', '」']));
    f.push(has(&['!', '！']));
    f.push(words.len() as f32 / 20.0);
    for s in [Stance::Asserts, Stance::Denies, Stance::Asks, Stance::Mentions] {
        f.push(f32::from(u8::from(rule == s)));
    }
    let (p, c) = (content_words(post), content_words(claim));
    f.push(coverage(&c, &p));
    f.push(coverage(&p, &c));
    debug_assert_eq!(f.len(), CUES);
    f
}

/// Every feature: [`cues`], the post's unit embedding, `post - claim`, `post * claim`
/// (element-wise), their cosine, and per probe its cosine with the post, alone and minus the
/// claim's. `vectors`: the unit embeddings of `super::pair_texts`. `None` when they are not
/// [`PAIR_TEXTS`] vectors of [`DIM`].
pub fn all(post: &str, claim: &str, rule: Stance, vectors: &[Vec<f32>]) -> Option<Vec<f32>> {
    if vectors.len() != PAIR_TEXTS || vectors.iter().any(|v| v.len() != DIM) {
        return None;
    }
    let (post_vector, claim_vector) = (&vectors[0], &vectors[1]);
    let cos = |a: &[f32], b: &[f32]| -> f32 { a.iter().zip(b).map(|(x, y)| x * y).sum() };
    let mut f = cues(post, claim, rule);
    f.extend_from_slice(post_vector);
    f.extend(post_vector.iter().zip(claim_vector).map(|(p, c)| p - c));
    f.extend(post_vector.iter().zip(claim_vector).map(|(p, c)| p * c));
    let to_claim = cos(post_vector, claim_vector);
    f.push(to_claim);
    for probe in &vectors[2..] {
        let c = cos(post_vector, probe);
        f.push(c);
        f.push(c - to_claim);
    }
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
        assert_eq!(cues("A viral post claims it", "it", Stance::Mentions).len(), CUES);
    }

    #[test]
    fn the_polarity_pair_tells_a_claim_from_its_negation() {
        let at = CUES - 13;
        let safe = cues(
            "The MMR vaccine is safe for children",
            "The MMR vaccine is not safe for children",
            Stance::Asserts,
        );
        assert_eq!(&safe[at..at + 2], &[0.0, 1.0]);
        let same = cues(
            "The MMR vaccine isn't safe for kids!",
            "The MMR vaccine is not safe for children",
            Stance::Asserts,
        );
        assert_eq!(&same[at..at + 2], &[0.0, 0.0]);
        let es = cues("La vacuna no es segura", "The vaccine is safe", Stance::Asserts);
        assert_eq!(&es[at..at + 2], &[1.0, 0.0]);
    }

    #[test]
    fn cues_are_counted_in_other_languages_and_scripts() {
        let hedge = WORDS.len();
        assert!(
            cues("Selon des rumeurs, il serait mort", "", Stance::Asserts)[hedge..hedge + 6]
                .iter()
                .any(|x| *x > 0.0)
        );
        assert!(cues("这是谣言", "", Stance::Asserts)[hedge..hedge + 6]
            .iter()
            .any(|x| *x > 0.0));
    }
}
