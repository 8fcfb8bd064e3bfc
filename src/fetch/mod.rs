//! The page fetcher (reqwest): SSRF-guarded ([`guard`]) on every hop — the URL's host is
//! resolved and every address checked before a request, and the client's own DNS resolver
//! refuses forbidden addresses again at connect time (DNS rebinding) — with redirects followed
//! by hand (bounded, each re-checked), time and body-size caps, a content-type check, charset
//! decoding, a per-host concurrency limit and an honest User-Agent. Feeds go through the same
//! path as conditional GETs ([`feed`]).

pub mod dns;
pub mod feed;
pub mod guard;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::HeaderMap;
use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;
use url::{Host, Url};

use guard::{Allow, Forbidden};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FetchConfig {
    /// Seconds for one page, all redirects included.
    pub timeout_secs: u64,
    /// Largest body read, bytes; longer pages are refused.
    pub max_body_bytes: usize,
    /// Redirects followed (each target is re-checked by the guard).
    pub max_redirects: usize,
    /// Requests in flight to one host.
    pub per_host_concurrency: usize,
    /// Send every fetch through this HTTP proxy ("" = direct). The guard still checks every
    /// URL's addresses before the request, but the proxy resolves the name again when it
    /// connects, so the connect-time (rebinding) check is the proxy's: it must refuse
    /// loopback, private and link-local addresses itself.
    pub proxy: String,
    /// Comma-separated hosts that bypass `proxy` (curl's NO_PROXY syntax).
    pub no_proxy: String,
    /// TEST ONLY: exact `IP:port` pairs the guard lets through (e.g. a local test server).
    pub test_allow_addrs: Vec<String>,
    /// TEST ONLY: `name=IP:port` DNS overrides (like curl's --resolve), so a test can serve
    /// `http://www.reuters.com/…` from a local server. The guard still checks the address.
    pub test_resolve: Vec<String>,
    /// TEST ONLY: resolve names by asking this DNS server (`IP:port`, UDP) instead of the
    /// system resolver, e.g. a rebinding server in a test.
    pub test_dns: String,
}

impl Default for FetchConfig {
    fn default() -> Self {
        FetchConfig {
            timeout_secs: 15,
            max_body_bytes: 5_000_000,
            max_redirects: 5,
            per_host_concurrency: 2,
            proxy: String::new(),
            no_proxy: String::new(),
            test_allow_addrs: Vec::new(),
            test_resolve: Vec::new(),
            test_dns: String::new(),
        }
    }
}

/// Why a page was not fetched. Closed: each is a "dropped" reason in the trace.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FetchError {
    #[error("blocked: {url} resolves to a {}", .reason.as_str())]
    Blocked { url: String, reason: Forbidden },
    #[error("blocked: {0}")]
    BadUrl(String),
    #[error("unreachable: {0}")]
    Unreachable(String),
    #[error("timed out")]
    Timeout,
    #[error("HTTP {0}")]
    Status(u16),
    #[error("page larger than {0} bytes")]
    TooLarge(usize),
    #[error("not a web page ({0})")]
    NotHtml(String),
    #[error("not an image ({0})")]
    NotImage(String),
    #[error("not a feed ({0})")]
    NotFeed(String),
    #[error("more than {0} redirects")]
    TooManyRedirects(usize),
}

impl FetchError {
    /// The trace's keep/drop reason.
    pub fn reason(&self) -> &'static str {
        match self {
            FetchError::Blocked { .. } | FetchError::BadUrl(_) => "blocked",
            _ => "unreachable",
        }
    }

    /// The network or the server failed (not the page): worth trying again later.
    pub fn is_outage(&self) -> bool {
        match self {
            FetchError::Unreachable(_) | FetchError::Timeout => true,
            FetchError::Status(s) => *s == 429 || *s >= 500,
            _ => false,
        }
    }
}

/// One answer of [`Fetcher::fetch_body`].
struct Got {
    url: Url,
    content_type: String,
    body: Vec<u8>,
    hops: usize,
    headers: HeaderMap,
    /// The server answered 304 to a conditional GET: `body` is empty.
    not_modified: bool,
}

/// A fetched HTML page.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The final URL, after redirects.
    pub url: Url,
    pub html: String,
    pub bytes: usize,
    pub redirects: usize,
}

#[derive(Clone)]
pub struct Fetcher {
    client: reqwest::Client,
    dns: dns::Dns,
    allow: Allow,
    overrides: HashMap<String, SocketAddr>,
    config: FetchConfig,
    hosts: Arc<Mutex<HashMap<String, Arc<Semaphore>>>>,
    /// `moderation.blocked_domains`: never requested, not even as a redirect's hop.
    blocked_domains: Arc<Vec<String>>,
}

impl Fetcher {
    pub fn new(config: &FetchConfig) -> Result<Fetcher, String> {
        let allow = Allow::new(
            config
                .test_allow_addrs
                .iter()
                .map(|a| {
                    a.parse::<SocketAddr>()
                        .map_err(|_| format!("fetch.test_allow_addrs: `{a}` is not IP:port"))
                })
                .collect::<Result<_, _>>()?,
        );
        let mut overrides = HashMap::new();
        for entry in &config.test_resolve {
            let parsed = entry
                .split_once('=')
                .and_then(|(n, a)| Some((n.trim().to_ascii_lowercase(), a.trim().parse::<SocketAddr>().ok()?)));
            let (name, addr) = parsed.ok_or_else(|| format!("fetch.test_resolve: `{entry}` is not name=IP:port"))?;
            overrides.insert(name, addr);
        }
        let dns = if config.test_dns.is_empty() {
            dns::Dns::System
        } else {
            dns::Dns::Server(
                config
                    .test_dns
                    .parse()
                    .map_err(|_| format!("fetch.test_dns: `{}` is not IP:port", config.test_dns))?,
            )
        };
        let mut builder = reqwest::Client::builder()
            .user_agent(crate::USER_AGENT)
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(config.timeout_secs))
            .connect_timeout(Duration::from_secs(config.timeout_secs.min(10)))
            .dns_resolver(Arc::new(GuardedResolver {
                allow: allow.clone(),
                dns,
            }));
        builder = if config.proxy.is_empty() {
            builder.no_proxy()
        } else {
            let proxy = reqwest::Proxy::all(&config.proxy).map_err(|e| format!("fetch.proxy: {e}"))?;
            builder.proxy(proxy.no_proxy(reqwest::NoProxy::from_string(&config.no_proxy)))
        };
        for (name, addr) in &overrides {
            builder = builder.resolve(name, *addr);
        }
        let client = builder.build().map_err(|e| e.to_string())?;
        Ok(Fetcher {
            client,
            dns,
            allow,
            overrides,
            config: config.clone(),
            hosts: Arc::default(),
            blocked_domains: Arc::default(),
        })
    }

    /// The fetcher that requests nothing on these domains (or below them): a credible page that
    /// redirects there is refused at the hop, before any request reaches the blocked host.
    pub fn with_blocked_domains(mut self, domains: &[String]) -> Fetcher {
        self.blocked_domains = Arc::new(domains.to_vec());
        self
    }

    /// Fetches an HTML page, following at most `max_redirects` redirects.
    pub async fn fetch(&self, url: &str) -> Result<Fetched, FetchError> {
        let timeout = Duration::from_secs(self.config.timeout_secs);
        tokio::time::timeout(timeout, self.fetch_inner(url))
            .await
            .unwrap_or(Err(FetchError::Timeout))
    }

    async fn fetch_inner(&self, url: &str) -> Result<Fetched, FetchError> {
        let is_html = |mime: &str| mime.is_empty() || mime == "text/html" || mime == "application/xhtml+xml";
        let got = self
            .fetch_body(
                url,
                &HeaderMap::new(),
                is_html,
                self.config.max_body_bytes,
                FetchError::NotHtml,
            )
            .await?;
        let html = decode(&got.body, &got.content_type);
        Ok(Fetched {
            url: got.url,
            html,
            bytes: got.body.len(),
            redirects: got.hops,
        })
    }

    /// Fetches an image's bytes (at most `max_bytes`) through the same guard, redirects and
    /// time limit as a page. The type a server claims only rules out what is surely not an
    /// image; the bytes themselves are judged by `crate::image::decode`.
    pub async fn fetch_image(&self, url: &str, max_bytes: usize) -> Result<(Url, Vec<u8>), FetchError> {
        let timeout = Duration::from_secs(self.config.timeout_secs);
        let maybe_image =
            |mime: &str| mime.is_empty() || mime.starts_with("image/") || mime == "application/octet-stream";
        let fetched = tokio::time::timeout(
            timeout,
            self.fetch_body(url, &HeaderMap::new(), maybe_image, max_bytes, FetchError::NotImage),
        )
        .await
        .unwrap_or(Err(FetchError::Timeout))?;
        Ok((fetched.url, fetched.body))
    }

    /// One GET (with `headers`, e.g. a conditional GET's validators) with guarded,
    /// hand-followed redirects: the final URL, its content type, the body (at most
    /// `max_bytes`), the redirects taken; a 304 answer comes back as `not_modified`.
    async fn fetch_body(
        &self,
        url: &str,
        headers: &HeaderMap,
        accept: impl Fn(&str) -> bool,
        max_bytes: usize,
        refuse: fn(String) -> FetchError,
    ) -> Result<Got, FetchError> {
        let mut url = Url::parse(url).map_err(|e| FetchError::BadUrl(format!("`{url}` is not a URL ({e})")))?;
        for hop in 0..=self.config.max_redirects {
            if crate::credibility::domain_listed(&self.blocked_domains, url.as_str()) {
                return Err(FetchError::BadUrl(format!("{url} is on a blocked domain")));
            }
            self.check_url(&url).await?;
            let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
            let _permit = self.host_permit(&host).acquire_owned().await.expect("never closed");
            let resp = self
                .client
                .get(url.clone())
                .headers(headers.clone())
                .send()
                .await
                .map_err(|e| {
                    if e.is_timeout() {
                        FetchError::Timeout
                    } else {
                        FetchError::Unreachable(e.without_url().to_string())
                    }
                })?;
            let status = resp.status();
            // A 304 answers a conditional GET; unasked (no validators sent), it is an error.
            if status == reqwest::StatusCode::NOT_MODIFIED && !headers.is_empty() {
                return Ok(Got {
                    url,
                    content_type: String::new(),
                    body: Vec::new(),
                    hops: hop,
                    headers: resp.headers().clone(),
                    not_modified: true,
                });
            }
            if status.is_redirection() {
                let location = resp
                    .headers()
                    .get(reqwest::header::LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .ok_or(FetchError::Status(status.as_u16()))?;
                url = url
                    .join(location)
                    .map_err(|e| FetchError::BadUrl(format!("bad redirect `{location}` ({e})")))?;
                continue;
            }
            if !status.is_success() {
                return Err(FetchError::Status(status.as_u16()));
            }
            let content_type = resp
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_ascii_lowercase();
            let mime = content_type.split(';').next().unwrap_or("").trim();
            if !accept(mime) {
                return Err(refuse(mime.to_string()));
            }
            if resp.content_length().is_some_and(|n| n as usize > max_bytes) {
                return Err(FetchError::TooLarge(max_bytes));
            }
            let mut resp = resp;
            let answer_headers = resp.headers().clone();
            let mut body = Vec::new();
            while let Some(chunk) = resp.chunk().await.map_err(|e| match e.is_timeout() {
                // The client's time limit struck mid-body (a server that trickles).
                true => FetchError::Timeout,
                false => FetchError::Unreachable(e.without_url().to_string()),
            })? {
                if body.len() + chunk.len() > max_bytes {
                    return Err(FetchError::TooLarge(max_bytes));
                }
                body.extend_from_slice(&chunk);
            }
            return Ok(Got {
                url,
                content_type,
                body,
                hops: hop,
                headers: answer_headers,
                not_modified: false,
            });
        }
        Err(FetchError::TooManyRedirects(self.config.max_redirects))
    }

    /// Refuses a URL whose scheme is not http(s), that carries credentials, or whose host is
    /// (or resolves to) a forbidden address.
    pub async fn check_url(&self, url: &Url) -> Result<(), FetchError> {
        if url.scheme() != "http" && url.scheme() != "https" {
            return Err(FetchError::BadUrl(format!("scheme `{}` is not http(s)", url.scheme())));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(FetchError::BadUrl("URLs with credentials are not fetched".into()));
        }
        let port = url.port_or_known_default().unwrap_or(80);
        let blocked = |reason| FetchError::Blocked {
            url: url.to_string(),
            reason,
        };
        let addrs: Vec<SocketAddr> = match url.host() {
            Some(Host::Ipv4(ip)) => vec![SocketAddr::new(ip.into(), port)],
            Some(Host::Ipv6(ip)) => vec![SocketAddr::new(ip.into(), port)],
            Some(Host::Domain(name)) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                if name == "localhost" || name.ends_with(".localhost") {
                    return Err(blocked(Forbidden::Loopback));
                }
                if let Some(addr) = self.overrides.get(&name) {
                    let port = url.port().unwrap_or(addr.port());
                    return guard::check(SocketAddr::new(addr.ip(), port), &self.allow).map_err(blocked);
                }
                self.dns
                    .lookup(&name, port)
                    .await
                    .map_err(|e| FetchError::Unreachable(format!("cannot resolve {name}: {e}")))?
            }
            None => return Err(FetchError::BadUrl("no host".into())),
        };
        if addrs.is_empty() {
            return Err(FetchError::Unreachable("no address".into()));
        }
        for addr in addrs {
            guard::check(addr, &self.allow).map_err(blocked)?;
        }
        Ok(())
    }

    fn host_permit(&self, host: &str) -> Arc<Semaphore> {
        let mut hosts = self.hosts.lock().expect("hosts lock");
        if hosts.len() > 10_000 {
            hosts.retain(|_, s| Arc::strong_count(s) > 1);
        }
        hosts
            .entry(host.to_string())
            .or_insert_with(|| Arc::new(Semaphore::new(self.config.per_host_concurrency.max(1))))
            .clone()
    }
}

/// reqwest's resolver, refusing forbidden addresses at connect time too.
struct GuardedResolver {
    allow: Allow,
    dns: dns::Dns,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let (allow, dns) = (self.allow.clone(), self.dns);
        Box::pin(async move {
            let host = name.as_str().to_string();
            let addrs: Vec<SocketAddr> = dns
                .lookup(&host, 0)
                .await?
                .into_iter()
                .filter(|a| guard::classify(a.ip()).is_none() || allow.permits_ip(a.ip()))
                .collect();
            if addrs.is_empty() {
                let err: Box<dyn std::error::Error + Send + Sync> =
                    format!("{host}: every address is forbidden by the SSRF guard").into();
                return Err(err);
            }
            let iter: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(iter)
        })
    }
}

/// Decodes a body by the Content-Type charset, else a `<meta charset>` in the first 2 KiB,
/// else UTF-8 (a BOM wins over both).
pub fn decode(body: &[u8], content_type: &str) -> String {
    let label = charset_param(content_type).or_else(|| meta_charset(&body[..body.len().min(2048)]));
    let encoding = label
        .and_then(|l| encoding_rs::Encoding::for_label(l.as_bytes()))
        .unwrap_or(encoding_rs::UTF_8);
    let (text, _, _) = encoding.decode(body);
    text.into_owned()
}

fn charset_param(content_type: &str) -> Option<String> {
    content_type
        .split(';')
        .filter_map(|p| p.trim().strip_prefix("charset="))
        .map(|c| c.trim_matches(['"', '\'']).to_string())
        .next()
}

fn meta_charset(head: &[u8]) -> Option<String> {
    let head = String::from_utf8_lossy(head).to_ascii_lowercase();
    let i = head.find("charset=")?;
    let rest = head[i + 8..].trim_start_matches(['"', '\'']);
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| rest[..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charset_decoding() {
        let latin1 = b"<html><head><meta charset=\"iso-8859-1\"></head><body>caf\xe9</body></html>";
        assert!(decode(latin1, "text/html").contains("café"));
        assert!(decode(b"caf\xe9", "text/html; charset=windows-1252").contains("café"));
        assert_eq!(decode("café".as_bytes(), "text/html"), "café");
        assert_eq!(decode(b"\xef\xbb\xbfhi", "text/html; charset=iso-8859-1"), "hi");
    }
}
