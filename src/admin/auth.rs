//! The admin page's guards: the token compared in constant time (as SHA-256 digests, so
//! neither its length nor its bytes leak through timing), sessions in memory (a random id in
//! an `HttpOnly`, `SameSite=Strict` cookie, never in a URL), a CSRF token per session checked
//! on every form, and the `Origin` of every form post (a cross-site post is refused).

use std::collections::HashMap;
use std::io::Read;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// How long a login lasts.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
const MAX_SESSIONS: usize = 64;
pub const COOKIE: &str = "musebot_admin";

/// Whether `given` is the token, in time independent of where they differ.
pub fn token_matches(given: &str, token: &str) -> bool {
    let (a, b) = (Sha256::digest(given.as_bytes()), Sha256::digest(token.as_bytes()));
    a.iter().zip(b.iter()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// 32 random bytes from the kernel, hex.
pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .expect("the kernel's random source");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(Default)]
pub struct Sessions {
    /// session id → (CSRF token, expiry)
    inner: Mutex<HashMap<String, (String, Instant)>>,
}

impl Sessions {
    /// A new session: its id (for the cookie).
    pub fn open(&self) -> String {
        let mut map = self.inner.lock().expect("sessions lock");
        let now = Instant::now();
        map.retain(|_, (_, until)| *until > now);
        if map.len() >= MAX_SESSIONS {
            // The oldest logins go first.
            if let Some(oldest) = map.iter().min_by_key(|(_, (_, u))| *u).map(|(k, _)| k.clone()) {
                map.remove(&oldest);
            }
        }
        let id = random_token();
        map.insert(id.clone(), (random_token(), now + SESSION_TTL));
        id
    }

    /// The session's CSRF token, when the session is live.
    pub fn csrf(&self, id: &str) -> Option<String> {
        let map = self.inner.lock().expect("sessions lock");
        map.iter()
            .find(|(k, (_, until))| token_matches(k, id) && *until > Instant::now())
            .map(|(_, (csrf, _))| csrf.clone())
    }

    pub fn close(&self, id: &str) {
        self.inner.lock().expect("sessions lock").remove(id);
    }
}

/// The session id in a `Cookie` header.
pub fn session_cookie(header: Option<&str>) -> Option<String> {
    header?
        .split(';')
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.to_string())
}

/// A form post's `Origin` (or, without one, its `Referer`) must be the admin page's own.
/// Browsers send `Origin` on every cross-origin POST; a missing one (older clients, curl) is
/// allowed, the CSRF token still applies.
pub fn same_origin(origin: Option<&str>, referer: Option<&str>, host: Option<&str>) -> bool {
    let Some(host) = host else { return false };
    let own = format!("http://{host}");
    match (origin, referer) {
        (Some(o), _) => o == own,
        (None, Some(r)) => r == own || r.starts_with(&format!("{own}/")),
        (None, None) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_sessions_and_origins() {
        assert!(token_matches("s3cret-token-123456", "s3cret-token-123456"));
        assert!(!token_matches("s3cret-token-123457", "s3cret-token-123456"));
        assert!(!token_matches("", "s3cret-token-123456"));
        let s = Sessions::default();
        let id = s.open();
        assert_eq!(id.len(), 64);
        let csrf = s.csrf(&id).unwrap();
        assert_ne!(csrf, id);
        assert!(s.csrf("forged").is_none());
        s.close(&id);
        assert!(s.csrf(&id).is_none());
        assert_eq!(
            session_cookie(Some("a=b; musebot_admin=xyz; c=d")).as_deref(),
            Some("xyz")
        );
        assert!(same_origin(Some("http://127.0.0.1:8091"), None, Some("127.0.0.1:8091")));
        assert!(!same_origin(
            Some("http://127.0.0.1:9999"),
            None,
            Some("127.0.0.1:8091")
        ));
        assert!(!same_origin(Some("null"), None, Some("127.0.0.1:8091")));
        assert!(!same_origin(
            None,
            Some("http://evil.example/x"),
            Some("127.0.0.1:8091")
        ));
        assert!(same_origin(None, None, Some("127.0.0.1:8091")));
    }
}
