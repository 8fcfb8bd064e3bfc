//! Name resolution for the fetcher: the system resolver (`getaddrinfo`), or — TEST ONLY, when
//! `fetch.test_dns` names one — a DNS server asked directly over UDP for A records, so a test
//! can play a rebinding server (a public address first, loopback after) and prove that the
//! connect-time guard, not only the pre-check, refuses it. A minimal client: one question,
//! A records only, a 2 s timeout.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

/// Where names are resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dns {
    System,
    /// TEST ONLY: this server, over UDP.
    Server(SocketAddr),
}

impl Dns {
    /// The addresses of `host` (with `port`).
    pub async fn lookup(&self, host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
        match self {
            Dns::System => Ok(tokio::net::lookup_host((host, port)).await?.collect()),
            Dns::Server(server) => Ok(query_a(*server, host)
                .await?
                .into_iter()
                .map(|ip| SocketAddr::new(IpAddr::V4(ip), port))
                .collect()),
        }
    }
}

fn invalid(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string())
}

/// Asks `server` for the A records of `name`.
async fn query_a(server: SocketAddr, name: &str) -> std::io::Result<Vec<Ipv4Addr>> {
    let id: u16 = rand_id();
    let mut q = Vec::with_capacity(512);
    q.extend_from_slice(&id.to_be_bytes());
    q.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]); // RD; one question
    for label in name.trim_end_matches('.').split('.') {
        if label.is_empty() || label.len() > 63 {
            return Err(invalid("bad DNS name"));
        }
        q.push(label.len() as u8);
        q.extend_from_slice(label.as_bytes());
    }
    q.extend_from_slice(&[0, 0, 1, 0, 1]); // end of name, type A, class IN
    let socket = tokio::net::UdpSocket::bind(("127.0.0.1", 0)).await?;
    socket.send_to(&q, server).await?;
    let mut buf = [0u8; 1500];
    let n = tokio::time::timeout(Duration::from_secs(2), socket.recv(&mut buf))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "DNS timeout"))??;
    parse_a(&buf[..n], id)
}

/// The A records of a DNS answer to query `id`.
fn parse_a(msg: &[u8], id: u16) -> std::io::Result<Vec<Ipv4Addr>> {
    if msg.len() < 12 || u16::from_be_bytes([msg[0], msg[1]]) != id {
        return Err(invalid("not the answer to our DNS query"));
    }
    let questions = u16::from_be_bytes([msg[4], msg[5]]);
    let answers = u16::from_be_bytes([msg[6], msg[7]]);
    let mut at = 12;
    for _ in 0..questions {
        at = skip_name(msg, at)? + 4;
    }
    let mut out = Vec::new();
    for _ in 0..answers {
        at = skip_name(msg, at)?;
        let field = |i: usize| msg.get(at + i).copied().ok_or_else(|| invalid("short DNS answer"));
        let kind = u16::from_be_bytes([field(0)?, field(1)?]);
        let len = u16::from_be_bytes([field(8)?, field(9)?]) as usize;
        let data = msg
            .get(at + 10..at + 10 + len)
            .ok_or_else(|| invalid("short DNS answer"))?;
        if kind == 1 && len == 4 {
            out.push(Ipv4Addr::new(data[0], data[1], data[2], data[3]));
        }
        at += 10 + len;
    }
    Ok(out)
}

/// The position after a (possibly compressed) name.
fn skip_name(msg: &[u8], mut at: usize) -> std::io::Result<usize> {
    loop {
        let len = *msg.get(at).ok_or_else(|| invalid("short DNS name"))?;
        match len {
            0 => return Ok(at + 1),
            l if l & 0xC0 == 0xC0 => return Ok(at + 2),
            l => at += 1 + l as usize,
        }
    }
}

fn rand_id() -> u16 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    (nanos ^ (nanos >> 16)) as u16
}
