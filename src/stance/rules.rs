//! The word rules of the stance decision: cues of denial, doubt and reporting in the post
//! that the claim itself does not carry. Built to abstain: any such cue keeps the post from
//! *asserting*, so they are precise about denials and questions (no `against` headline of the
//! Emergent dev split is called asserting) but call many reports asserting. `super::decide`
//! uses them as a veto and as features of the model; alone (no multilingual model) they never
//! decide `Asserts`. Every rule is linear in the text.

pub use crate::model::Stance;

/// Words and phrases that say the claim is false (lower case; matched on word boundaries).
const DENY: &[&str] = &[
    "false",
    "fake",
    "hoax",
    "myth",
    "debunk",
    "debunked",
    "debunking",
    "not true",
    "isn't true",
    "is not true",
    "untrue",
    "misinformation",
    "disinformation",
    "misleading",
    "no evidence",
    "fact check",
    "fact-check",
    "factcheck",
    "fact checked",
    "fact-checked",
    "doctored",
    "photoshop",
    "photoshopped",
    "nowhere near",
    "altered",
    "satire",
    "satirical",
    "stop sharing",
    "don't believe",
    "do not believe",
    "not real",
    "nope",
    "baseless",
    "bogus",
    "nonsense",
    "rubbish",
    "lie",
    "lies",
    "lying",
    "liar",
    "scam",
    "conspiracy",
    "debunks",
    "wrong",
    "incorrect",
    "never happened",
    "didn't happen",
    "did not happen",
    "not the case",
    "no such",
    "made up",
    "made-up",
    "fabricated",
    "snopes",
    "politifact",
    "full fact",
    "afp fact",
    "reuters fact",
    "correction",
    "actually",
    "contrary to",
    "no,",
    "no.",
    "no!",
    "lol",
    "lmao",
    "imagine believing",
    "people believe",
    "still believe",
    "falls for",
    "fell for",
    "falling for",
    "bulo",
    "bulo:",
    "falso",
    "mentira",
    "desmentido",
    "faux",
    "infox",
    "fausse",
    "intox",
    "falsch",
    "erfunden",
];

/// Words and phrases of someone reporting what others say.
const MENTION: &[&str] = &[
    "claim",
    "claims",
    "claimed",
    "claiming",
    "rumor",
    "rumors",
    "rumour",
    "rumours",
    "reportedly",
    "according to",
    "viral",
    "circulating",
    "going around",
    "making the rounds",
    "people are saying",
    "people say",
    "post says",
    "posts say",
    "posts claim",
    "allegedly",
    "alleged",
    "alleges",
    "supposedly",
    "so-called",
    "they say",
    "some say",
    "heard that",
    "keeps sharing",
    "keep sharing",
    "shared",
    "sharing",
    "spread",
    "spreading",
    "study",
    "researchers",
    "narrative",
    "theory",
    "theories",
    "meme",
    "says that",
    "said that",
    "headline",
    "headlines",
    // Someone writing about a story, not telling it.
    "said to",
    "story",
    "stories",
    "report that",
    "reports that",
    "a report",
    "article",
    "articles",
    "published",
    "publishes",
    "trending",
    "picked up",
    "running a story",
    "a post",
    "post about",
    "post saying",
    "posts",
    "posts saying",
    "screenshot",
    "screenshots",
    "attributed",
    "misattributed",
    "wrote that",
    "tweeted that",
    "podcast",
    "episode",
    "tabloid",
    "tabloids",
    "newsroom",
    "comments",
    "told me",
    "apparently",
    "pop up",
    "circula",
    "rumores",
    "dicen que",
    "selon",
    "rumeur",
    "il paraît",
];

/// Words and phrases of someone asking.
const ASK: &[&str] = &[
    "is it true",
    "is this true",
    "is that true",
    "can anyone confirm",
    "can someone confirm",
    "anyone know",
    "does anyone",
    "did anyone",
    "any truth",
    "any idea if",
    "wondering if",
    "wonder if",
    "i wonder",
    "is this real",
    "is that real",
    "true or not",
    "true or false",
    "real or fake",
    "fact or fiction",
    "can this be",
    "could this be",
    "not sure if",
    "not sure whether",
    "confirm?",
    "verify",
    "source?",
    "sources?",
    "es verdad",
    "c'est vrai",
];

/// Negations: a post that negates more than its claim does says the claim is not so.
const NEGATIONS: &[&str] = &[
    "not", "no", "never", "isn't", "aren't", "wasn't", "weren't", "doesn't", "don't", "didn't", "won't", "can't",
    "cannot", "nothing", "neither", "nor", "without", "isnt", "doesnt", "dont", "didnt", "wasnt", "nunca", "ne", "pas",
    "nicht", "kein",
];

/// Verbs of a claim about what someone said ("X once wrote that …").
const CLAIM_ATTRIBUTES: &[&str] = &[
    "said", "says", "wrote", "writes", "tweeted", "stated", "quoted", "posted",
];

/// Words of a post that puts words in someone's mouth.
const POST_ATTRIBUTES: &[&str] = &[
    "said",
    "says",
    "say",
    "saying",
    "wrote",
    "writes",
    "tweeted",
    "stated",
    "called",
    "quote",
    "quoted",
    "admitted",
    "admits",
    "told",
    "declared",
    "announced",
];

/// The post's stance toward `claim` (the matched review's claim) by the word rules alone:
/// never `Unclear`.
pub fn stance(post: &str, claim: &str) -> Stance {
    let text = normalise(post);
    let claim_text = normalise(claim);
    // A claim that someone said something is asserted only by a post that says they said it:
    // the words alone are the quote itself (often its author's own post), not the attribution.
    if has_any(&claim_text, CLAIM_ATTRIBUTES) && !has_any(&text, POST_ATTRIBUTES) && !signed(post) {
        return Stance::Mentions;
    }
    if text.contains('?') || has_any(&text, ASK) {
        return Stance::Asks;
    }
    // A cue the claim itself carries ("… is a hoax") says nothing about the post's stance.
    let cue = |list: &[&str]| list.iter().any(|c| has(&text, c) && !has(&claim_text, c));
    if cue(DENY) || negations(&text) > negations(&claim_text) {
        return Stance::Denies;
    }
    if cue(MENTION) || text.contains('"') || text.contains('“') {
        return Stance::Mentions;
    }
    Stance::Asserts
}

/// Lower case, typographic apostrophes made plain, spaces around the text so every cue can
/// be matched on word boundaries.
fn normalise(text: &str) -> String {
    let t = text.to_lowercase().replace(['’', '‘'], "'");
    format!(" {t} ")
}

fn has_any(text: &str, list: &[&str]) -> bool {
    list.iter().any(|c| has(text, c))
}

/// Whether `cue` stands in `text` as whole words.
pub(super) fn has(text: &str, cue: &str) -> bool {
    let boundary = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
    let mut from = 0;
    while let Some(at) = text[from..].find(cue) {
        let start = from + at;
        let end = start + cue.len();
        let before = text[..start].chars().next_back();
        let after = text[end..].chars().next();
        let first_is_word = cue.chars().next().is_some_and(char::is_alphanumeric);
        let last_is_word = cue.chars().next_back().is_some_and(char::is_alphanumeric);
        if (!first_is_word || boundary(before)) && (!last_is_word || boundary(after)) {
            return true;
        }
        from = start + cue.chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// Whether the post signs a quote with a name ("… — Alan Rickman", "- Mark Twain"). Each
/// dash reads at most the 64 bytes after it, so a text of dashes costs linear time.
fn signed(post: &str) -> bool {
    post.match_indices(['—', '–', '-']).any(|(at, dash)| {
        let start = at + dash.len();
        let mut end = (start + 64).min(post.len());
        while !post.is_char_boundary(end) {
            end -= 1;
        }
        let mut words = post[start..end].split_whitespace();
        let capital = |w: Option<&str>| w.and_then(|w| w.chars().next()).is_some_and(char::is_uppercase);
        let first = words.next();
        let second = words.next();
        first.is_some_and(|w| w.len() > 1 && w.chars().skip(1).all(char::is_lowercase))
            && capital(first)
            && capital(second)
    })
}

fn negations(text: &str) -> usize {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| NEGATIONS.contains(w) || w.ends_with("n't"))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLAIM: &str = "The Great Wall of China is visible from the Moon with the naked eye";

    #[test]
    fn the_four_stances_of_one_claim() {
        assert_eq!(
            stance(
                "The Great Wall of China is visible from the Moon with the naked eye!",
                CLAIM
            ),
            Stance::Asserts
        );
        assert_eq!(
            stance(
                "No, the Great Wall of China is not visible from the Moon. That's a myth.",
                CLAIM
            ),
            Stance::Denies
        );
        assert_eq!(
            stance("Wait, can you really see the Great Wall from the Moon?", CLAIM),
            Stance::Asks
        );
        assert_eq!(
            stance(
                "A viral post says the Great Wall of China is visible from the Moon.",
                CLAIM
            ),
            Stance::Mentions
        );
    }

    #[test]
    fn a_cue_the_claim_carries_is_not_the_posts_stance() {
        let claim = "The moon landing was a hoax filmed in a studio";
        assert_eq!(
            stance("The moon landing was a hoax filmed in a studio, wake up", claim),
            Stance::Asserts
        );
        assert_eq!(
            stance("The moon landing was not filmed in a studio", claim),
            Stance::Denies
        );
    }

    #[test]
    fn cues_match_whole_words_only() {
        // "lie" inside "believe", "no" inside "know": not cues.
        assert_eq!(
            stance("I believe the Great Wall is visible from the Moon", CLAIM),
            Stance::Asserts
        );
        assert!(has(" it's a lie ", "lie"));
        assert!(!has(" believe ", "lie"));
        assert!(has(" no, ", "no,"));
    }

    #[test]
    fn a_text_of_dashes_is_read_in_linear_time() {
        let dashes = "- ".repeat(100_000);
        // Quadratic (each dash reading the rest), this took minutes; now each reads 64 bytes.
        assert!(!signed(&dashes));
        assert_eq!(
            stance(&dashes, "The Great Wall is visible from the Moon"),
            Stance::Asserts
        );
    }
}
