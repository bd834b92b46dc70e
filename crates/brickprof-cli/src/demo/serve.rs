//! `demo --serve ADDR --duration SECS`: the demo's rounds (a prompt and its tokens) again and
//! again for SECS seconds while the library's live server answers on ADDR (spec/live.md).

use brickprof::{BrickProfiler, Result, Timeline};

use super::options::ServeOptions;

/// Serve `prof` on `serve.addr` and run `round` until `serve.duration` has passed (at least
/// once); the server stops before this returns.
#[cfg(feature = "serve")]
pub fn serving<T: Timeline>(
    serve: &ServeOptions,
    prof: &mut BrickProfiler<T>,
    mut round: impl FnMut(&mut BrickProfiler<T>) -> Result<()>,
) -> Result<()> {
    let server = brickprof::serve::Server::builder()
        .bind(serve.addr.as_str())
        .layer_labels(serve.layer_labels)
        .start(prof.live())?;
    crate::output::note(&format!(
        "serving http://{}/metrics, /profile and /trace?passes=N for {} s",
        server.local_addr(),
        serve.duration.as_secs_f64()
    ));
    let end = std::time::Instant::now() + serve.duration;
    let mut rounds = 0u64;
    let r = loop {
        if let Err(e) = round(prof) {
            break Err(e);
        }
        rounds += 1;
        if std::time::Instant::now() >= end {
            break Ok(());
        }
    };
    server.shutdown();
    crate::output::note(&format!("served while generating {rounds} rounds"));
    r
}

/// Without the `serve` feature: an error naming it.
#[cfg(not(feature = "serve"))]
pub fn serving<T: Timeline>(
    _serve: &ServeOptions,
    _prof: &mut BrickProfiler<T>,
    _round: impl FnMut(&mut BrickProfiler<T>) -> Result<()>,
) -> Result<()> {
    Err(brickprof::Error::FeatureMissing {
        what: "demo --serve",
        feature: "the `serve` feature (on by default in the brickprof CLI; rebuild without \
                  --no-default-features)",
    })
}
