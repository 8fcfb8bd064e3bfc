//! One retry policy for every outbound call (LLM, Mastodon): exponential backoff with jitter
//! from `backon`, only for errors that say they are transient, waiting at least as long as the
//! server asked (`Retry-After`, `X-RateLimit-Reset`, `RateLimit-Reset`).

use std::future::Future;
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use chrono::{DateTime, Utc};

/// Errors that know whether a retry can help and how long the server asked to wait.
pub trait Transient {
    fn is_transient(&self) -> bool;
    fn retry_after(&self) -> Option<Duration>;
}

/// Longest wait honoured from a server hint inside one call. A longer hint (a rate limit that
/// lasts minutes or hours) ends the call at once: the caller parks the job until then instead
/// of holding a worker (see [`long_wait`]).
pub const MAX_HINTED_WAIT: Duration = Duration::from_secs(60);

/// Runs `op` until it succeeds, fails permanently, or `max_retries` retries are spent.
pub async fn with_retries<T, E, F, Fut>(max_retries: usize, what: &'static str, op: F) -> Result<T, E>
where
    E: Transient + std::fmt::Display,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let backoff = ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(250))
        .with_max_delay(Duration::from_secs(30))
        .with_max_times(max_retries)
        .with_jitter();
    op.retry(backoff)
        .when(|e: &E| e.is_transient() && long_wait(e).is_none())
        .adjust(|e: &E, planned: Option<Duration>| {
            planned.map(|d| e.retry_after().map_or(d, |hint| hint.min(MAX_HINTED_WAIT).max(d)))
        })
        .notify(|e: &E, wait: Duration| {
            tracing::warn!(error = %e, wait_ms = wait.as_millis() as u64, call = what, "retrying");
        })
        .await
}

/// The server's hint when it asks for longer than [`MAX_HINTED_WAIT`].
pub fn long_wait<E: Transient>(e: &E) -> Option<Duration> {
    e.retry_after().filter(|w| *w > MAX_HINTED_WAIT)
}

/// The wait a response asks for: `Retry-After`, else `X-RateLimit-Reset` / `RateLimit-Reset`
/// (only on 429, where a reset time means "not before then").
pub fn hinted_wait(status: u16, headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let now = Utc::now();
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    get("retry-after").and_then(|v| parse_retry_after(v, now)).or_else(|| {
        (status == 429)
            .then(|| {
                get("x-ratelimit-reset")
                    .or_else(|| get("ratelimit-reset"))
                    .and_then(|v| parse_reset(v, now))
            })
            .flatten()
    })
}

/// The longest wait a server's hint can impose: a `Retry-After` or a reset further away is
/// read as this (a job parked for a day is looked at again then), so no number from outside
/// overflows a clock or parks a job for ever.
pub const MAX_HINT: Duration = Duration::from_secs(24 * 3600);

/// Parses a `Retry-After` value: delay-seconds or an HTTP date; at most [`MAX_HINT`].
pub fn parse_retry_after(value: &str, now: DateTime<Utc>) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs).min(MAX_HINT));
    }
    if !v.is_empty() && v.chars().all(|c| c.is_ascii_digit()) {
        // More digits than a u64 holds.
        return Some(MAX_HINT);
    }
    DateTime::parse_from_rfc2822(v)
        .ok()
        .and_then(|t| (t.with_timezone(&Utc) - now).to_std().ok())
        .map(|d| d.min(MAX_HINT))
}

/// Parses a rate-limit reset time: epoch seconds (Bluesky, mastodon-mock) or ISO 8601
/// (Mastodon), returned as the wait from `now`.
/// At most [`MAX_HINT`]; a time before `now` is no wait.
pub fn parse_reset(value: &str, now: DateTime<Utc>) -> Option<Duration> {
    let v = value.trim();
    let at = if !v.is_empty() && v.trim_start_matches('-').chars().all(|c| c.is_ascii_digit()) {
        match v.parse::<i64>().ok().and_then(|e| DateTime::from_timestamp(e, 0)) {
            Some(at) => at,
            // Past what a clock holds: the far future, or the far past.
            None if v.starts_with('-') => return Some(Duration::ZERO),
            None => return Some(MAX_HINT),
        }
    } else {
        DateTime::parse_from_rfc3339(v).ok()?.with_timezone(&Utc)
    };
    let wait = at.signed_duration_since(now);
    Some(wait.to_std().unwrap_or(Duration::ZERO).min(MAX_HINT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_parse() {
        let now = DateTime::parse_from_rfc3339("2026-11-30T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let cases: &[(&str, Option<u64>)] = &[
            ("7", Some(7)),
            ("Mon, 30 Nov 2026 10:00:30 GMT", Some(30)),
            ("soon", None),
        ];
        for (v, want) in cases {
            assert_eq!(parse_retry_after(v, now).map(|d| d.as_secs()), *want, "{v}");
        }
        let resets: &[(&str, Option<u64>)] = &[
            ("1796032812", Some(1796032812 - now.timestamp() as u64)),
            ("2026-11-30T10:05:00.000000Z", Some(300)),
            ("2026-11-30T09:00:00Z", Some(0)),
            ("x", None),
        ];
        for (v, want) in resets {
            assert_eq!(parse_reset(v, now).map(|d| d.as_secs()), *want, "{v}");
        }
        // Numbers of any size are clamped, never overflow a clock.
        let day = Some(MAX_HINT.as_secs());
        let huge: &[(&str, Option<u64>)] = &[
            ("2796032812", day),
            ("18446744073709551615", day),
            ("999999999999999999999999999", day),
            ("9223372036854775807", day),
            ("-9223372036854775808", Some(0)),
            ("9999-12-31T23:59:59Z", day),
        ];
        for (v, want) in huge {
            assert_eq!(parse_reset(v, now).map(|d| d.as_secs()), *want, "reset {v}");
            let r = parse_retry_after(v, now).map(|d| d.as_secs());
            assert!(r.is_none() || r <= day, "retry-after {v}: {r:?}");
            // What the platforms do with a hint: a time to park until.
            if let Some(w) = parse_reset(v, now) {
                let _ = now + chrono::Duration::from_std(w).unwrap();
            }
        }
        assert_eq!(parse_retry_after("99999999999999999999999", now), Some(MAX_HINT));
        assert_eq!(parse_retry_after("864000", now), Some(MAX_HINT));
    }

    #[derive(Debug)]
    struct E(bool);

    #[derive(Debug)]
    struct Limited(Duration);
    impl std::fmt::Display for Limited {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "limited")
        }
    }
    impl Transient for Limited {
        fn is_transient(&self) -> bool {
            true
        }
        fn retry_after(&self) -> Option<Duration> {
            Some(self.0)
        }
    }

    /// A limit that lasts hours ends the call at once (the job is parked, no worker waits).
    #[tokio::test(start_paused = true)]
    async fn a_long_hint_stops_retrying_at_once() {
        let mut calls = 0;
        let r: Result<(), Limited> = with_retries(5, "t", || {
            calls += 1;
            async { Err(Limited(Duration::from_secs(7200))) }
        })
        .await;
        assert_eq!(calls, 1);
        assert_eq!(long_wait(&r.unwrap_err()), Some(Duration::from_secs(7200)));
        let mut calls = 0;
        let _: Result<(), Limited> = with_retries(2, "t", || {
            calls += 1;
            async { Err(Limited(Duration::from_secs(1))) }
        })
        .await;
        assert_eq!(calls, 3, "short hints are waited out in the call");
    }
    impl std::fmt::Display for E {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "e{}", self.0)
        }
    }
    impl Transient for E {
        fn is_transient(&self) -> bool {
            self.0
        }
        fn retry_after(&self) -> Option<Duration> {
            None
        }
    }

    #[tokio::test(start_paused = true)]
    async fn retries_transient_only() {
        let mut calls = 0;
        let r: Result<(), E> = with_retries(3, "t", || {
            calls += 1;
            async { Err(E(true)) }
        })
        .await;
        assert!(r.is_err());
        assert_eq!(calls, 4);
        let mut calls = 0;
        let _: Result<(), E> = with_retries(3, "t", || {
            calls += 1;
            async { Err(E(false)) }
        })
        .await;
        assert_eq!(calls, 1);
    }
}
