//! The warning for a server that listens beyond this machine (spec/live.md "Endpoints"): the
//! endpoints have no authentication, and they carry host names, brick names and traces.

use std::net::SocketAddr;

/// One line to show (on stderr) when `addr` is not a loopback address: `0.0.0.0` or `::`
/// (every interface) or a network interface's own address. `None` on loopback.
pub(crate) fn exposure_warning(addr: SocketAddr) -> Option<String> {
    if addr.ip().is_loopback() {
        return None;
    }
    let whom = if addr.ip().is_unspecified() {
        "every network interface"
    } else {
        "a network interface"
    };
    Some(format!(
        "warning: serving on {addr}, {whom}: the endpoints have no authentication, and anyone \
         who can reach this port reads the profile (host name, brick names, timings) and its \
         traces; bind 127.0.0.1 unless that is what you want"
    ))
}

#[cfg(test)]
mod tests {
    use super::exposure_warning;

    /// spec/live.md "Endpoints": an address beyond loopback gets a warning that says the
    /// endpoints have no authentication; loopback none. (Was tests/front_doors/serve.rs.)
    #[test]
    fn a_server_beyond_loopback_is_warned_about() {
        for addr in ["127.0.0.1:9184", "[::1]:9184", "127.0.0.2:80"] {
            assert_eq!(exposure_warning(addr.parse().unwrap()), None, "{addr}");
        }
        for addr in ["0.0.0.0:9184", "[::]:9184", "192.168.1.5:9184"] {
            let w = exposure_warning(addr.parse().unwrap()).expect(addr);
            assert!(w.contains("no authentication"), "{w}");
        }
        let w = exposure_warning("0.0.0.0:9184".parse().unwrap()).unwrap();
        assert!(w.contains("every network interface"), "{w}");
    }
}
