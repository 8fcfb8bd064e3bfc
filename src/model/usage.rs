//! Token usage: what an LLM step, a stage or a whole job spent (persisted in traces).

use serde::{Deserialize, Serialize};

/// Tokens spent (by a step, a stage or a whole job).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}
