//! `generate --serve ADDR --duration SECS [--linger SECS]`: the prompt generated again and
//! again while brickprof's live server answers on ADDR (spec/live.md "Command line"), so the
//! real model can be scraped. Tracing mode serves the thread-local front door
//! ([`Source::Threads`]: `/metrics` and `/profile`), explicit mode its profiler's live handle
//! (`/trace?passes=N` too).

use std::time::{Duration, Instant};

use brickprof::serve::{Server, Source};

use crate::AnyResult;

/// `--serve`, `--duration`, `--linger`.
#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// Serve live metrics while generating, on ADDR (e.g. 127.0.0.1:9184; port 0: any free
    /// port): GET /metrics (Prometheus text) and /profile, and in explicit mode
    /// /trace?passes=N. The address is printed on stderr. Needs --duration; tracing or
    /// explicit mode. No authentication: an address beyond loopback (0.0.0.0) lets anyone
    /// who reaches the port read the profile and traces (warned on stderr).
    #[arg(long, value_name = "ADDR", requires = "duration")]
    pub serve: Option<String>,
    /// With --serve: generate the prompt's tokens again and again for SECS seconds (at least
    /// once); the last round's tokens are the run's.
    #[arg(long, value_name = "SECS", requires = "serve", value_parser = parse_secs)]
    pub duration: Option<Duration>,
    /// With --serve: once --duration has passed, keep serving the final state (what is saved)
    /// for SECS seconds more.
    #[arg(long, value_name = "SECS", requires = "serve", value_parser = parse_secs)]
    pub linger: Option<Duration>,
}

/// A number of seconds above 0, at most a week.
fn parse_secs(s: &str) -> Result<Duration, String> {
    const WEEK: f64 = 7.0 * 24.0 * 3600.0;
    match s.trim().parse::<f64>() {
        Ok(secs) if secs > 0.0 && secs <= WEEK => Ok(Duration::from_secs_f64(secs)),
        _ => Err(format!(
            "not a number of seconds above 0 and at most {WEEK} (a week)"
        )),
    }
}

/// Serve `source` on `addr` while `round` runs again and again for `duration` (at least
/// once), then serve the final state for `linger`; the last round's result. The server stops
/// before this returns.
pub fn serving<T>(
    addr: &str,
    duration: Duration,
    linger: Duration,
    source: Source,
    mut round: impl FnMut() -> AnyResult<T>,
) -> AnyResult<T> {
    let endpoints = match source {
        Source::Profiler(_) => "/metrics, /profile and /trace?passes=N",
        Source::Threads => "/metrics and /profile",
    };
    let server = Server {
        addr: addr.into(),
        ..Server::default()
    }
    .start(source)?;
    if let Some(warning) = server.exposure_warning() {
        eprintln!("{warning}");
    }
    eprintln!(
        "serving http://{}/metrics ({endpoints}) for {} s",
        server.local_addr(),
        duration.as_secs_f64()
    );
    let end = Instant::now() + duration;
    let mut rounds = 1u64;
    let mut last = round()?;
    while Instant::now() < end {
        last = round()?;
        rounds += 1;
    }
    eprintln!("served while generating {rounds} rounds");
    if !linger.is_zero() {
        eprintln!(
            "generation stopped; serving the final state for {} s more",
            linger.as_secs_f64()
        );
        std::thread::sleep(linger);
    }
    drop(server); // stops it, joining its threads
    Ok(last)
}
