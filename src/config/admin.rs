//! `[admin]`: the operator's admin page — where it listens (loopback only) and where its
//! token comes from.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdminConfig {
    /// Loopback address of the admin page, e.g. "127.0.0.1:8091"; "" = no admin page.
    pub listen: String,
    /// Environment variable holding the admin token (at least 16 characters).
    pub token_env: String,
    /// File holding the admin token; wins over token_env when set.
    pub token_file: String,
    /// Recent jobs shown.
    pub recent_jobs: usize,
}

impl Default for AdminConfig {
    fn default() -> Self {
        AdminConfig {
            listen: String::new(),
            token_env: "MUSEBOT_ADMIN_TOKEN".into(),
            token_file: String::new(),
            recent_jobs: 50,
        }
    }
}
