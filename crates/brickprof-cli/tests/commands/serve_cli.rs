//! spec/live.md "Command line": `brickprof demo --serve 127.0.0.1:0 --duration 3` answers
//! /metrics, /profile (which `brickprof report` loads) and /trace?passes=2 (which `brickprof
//! convert` reads) while it generates, then saves as usual. Loopback, port 0.
#![cfg(feature = "serve")]

use crate::common::cli;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::Duration;

fn get(addr: &str, path: &str) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let end = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&out[..end]).into_owned();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, out[end + 4..].to_vec())
}

#[test]
fn demo_serve_answers_metrics_profile_and_trace() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let mut child = cli::bin()
        .args(cli::demo_args(
            &out,
            &["--serve", "127.0.0.1:0", "--duration", "3"],
        ))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();

    // Scraped until the first decode pass is in (the server answers before the first pass).
    let decode_bucket = |text: &str| {
        text.lines().any(|l| {
            l.starts_with("brickprof_brick_seconds_bucket{")
                && l.contains("brick=\"QkvProjection\"")
                && l.contains("phase=\"decode\"")
        })
    };
    let mut text = String::new();
    for _ in 0..1000 {
        let (status, body) = get(&addr, "/metrics");
        assert_eq!(status, 200);
        text = String::from_utf8(body).unwrap();
        if decode_bucket(&text) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(decode_bucket(&text), "{text}");

    let (status, profile) = get(&addr, "/profile");
    assert_eq!(status, 200);
    let profile_path = dir.path().join("live.json");
    std::fs::write(&profile_path, profile).unwrap();
    let report = cli::brickprof(&["report", profile_path.to_str().unwrap()]);
    assert!(report.status.success(), "{:?}", cli::text(&report));

    let (status, trace) = get(&addr, "/trace?passes=2");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&trace));
    let trace_path = dir.path().join("live.pftrace");
    std::fs::write(&trace_path, trace).unwrap();
    let json = dir.path().join("live.json.trace");
    let convert = cli::brickprof(&[
        "convert",
        trace_path.to_str().unwrap(),
        "-o",
        json.to_str().unwrap(),
        "--to",
        "chrome",
    ]);
    assert!(convert.status.success(), "{:?}", cli::text(&convert));
    let events: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let passes = events["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "pass")
        .count();
    assert_eq!(passes, 2);

    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert!(child.wait().unwrap().success(), "{rest}");
    // Saved as usual.
    assert!(out.join("profile.json").is_file());
}

/// spec/live.md "Command line": with `--linger`, once generation stops the server keeps
/// answering with the final state, which is what is saved (a scraper's last scrape equals the
/// saved profile); `--rank` is the saved profile's rank.
#[test]
fn demo_serve_lingers_on_the_saved_state_with_its_rank() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let mut child = cli::bin()
        .args(cli::demo_args(
            &out,
            &[
                "--serve",
                "127.0.0.1:0",
                "--duration",
                "0.5",
                "--linger",
                "5",
                "--rank",
                "3",
            ],
        ))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut lines = Vec::new();
    let mut addr = None;
    // Every stderr line up to the one saying generation stopped (at most 100 lines).
    for _ in 0..100 {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            break;
        }
        if let Some(rest) = line.split("http://").nth(1) {
            addr = rest.split('/').next().map(str::to_string);
        }
        let stopped = line.contains("serving the final state");
        lines.push(line);
        if stopped {
            break;
        }
    }
    let addr = addr.unwrap_or_else(|| panic!("no address in {lines:?}"));
    assert!(
        lines.last().is_some_and(|l| l.contains("final state")),
        "{lines:?}"
    );
    let passes = |text: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix("brickprof_passes_total "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no brickprof_passes_total in {text}"))
    };
    let (status, first) = get(&addr, "/metrics");
    assert_eq!(status, 200);
    let (_, second) = get(&addr, "/metrics");
    let scraped = passes(&String::from_utf8(first).unwrap());
    assert_eq!(scraped, passes(&String::from_utf8(second).unwrap()));

    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert!(child.wait().unwrap().success(), "{rest}");
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("profile.json")).unwrap()).unwrap();
    assert_eq!(saved["meta"]["counters"]["passes"], scraped);
    assert_eq!(saved["meta"]["rank"], 3);
}
