//! The answer pipeline: from a resolved post to a [`Draft`]. Today one mode, [`baseline`]
//! (Muse's "without retrieval" reply); the retrieval pipeline plugs in as another
//! [`PipelineMode`] and produces the same `Draft` (with its evidence URLs).

pub mod baseline;

use std::sync::Arc;

use crate::config::PipelineMode;
use crate::job::{Draft, Post};
use crate::llm::{LlmClient, LlmError};
use crate::prompts::{PromptError, Prompts};
use crate::retry::Transient;

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
}

impl PipelineError {
    pub fn is_transient(&self) -> bool {
        match self {
            PipelineError::Llm(e) => e.is_transient(),
            PipelineError::Prompt(_) => false,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            PipelineError::Llm(_) => "llm",
            PipelineError::Prompt(_) => "prompt",
        }
    }
}

/// Tokens spent by one stage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

#[derive(Clone)]
pub struct Pipeline {
    pub mode: PipelineMode,
    pub llm: LlmClient,
    pub prompts: Arc<Prompts>,
}

impl Pipeline {
    pub async fn draft(&self, post: &Post) -> Result<(Draft, Usage), PipelineError> {
        match self.mode {
            PipelineMode::Baseline => baseline::draft(&self.llm, &self.prompts, post).await,
        }
    }
}
