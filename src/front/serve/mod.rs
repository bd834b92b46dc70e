//! Live metrics over HTTP (cargo feature `serve`): a server thread pool that answers
//! `/metrics` (Prometheus text), `/profile` (the profile as JSON, what `brickprof report`
//! loads) and `/trace?passes=N` (a Perfetto trace of the next N passes). spec/live.md is the
//! contract.
//!
//! The engine's thread never waits for a client: every endpoint reads the profiler through its
//! shelf ([`crate::profiler::LiveHandle`], or the thread-local front door's collector), under the shelf's
//! lock for the time of a snapshot (bounded by the books' size), and writes to the socket after
//! the lock is released.
//!
//! ```
//! use brickprof::{BrickId, BrickProfiler, ProfilerConfig};
//! let mut prof = BrickProfiler::new(ProfilerConfig::with_layers(2))?;
//! let server = brickprof::serve::Server {
//!     addr: "127.0.0.1:0".into(), // port 0: any free port
//!     ..Default::default()
//! }
//! .start(prof.live())?;
//! println!("scrape http://{}/metrics", server.local_addr());
//! let t = prof.start_brick(BrickId::RmsNorm);
//! prof.stop_brick(t, 1);
//! prof.end_pass(1)?;
//! drop(server); // stops it, joining its threads
//! # Ok::<(), brickprof::Error>(())
//! ```

mod exposure;
mod http;
mod metrics;
mod poll;
mod routes;
mod server;

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use exposure::exposure_warning;

use crate::{profiler::LiveHandle, Error, Result};

/// Worker threads building responses (one more thread accepts, reads and writes every
/// connection).
const WORKERS: usize = 4;
/// How long `/trace` waits for its passes by default before answering 503.
const DEFAULT_TRACE_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest `/trace` may be told to wait ([`Server::trace_timeout`]).
const MAX_TRACE_TIMEOUT: Duration = Duration::from_secs(600);

/// What the server reads.
#[derive(Debug, Clone)]
pub enum Source {
    /// One profiler, through its live handle: every endpoint, `/trace` included.
    Profiler(LiveHandle),
    /// Every thread of the thread-local front door, merged as [`crate::front::thread::collect`]
    /// merges them (the server's threads have no profiler of their own, so nothing is
    /// flushed). `/trace` is not offered (501): capture with a profiler's live handle.
    Threads,
}

impl From<LiveHandle> for Source {
    fn from(h: LiveHandle) -> Source {
        Source::Profiler(h)
    }
}

/// Where and how to serve (plain options, like [`crate::ProfilerConfig`]): fill the fields you
/// need, `..Server::default()` for the rest, then [`Server::start`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// The address to listen on (`host:port`; port 0 picks a free one); `127.0.0.1:9184` by
    /// default. Loopback unless you say otherwise: the endpoints have no authentication.
    pub addr: String,
    /// Label each brick's series with its `layer` too (one series per layer: the number of
    /// series grows with the layers); off by default.
    pub layer_labels: bool,
    /// How long `/trace` waits for its passes before answering 503: 30 s by default, at most
    /// 10 minutes (a longer one is cut to 10 minutes).
    pub trace_timeout: Duration,
}

impl Default for Server {
    fn default() -> Server {
        Server {
            addr: "127.0.0.1:9184".to_string(),
            layer_labels: false,
            trace_timeout: DEFAULT_TRACE_TIMEOUT,
        }
    }
}

impl Server {
    /// Listen, and start the server's threads.
    pub fn start(self, source: impl Into<Source>) -> Result<ServeHandle> {
        let err = |source| Error::Serve {
            addr: crate::output::printable(&self.addr).into_owned(),
            source,
        };
        let listener = TcpListener::bind(self.addr.as_str()).map_err(err)?;
        // Set at shutdown: the accept loop, the workers and a waiting `/trace` look at it.
        let stop = Arc::new(AtomicBool::new(false));
        let router = Arc::new(routes::Router::new(
            source.into(),
            self.layer_labels,
            self.trace_timeout.min(MAX_TRACE_TIMEOUT),
            Arc::clone(&stop),
        ));
        let handler: Arc<http::Handler> =
            Arc::new(move |req: &http::Request<'_>| router.answer(req));
        let server = server::HttpServer::start(listener, WORKERS, handler, stop).map_err(err)?;
        Ok(ServeHandle { server })
    }
}

/// The running server. Dropping it stops it (`drop(handle)` where it must stop): connections
/// being answered finish within their deadlines, then every thread is joined.
#[derive(Debug)]
pub struct ServeHandle {
    server: server::HttpServer,
}

impl ServeHandle {
    /// The address the server listens on (the port it was given, or the one port 0 picked).
    pub fn local_addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// Responses written whole so far (any status but a refusal), requests refused (503)
    /// because the queue was full, and connections closed without a whole response (nothing
    /// came in time, the client left or did not read, or a newer connection took its place).
    pub fn connection_counts(&self) -> (u64, u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let s = &self.server.stats;
        (
            s.answered.load(Relaxed),
            s.refused.load(Relaxed),
            s.abandoned.load(Relaxed),
        )
    }

    /// A warning to show when the server listens beyond this machine (`0.0.0.0`, `::` or a
    /// network interface's own address: the endpoints have no authentication); `None` on a
    /// loopback address.
    pub fn exposure_warning(&self) -> Option<String> {
        exposure_warning(self.local_addr())
    }
}
