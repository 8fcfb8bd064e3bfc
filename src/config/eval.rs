//! `[eval]` and `[eval.judge]`: what `musebot eval` runs at once, and the LLM that rates the
//! replies on the Muse rubric (its own endpoint and model; each empty key is taken from
//! `[llm]`, so a judge works out of the box — a stronger model than the bot's is better).

use serde::{Deserialize, Serialize};

use super::LlmConfig;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EvalConfig {
    /// Posts run at the same time (never more than `daemon.max_jobs_in_flight`).
    pub jobs: usize,
    pub judge: JudgeConfig,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JudgeConfig {
    /// Root of an OpenAI-compatible API; "" = `[llm] base_url`.
    pub base_url: String,
    /// "" = `[llm] model`.
    pub model: String,
    /// Environment variable with the judge's API key; "" = `[llm]`'s key settings.
    pub api_key_env: String,
    /// File with the judge's API key; wins over api_key_env when set.
    pub api_key_file: String,
    pub timeout_secs: u64,
    pub max_retries: usize,
    pub max_tokens: u32,
    pub temperature: f32,
    /// Prices per million tokens, for the judge's cost in the progress line.
    pub prompt_price_per_million: f64,
    pub completion_price_per_million: f64,
}

impl Default for EvalConfig {
    fn default() -> Self {
        EvalConfig {
            jobs: 2,
            judge: JudgeConfig::default(),
        }
    }
}

impl Default for JudgeConfig {
    fn default() -> Self {
        JudgeConfig {
            base_url: String::new(),
            model: String::new(),
            api_key_env: String::new(),
            api_key_file: String::new(),
            timeout_secs: 120,
            max_retries: 4,
            max_tokens: 700,
            temperature: 0.0,
            prompt_price_per_million: 0.0,
            completion_price_per_million: 0.0,
        }
    }
}

impl JudgeConfig {
    /// The judge as an LLM client's settings: each empty key taken from `[llm]` (the key
    /// settings only when the judge uses `[llm]`'s endpoint).
    pub fn as_llm(&self, llm: &LlmConfig) -> LlmConfig {
        let or = |own: &str, main: &str| {
            if own.is_empty() {
                main.to_string()
            } else {
                own.to_string()
            }
        };
        // The bot's key goes only to the bot's own endpoint: a judge elsewhere without a key of
        // its own is asked without one.
        let own_key = !self.api_key_env.is_empty()
            || !self.api_key_file.is_empty()
            || (!self.base_url.is_empty() && self.base_url.trim_end_matches('/') != llm.base_url.trim_end_matches('/'));
        LlmConfig {
            base_url: or(&self.base_url, &llm.base_url),
            model: or(&self.model, &llm.model),
            api_key_env: if own_key {
                self.api_key_env.clone()
            } else {
                llm.api_key_env.clone()
            },
            api_key_file: if own_key {
                self.api_key_file.clone()
            } else {
                llm.api_key_file.clone()
            },
            timeout_secs: self.timeout_secs,
            max_retries: self.max_retries,
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            prompt_price_per_million: self.prompt_price_per_million,
            completion_price_per_million: self.completion_price_per_million,
            max_response_bytes: llm.max_response_bytes,
        }
    }
}
