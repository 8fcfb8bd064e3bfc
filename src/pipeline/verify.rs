//! Draft verification (issue: a second opinion on every draft): agents debate
//! ([`super::debate`]) whether every factual sentence of a reply drafted from evidence is
//! supported by that evidence and whether its verdict follows. Upheld → posted as drafted.
//! Objections that survive → one revision written with them, debated once more; upheld →
//! the revision is posted; still contested → the honest insufficient-evidence reply. A draft
//! whose verdict contradicts a fact-check it names (`muse::contest`) is debated whatever the
//! mode (except "off"), with the contradiction before the judges. Each debate turn and the
//! revision are checkpointed, so a crash repeats nothing finished.

use minijinja::context;

use super::debate::{Case, Debater};
use super::muse::post_context;
use super::{verdict, Pipeline, PipelineError};
use crate::config::VerifyMode;
use crate::llm::ChatMessage;
use crate::model::{Debate, Draft, Evidence, Outcome, Post, Usage, Verdict, Verification, Verified};

/// Runs what `v` lacks; returns the draft that replaces the original, if any.
pub async fn run(
    p: &Pipeline,
    post: &Post,
    draft: &Draft,
    evidence: &[Evidence],
    contested: &[String],
    v: &mut Verification,
    checkpoint: &mut (dyn FnMut(&Verification) + Send),
) -> Result<(Option<Draft>, Usage), PipelineError> {
    let mut usage = Usage::default();
    let cfg = &p.verify;
    let negative = matches!(draft.verdict, Some(Verdict::Inaccurate | Verdict::Misleading));
    let applies = draft.outcome == Outcome::Reply
        && !evidence.is_empty()
        && match cfg.mode {
            VerifyMode::Off => false,
            VerifyMode::All => true,
            VerifyMode::Negative => negative || !contested.is_empty(),
        };
    if !applies {
        v.outcome = Some(Verified::NotNeeded);
        return Ok((None, usage));
    }
    let facts = facts(evidence);
    let debater = Debater {
        system: "verify.system.j2",
        llm: &p.llm,
        prompts: &p.prompts,
        agents: cfg.agents,
        rounds: cfg.rounds,
    };
    // The debate on the draft as written.
    let case = case_for(p, post, &facts, &draft.text, contested)?;
    let base = v.clone();
    let mut first = v.first.clone();
    let u = debater
        .run(&case, &mut first, &mut |d: &Debate| {
            let mut snap = base.clone();
            snap.first = d.clone();
            checkpoint(&snap)
        })
        .await?;
    add(&mut usage, u);
    v.first = first;
    if v.first.upheld() {
        tracing::info!(turns = v.first.turns.len(), "the debate upheld the draft");
        v.outcome = Some(Verified::Upheld);
        return Ok((None, usage));
    }
    // One revision with the objections that survived.
    if v.revision.is_none() {
        let objections = v.first.objections(cfg.agents);
        tracing::info!(
            objections = objections.len(),
            "objections survived the debate; revising the draft"
        );
        let (revision, u) = revise(p, post, &facts, evidence, &draft.text, &objections).await?;
        add(&mut usage, u);
        let Some(revision) = revision else {
            v.outcome = Some(Verified::Withdrawn);
            return Ok((Some(insufficient(post)?), usage));
        };
        v.revision = Some(revision);
        checkpoint(v);
    }
    let revision = v.revision.clone().expect("set above");
    let case = case_for(p, post, &facts, &revision.text, contested)?;
    let base = v.clone();
    let mut second = v.second.clone().unwrap_or_default();
    let u = debater
        .run(&case, &mut second, &mut |d: &Debate| {
            let mut snap = base.clone();
            snap.second = Some(d.clone());
            checkpoint(&snap)
        })
        .await?;
    add(&mut usage, u);
    let upheld = second.upheld();
    v.second = Some(second);
    if upheld {
        v.outcome = Some(Verified::Revised);
        Ok((Some(revision), usage))
    } else {
        tracing::warn!("the revision was contested too; posting the insufficient-evidence reply");
        v.outcome = Some(Verified::Withdrawn);
        Ok((Some(insufficient(post)?), usage))
    }
}

fn case_for(
    p: &Pipeline,
    post: &Post,
    facts: &serde_json::Value,
    draft: &str,
    contested: &[String],
) -> Result<Case, PipelineError> {
    let mut ctx = post_context(post);
    ctx.insert("facts".into(), facts.clone());
    ctx.insert("contested".into(), serde_json::json!(contested));
    ctx.insert("draft".into(), serde_json::json!(draft));
    Ok(Case {
        opening: p.prompts.render("verify.user.j2", &ctx)?,
        images: Vec::new(),
    })
}

/// The evidence as the prompts list it: each quote with its URL and date.
fn facts(evidence: &[Evidence]) -> serde_json::Value {
    let list: Vec<serde_json::Value> = evidence
        .iter()
        .flat_map(|e| e.refute.iter().chain(&e.context).map(move |q| (e, q)))
        .map(|(e, q)| {
            serde_json::json!({"quote": q, "url": e.url,
                "published": e.published.map(|d| d.format("%Y-%m-%d").to_string()).unwrap_or_else(|| "unknown".into())})
        })
        .collect();
    serde_json::json!(list)
}

/// The draft written again with the objections; `None` when the answer breaks the reply's
/// rules (no verdict from the set, no evidence URL, an echo of the post).
async fn revise(
    p: &Pipeline,
    post: &Post,
    facts: &serde_json::Value,
    evidence: &[Evidence],
    draft: &str,
    objections: &[String],
) -> Result<(Option<Draft>, Usage), PipelineError> {
    let system = p.prompts.render(
        "reply_muse.system.j2",
        context! { max_words => super::muse::reply::REPLY_WORDS, language => crate::words::name(crate::words::language(post.language.as_deref())) },
    )?;
    let mut ctx = post_context(post);
    ctx.insert("facts".into(), facts.clone());
    ctx.insert("draft".into(), serde_json::json!(draft));
    ctx.insert("objections".into(), serde_json::json!(objections));
    let user = p.prompts.render("verify_revise.user.j2", &ctx)?;
    let c = p
        .llm
        .chat_json(
            &[ChatMessage::system(system), ChatMessage::user(user)],
            "verdict",
            &verdict::schema(),
        )
        .await?;
    let usage = Usage {
        prompt_tokens: c.prompt_tokens,
        completion_tokens: c.completion_tokens,
    };
    let urls: Vec<String> = evidence.iter().map(|e| e.url.clone()).collect();
    let revision = verdict::read(&c.text)
        .filter(|(_, e)| urls.iter().any(|u| e.contains(u.as_str())) && !verdict::is_echo(e, &post.text))
        .map(|(v, e)| Draft {
            outcome: Outcome::Reply,
            text: verdict::word(v, &e, crate::words::language(post.language.as_deref())),
            urls,
            verdict: Some(v),
            stance: None,
        });
    Ok((revision, usage))
}

fn insufficient(post: &Post) -> Result<Draft, PipelineError> {
    Ok(Draft {
        outcome: Outcome::Insufficient,
        // Withdrawn after the debate: evidence was found and quoted, it did not settle it.
        text: crate::words::say(
            crate::words::language(post.language.as_deref()),
            "insufficient_found",
            (),
        ),
        urls: Vec::new(),
        verdict: None,
        stance: None,
    })
}

fn add(total: &mut Usage, u: Usage) {
    total.prompt_tokens += u.prompt_tokens;
    total.completion_tokens += u.completion_tokens;
}
