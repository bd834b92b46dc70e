//! The endpoints (spec/live.md "Endpoints"): which request gets which snapshot, in which
//! format, with which status.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use super::http::{Request, Response};
use super::metrics::{self, Extras};
use super::Source;
use crate::output::formats::{Output, Perfetto, Snapshot};
use crate::profiler::{CaptureError, MAX_CAPTURE_PASSES};
use crate::Profile;

/// Answers requests from one source.
#[derive(Debug)]
pub(crate) struct Router {
    source: Source,
    layer_labels: bool,
    trace_timeout: Duration,
    /// Set when the server shuts down: a waiting `/trace` gives up (503).
    stop: Arc<AtomicBool>,
}

const INDEX: &str = "brickprof live: GET /metrics (Prometheus text), /profile (profile JSON), \
                     /trace?passes=N (Perfetto trace of the next N passes, 1 to 64)";

impl Router {
    pub(crate) fn new(
        source: Source,
        layer_labels: bool,
        trace_timeout: Duration,
        stop: Arc<AtomicBool>,
    ) -> Router {
        Router {
            source,
            layer_labels,
            trace_timeout,
            stop,
        }
    }

    /// The response to `req`.
    pub(crate) fn answer(&self, req: &Request<'_>) -> Response {
        let known = matches!(req.path, "/" | "/metrics" | "/profile" | "/trace");
        if !known {
            return Response::text(404, format!("no such page; {INDEX}"));
        }
        if req.method != "GET" {
            let mut r = Response::text(405, "only GET is served");
            r.headers.push("Allow: GET".into());
            return r;
        }
        match req.path {
            "/metrics" => self.metrics(),
            "/profile" => self.profile(),
            "/trace" => self.trace(req.query),
            _ => Response::text(200, INDEX),
        }
    }

    /// The profile now: `Ok(None)` when the thread front door has nothing published yet, an
    /// error when its threads' profiles do not merge.
    fn snapshot(&self) -> Result<Option<Profile>, Response> {
        match &self.source {
            Source::Profiler(h) => Ok(Some(h.profile())),
            Source::Threads => match crate::front::thread::collect() {
                Ok(p) => Ok(Some(p)),
                Err(crate::Error::NothingToDo { .. }) => Ok(None),
                Err(e) => Err(Response::text(
                    500,
                    format!("cannot collect the threads: {e}"),
                )),
            },
        }
    }

    fn metrics(&self) -> Response {
        let profile = match self.snapshot() {
            Ok(p) => p,
            Err(r) => return r,
        };
        let extras = Extras {
            longest_hold_ns: match &self.source {
                Source::Profiler(h) => Some(h.longest_hold_ns()),
                Source::Threads => None,
            },
        };
        let text = metrics::render(profile, extras, self.layer_labels);
        Response {
            status: 200,
            content_type: prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
            body: text.into_bytes(),
            headers: Vec::new(),
        }
    }

    fn profile(&self) -> Response {
        let profile = match self.snapshot() {
            Ok(Some(p)) => p,
            Ok(None) => return Response::text(503, "no thread has published a profile yet"),
            Err(r) => return r,
        };
        let mut body = Vec::new();
        match crate::io::json_file::write_json(&mut body, &profile) {
            Ok(()) => Response {
                status: 200,
                content_type: "application/json",
                body,
                headers: Vec::new(),
            },
            Err(e) => Response::text(500, format!("could not write the profile: {e}")),
        }
    }

    fn trace(&self, query: Option<&str>) -> Response {
        let Source::Profiler(h) = &self.source else {
            return Response::text(
                501,
                "/trace needs a profiler's live handle (BrickProfiler::live); this server reads \
                 the thread-local front door",
            );
        };
        let passes = match passes_of(query) {
            Ok(n) => n,
            Err(msg) => return Response::text(400, msg),
        };
        let trace = match h.capture_trace_or_stop(passes, self.trace_timeout, Some(&self.stop)) {
            Ok(t) => t,
            Err(e @ CaptureError::Busy) => return Response::text(409, e.to_string()),
            Err(e @ CaptureError::BadPasses(_)) => return Response::text(400, e.to_string()),
            Err(e @ (CaptureError::TimedOut | CaptureError::Stopped)) => {
                return Response::text(503, e.to_string())
            }
        };
        let view = trace.view();
        let mut body = Vec::new();
        match Perfetto.write(&Snapshot::Trace(&view), &mut body) {
            Ok(()) => Response {
                status: 200,
                content_type: "application/octet-stream",
                body,
                headers: vec![format!(
                    "Content-Disposition: attachment; filename=\"brickprof-{passes}-passes.pftrace\""
                )],
            },
            Err(e) => Response::text(500, format!("could not write the trace: {e}")),
        }
    }
}

/// `passes=N` from a query string: 1 to [`MAX_CAPTURE_PASSES`]; other parameters are refused.
fn passes_of(query: Option<&str>) -> Result<u32, String> {
    let usage = format!("ask for /trace?passes=N with N from 1 to {MAX_CAPTURE_PASSES}");
    let mut passes = None;
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("passes", v)) if passes.is_none() => {
                // Written plainly: `+1` or `01` is refused, as the CLI's numbers are.
                let n =
                    crate::base::plain_number::plain_uint(v).and_then(|n| u32::try_from(n).ok());
                passes = Some(n.ok_or_else(|| usage.clone())?);
            }
            _ => return Err(usage),
        }
    }
    match passes {
        Some(n) if (1..=MAX_CAPTURE_PASSES).contains(&n) => Ok(n),
        _ => Err(usage),
    }
}
