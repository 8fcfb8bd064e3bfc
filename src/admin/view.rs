//! What the admin page shows, read from the store: recent jobs (trigger, outcome, tokens,
//! cost, the stage trace and the reply), drafts held for review, watched tags with their
//! policies, the answers kept for re-checking (with their next re-check), the day's budget,
//! and who opted out. Plain data for the templates, which escape
//! every value (post and page text is untrusted).

use serde_json::{json, Value};

use crate::model::{Cause, Job, PlatformKind, Status};
use crate::moderation::Moderation;
use crate::store::StoreError;

const EXCERPT: usize = 280;

fn excerpt(text: &str) -> String {
    let mut t: String = text.chars().take(EXCERPT).collect();
    if text.chars().count() > EXCERPT {
        t.push('…');
    }
    t
}

fn cause(c: &Cause) -> String {
    match c {
        Cause::Mention => "mention".into(),
        Cause::HashtagHit { tag } => format!("hashtag #{tag}"),
        Cause::ModeratorFlag { moderator } => format!("moderator {moderator}"),
        Cause::Command { command } => format!("command {}", command.as_str()),
        // Moderators only (the page is loopback, signed in): the report's id on the platform.
        Cause::Report { report, .. } => format!("report {report}"),
        Cause::Watch { review } => format!("watch: matches {review}"),
        Cause::Recheck { of, why, .. } => format!("re-check ({}) of {of}", why.as_str()),
    }
}

fn status(s: &Status) -> String {
    match s {
        Status::Pending => "pending".into(),
        Status::Done => "done".into(),
        Status::Skipped(r) => format!("skipped: {}", r.as_str()),
        Status::Failed(e) => format!("failed: {}", excerpt(e)),
    }
}

fn job_row(m: &Moderation, j: &Job) -> Value {
    let tokens = j.tokens();
    json!({
        "id": j.id,
        "platform": j.trigger.platform.as_str(),
        "cause": cause(&j.trigger.cause),
        "requester": j.trigger.requester().map(|a| a.handle.clone()).unwrap_or_default(),
        "status": status(&j.status),
        "outcome": j.draft.as_ref().map(|d| d.outcome.as_str()).unwrap_or(""),
        "tokens": tokens.prompt_tokens + tokens.completion_tokens,
        "cost": format!("{:.4}", m.budget.cost_of(tokens)),
        "updated": j.updated_at.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        "trace": j.trace.iter().map(|t| json!({
            "stage": t.stage.as_str(),
            "millis": t.millis,
            "tokens": t.prompt_tokens + t.completion_tokens,
        })).collect::<Vec<_>>(),
        "target": j.target.as_ref().map(|t| json!({"author": t.author, "text": excerpt(&t.text)})),
        "reply": j.draft.as_ref().map(|d| d.text.clone()).unwrap_or_default(),
        // The post's stance toward the checked claim: a moderator approving a label sees it.
        "stance": j.draft.as_ref().and_then(|d| d.stance.as_ref()).map(|s| match s.second_opinion {
            Some(l) => format!("{} ({:.2}; the LLM read: {})", s.stance.as_str(), s.score, l.as_str()),
            None => format!("{} ({:.2})", s.stance.as_str(), s.score),
        }),
        // The fact-checks that decided the answer, with the claim each reviews and the cosine
        // that made it the post's claim: what a moderator weighs before approving a label.
        "checks": j.retrieval.as_ref().map(checks).unwrap_or_default(),
        "first_url": j.first_url,
        "finding": j.note.as_ref().map(|n| if n.pending() {
            format!("finding: {} of {} delivered", n.delivered.len(), n.items.len())
        } else {
            "finding delivered to the moderators".to_string()
        }),
    })
}

/// The deciding fact-checks of a job's record (at most three, as the reply names them): who
/// rated the claim what, the claim, the page, and the post's cosine to the claim.
fn checks(r: &crate::model::Retrieval) -> Vec<String> {
    r.deciding_reviews()
        .iter()
        .take(crate::pipeline::muse::known::MAX_NAMED)
        .map(|c| {
            let cosine = c.claim_cosine.map(|x| format!(", cosine {x:.2}")).unwrap_or_default();
            format!(
                "{} rated \"{}\": \"{}\" ({}{cosine})",
                c.fact_checker.as_deref().unwrap_or(&c.publisher),
                excerpt(&c.rating),
                excerpt(&c.claim),
                c.url
            )
        })
        .collect()
}

/// Kept answers shown at most.
const KEPT_SHOWN: usize = 200;

/// The dashboard's data.
pub fn dashboard(m: &Moderation, recent: usize) -> Result<Value, StoreError> {
    let mut jobs = m.store.all_jobs()?;
    jobs.sort_by_key(|j| std::cmp::Reverse(j.updated_at));
    let held: Vec<Value> = m
        .store
        .held_drafts()?
        .iter()
        .map(|j| {
            let mut row = job_row(m, j);
            row["since"] = json!(j
                .review
                .as_ref()
                .map(|r| r.since.format("%Y-%m-%d %H:%M:%S UTC").to_string()));
            row["parts"] = json!(j.plan.as_ref().map(|p| p.parts.clone()).unwrap_or_default());
            // Labeler mode: the label the approval would emit (held like a reply).
            row["label"] = json!(j.label.as_ref().map(|l| {
                let create: Vec<&str> = l.create.iter().map(|v| v.as_str()).collect();
                create.join(", ")
            }));
            row
        })
        .collect();
    let platforms = [PlatformKind::Mastodon, PlatformKind::Bluesky];
    let tags: Vec<Value> = platforms
        .iter()
        .flat_map(|p| m.store.watches(*p))
        .map(|w| {
            json!({
                "platform": w.platform.as_str(), "tag": w.tag, "by": w.by,
                "since": w.since.format("%Y-%m-%d %H:%M UTC").to_string(),
                "replies_per_day": w.policy.replies_per_day,
                "author_window_hours": w.policy.author_window_hours,
                "max_age_hours": w.policy.max_age_hours,
                "channel": w.channel.map_or("default", |c| c.as_str()),
            })
        })
        .collect();
    let paused: Vec<&str> = platforms
        .iter()
        .filter(|p| m.store.paused(**p))
        .map(|p| p.as_str())
        .collect();
    // Kept answers (living replies), the next re-check first.
    let mut kept = m.store.kept_all(KEPT_SHOWN)?;
    kept.sort_by_key(|k| (k.gone.is_some(), k.next_recheck.is_none(), k.next_recheck));
    let kept: Vec<Value> = kept
        .iter()
        .map(|k| {
            let at = |t: chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%d %H:%M UTC").to_string();
            json!({
                "job": k.job_id, "platform": k.platform.as_str(), "target": k.target_id,
                "claim": excerpt(&k.claim),
                "verdict": k.verdict.map_or(k.outcome.clone(), |v| v.as_str().to_string()),
                "next": k.next_recheck.map(at),
                "updates": k.updates.len(),
                "until": at(k.until),
                "gone": k.gone.as_deref().map(excerpt),
                "first_url": k.first_url,
                "label": k.label.as_ref().map(|l| l.0.as_str()),
            })
        })
        .collect();
    let spend = m.budget.today();
    let b = &m.budget.config;
    Ok(json!({
        "jobs": jobs.iter().take(recent).map(|j| job_row(m, j)).collect::<Vec<_>>(),
        "held": held,
        "kept": kept,
        "tags": tags,
        "paused": paused,
        "budget": {
            "tokens": spend.prompt_tokens + spend.completion_tokens,
            "cost": format!("{:.4}", spend.cost),
            "daily_tokens": b.daily_tokens,
            "daily_cost": b.daily_cost,
            "used_percent": format!("{:.1}", 100.0 * m.budget.used()),
            "state": m.budget.state().as_str(),
        },
        "opt_outs": m.store.opt_outs().iter().map(|o| json!({
            "platform": o.platform.as_str(), "handle": o.handle,
            "since": o.since.format("%Y-%m-%d %H:%M UTC").to_string(),
        })).collect::<Vec<_>>(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ClaimMatch, ClaimReview, Retrieval};

    /// A held label's row names the fact-check that decided it — who rated what, the claim,
    /// the page — and the cosine that made it the post's claim; a match that does not decide
    /// is not shown as deciding.
    #[test]
    fn a_held_answer_shows_the_deciding_check_and_its_cosine() {
        let review = |url: &str, cosine: f32| ClaimReview {
            claim: "The Great Wall is visible from the Moon".into(),
            fact_checker: Some("Snopes".into()),
            claim_cosine: Some(cosine),
            same_claim: true,
            ..ClaimReview::sample(url, "False")
        };
        let found = |url: &str, decides: bool| ClaimMatch {
            review: review(url, 0.5),
            title: String::new(),
            score: 1.0,
            cosine: Some(0.5),
            bm25: 0.0,
            decides,
            why_not: None,
            landed: true,
            live: Some(review(url, 0.83)),
        };
        let r = Retrieval {
            matches: Some(vec![
                found("https://www.snopes.com/fact-check/wall/", true),
                found("https://www.snopes.com/fact-check/other/", false),
            ]),
            ..Retrieval::default()
        };
        assert_eq!(
            checks(&r),
            vec!["Snopes rated \"False\": \"The Great Wall is visible from the Moon\" (https://www.snopes.com/fact-check/wall/, cosine 0.83)".to_string()]
        );
        assert!(checks(&Retrieval::default()).is_empty());
    }
}
