//! A client of the live server (spec/live.md) for the serve tests: one GET over loopback, and a
//! small parser of the Prometheus text exposition.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A response: status and body.
pub fn get(addr: SocketAddr, path: &str) -> (u16, Vec<u8>) {
    request(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes(),
    )
}

pub fn request(addr: SocketAddr, raw: &[u8]) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let _ = s.write_all(raw);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    parse_response(&out).unwrap_or((0, Vec::new()))
}

pub fn parse_response(out: &[u8]) -> Option<(u16, Vec<u8>)> {
    let end = out.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&out[..end]).ok()?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, out[end + 4..].to_vec()))
}

/// A sample of the exposition: name, labels, value.
#[derive(Debug, Clone)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// A small parser of the Prometheus text format (what these metrics use of it: no escapes in
/// label values, no timestamps).
pub fn parse_metrics(text: &str) -> Vec<Sample> {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("a sample line");
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            v => v.parse().expect("a number"),
        };
        let (name, labels) = match series.split_once('{') {
            Some((n, rest)) => {
                let body = rest.strip_suffix('}').expect("closed labels");
                let labels = body
                    .split("\",")
                    .filter(|p| !p.is_empty())
                    .map(|p| {
                        let (k, v) = p.split_once("=\"").expect("key=\"value\"");
                        (k.to_string(), v.trim_end_matches('"').to_string())
                    })
                    .collect();
                (n.to_string(), labels)
            }
            None => (series.to_string(), BTreeMap::new()),
        };
        out.push(Sample {
            name,
            labels,
            value,
        });
    }
    out
}

pub fn scrape(addr: SocketAddr) -> Vec<Sample> {
    let (status, body) = get(addr, "/metrics");
    assert_eq!(status, 200);
    parse_metrics(&String::from_utf8(body).unwrap())
}

pub fn value(samples: &[Sample], name: &str) -> f64 {
    samples
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("{name} missing"))
        .value
}
