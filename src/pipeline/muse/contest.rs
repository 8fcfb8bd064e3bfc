//! A draft that contradicts a fact-check it names: the reply never carries
//! a verdict and a professional fact-checker's contrary rating without saying so.
//!
//! [`against`] finds the fact-checkers' reviews (`Retrieval::deciding_reviews` and the evidence
//! pages' `cited_reviews` that a fact-checker published) that the draft names — its URLs or
//! its text hold the review's URL, or its text the fact-checker's name — whose rating's class
//! contradicts the draft's verdict ("misleading" and "missing context" agree, as in
//! [`super::known::settle`]). Such a draft is *contested*: the verification stage debates it
//! whatever `verify.mode` says (except "off"), with the contradiction set before the judges
//! ([`lines`]). What comes out of verification still contradicting a named check is rewritten
//! by [`say_so`]: when the checks of the post's own claim settled the verdict, it stands and
//! the contrary check is named as disagreeing after it; when the verdict was the model's own
//! reading, it is dropped (a professional's rating outweighs it) and the reply opens with the
//! disagreement, then the model's explanation. Hashtag hits, answered only with a verdict, are
//! then not answered at all.

use super::known::{settle, Settled};
use crate::model::{ClaimReview, Draft, Post, Retrieval, Verdict};

/// The fact-checkers' reviews the reply could name: the deciding ones first, then those of the
/// evidence pages that a fact-checker published, one per review URL.
pub fn checks(r: &Retrieval) -> Vec<ClaimReview> {
    let mut out = r.deciding_reviews();
    for review in r.cited_reviews().into_iter().filter(|c| c.fact_checker.is_some()) {
        if !out.iter().any(|o| o.url == review.url) {
            out.push(review);
        }
    }
    out
}

/// Whether a rating's class and a verdict say the same.
fn agree(a: Verdict, b: Verdict) -> bool {
    let partly = |v: Verdict| matches!(v, Verdict::Misleading | Verdict::MissingContext);
    a == b || (partly(a) && partly(b))
}

/// Whether the draft names the review: links its page, or names its fact-checker.
fn names(draft: &Draft, review: &ClaimReview) -> bool {
    let text = draft.text.to_lowercase();
    draft.urls.iter().any(|u| u == &review.url)
        || draft.text.contains(&review.url)
        || review
            .fact_checker
            .as_deref()
            .map(str::trim)
            .is_some_and(|name| name.chars().count() >= 3 && text.contains(&name.to_lowercase()))
}

/// The reviews among `checks` that the draft names and whose rating's class contradicts its
/// verdict. Empty for a draft without a verdict, and for ratings without a class (quoted,
/// never a verdict: they contradict nothing).
pub fn against(draft: &Draft, checks: &[ClaimReview]) -> Vec<ClaimReview> {
    let Some(verdict) = draft.verdict else {
        return Vec::new();
    };
    checks
        .iter()
        .filter(|c| !c.other_claim && names(draft, c))
        .filter(|c| super::known::verdict_of(c.hint()).is_some_and(|k| !agree(k, verdict)))
        .cloned()
        .collect()
}

/// The contradiction as the verification prompt shows it (outside text, marked untrusted
/// there): who rated which claim how, beside the draft's verdict.
pub fn lines(draft: &Draft, against: &[ClaimReview]) -> Vec<String> {
    let verdict = draft.verdict.map_or("none", Verdict::as_str);
    against
        .iter()
        .map(|c| {
            format!(
                "{} The draft's verdict is \"{verdict}\".",
                super::factcheck::evidence_line(c)
            )
        })
        .collect()
}

/// Rewrites a draft that still contradicts checks it names (see the module header). `deciding`
/// are the post's own claim's checks (`Retrieval::deciding_reviews`).
pub fn say_so(draft: &mut Draft, against: &[ClaimReview], deciding: &[ClaimReview], post: &Post) {
    if against.is_empty() {
        return;
    }
    let Some(verdict) = draft.verdict else {
        return;
    };
    let lang = crate::words::language(post.language.as_deref());
    let checks: Vec<String> = against
        .iter()
        .take(super::known::MAX_NAMED)
        .map(|c| super::factcheck::named(c, lang))
        .collect();
    let contest = crate::words::say(
        lang,
        "factcheck_contested",
        minijinja::context! { checks => checks.join("; ") },
    );
    let settled = settle(&deciding[..deciding.len().min(super::known::MAX_NAMED)]);
    if matches!(settled, Some(Settled::Verdict(v)) if agree(v, verdict)) {
        // The post's own claim's checks settled it: it stands, the other check is named.
        draft.text = format!("{} {contest}", draft.text.trim());
    } else {
        let own = crate::pipeline::verdict::sentence(verdict, lang);
        let rest = draft
            .text
            .trim()
            .strip_prefix(own.as_str())
            .unwrap_or(draft.text.trim())
            .trim();
        draft.text = format!("{contest} {rest}").trim().to_string();
        draft.verdict = None;
    }
    for c in against {
        if !draft.urls.contains(&c.url) {
            draft.urls.push(c.url.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Outcome;

    fn review(fact_checker: &str, rating: &str, url: &str) -> ClaimReview {
        ClaimReview {
            fact_checker: Some(fact_checker.into()),
            ..ClaimReview::sample(url, rating)
        }
    }

    fn draft(verdict: Verdict, text: &str, urls: &[&str]) -> Draft {
        Draft {
            outcome: Outcome::Reply,
            text: text.into(),
            urls: urls.iter().map(|u| u.to_string()).collect(),
            verdict: Some(verdict),
            stance: None,
        }
    }

    fn post() -> Post {
        crate::check::text_post("t", "The Great Wall is visible from the Moon", &[], None).unwrap()
    }

    #[test]
    fn a_named_check_with_a_contrary_rating_contests_the_draft() {
        let snopes = review("Snopes", "False", "https://www.snopes.com/fact-check/wall/");
        let linked = draft(
            Verdict::Accurate,
            "This post is accurate. See https://www.snopes.com/fact-check/wall/",
            &["https://www.snopes.com/fact-check/wall/"],
        );
        assert_eq!(against(&linked, std::slice::from_ref(&snopes)).len(), 1, "linked");
        let by_name = draft(Verdict::Accurate, "This post is accurate, as snopes found.", &[]);
        assert_eq!(against(&by_name, std::slice::from_ref(&snopes)).len(), 1, "named");
        let unnamed = draft(Verdict::Accurate, "This post is accurate.", &["https://example.org/a"]);
        assert!(
            against(&unnamed, std::slice::from_ref(&snopes)).is_empty(),
            "neither linked nor named"
        );
        let agreeing = draft(Verdict::Inaccurate, "This post is false. Snopes agrees.", &[]);
        assert!(against(&agreeing, std::slice::from_ref(&snopes)).is_empty());
        // Misleading and missing context say the same; an unknown label says nothing.
        let partly = review("Snopes", "Missing context", "https://www.snopes.com/fact-check/wall/");
        let misleading = draft(Verdict::Misleading, "This post is misleading. Snopes.", &[]);
        assert!(against(&misleading, &[partly]).is_empty());
        let unknown = review("Snopes", "Legend", "https://www.snopes.com/fact-check/wall/");
        assert!(against(&by_name, &[unknown]).is_empty());
        let mut other = snopes.clone();
        other.other_claim = true;
        assert!(against(&linked, &[other]).is_empty(), "a check of another claim");
        let no_verdict = Draft {
            verdict: None,
            ..by_name.clone()
        };
        assert!(against(&no_verdict, &[snopes]).is_empty());
    }

    #[test]
    fn the_models_verdict_gives_way_and_a_settled_one_stands_with_the_other_check_named() {
        let snopes = review("Snopes", "False", "https://www.snopes.com/fact-check/wall/");
        let url = "https://www.nytimes.com/a";
        let mut d = draft(
            Verdict::Accurate,
            &format!("This post is accurate. The reporting says so: {url}"),
            &[url],
        );
        let contra = against(&d, std::slice::from_ref(&snopes));
        assert!(contra.is_empty(), "not named yet");
        d.text.push_str(" Snopes disagrees.");
        let contra = against(&d, std::slice::from_ref(&snopes));
        say_so(&mut d, &contra, &[], &post());
        assert_eq!(d.verdict, None, "{d:?}");
        assert!(
            d.text
                .starts_with("A professional fact-check disagrees with this reading: Snopes rated it \"False\""),
            "{}",
            d.text
        );
        assert!(!d.text.contains("This post is accurate"), "{}", d.text);
        assert!(
            d.text.contains("The reporting says so"),
            "the explanation stays: {}",
            d.text
        );
        assert!(d.urls.contains(&snopes.url) && d.urls.contains(&url.to_string()));

        // The post's own claim's checks settled "accurate": it stands, Snopes is named after.
        let mut own = review("PolitiFact", "True", "https://www.politifact.com/factchecks/wall/");
        own.same_claim = true;
        let mut d = draft(
            Verdict::Accurate,
            "This post is accurate. Fact-checked: PolitiFact. Snopes too.",
            &[],
        );
        let contra = against(&d, &[own.clone(), snopes.clone()]);
        assert_eq!(contra.len(), 1);
        say_so(&mut d, &contra, &[own], &post());
        assert_eq!(d.verdict, Some(Verdict::Accurate));
        assert!(
            d.text.starts_with("This post is accurate. Fact-checked: PolitiFact."),
            "{}",
            d.text
        );
        assert!(
            d.text
                .contains("A professional fact-check disagrees with this reading: Snopes rated it"),
            "{}",
            d.text
        );
    }
}
