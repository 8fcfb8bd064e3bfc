//! What the evidence pages allow: how much each client may ask (a per-client limit under one
//! ceiling for everyone), who the client is behind the operator's proxy, and the handles
//! links name (resolved at most once every few minutes each).
//!
//! **The client.** The pages sit behind the operator's TLS proxy, on the same machine
//! (`evidence_listen` on loopback). A request from a loopback peer is the proxy's, and the
//! client is the last address of its `X-Forwarded-For` (the one the proxy appended: earlier
//! ones are whatever the client sent, so they are never trusted). A request from any other
//! peer came straight in: its `X-Forwarded-For` is the client's own word, and the peer's
//! address is the client. An IPv6 client counts by its /64 (one host is usually given a whole
//! /64 and could otherwise take a fresh address per request).
//!
//! **The limits.** The client's allowance is taken first, then one request of the ceiling:
//! a client over its own limit is refused without spending the ceiling, so it cannot starve
//! the others. Every [`HOUSEKEEPING_EVERY`] requests the clients whose allowance is full again
//! are dropped ([`governor`]'s `retain_recent`), so the table holds only the clients of the
//! last few seconds; past [`MAX_CLIENTS`] of those (a flood from many addresses) no new
//! client is added and the ceiling alone applies until housekeeping finds the table smaller.
//!
//! **Handles.** A resolved handle (or one that does not resolve) is remembered for
//! [`HANDLE_TTL`], at most [`MAX_HANDLES`] of them (the oldest forgotten first); a failed
//! resolution is not remembered. A resolution costs the client [`RESOLVE_COST`] requests, and
//! all visitors together get [`RESOLUTIONS_PER_SECOND`] (bursts of ten): resolutions go through
//! the bot's own Bluesky client, whose request budget its replies need.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use governor::{DefaultDirectRateLimiter, DefaultKeyedRateLimiter, Quota, RateLimiter};

use super::Resolved;

/// Requests a second over every client together (burst twice that).
pub(super) const PER_SECOND: u32 = 20;
/// Requests a second one client may make (burst [`CLIENT_BURST`]).
pub(super) const PER_CLIENT: u32 = 5;
pub(super) const CLIENT_BURST: u32 = 20;
/// What resolving a handle costs the client that named it, in requests.
pub(super) const RESOLVE_COST: u32 = 4;
/// Handle resolutions a second for all visitors together: they go through the bot's own Bluesky
/// client and its request budget, which replies need.
pub(super) const RESOLUTIONS_PER_SECOND: u32 = 1;
/// Requests between two clean-ups of the clients' table.
const HOUSEKEEPING_EVERY: u64 = 256;
/// Clients with a recent request past which no new one is added.
const MAX_CLIENTS: usize = 50_000;
/// How long a handle's resolution is remembered.
pub(super) const HANDLE_TTL: Duration = Duration::from_secs(300);
/// Handles remembered at most.
pub(super) const MAX_HANDLES: usize = 4_096;

pub(super) fn nz(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n.max(1)).unwrap_or(NonZeroU32::MIN)
}

/// Each client's allowance: [`PER_CLIENT`] a second, burst [`CLIENT_BURST`].
pub(super) fn client_quota() -> Quota {
    Quota::per_second(nz(PER_CLIENT)).allow_burst(nz(CLIENT_BURST))
}

/// Each client's allowance and the ceiling over all of them.
pub(super) struct Limits {
    clients: DefaultKeyedRateLimiter<IpAddr>,
    all: DefaultDirectRateLimiter,
    resolutions: DefaultDirectRateLimiter,
    requests: AtomicU64,
    crowded: AtomicBool,
}

impl Limits {
    /// The limits with `client` as each client's allowance ([`client_quota`] in service).
    pub(super) fn new(client: Quota) -> Limits {
        Limits {
            clients: RateLimiter::keyed(client),
            all: RateLimiter::direct(Quota::per_second(nz(PER_SECOND)).allow_burst(nz(PER_SECOND * 2))),
            resolutions: RateLimiter::direct(
                Quota::per_second(nz(RESOLUTIONS_PER_SECOND)).allow_burst(nz(RESOLUTIONS_PER_SECOND * 10)),
            ),
            requests: AtomicU64::new(0),
            crowded: AtomicBool::new(false),
        }
    }

    /// Whether `client` may make one more request now (its allowance, then the ceiling).
    pub(super) fn admit(&self, client: IpAddr) -> bool {
        if self.requests.fetch_add(1, Ordering::Relaxed) % HOUSEKEEPING_EVERY == HOUSEKEEPING_EVERY - 1 {
            self.clients.retain_recent();
            self.clients.shrink_to_fit();
            let clients = self.clients.len();
            let crowded = clients > MAX_CLIENTS;
            if crowded != self.crowded.swap(crowded, Ordering::Relaxed) {
                tracing::warn!(clients, crowded, "evidence pages: clients with a recent request");
            }
        }
        if !self.crowded.load(Ordering::Relaxed) && self.clients.check_key(&client).is_err() {
            return false;
        }
        self.all.check().is_ok()
    }

    /// Takes `n` more requests from `client`'s allowance (a handle's resolution); false when it
    /// has not that many left.
    pub(super) fn charge(&self, client: IpAddr, n: u32) -> bool {
        let own = if self.crowded.load(Ordering::Relaxed) {
            self.all.check_n(nz(n)).is_ok_and(|r| r.is_ok())
        } else {
            self.clients.check_key_n(&client, nz(n)).is_ok_and(|r| r.is_ok())
        };
        own && self.resolutions.check().is_ok()
    }

    #[cfg(test)]
    pub(super) fn clients(&self) -> usize {
        self.clients.len()
    }
}

/// The client a request counts against: see the module's header.
pub(super) fn client(peer: SocketAddr, headers: &HeaderMap) -> IpAddr {
    let peer = peer.ip().to_canonical();
    if !peer.is_loopback() {
        return bucket(peer);
    }
    let forwarded = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .rfind(|v| !v.trim().is_empty())
        .and_then(|v| v.trim().parse::<IpAddr>().ok());
    bucket(forwarded.map_or(peer, |ip| ip.to_canonical()))
}

/// An IPv6 address's /64; an IPv4 address itself.
fn bucket(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
    }
}

/// A handle as a link may name it, lowercased; none when it cannot be one (nothing to ask).
pub(super) fn handle(repo: &str) -> Option<String> {
    let h = repo.trim_start_matches('@').to_ascii_lowercase();
    let labels_ok = h.split('.').all(|l| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    });
    (h.len() <= 253 && h.contains('.') && labels_ok).then_some(h)
}

/// Handles resolved lately.
#[derive(Default)]
pub(super) struct Handles {
    known: Mutex<HashMap<String, (Instant, Resolved)>>,
}

impl Handles {
    /// What `handle` resolved to less than [`HANDLE_TTL`] ago.
    pub(super) fn get(&self, handle: &str) -> Option<Resolved> {
        let known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        known
            .get(handle)
            .filter(|(at, _)| at.elapsed() < HANDLE_TTL)
            .map(|(_, r)| r.clone())
    }

    /// Remembers what `handle` resolved to (a failure is not remembered).
    pub(super) fn put(&self, handle: &str, resolved: &Resolved) {
        if *resolved == Resolved::Unavailable {
            return;
        }
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        if known.len() >= MAX_HANDLES && !known.contains_key(handle) {
            known.retain(|_, (at, _)| at.elapsed() < HANDLE_TTL);
            if known.len() >= MAX_HANDLES {
                let oldest = known.iter().min_by_key(|(_, (at, _))| *at).map(|(h, _)| h.clone());
                if let Some(h) = oldest {
                    known.remove(&h);
                }
            }
        }
        known.insert(handle.to_string(), (Instant::now(), resolved.clone()));
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.known.lock().unwrap().len()
    }
}
