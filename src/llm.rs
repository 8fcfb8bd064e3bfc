//! The only code that talks to the LLM: a client for any OpenAI-compatible
//! `/chat/completions` endpoint with a timeout, retries (see [`crate::retry`]) and token counts.
//! Every answer's tokens (and when it was asked and answered) are also added to the running
//! [`metered`] scope, so what a stage spent is known even when the stage fails or panics after
//! its calls, and `musebot eval` can tell how many calls ran one after another.

use std::cell::RefCell;
use std::future::Future;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::config::LlmConfig;
use crate::retry::{self, Transient};
use crate::secret::Secret;

/// One message of a chat. Text only, or OpenAI-style parts that can carry images:
/// `content: [{"type": "text", …}, {"type": "image_url", "image_url": {"url": …}}]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: Content,
}

/// A message's content: a plain string (what every endpoint takes) or a list of parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<Part>),
}

/// One part of a multi-part message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    Text { text: String },
    ImageUrl { image_url: ImageUrl },
}

/// An image by URL (`https://…` or a `data:` URL).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageUrl {
    pub url: String,
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> Self {
        ChatMessage {
            role: "system".into(),
            content: Content::Text(content.into()),
        }
    }
    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage {
            role: "user".into(),
            content: Content::Text(content.into()),
        }
    }
    /// A user message with images after its text (for vision-capable models).
    pub fn user_with_images(text: impl Into<String>, image_urls: &[String]) -> Self {
        let mut parts = vec![Part::Text { text: text.into() }];
        parts.extend(image_urls.iter().map(|url| Part::ImageUrl {
            image_url: ImageUrl { url: url.clone() },
        }));
        ChatMessage {
            role: "user".into(),
            content: Content::Parts(parts),
        }
    }
}

/// A completion and what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub text: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("LLM endpoint answered HTTP {status}: {body}")]
    Status {
        status: u16,
        body: String,
        retry_after: Option<Duration>,
    },
    #[error("LLM request timed out")]
    Timeout,
    #[error("LLM endpoint unreachable: {0}")]
    Network(String),
    #[error("LLM answer unusable: {0}")]
    BadResponse(String),
}

impl Transient for LlmError {
    fn is_transient(&self) -> bool {
        match self {
            LlmError::Status { status, .. } => *status == 429 || *status >= 500,
            LlmError::Timeout | LlmError::Network(_) => true,
            LlmError::BadResponse(_) => false,
        }
    }
    fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

#[derive(Clone)]
pub struct LlmClient {
    http: reqwest::Client,
    endpoint: String,
    model: String,
    key: Option<Secret>,
    max_retries: usize,
    max_tokens: u32,
    temperature: f32,
    max_response_bytes: usize,
}

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    messages: &'a [ChatMessage],
    max_tokens: u32,
    temperature: f32,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Response {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    message: Message,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

tokio::task_local! {
    static METER: RefCell<Meter>;
}

/// What the [`metered`] scope collects: tokens, and each answered call's start and end.
#[derive(Default)]
struct Meter {
    usage: crate::model::Usage,
    spans: Vec<(Instant, Instant)>,
}

/// What a [`metered`] run spent: tokens, answered calls, and how many of them ran one after
/// another (the longest chain of calls each asked after the previous one was answered — the
/// latency a faster model would shorten).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Metered {
    pub usage: crate::model::Usage,
    pub calls: u32,
    pub in_sequence: u32,
}

/// Runs `f` and returns, with its output, what every LLM answer received while it ran (in its
/// task) cost, whether `f` then succeeded or not.
pub async fn metered<F: Future>(f: F) -> (F::Output, Metered) {
    METER
        .scope(RefCell::new(Meter::default()), async {
            let out = f.await;
            let spent = METER.with(|m| {
                let m = m.borrow();
                Metered {
                    usage: m.usage,
                    calls: m.spans.len() as u32,
                    in_sequence: in_sequence(&m.spans),
                }
            });
            (out, spent)
        })
        .await
}

/// The longest chain of spans each starting after the one before it ended (overlapping spans
/// count once: they ran side by side).
pub fn in_sequence(spans: &[(Instant, Instant)]) -> u32 {
    let mut spans = spans.to_vec();
    spans.sort_by_key(|s| s.0);
    let (mut chain, mut end): (u32, Option<Instant>) = (0, None);
    for (start, stop) in spans {
        match end {
            Some(e) if start < e => end = Some(e.min(stop)),
            _ => {
                chain += 1;
                end = Some(stop);
            }
        }
    }
    chain
}

fn meter(started: Instant, prompt_tokens: u64, completion_tokens: u64) {
    let _ = METER.try_with(|m| {
        let mut m = m.borrow_mut();
        m.usage.prompt_tokens += prompt_tokens;
        m.usage.completion_tokens += completion_tokens;
        m.spans.push((started, Instant::now()));
    });
}

impl LlmClient {
    pub fn new(config: &LlmConfig, key: Option<Secret>) -> Result<LlmClient, LlmError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(config.timeout_secs))
            .connect_timeout(Duration::from_secs(10))
            .user_agent(crate::USER_AGENT)
            .build()
            .map_err(|e| LlmError::Network(e.to_string()))?;
        Ok(LlmClient {
            http,
            endpoint: format!("{}/chat/completions", config.base_url.trim_end_matches('/')),
            model: config.model.clone(),
            key,
            max_retries: config.max_retries,
            max_tokens: config.max_tokens,
            temperature: config.temperature,
            max_response_bytes: config.max_response_bytes,
        })
    }

    /// One chat completion, retried on 429/5xx/timeouts.
    pub async fn chat(&self, messages: &[ChatMessage]) -> Result<Completion, LlmError> {
        retry::with_retries(self.max_retries, "llm.chat", || self.chat_once(messages, None)).await
    }

    /// A completion constrained to a JSON schema (`response_format`), where the endpoint
    /// supports it; an endpoint that rejects the field (HTTP 400) is asked again without it.
    /// Callers still parse tolerantly: small models wrap or bend JSON.
    pub async fn chat_json(
        &self,
        messages: &[ChatMessage],
        name: &str,
        schema: &serde_json::Value,
    ) -> Result<Completion, LlmError> {
        let format = serde_json::json!({"type": "json_schema", "json_schema": {"name": name, "schema": schema}});
        match retry::with_retries(self.max_retries, "llm.chat", || {
            self.chat_once(messages, Some(format.clone()))
        })
        .await
        {
            Err(LlmError::Status { status: 400, .. }) => {
                tracing::info!("endpoint rejected response_format; asking without it");
                self.chat(messages).await
            }
            other => other,
        }
    }

    async fn chat_once(
        &self,
        messages: &[ChatMessage],
        response_format: Option<serde_json::Value>,
    ) -> Result<Completion, LlmError> {
        let body = Request {
            model: &self.model,
            messages,
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            stream: false,
            response_format,
        };
        let started = Instant::now();
        let mut req = self.http.post(&self.endpoint).json(&body);
        if let Some(key) = &self.key {
            req = req.bearer_auth(key.expose());
        }
        let resp = req.send().await.map_err(classify)?;
        let status = resp.status();
        if !status.is_success() {
            let retry_after = retry::hinted_wait(status.as_u16(), resp.headers());
            let body = crate::body::error_text(resp).await;
            return Err(LlmError::Status {
                status: status.as_u16(),
                body,
                retry_after,
            });
        }
        let bytes = crate::body::read_capped(resp, self.max_response_bytes)
            .await
            .map_err(|e| LlmError::BadResponse(e.to_string()))?;
        let parsed: Response = serde_json::from_slice(&bytes).map_err(|e| LlmError::BadResponse(e.to_string()))?;
        // Spent as soon as answered, whatever the caller makes of the answer.
        let (p, c) = parsed
            .usage
            .as_ref()
            .map_or((0, 0), |u| (u.prompt_tokens, u.completion_tokens));
        meter(started, p, c);
        let text = parsed
            .choices
            .into_iter()
            .next()
            .and_then(|c| c.message.content)
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .ok_or_else(|| LlmError::BadResponse("no message content".into()))?;
        let usage = parsed.usage.unwrap_or(Usage {
            prompt_tokens: 0,
            completion_tokens: 0,
        });
        Ok(Completion {
            text,
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
        })
    }
}

fn classify(e: reqwest::Error) -> LlmError {
    if e.is_timeout() {
        LlmError::Timeout
    } else {
        // Without the URL: it may carry a key in some deployments.
        LlmError::Network(e.without_url().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_image_parts_serialise_as_openai_expects() {
        let plain = serde_json::to_value(ChatMessage::user("hi")).unwrap();
        assert_eq!(plain, serde_json::json!({"role": "user", "content": "hi"}));
        let m = ChatMessage::user_with_images("what is this?", &["https://img.example/a.png".into()]);
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            serde_json::json!({"role": "user", "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "https://img.example/a.png"}}
            ]})
        );
        let back: ChatMessage = serde_json::from_value(serde_json::to_value(&m).unwrap()).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn calls_side_by_side_count_once_in_sequence() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        // Two side by side, then one after them, then one overlapping it.
        let spans = [(at(0), at(10)), (at(1), at(9)), (at(20), at(30)), (at(25), at(40))];
        assert_eq!(in_sequence(&spans), 2);
        assert_eq!(in_sequence(&[(at(0), at(1)), (at(2), at(3)), (at(4), at(5))]), 3);
        assert_eq!(in_sequence(&[]), 0);
    }
}
