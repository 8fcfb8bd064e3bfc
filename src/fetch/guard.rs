//! The SSRF guard: which addresses a fetch may reach. Everything that is not globally routable
//! unicast is refused — loopback, private, link-local (cloud metadata lives there), CGNAT,
//! multicast, broadcast, unspecified, reserved and documentation ranges — and IPv6 forms that
//! embed an IPv4 address (mapped, compatible, NAT64, 6to4) are judged by that address.
//! Tests reach loopback peers only through an explicit allowlist of exact `IP:port` pairs.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Why an address is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forbidden {
    Unspecified,
    Loopback,
    Private,
    LinkLocal,
    SharedCgnat,
    Multicast,
    Broadcast,
    Reserved,
    Documentation,
    UniqueLocal,
    Tunnel,
}

impl Forbidden {
    pub fn as_str(self) -> &'static str {
        match self {
            Forbidden::Unspecified => "unspecified address",
            Forbidden::Loopback => "loopback address",
            Forbidden::Private => "private address",
            Forbidden::LinkLocal => "link-local address (cloud metadata)",
            Forbidden::SharedCgnat => "shared (CGNAT) address",
            Forbidden::Multicast => "multicast address",
            Forbidden::Broadcast => "broadcast address",
            Forbidden::Reserved => "reserved address",
            Forbidden::Documentation => "documentation address",
            Forbidden::UniqueLocal => "unique-local IPv6 address",
            Forbidden::Tunnel => "tunnel (Teredo/6to4) address",
        }
    }
}

/// `Some(reason)` when `ip` must not be contacted.
pub fn classify(ip: IpAddr) -> Option<Forbidden> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<Forbidden> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (0, _, _) => Forbidden::Unspecified,
        (127, _, _) => Forbidden::Loopback,
        (10, _, _) => Forbidden::Private,
        (172, 16..=31, _) => Forbidden::Private,
        (192, 168, _) => Forbidden::Private,
        (169, 254, _) => Forbidden::LinkLocal,
        (100, 64..=127, _) => Forbidden::SharedCgnat,
        (192, 0, 0) => Forbidden::Reserved,
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => Forbidden::Documentation,
        (198, 18..=19, _) => Forbidden::Reserved,
        (192, 88, 99) => Forbidden::Tunnel,
        (224..=239, _, _) => Forbidden::Multicast,
        (255, 255, 255) if ip == Ipv4Addr::BROADCAST => Forbidden::Broadcast,
        (240..=255, _, _) => Forbidden::Reserved,
        _ => return None,
    })
}

fn classify_v6(ip: Ipv6Addr) -> Option<Forbidden> {
    if ip.is_unspecified() {
        return Some(Forbidden::Unspecified);
    }
    if ip.is_loopback() {
        return Some(Forbidden::Loopback);
    }
    let s = ip.segments();
    // IPv4-mapped ::ffff:a.b.c.d and the deprecated IPv4-compatible ::a.b.c.d.
    if s[..5] == [0, 0, 0, 0, 0] && (s[5] == 0xffff || s[5] == 0) {
        let v4 = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
        return classify_v4(v4).or(Some(Forbidden::Reserved).filter(|_| s[5] == 0));
    }
    // NAT64 64:ff9b::/96 embeds an IPv4 address.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        let v4 = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
        return classify_v4(v4);
    }
    Some(match s[0] {
        0xfc00..=0xfdff => Forbidden::UniqueLocal,
        0xfe80..=0xfebf => Forbidden::LinkLocal,
        0xfec0..=0xfeff => Forbidden::Private,
        0xff00..=0xffff => Forbidden::Multicast,
        0x2001 if s[1] == 0x0db8 => Forbidden::Documentation,
        0x2001 if s[1] == 0 => Forbidden::Tunnel,
        0x2002 => Forbidden::Tunnel,
        0x0100 if s[1..4] == [0, 0, 0] => Forbidden::Reserved,
        0x0000..=0x00ff => Forbidden::Reserved,
        _ => return None,
    })
}

/// The allowlist of exact socket addresses a test may reach despite the guard.
#[derive(Debug, Clone, Default)]
pub struct Allow(Vec<SocketAddr>);

impl Allow {
    pub fn new(addrs: Vec<SocketAddr>) -> Allow {
        Allow(addrs)
    }

    pub fn permits(&self, addr: SocketAddr) -> bool {
        self.0.contains(&addr)
    }

    /// Whether any allowlisted address has this IP (the DNS layer does not know the port).
    pub fn permits_ip(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|a| a.ip() == ip)
    }
}

/// Checks one resolved address against the guard and the allowlist.
pub fn check(addr: SocketAddr, allow: &Allow) -> Result<(), Forbidden> {
    match classify(addr.ip()) {
        Some(_) if allow.permits(addr) => Ok(()),
        Some(reason) => Err(reason),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_table() {
        let blocked: &[&str] = &[
            "0.0.0.0",
            "0.1.2.3",
            "127.0.0.1",
            "127.255.255.254",
            "10.0.0.1",
            "10.255.255.255",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "169.254.0.1",
            "100.64.0.1",
            "100.100.100.200",
            "100.127.255.255",
            "224.0.0.1",
            "239.255.255.250",
            "255.255.255.255",
            "240.0.0.1",
            "192.0.0.8",
            "192.0.2.1",
            "198.51.100.7",
            "203.0.113.9",
            "198.18.0.1",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "fc00::1",
            "fd00:ec2::254",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "2001::1",
            "2002:7f00:1::",
            "100::1",
        ];
        for ip in blocked {
            assert!(classify(ip.parse().unwrap()).is_some(), "{ip} must be blocked");
        }
        let allowed: &[&str] = &[
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "172.15.0.1",
            "172.32.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "192.169.0.1",
            "2606:4700:4700::1111",
            "2a00:1450:4001::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ];
        for ip in allowed {
            assert_eq!(classify(ip.parse().unwrap()), None, "{ip} must be allowed");
        }
    }

    #[test]
    fn allowlist_is_exact() {
        let allow = Allow::new(vec!["127.0.0.1:8080".parse().unwrap()]);
        assert!(check("127.0.0.1:8080".parse().unwrap(), &allow).is_ok());
        assert_eq!(
            check("127.0.0.1:8081".parse().unwrap(), &allow),
            Err(Forbidden::Loopback)
        );
        assert_eq!(check("[::1]:8080".parse().unwrap(), &allow), Err(Forbidden::Loopback));
        assert!(check("8.8.8.8:443".parse().unwrap(), &Allow::default()).is_ok());
    }
}
