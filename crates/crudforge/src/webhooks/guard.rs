//! The guard in front of every endpoint: only `http` and `https`, the host resolved once and
//! its address checked (private, loopback, link-local and other non-public addresses refused
//! unless `WEBHOOKS_ALLOW_NETWORKS` allows them), the client pinned to that address (a second
//! lookup cannot move it), no redirects followed, no proxy, a timeout.

use crate::net::{canonical, contains, IpNet};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;
use url::Url;

/// An endpoint's address, checked.
///
/// # Errors
///
/// A message naming what is refused: the scheme, a URL without host, a host that does not
/// resolve, or one that resolves only to addresses the guard refuses.
pub(crate) async fn resolve(url: &Url, allow: &[IpNet]) -> Result<SocketAddr, String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("the scheme {} is not http or https", url.scheme()));
    }
    let host = url
        .host_str()
        .ok_or_else(|| "the URL has no host".to_owned())?;
    let port = url
        .port_or_known_default()
        .ok_or_else(|| "the URL has no port".to_owned())?;
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let found: Vec<SocketAddr> = match bare.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((bare, port))
            .await
            .map_err(|e| format!("{host} does not resolve: {e}"))?
            .collect(),
    };
    found
        .iter()
        .copied()
        .find(|a| allowed(a.ip(), allow))
        .ok_or_else(|| match found.first() {
            Some(a) => format!(
                "{host} resolves to {}, a private, loopback or link-local address (WEBHOOKS_ALLOW_NETWORKS allows such addresses)",
                a.ip()
            ),
            None => format!("{host} does not resolve"),
        })
}

/// Whether the guard lets a message go to `ip`: a public address, or one `allow` names.
pub(crate) fn allowed(ip: IpAddr, allow: &[IpNet]) -> bool {
    public(canonical(ip)) || allow.iter().any(|n| contains(n, ip))
}

/// Whether `ip` is an address of the public internet.
fn public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                // Shared address space (carrier-grade NAT) and the reserved 240.0.0.0/4.
                || (a == 100 && (64..128).contains(&b))
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                // Unique local (fc00::/7) and link-local (fe80::/10).
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80)
        }
    }
}

/// The client of one endpoint: pinned to `addr` for the URL's host, no redirects, no proxy,
/// `timeout` for each attempt.
///
/// # Errors
///
/// The TLS stack could not be set up.
pub(crate) fn client(
    url: &Url,
    addr: SocketAddr,
    timeout: Duration,
) -> Result<reqwest::Client, String> {
    let mut b = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(timeout)
        .connect_timeout(timeout)
        .user_agent(concat!("crudforge-webhooks/", env!("CARGO_PKG_VERSION")));
    if let Some(host) = url.host_str() {
        b = b.resolve(host, addr);
    }
    b.build().map_err(|e| format!("the HTTP client: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn non_public_addresses_are_refused_unless_allowed() {
        for refused in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "255.255.255.255",
            "224.0.0.1",
        ] {
            assert!(!allowed(ip(refused), &[]), "{refused}");
        }
        for public in ["93.184.216.34", "2606:4700::1111", "::ffff:93.184.216.34"] {
            assert!(allowed(ip(public), &[]), "{public}");
        }
        let allow = crate::net::parse_list("127.0.0.0/8, fd00::/8").unwrap();
        assert!(allowed(ip("127.0.0.1"), &allow));
        assert!(allowed(ip("::ffff:127.0.0.1"), &allow));
        assert!(allowed(ip("fd00::1"), &allow));
        assert!(!allowed(ip("10.0.0.1"), &allow));
    }

    #[tokio::test]
    async fn an_endpoint_is_checked_after_its_lookup() {
        let url = |s: &str| Url::parse(s).unwrap();
        let e = resolve(&url("http://127.0.0.1:9/hook"), &[])
            .await
            .unwrap_err();
        assert!(
            e.contains("127.0.0.1") && e.contains("WEBHOOKS_ALLOW_NETWORKS"),
            "{e}"
        );
        let e = resolve(&url("http://localhost:9/hook"), &[])
            .await
            .unwrap_err();
        assert!(e.contains("loopback"), "{e}");
        let e = resolve(&url("ftp://example.com/"), &[]).await.unwrap_err();
        assert!(e.contains("scheme"), "{e}");
        let allow = crate::net::parse_list("127.0.0.0/8, ::1").unwrap();
        let a = resolve(&url("http://127.0.0.1:9/hook"), &allow)
            .await
            .unwrap();
        assert_eq!(a.port(), 9);
        let a = resolve(&url("http://[::1]/hook"), &allow).await.unwrap();
        assert_eq!(a, "[::1]:80".parse().unwrap());
    }
}
