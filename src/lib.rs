//! musebot: a daemon that answers misinformation on social media the way a careful
//! fact-checker would. See ARCHITECTURE.md for the code map and the invariants.

pub mod admin;
pub mod body;
pub mod check;
pub mod claims;
pub mod cli;
pub mod cli_state;
pub mod compose;
pub mod config;
pub mod credibility;
pub mod daemon;
pub mod eval;
pub mod extract;
pub mod fetch;
pub mod http;
pub mod image;
pub mod index;
pub mod inspect;
pub mod intake;
pub mod labeler;
pub mod lang;
pub mod living;
pub mod llm;
pub mod metrics;
pub mod model;
pub mod models;
pub mod moderation;
pub mod pins;
pub mod pipeline;
pub mod platform;
pub mod prompts;
pub mod relevance;
pub mod retry;
pub mod search;
pub mod secret;
pub mod stance;
pub mod store;
pub mod telemetry;
pub mod watch;
pub mod webhook;
pub mod words;
pub mod worker;

pub use daemon::run;

/// The tests' scripted LLM peer (the same file the integration tests and the bench use), for
/// the in-process tests of the stage machine and the debate engine.
#[cfg(test)]
#[path = "../tests/common/llm.rs"]
pub(crate) mod test_llm;

#[cfg(test)]
mod proptests;

/// Sent with every outbound request: honest about what is calling.
pub const USER_AGENT: &str = concat!("musebot/", env!("CARGO_PKG_VERSION"), " (fact-checking bot)");
