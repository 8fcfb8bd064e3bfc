//! Secrets (access tokens, API keys): read from an environment variable or a file named in the
//! config, never from the config file itself, and never printed (`Debug`/`Display` redact).

use std::fmt;
use std::path::Path;

/// A secret value. Formatting it prints `[redacted]`; use [`Secret::expose`] at the one place it
/// is sent (an HTTP header).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The raw value, for the single call site that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// Why a secret could not be read; `key` is the config key that names its source.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("{key}: environment variable `{var}` is not set or empty — export it (e.g. in /etc/musebot/secrets.env) or point {file_key} at a file")]
    EnvMissing { key: String, var: String, file_key: String },
    #[error("{key}: cannot read `{path}`: {reason} — check the path and that the musebot user may read it")]
    FileUnreadable { key: String, path: String, reason: String },
    #[error("{key}: file `{path}` is empty — write the secret into it")]
    FileEmpty { key: String, path: String },
    #[error("{prefix}_env / {prefix}_file: neither is set — set one of them")]
    NoSource { prefix: String },
}

/// Resolves a secret from `<prefix>_file` (preferred when set) or `<prefix>_env`.
/// `required = false` returns `Ok(None)` when neither source is configured.
pub fn resolve(prefix: &str, env_var: &str, file: &str, required: bool) -> Result<Option<Secret>, SecretError> {
    if !file.is_empty() {
        let key = format!("{prefix}_file");
        let text = std::fs::read_to_string(Path::new(file)).map_err(|e| SecretError::FileUnreadable {
            key: key.clone(),
            path: file.to_string(),
            reason: e.to_string(),
        })?;
        let value = text.trim();
        if value.is_empty() {
            return Err(SecretError::FileEmpty {
                key,
                path: file.to_string(),
            });
        }
        return Ok(Some(Secret::new(value)));
    }
    if !env_var.is_empty() {
        return match std::env::var(env_var) {
            Ok(v) if !v.trim().is_empty() => Ok(Some(Secret::new(v.trim()))),
            _ if !required => Ok(None),
            _ => Err(SecretError::EnvMissing {
                key: format!("{prefix}_env"),
                var: env_var.to_string(),
                file_key: format!("{prefix}_file"),
            }),
        };
    }
    if required {
        Err(SecretError::NoSource {
            prefix: prefix.to_string(),
        })
    } else {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting_redacts() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s} {s:?}"), "[redacted] [redacted]");
        assert_eq!(s.expose(), "hunter2");
    }

    #[test]
    fn missing_env_names_the_key() {
        let err = resolve("mastodon.access_token", "MUSEBOT_TEST_UNSET_VAR_X", "", true).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("mastodon.access_token_env:"), "{msg}");
        assert!(msg.contains("MUSEBOT_TEST_UNSET_VAR_X"), "{msg}");
    }

    #[test]
    fn file_wins_and_is_trimmed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("tok");
        std::fs::write(&p, "abc\n").unwrap();
        let s = resolve("x", "", p.to_str().unwrap(), true).unwrap().unwrap();
        assert_eq!(s.expose(), "abc");
        std::fs::write(&p, "  \n").unwrap();
        assert!(matches!(
            resolve("x", "", p.to_str().unwrap(), true),
            Err(SecretError::FileEmpty { .. })
        ));
    }
}
