//! Bounded reading of HTTP answers from outside (Mastodon, the LLM endpoint, search APIs): a
//! peer that sends an endless or huge body costs at most the configured cap, then the call
//! fails with a clear error. Error bodies are read to [`ERROR_BODY_BYTES`] and quoted short.

/// How much of an error answer is read (only its first 300 characters are quoted).
pub const ERROR_BODY_BYTES: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    #[error("answer larger than {0} bytes")]
    TooLarge(usize),
    #[error("answer cut off: {0}")]
    Read(String),
}

/// The whole body, or `TooLarge` as soon as it passes `max` bytes (declared or received).
pub async fn read_capped(mut resp: reqwest::Response, max: usize) -> Result<Vec<u8>, BodyError> {
    if resp.content_length().is_some_and(|n| n > max as u64) {
        return Err(BodyError::TooLarge(max));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| BodyError::Read(e.without_url().to_string()))?
    {
        if body.len() + chunk.len() > max {
            return Err(BodyError::TooLarge(max));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The first 300 characters of an error answer (read to at most [`ERROR_BODY_BYTES`]).
pub async fn error_text(mut resp: reqwest::Response) -> String {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        let room = ERROR_BODY_BYTES.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= ERROR_BODY_BYTES {
            break;
        }
    }
    String::from_utf8_lossy(&body).chars().take(300).collect()
}
