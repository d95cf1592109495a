//! The client address of a request behind trusted proxies, over the `ipnet` crate's networks.
//!
//! [`parse_list`] reads `TRUSTED_PROXIES` (CIDR blocks such as `10.0.0.0/8` or bare
//! addresses), [`client_ip`] picks the client's address from the socket peer and
//! `X-Forwarded-For` values, trusting the header only as far as the configured proxies reach,
//! and [`counting_unit`] is the network a client's failed sign-ins are counted under.

pub(crate) use ipnet::IpNet;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

/// Reads one network: `a.b.c.d/n` (n ≤ 32), `ipv6/n` (n ≤ 128), or a bare address, which is a
/// network of one. Surrounding blanks are ignored; `None` for anything else.
pub(crate) fn parse_net(s: &str) -> Option<IpNet> {
    let s = s.trim();
    if s.contains('/') {
        s.parse().ok()
    } else {
        s.parse::<IpAddr>().ok().map(IpNet::from)
    }
}

/// Parses a comma-separated list of networks (`TRUSTED_PROXIES`); blanks are skipped.
///
/// # Errors
///
/// The first entry that is not an address or CIDR block, as written.
pub(crate) fn parse_list(list: &str) -> Result<Vec<IpNet>, String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| parse_net(s).ok_or_else(|| s.to_owned()))
        .collect()
}

/// Whether `ip` lies in `net`. An IPv4-mapped IPv6 address (`::ffff:10.0.0.1`) counts as its
/// IPv4 address.
pub(crate) fn contains(net: &IpNet, ip: IpAddr) -> bool {
    net.contains(&canonical(ip))
}

/// An IPv4-mapped IPv6 address as IPv4; anything else unchanged.
pub(crate) fn canonical(ip: IpAddr) -> IpAddr {
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
pub(crate) fn client_ip<'a>(
    peer: Option<IpAddr>,
    forwarded_for: impl IntoIterator<Item = &'a str>,
    trusted: &[IpNet],
) -> Option<IpAddr> {
    let peer = canonical(peer?);
    let is_trusted = |ip: IpAddr| trusted.iter().any(|net| contains(net, ip));
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
        v4 @ IpAddr::V4(_) => IpNet::from(v4),
        v6 => IpNet::new(v6, 64).map_or(IpNet::from(v6), |n| n.trunc()),
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
        let net = |s: &str| parse_net(s).unwrap();
        let n = net("10.0.0.0/8");
        assert_eq!((n.addr(), n.prefix_len()), (ip("10.0.0.0"), 8));
        assert_eq!(net("192.0.2.1").prefix_len(), 32);
        assert_eq!(net("2001:db8::/32").prefix_len(), 32);
        assert_eq!(net("::1").prefix_len(), 128);
        assert_eq!(net(" 10.1.2.3/24 ").to_string(), "10.1.2.3/24");
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
            assert!(parse_net(bad).is_none(), "{bad:?} must be refused");
        }
        assert_eq!(nets(" 10.0.0.0/8, ,::1 ").len(), 2);
        assert_eq!(nets("").len(), 0);
        assert_eq!(parse_list("10.0.0.0/8, nope ,::1"), Err("nope".to_owned()));
    }

    #[test]
    fn cidr_matching() {
        let n = parse_net("10.0.0.0/8").unwrap();
        assert!(contains(&n, ip("10.255.1.2")));
        assert!(
            contains(&n, ip("::ffff:10.0.0.1")),
            "IPv4-mapped counts as IPv4"
        );
        assert!(!contains(&n, ip("11.0.0.1")));
        assert!(!contains(&n, ip("::1")));
        let n = parse_net("192.168.1.128/25").unwrap();
        assert!(contains(&n, ip("192.168.1.200")));
        assert!(!contains(&n, ip("192.168.1.127")));
        let all = parse_net("0.0.0.0/0").unwrap();
        assert!(contains(&all, ip("203.0.113.9")));
        assert!(!contains(&all, ip("2001:db8::1")));
        let n = parse_net("2001:db8::/32").unwrap();
        assert!(contains(&n, ip("2001:db8:ffff::1")));
        assert!(!contains(&n, ip("2001:db9::1")));
        let one = parse_net("::1").unwrap();
        assert!(contains(&one, ip("::1")) && !contains(&one, ip("::2")));
        let all6 = parse_net("::/0").unwrap();
        assert!(contains(&all6, ip("fe80::1")));
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
