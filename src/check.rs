//! `musebot check`: runs the pipeline once on a post (by URL) or on a text, and reports the
//! reply and a trace — queries, every link and page kept or dropped with its reason, evidence,
//! per-step time, tokens and a cost estimate. Posts nothing. `--json` for machines.

use std::time::Instant;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::compose::{self, TextLimits};
use crate::config::{Config, Visibility};
use crate::job::Post;
use crate::pipeline::muse::{Retrieval, StepTrace};
use crate::platform::mastodon::client::MastodonClient;
use crate::platform::mastodon::Mastodon;
use crate::secret;

#[derive(Debug, Serialize)]
pub struct CheckReport {
    pub post: Post,
    pub pipeline: &'static str,
    pub outcome: &'static str,
    pub parts: Vec<String>,
    pub retrieval: Option<Retrieval>,
    pub trace: Vec<StepTrace>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_estimate: f64,
}

pub async fn check(config: &Config, target: &str, before: Option<DateTime<Utc>>) -> anyhow::Result<CheckReport> {
    let mut trace = Vec::new();
    let started = Instant::now();
    let (post, limits) = if target.starts_with("http://") || target.starts_with("https://") {
        let m = &config.mastodon;
        let token = secret::resolve("mastodon.access_token", &m.access_token_env, &m.access_token_file, true)?
            .expect("required");
        let client = MastodonClient::new(m, token)?;
        let instance = client.instance().await.unwrap_or_default();
        let limits = TextLimits {
            max_chars: instance.configuration.statuses.max_characters,
            chars_per_url: instance.configuration.statuses.characters_reserved_per_url,
        };
        let mastodon = Mastodon {
            client,
            limits,
            bot_acct: String::new(),
            bot_account_id: String::new(),
        };
        (mastodon.status_for_url(target).await?, limits)
    } else {
        let post = Post {
            id: "text".into(),
            url: None,
            author: "unknown".into(),
            author_display_name: "unknown".into(),
            author_is_bot: false,
            author_nobot: false,
            text: target.to_string(),
            created_at: before.unwrap_or_else(Utc::now),
            visibility: Visibility::Public,
            language: None,
        };
        (
            post,
            TextLimits {
                max_chars: 500,
                chars_per_url: 23,
            },
        )
    };
    trace.push(step("resolve", started, 0, 0));

    let pipeline = crate::pipeline::build(config, None, before)?;
    let started = Instant::now();
    let mut retrieval = Retrieval::default();
    let (draft, usage) = pipeline.draft(&post, &mut retrieval, &mut |_| {}).await?;
    if pipeline.muse.is_some() {
        trace.extend(retrieval.steps.iter().cloned());
    } else {
        trace.push(step("draft", started, usage.prompt_tokens, usage.completion_tokens));
    }
    let started = Instant::now();
    let parts = compose::compose(&draft, "", std::slice::from_ref(&post.author), limits, &config.reply);
    trace.push(step("compose", started, 0, 0));
    let cost_estimate = usage.prompt_tokens as f64 * config.llm.prompt_price_per_million / 1e6
        + usage.completion_tokens as f64 * config.llm.completion_price_per_million / 1e6;
    Ok(CheckReport {
        post,
        pipeline: match config.daemon.pipeline {
            crate::config::PipelineMode::Muse => "muse",
            crate::config::PipelineMode::Baseline => "baseline",
        },
        outcome: draft.outcome.as_str(),
        parts,
        retrieval: pipeline.muse.is_some().then_some(retrieval),
        trace,
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        cost_estimate,
    })
}

fn step(name: &str, started: Instant, prompt_tokens: u64, completion_tokens: u64) -> StepTrace {
    StepTrace {
        step: name.into(),
        millis: started.elapsed().as_millis() as u64,
        prompt_tokens,
        completion_tokens,
    }
}

impl CheckReport {
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "post by {} at {}:\n  {}\n\n",
            self.post.author,
            self.post.created_at.to_rfc3339(),
            self.post.text.replace('\n', "\n  ")
        ));
        if let Some(r) = &self.retrieval {
            out.push_str("queries:\n");
            for q in r.queries.iter().flatten() {
                out.push_str(&format!("  • {q}\n"));
            }
            out.push_str("pages kept:\n");
            for p in r.pages.iter().flatten() {
                out.push_str(&format!(
                    "  + [{}] {:.2} {}  ({} words)\n",
                    p.tier.as_str(),
                    p.relevance,
                    p.url,
                    p.words
                ));
            }
            out.push_str("dropped:\n");
            for d in &r.dropped {
                out.push_str(&format!("  - {:<18} {}\n", d.reason.as_str(), d.url));
            }
            out.push_str("evidence:\n");
            for e in r.evidence.iter().flatten() {
                for q in &e.refute {
                    out.push_str(&format!("  ✗ refutes  \"{q}\" — {}\n", e.url));
                }
                for q in &e.context {
                    out.push_str(&format!("  ≈ context  \"{q}\" — {}\n", e.url));
                }
            }
            if r.unverified_quotes > 0 {
                out.push_str(&format!(
                    "  ({} quotes dropped: not verbatim in their page)\n",
                    r.unverified_quotes
                ));
            }
            out.push('\n');
        }
        out.push_str(&format!(
            "reply ({} pipeline, {}, {} part(s)):\n",
            self.pipeline,
            self.outcome,
            self.parts.len()
        ));
        for p in &self.parts {
            out.push_str(&format!("  ▸ {}\n", p.replace('\n', "\n    ")));
        }
        out.push_str("\ntrace:\n");
        for t in &self.trace {
            out.push_str(&format!(
                "  {:<8} {:>7} ms  prompt {:>5} tok  completion {:>5} tok\n",
                t.step, t.millis, t.prompt_tokens, t.completion_tokens
            ));
        }
        out.push_str(&format!(
            "  total tokens: prompt {}, completion {}; cost estimate ${:.4}\n",
            self.prompt_tokens, self.completion_tokens, self.cost_estimate
        ));
        out
    }
}
