//! `demo --serve ADDR --duration SECS [--linger SECS]`: the demo's rounds (a prompt and its
//! tokens) again and again for SECS seconds while the library's live server answers on ADDR,
//! then, with `--linger`, the final state served a while longer (spec/live.md).

use brickprof::{BrickProfiler, Result, Timeline};

use super::options::ServeOptions;

/// Serve `prof` on `serve.addr` and run `round` until `serve.duration` has passed (at least
/// once); then, for `serve.linger`, serve the final state (every pass resolved: what the caller
/// saves) with the engine idle. The server stops before this returns.
#[cfg(feature = "serve")]
pub fn serving<T: Timeline>(
    serve: &ServeOptions,
    prof: &mut BrickProfiler<T>,
    mut round: impl FnMut(&mut BrickProfiler<T>) -> Result<()>,
) -> Result<()> {
    let server = brickprof::serve::Server {
        addr: serve.addr.clone(),
        layer_labels: serve.layer_labels,
        ..Default::default()
    }
    .start(prof.live())?;
    if let Some(warning) = server.exposure_warning() {
        crate::output::note(&warning);
    }
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
    crate::output::note(&format!("served while generating {rounds} rounds"));
    // The final flush first (Lagged: the passes in flight), so that what lingers is what is
    // saved.
    let r = r.and_then(|()| prof.finalize());
    if r.is_ok() && !serve.linger.is_zero() {
        crate::output::note(&format!(
            "generation stopped; serving the final state for {} s more",
            serve.linger.as_secs_f64()
        ));
        std::thread::sleep(serve.linger);
    }
    drop(server); // stops it, joining its threads
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
