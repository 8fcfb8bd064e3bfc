//! Logging setup: `tracing-subscriber` in text or JSON, filtered by `RUST_LOG` or the config.
//! Whatever the filter says, tungstenite is capped at `error`: its logs may carry the streaming
//! URL, which holds the access token (megalodon, no longer linked, logged it at info/warn);
//! and the HTML parser's notes on malformed pages, and tantivy's narration of every commit and
//! garbage collection of the evidence index, are capped there too.

use tracing_subscriber::EnvFilter;

use crate::config::{LogConfig, LogFormat};

/// Targets that may print secrets; forced to `error` whatever the user's filter says.
pub const SECRET_LEAKING_TARGETS: &[&str] = &["tungstenite", "tokio_tungstenite"];

/// Parser internals that narrate untrusted pages ("foster parenting not implemented") and the
/// index engine's commit narration ("Preparing commit", "Garbage collect"): nothing an
/// operator can act on, so only their errors are shown (the refresher logs its own outcomes).
pub const NOISY_TARGETS: &[&str] = &["html5ever", "markup5ever", "selectors", "tantivy"];

pub fn filter(config_filter: &str) -> EnvFilter {
    let base = std::env::var("RUST_LOG")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| config_filter.to_string());
    let mut filter = EnvFilter::try_new(&base).unwrap_or_else(|_| EnvFilter::new("info"));
    for target in SECRET_LEAKING_TARGETS.iter().chain(NOISY_TARGETS) {
        filter = filter.add_directive(format!("{target}=error").parse().expect("static directive"));
    }
    filter
}

/// Installs the global subscriber (once; later calls are ignored).
pub fn init(config: &LogConfig) {
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter(&config.filter))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let _ = match config.format {
        LogFormat::Json => builder.json().flatten_event(true).with_current_span(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
}
