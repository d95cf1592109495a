//! IP networks (CIDR blocks) and the client address of a request behind trusted proxies.
//!
//! Pure functions over `std::net`: [`IpNet`] parses `10.0.0.0/8`, `2001:db8::/32` or a bare
//! address, and [`client_ip`] picks the client's address from the socket peer and
//! `X-Forwarded-For` values, trusting the header only as far as the configured proxies reach.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::str::FromStr;

/// An IP network: an address and a prefix length (`192.168.0.0/16`, `::1/128`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNet {
    addr: IpAddr,
    prefix: u8,
}

impl IpNet {
    /// The network of `addr` with the first `prefix` bits significant; `None` when `prefix` is
    /// longer than the address (32 bits for IPv4, 128 for IPv6).
    pub fn new(addr: IpAddr, prefix: u8) -> Option<IpNet> {
        let max = match addr {
            IpAddr::V4(_) => 32,
            IpAddr::V6(_) => 128,
        };
        (prefix <= max).then_some(IpNet { addr, prefix })
    }

    /// The network's address as written.
    pub fn addr(&self) -> IpAddr {
        self.addr
    }

    /// The prefix length.
    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// Whether `ip` lies in this network. An IPv4-mapped IPv6 address (`::ffff:10.0.0.1`)
    /// counts as its IPv4 address.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, canonical(ip)) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => prefix_eq(
                u128::from(net.to_bits()),
                u128::from(ip.to_bits()),
                32,
                self.prefix,
            ),
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                prefix_eq(net.to_bits(), ip.to_bits(), 128, self.prefix)
            }
            _ => false,
        }
    }
}

/// Whether the first `prefix` of `width` bits of `a` and `b` agree.
fn prefix_eq(a: u128, b: u128, width: u32, prefix: u8) -> bool {
    let prefix = u32::from(prefix);
    if prefix == 0 {
        return true;
    }
    let shift = width - prefix.min(width);
    (a >> shift) == (b >> shift)
}

impl fmt::Display for IpNet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// Why a network could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an IP address or CIDR block: {0:?}")]
pub struct IpNetError(pub String);

impl FromStr for IpNet {
    type Err = IpNetError;

    /// `a.b.c.d`, `a.b.c.d/n` (n ≤ 32), an IPv6 address, or `ipv6/n` (n ≤ 128). A bare
    /// address is a network of one.
    fn from_str(s: &str) -> Result<IpNet, IpNetError> {
        let bad = || IpNetError(s.to_owned());
        let s = s.trim();
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => {
                let addr: IpAddr = a.parse().map_err(|_| bad())?;
                if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(bad());
                }
                let prefix: u8 = p.parse().map_err(|_| bad())?;
                (addr, prefix)
            }
            None => {
                let addr: IpAddr = s.parse().map_err(|_| bad())?;
                let full = if addr.is_ipv4() { 32 } else { 128 };
                (addr, full)
            }
        };
        IpNet::new(addr, prefix).ok_or_else(bad)
    }
}

/// Parses a comma-separated list of networks (`TRUSTED_PROXIES`); blanks are skipped.
///
/// # Errors
///
/// The first entry that is not an address or CIDR block.
pub fn parse_list(list: &str) -> Result<Vec<IpNet>, IpNetError> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::parse)
        .collect()
}

/// An IPv4-mapped IPv6 address as IPv4; anything else unchanged.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// Reads one `X-Forwarded-For` entry: an address, optionally with a port
/// (`203.0.113.7:4711`, `[2001:db8::1]:80`) or in brackets.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim();
    if let Ok(ip) = hop.parse::<IpAddr>() {
        return Some(canonical(ip));
    }
    if let Ok(sock) = hop.parse::<SocketAddr>() {
        return Some(canonical(sock.ip()));
    }
    hop.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .and_then(|h| h.parse::<Ipv6Addr>().ok())
        .map(|ip| canonical(IpAddr::V6(ip)))
}

/// The client's address.
///
/// Without a peer there is no address. When the peer is not in `trusted`, it is the client,
/// whatever the headers say. Otherwise the `X-Forwarded-For` values (all headers, in order,
/// each a comma-separated list) are read from right to left, skipping trusted proxies: the
/// first untrusted address is the client. When every hop is trusted, the left-most one is the
/// client; when an entry cannot be read, the hop to its right (the proxy that appended it) is
/// taken, since nothing left of it can be believed.
pub fn client_ip<'a>(
    peer: Option<IpAddr>,
    forwarded_for: impl IntoIterator<Item = &'a str>,
    trusted: &[IpNet],
) -> Option<IpAddr> {
    let peer = canonical(peer?);
    let is_trusted = |ip: IpAddr| trusted.iter().any(|net| net.contains(ip));
    if !is_trusted(peer) {
        return Some(peer);
    }
    let hops: Vec<&str> = forwarded_for
        .into_iter()
        .flat_map(|v| v.split(','))
        .collect();
    let mut client = peer;
    for hop in hops.iter().rev() {
        match parse_hop(hop) {
            Some(ip) => {
                client = ip;
                if !is_trusted(ip) {
                    break;
                }
            }
            None => break,
        }
    }
    Some(client)
}

/// The unit an address is counted in: an IPv4 address itself, an IPv6 address by its /64
/// network (one subscriber usually holds a whole /64, so counting single IPv6 addresses would
/// let one client spread its attempts over billions of them).
pub(crate) fn counting_unit(ip: IpAddr) -> IpNet {
    match canonical(ip) {
        IpAddr::V4(v4) => IpNet {
            addr: IpAddr::V4(v4),
            prefix: 32,
        },
        IpAddr::V6(v6) => {
            let bits = v6.to_bits() & !((1u128 << 64) - 1);
            IpNet {
                addr: IpAddr::V6(Ipv6Addr::from_bits(bits)),
                prefix: 64,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn nets(s: &str) -> Vec<IpNet> {
        parse_list(s).unwrap()
    }

    #[test]
    fn cidr_parsing() {
        let n: IpNet = "10.0.0.0/8".parse().unwrap();
        assert_eq!((n.addr(), n.prefix()), (ip("10.0.0.0"), 8));
        assert_eq!("192.0.2.1".parse::<IpNet>().unwrap().prefix(), 32);
        assert_eq!("2001:db8::/32".parse::<IpNet>().unwrap().prefix(), 32);
        assert_eq!("::1".parse::<IpNet>().unwrap().prefix(), 128);
        assert_eq!(
            " 10.1.2.3/24 ".parse::<IpNet>().unwrap().to_string(),
            "10.1.2.3/24"
        );
        for bad in [
            "",
            "10.0.0.0/33",
            "::/129",
            "10.0.0/8",
            "10.0.0.0/",
            "10.0.0.0/+8",
            "10.0.0.0/8/1",
            "example.com",
            "10.0.0.0/-1",
            "10.0.0.0/ 8",
            "1.2.3.4:80",
        ] {
            assert!(bad.parse::<IpNet>().is_err(), "{bad:?} must be refused");
        }
        assert_eq!(nets(" 10.0.0.0/8, ,::1 ").len(), 2);
        assert_eq!(nets("").len(), 0);
        let e = parse_list("10.0.0.0/8,nope").unwrap_err();
        assert_eq!(e.0, "nope");
    }

    #[test]
    fn cidr_matching() {
        let n: IpNet = "10.0.0.0/8".parse().unwrap();
        assert!(n.contains(ip("10.255.1.2")));
        assert!(
            n.contains(ip("::ffff:10.0.0.1")),
            "IPv4-mapped counts as IPv4"
        );
        assert!(!n.contains(ip("11.0.0.1")));
        assert!(!n.contains(ip("::1")));
        let n: IpNet = "192.168.1.128/25".parse().unwrap();
        assert!(n.contains(ip("192.168.1.200")));
        assert!(!n.contains(ip("192.168.1.127")));
        let all: IpNet = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains(ip("203.0.113.9")));
        assert!(!all.contains(ip("2001:db8::1")));
        let n: IpNet = "2001:db8::/32".parse().unwrap();
        assert!(n.contains(ip("2001:db8:ffff::1")));
        assert!(!n.contains(ip("2001:db9::1")));
        let one: IpNet = "::1".parse().unwrap();
        assert!(one.contains(ip("::1")) && !one.contains(ip("::2")));
        let all6: IpNet = "::/0".parse().unwrap();
        assert!(all6.contains(ip("fe80::1")));
    }

    #[test]
    fn forwarded_for_is_ignored_without_trusted_proxies() {
        let peer = Some(ip("198.51.100.7"));
        assert_eq!(client_ip(peer, ["203.0.113.1"], &[]), peer);
        assert_eq!(client_ip(None, ["203.0.113.1"], &[]), None);
        // A peer outside the trusted list is the client, even with the header.
        let trusted = nets("10.0.0.0/8");
        assert_eq!(client_ip(peer, ["203.0.113.1"], &trusted), peer);
    }

    #[test]
    fn forwarded_for_behind_trusted_proxies() {
        let trusted = nets("10.0.0.0/8, 192.0.2.10");
        let peer = Some(ip("10.0.0.2"));
        // The right-most untrusted hop is the client; spoofed entries left of it are ignored.
        assert_eq!(
            client_ip(peer, ["1.1.1.1, 203.0.113.5, 192.0.2.10"], &trusted),
            Some(ip("203.0.113.5"))
        );
        // Several headers are one list, in order.
        assert_eq!(
            client_ip(peer, ["1.1.1.1", "203.0.113.5", "10.9.9.9"], &trusted),
            Some(ip("203.0.113.5"))
        );
        // Ports and brackets.
        assert_eq!(
            client_ip(peer, ["203.0.113.5:4711"], &trusted),
            Some(ip("203.0.113.5"))
        );
        assert_eq!(
            client_ip(peer, ["[2001:db8::5]:80"], &trusted),
            Some(ip("2001:db8::5"))
        );
        assert_eq!(
            client_ip(peer, ["[2001:db8::5]"], &trusted),
            Some(ip("2001:db8::5"))
        );
        // No header: the proxy itself.
        assert_eq!(client_ip(peer, [], &trusted), peer);
        // Every hop trusted: the left-most.
        assert_eq!(
            client_ip(peer, ["10.1.1.1, 10.2.2.2"], &trusted),
            Some(ip("10.1.1.1"))
        );
        // An unreadable entry: the hop to its right.
        assert_eq!(
            client_ip(peer, ["203.0.113.5, garbage, 10.3.3.3"], &trusted),
            Some(ip("10.3.3.3"))
        );
        assert_eq!(client_ip(peer, ["garbage"], &trusted), peer);
        assert_eq!(client_ip(peer, [""], &trusted), peer);
        // IPv4-mapped peers match IPv4 networks.
        assert_eq!(
            client_ip(Some(ip("::ffff:10.0.0.2")), ["203.0.113.5"], &trusted),
            Some(ip("203.0.113.5"))
        );
    }

    #[test]
    fn ipv6_counts_by_its_64() {
        assert_eq!(
            counting_unit(ip("2001:db8:1:2:aaaa::1")).to_string(),
            "2001:db8:1:2::/64"
        );
        assert_eq!(
            counting_unit(ip("203.0.113.5")).to_string(),
            "203.0.113.5/32"
        );
        assert_eq!(
            counting_unit(ip("::ffff:203.0.113.5")).to_string(),
            "203.0.113.5/32"
        );
    }
}
