//! Tests of `recheck.rs`.
use super::*;

fn answer(verdict: Option<Verdict>, named: &[&str]) -> Kept {
    let mut k = crate::store::test_kept("mastodon:1", chrono::Utc::now());
    k.verdict = verdict;
    k.named = named.iter().map(|s| s.to_string()).collect();
    k
}

fn reply(verdict: Option<Verdict>) -> Draft {
    Draft {
        outcome: Outcome::Reply,
        text: "…".into(),
        urls: vec![],
        verdict,
        stance: None,
    }
}

#[test]
fn a_new_check_is_news_even_when_it_disagrees_or_rates_without_a_class() {
    let was = answer(Some(Verdict::Inaccurate), &["https://snopes.com/a"]);
    let snopes = vec!["https://snopes.com/a".to_string()];
    let both = vec![
        "https://snopes.com/a".to_string(),
        "https://politifact.com/b".to_string(),
    ];
    // Fact-checkers now disagree: no verdict, a check not named yet — an update.
    assert_eq!(news(&was, &reply(None), &both), News::NewCheck);
    // A check whose rating has no class: quoted, no verdict — an update.
    assert_eq!(news(&was, &reply(None), &both[1..]), News::NewCheck);
    // The same verdict with a new check: an update naming it.
    assert_eq!(news(&was, &reply(Some(Verdict::Inaccurate)), &both), News::NewCheck);
    // The same verdict and the same checks: nothing.
    assert_eq!(news(&was, &reply(Some(Verdict::Inaccurate)), &snopes), News::Nothing);
    // Another verdict: an update.
    assert_eq!(news(&was, &reply(Some(Verdict::Accurate)), &snopes), News::Verdict);
    // "Could not verify" again, or no reply: nothing.
    assert_eq!(news(&was, &reply(Some(Verdict::Unverifiable)), &[]), News::Nothing);
    let mut insufficient = reply(None);
    insufficient.outcome = Outcome::Insufficient;
    assert_eq!(news(&was, &insufficient, &both), News::Nothing);
    // A "could not verify" thread that now has a verdict: an update.
    assert_eq!(
        news(&answer(None, &[]), &reply(Some(Verdict::Misleading)), &[]),
        News::Verdict
    );
}

#[test]
fn a_stance_that_crosses_asserts_is_news() {
    let stance = |s: Stance| crate::model::PostStance {
        stance: s,
        score: 0.5,
        claim: "c".into(),
        by: crate::model::StanceBy::Model,
        second_opinion: None,
    };
    let snopes = vec!["https://snopes.com/a".to_string()];
    let mut was = answer(Some(Verdict::Inaccurate), &["https://snopes.com/a"]);
    was.stance = Some(Stance::Asserts);
    // Edited from asserting into denying: no verdict any more, the same check — news.
    let mut denies = reply(None);
    denies.stance = Some(stance(Stance::Denies));
    assert_eq!(news(&was, &denies, &snopes), News::Stance);
    // From asking into asserting: news.
    let mut asked = answer(None, &["https://snopes.com/a"]);
    asked.stance = Some(Stance::Asks);
    let mut asserts = reply(Some(Verdict::Inaccurate));
    asserts.stance = Some(stance(Stance::Asserts));
    assert_eq!(news(&asked, &asserts, &snopes), News::Stance);
    // Asking into reporting: still not about the post — nothing.
    let mut mentions = reply(None);
    mentions.stance = Some(stance(Stance::Mentions));
    assert_eq!(news(&asked, &mentions, &snopes), News::Nothing);
}
