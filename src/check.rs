//! `musebot check`: runs the pipeline once on a post (by URL) or on a text, and reports the
//! reply parts and a per-stage trace. Posts nothing.

use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use crate::compose::{self, TextLimits};
use crate::config::{Config, Visibility};
use crate::job::Post;
use crate::llm::LlmClient;
use crate::pipeline::Pipeline;
use crate::platform::mastodon::client::MastodonClient;
use crate::platform::mastodon::Mastodon;
use crate::prompts::Prompts;
use crate::secret;

#[derive(Debug, Serialize)]
pub struct StageTrace {
    pub stage: &'static str,
    pub millis: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

#[derive(Debug, Serialize)]
pub struct CheckReport {
    pub post: Post,
    pub outcome: &'static str,
    pub parts: Vec<String>,
    pub trace: Vec<StageTrace>,
}

pub async fn check(config: &Config, target: &str) -> anyhow::Result<CheckReport> {
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
            created_at: chrono::Utc::now(),
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
    trace.push(StageTrace {
        stage: "resolve",
        millis: started.elapsed().as_millis() as u64,
        prompt_tokens: 0,
        completion_tokens: 0,
    });

    let llm_key = secret::resolve("llm.api_key", &config.llm.api_key_env, &config.llm.api_key_file, false)?;
    let prompts = Arc::new(Prompts::load(&config.daemon.prompts_dir)?);
    let pipeline = Pipeline {
        mode: config.daemon.pipeline,
        llm: LlmClient::new(&config.llm, llm_key)?,
        prompts,
    };
    let started = Instant::now();
    let (draft, usage) = pipeline.draft(&post).await?;
    trace.push(StageTrace {
        stage: "draft",
        millis: started.elapsed().as_millis() as u64,
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
    });
    let started = Instant::now();
    let parts = compose::compose(&draft, "", &[post.author.clone()], limits, &config.reply);
    trace.push(StageTrace {
        stage: "compose",
        millis: started.elapsed().as_millis() as u64,
        prompt_tokens: 0,
        completion_tokens: 0,
    });
    Ok(CheckReport {
        post,
        outcome: draft.outcome.as_str(),
        parts,
        trace,
    })
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
        out.push_str(&format!("reply ({}, {} part(s)):\n", self.outcome, self.parts.len()));
        for p in &self.parts {
            out.push_str(&format!("  ▸ {}\n", p.replace('\n', "\n    ")));
        }
        out.push_str("\ntrace:\n");
        for t in &self.trace {
            out.push_str(&format!(
                "  {:<8} {:>7} ms  prompt {:>5} tok  completion {:>5} tok\n",
                t.stage, t.millis, t.prompt_tokens, t.completion_tokens
            ));
        }
        out
    }
}
