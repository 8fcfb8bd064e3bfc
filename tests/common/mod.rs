//! Test harness, one room per peer, all on loopback: [`mastodon`] (`mastodon-mock` from the
//! sandbox venv that `scripts/setup-sandbox.sh` provisions), [`llm`] (a scripted
//! OpenAI-compatible server), [`web`] (real pages under publishers' host names and a
//! SearXNG-format search server), [`daemon`] (the `musebot` binary itself), [`proxy`] (a
//! cuttable TCP link) and [`sandbox`] (what setup-sandbox wrote, the real local LLM).
//! `llm` and `web` need nothing but external crates, so `benches/` and the worker's unit tests
//! include the same files with `#[path]`.
#![allow(dead_code, unused_imports)]

pub mod bluesky;
pub mod daemon;
pub mod llm;
pub mod mastodon;
pub mod proxy;
pub mod sandbox;
pub mod web;
pub mod webdriver;

pub use daemon::*;
pub use llm::*;
pub use mastodon::*;
pub use sandbox::*;
pub use web::*;
