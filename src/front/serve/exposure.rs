//! The warning for a server that listens beyond this machine (spec/live.md "Endpoints"): the
//! endpoints have no authentication, and they carry host names, brick names and traces.

use std::net::SocketAddr;

/// One line to show (on stderr) when `addr` is not a loopback address: `0.0.0.0` or `::`
/// (every interface) or a network interface's own address. `None` on loopback.
pub fn exposure_warning(addr: SocketAddr) -> Option<String> {
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
