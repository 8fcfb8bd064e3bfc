//! Professional fact-checks in the Muse pipeline (issue: evidence from fact-checkers): how a
//! claim review reads as evidence ([`evidence_line`]) and how the reply names it
//! ([`reply_sentence`], put in place by [`name_in`] after the reply step and again after the
//! verify stage): who checked it, when, and their rating quoted verbatim (cut short,
//! quote marks and line breaks removed; the composer defuses any mention or link in it), after
//! the bot's own verdict sentence; when the checks disagree, or one is older than a year before
//! the post, the reply says so. Reviews come from pages' markup (`extract::claimreview`) and
//! the Fact Check Tools API (`search::factcheck`), and only those of pages that became
//! evidence — which passed the citing rule where they landed — are named.

use chrono::{DateTime, Utc};

use crate::model::{ClaimReview, RatingHint};

/// Characters of a publisher's rating or claim the bot quotes.
const QUOTE_CHARS: usize = 80;

fn quoted(text: &str, max: usize) -> String {
    let clean: String = text
        .chars()
        .map(|c| {
            if matches!(c, '"' | '“' | '”' | '\n' | '\r') {
                ' '
            } else {
                c
            }
        })
        .collect();
    let words = clean.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out: String = words.chars().take(max).collect();
    if words.chars().count() > max {
        out.push('…');
    }
    out
}

/// The publisher's name, or the bot's word for an unnamed one in `lang`.
fn publisher(r: &ClaimReview, lang: &str) -> String {
    let p = quoted(&r.publisher, 60);
    if p.is_empty() {
        crate::words::say(lang, "factcheck_someone", ())
    } else {
        p
    }
}

/// The review's day, or the bot's word for an unknown one in `lang`.
fn day(d: Option<DateTime<Utc>>, lang: &str) -> String {
    d.map(|d| d.format("%Y-%m-%d").to_string())
        .unwrap_or_else(|| crate::words::say(lang, "factcheck_undated", ()))
}

/// Names the professional fact-checks among the evidence (`reviews`: `Retrieval::cited_reviews`)
/// in `draft`, in the bot's words: right after the verdict sentence (where a long explanation
/// cut at `reply.max_parts` cannot lose it), or after the honest "could not verify" when the
/// model gave no usable verdict (the check is still the best thing the asker can read; its
/// review URL becomes the draft's one citable link). The verify stage calls it again on a
/// revised or withdrawn draft, which is the model's or the bot's words only.
pub fn name_in(draft: &mut crate::model::Draft, reviews: &[ClaimReview], post: &crate::model::Post) {
    use crate::model::Outcome;
    let lang = crate::words::language(post.language.as_deref());
    let Some(sentence) = reply_sentence(reviews, post.created_at, lang) else {
        return;
    };
    if draft.text.contains(&sentence) {
        return;
    }
    match (draft.outcome, draft.verdict) {
        (Outcome::Reply, Some(v)) => {
            let own = crate::pipeline::verdict::sentence(v, lang);
            let rest = draft
                .text
                .strip_prefix(own.as_str())
                .unwrap_or(&draft.text)
                .trim()
                .to_string();
            draft.text = format!("{own} {sentence} {rest}").trim_end().to_string();
        }
        (Outcome::Insufficient, _) => {
            draft.text = format!("{} {sentence}", draft.text);
            for r in reviews {
                if !draft.urls.contains(&r.url) {
                    draft.urls.push(r.url.clone());
                }
            }
        }
        _ => {}
    }
}

/// The review as an evidence line the model and the agents read.
pub fn evidence_line(r: &ClaimReview) -> String {
    format!(
        "{} (a professional fact-checker) reviewed the claim \"{}\" on {} and rated it \"{}\".",
        publisher(r, "en"),
        quoted(&r.claim, 200),
        day(r.reviewed, "en"),
        quoted(&r.rating_text(), QUOTE_CHARS)
    )
}

/// What the reply adds after its verdict about the checks found, or `None` without any.
pub fn reply_sentence(reviews: &[ClaimReview], post_time: DateTime<Utc>, lang: &str) -> Option<String> {
    use crate::words::say;
    reviews.first()?;
    let named = |r: &ClaimReview| {
        say(
            lang,
            "factcheck_named",
            minijinja::context! {
                publisher => publisher(r, lang),
                rating => quoted(&r.rating_text(), QUOTE_CHARS),
                day => day(r.reviewed, lang),
                url => r.url,
            },
        )
    };
    let hints: Vec<RatingHint> = reviews
        .iter()
        .map(ClaimReview::hint)
        .filter(|h| *h != RatingHint::Unclear)
        .collect();
    let disagree = hints.windows(2).any(|w| w[0] != w[1]);
    let all: Vec<String> = reviews.iter().take(3).map(named).collect();
    let key = if disagree {
        "factcheck_disagree"
    } else {
        "factcheck_one"
    };
    let mut text = say(lang, key, minijinja::context! { checks => all.join("; ") });
    let newest = reviews.iter().filter_map(|r| r.reviewed).max();
    if newest.is_some_and(|d| post_time - d > chrono::Duration::days(365)) {
        text.push(' ');
        text.push_str(&say(lang, "factcheck_old", ()));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ReviewSource;

    fn review(publisher: &str, rating: &str, date: &str, url: &str) -> ClaimReview {
        ClaimReview {
            url: url.into(),
            publisher: publisher.into(),
            publisher_site: None,
            claim: "The Moon is made of cheese".into(),
            claimant: None,
            rating: rating.into(),
            rating_value: None,
            best_rating: None,
            worst_rating: None,
            reviewed: DateTime::parse_from_rfc3339(date).ok().map(|d| d.with_timezone(&Utc)),
            language: None,
            appearances: Vec::new(),
            source: ReviewSource::Markup,
            claim_cosine: None,
            other_claim: false,
        }
    }

    #[test]
    fn the_reply_names_who_checked_when_and_their_rating() {
        let now = DateTime::parse_from_rfc3339("2026-12-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let one = [review(
            "PolitiFact",
            "Pants on \"Fire\"\n",
            "2026-11-20T00:00:00Z",
            "https://www.politifact.com/a",
        )];
        assert_eq!(
            reply_sentence(&one, now, "en").unwrap(),
            "Fact-checked: PolitiFact rated it \"Pants on Fire\" (2026-11-20): https://www.politifact.com/a."
        );
        let two = [
            review(
                "PolitiFact",
                "False",
                "2026-11-20T00:00:00Z",
                "https://www.politifact.com/a",
            ),
            review(
                "Snopes",
                "Mostly True",
                "2026-11-21T00:00:00Z",
                "https://www.snopes.com/b",
            ),
        ];
        assert!(reply_sentence(&two, now, "en")
            .unwrap()
            .starts_with("Fact-checkers disagree: PolitiFact"));
        let old = [review(
            "Full Fact",
            "False",
            "2020-01-01T00:00:00Z",
            "https://fullfact.org/c",
        )];
        assert!(reply_sentence(&old, now, "en")
            .unwrap()
            .ends_with("the claim may have changed since."));
        assert_eq!(reply_sentence(&[], now, "en"), None);
        // In the post's language: the bot's words translated, the rating still verbatim.
        assert_eq!(
            reply_sentence(&one, now, "de").unwrap(),
            "Faktencheck: PolitiFact bewertete es als „Pants on Fire“ (2026-11-20): https://www.politifact.com/a."
        );
        assert!(reply_sentence(&old, now, "ja").unwrap().ends_with("可能性があります。"));
        let long = review("X", &"very ".repeat(100), "2026-11-20T00:00:00Z", "https://x.example");
        assert!(evidence_line(&long).chars().count() < 400);
    }
}
