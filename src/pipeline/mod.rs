//! The answer pipeline: from a resolved post to a [`Draft`]. Two modes: [`muse`], the
//! retrieval pipeline (the default), and [`baseline`], Muse's "without retrieval" reply kept
//! for comparison. Both produce the same `Draft`; Muse's carries its evidence URLs.

pub mod baseline;
pub mod debate;
pub mod muse;
pub mod parse;
pub mod verdict;
pub mod verify;

use std::sync::Arc;

use crate::config::PipelineMode;
use crate::llm::{LlmClient, LlmError};
use crate::model::{Draft, Post, Retrieval, Usage};
use crate::prompts::{PromptError, Prompts};
use crate::retry::Transient;

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
    #[error("relevance: {0}")]
    Relevance(String),
    /// Every search, or every page fetch, failed for reasons outside the post (network, 5xx,
    /// 429, a bad key): not a verdict, the job is tried again later.
    #[error("outage: {0}")]
    Outage(String),
}

impl PipelineError {
    pub fn is_transient(&self) -> bool {
        match self {
            PipelineError::Llm(e) => e.is_transient(),
            PipelineError::Outage(_) => true,
            PipelineError::Prompt(_) | PipelineError::Relevance(_) => false,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            PipelineError::Llm(_) => "llm",
            PipelineError::Prompt(_) => "prompt",
            PipelineError::Relevance(_) => "relevance",
            PipelineError::Outage(_) => "outage",
        }
    }
}

#[derive(Clone)]
pub struct Pipeline {
    pub mode: PipelineMode,
    pub llm: LlmClient,
    pub prompts: Arc<Prompts>,
    /// Present when `mode` is `Muse`.
    pub muse: Option<Arc<muse::Muse>>,
    pub verify: crate::config::VerifyConfig,
}

impl Pipeline {
    /// Drafts a reply; `retrieval` holds (and receives) the finished steps, `checkpoint` is
    /// called after each so they survive a crash.
    pub async fn draft(
        &self,
        post: &Post,
        retrieval: &mut Retrieval,
        checkpoint: &mut (dyn FnMut(&Retrieval) + Send),
    ) -> Result<(Draft, Usage), PipelineError> {
        match (self.mode, &self.muse) {
            (PipelineMode::Baseline, _) => baseline::draft(&self.llm, &self.prompts, post).await,
            (PipelineMode::Muse, Some(m)) => m.draft(post, retrieval, checkpoint).await,
            (PipelineMode::Muse, None) => Err(PipelineError::Relevance("the muse pipeline was not set up".into())),
        }
    }
}

/// Builds the configured pipeline (loads ratings files and the embedding model for `muse`).
/// `before` overrides `search.before`.
pub fn build(
    config: &crate::config::Config,
    store: Option<crate::store::Store>,
    metrics: Option<crate::metrics::SharedMetrics>,
    before: Option<chrono::DateTime<chrono::Utc>>,
) -> anyhow::Result<Pipeline> {
    let llm_key = crate::secret::resolve("llm.api_key", &config.llm.api_key_env, &config.llm.api_key_file, false)?;
    let llm = LlmClient::new(&config.llm, llm_key)?;
    let prompts = Arc::new(Prompts::load(&config.daemon.prompts_dir)?);
    let muse = match config.daemon.pipeline {
        PipelineMode::Baseline => None,
        PipelineMode::Muse => {
            let before = match before {
                Some(b) => Some(b),
                None if config.search.before.is_empty() => None,
                None => Some(chrono::DateTime::parse_from_rfc3339(&config.search.before)?.with_timezone(&chrono::Utc)),
            };
            Some(Arc::new(muse::Muse {
                llm: llm.clone(),
                prompts: prompts.clone(),
                searcher: Arc::new(crate::search::Searcher::new(&config.search, store)?.with_metrics(metrics)),
                fetcher: crate::fetch::Fetcher::new(&config.fetch).map_err(anyhow::Error::msg)?,
                credibility: Arc::new(crate::credibility::load::build(&config.credibility)?),
                embedder: Arc::new(crate::relevance::Embedder::load(&config.relevance)?),
                relevance: config.relevance.clone(),
                before,
            }))
        }
    };
    Ok(Pipeline {
        mode: config.daemon.pipeline,
        llm,
        prompts,
        muse,
        verify: config.verify.clone(),
    })
}
