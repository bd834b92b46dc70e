//! Choosing the NVIDIA timeline (cargo feature `cupti`): CUPTI's records when CUPTI can be had,
//! CUDA events otherwise, with one line saying why (spec/sync-modes.md "CUPTI", "One subscriber;
//! choosing").

use std::str::FromStr;
use std::sync::Arc;

use cudarc::driver::CudaStream;

use super::{BoxedTimeline, CudaTimeline, CuptiTimeline};
use crate::{Error, Result};

/// Which NVIDIA timeline to use. `BRICKPROF_NVIDIA_TIMELINE=auto|cupti|events` chooses it
/// without a code change (read by `BrickProfiler::nvidia` and the front doors' default thread
/// timeline; [`nvidia_timeline`] takes the choice as an argument).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NvidiaChoice {
    /// CUPTI when libcupti loads and no other tool holds it; CUDA events otherwise.
    #[default]
    Auto,
    /// CUPTI or an error.
    Cupti,
    /// CUDA events on the engine's stream.
    Events,
}

impl FromStr for NvidiaChoice {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(NvidiaChoice::Auto),
            "cupti" => Ok(NvidiaChoice::Cupti),
            "events" | "cuda" => Ok(NvidiaChoice::Events),
            _ => Err(Error::invalid_value(
                "NVIDIA timeline",
                s,
                "use auto, cupti or events",
            )),
        }
    }
}

impl NvidiaChoice {
    /// The environment variable [`NvidiaChoice::from_env`] reads.
    pub(crate) const ENV: &'static str = "BRICKPROF_NVIDIA_TIMELINE";

    /// `$BRICKPROF_NVIDIA_TIMELINE`, or [`NvidiaChoice::Auto`] when unset.
    pub(crate) fn from_env() -> Result<Self> {
        match std::env::var(Self::ENV) {
            Ok(v) => v.parse(),
            Err(_) => Ok(NvidiaChoice::Auto),
        }
    }
}

/// The timeline chosen, and the line saying why CUPTI was not used (for the caller to print).
#[derive(Debug)]
pub struct NvidiaTimeline {
    /// The timeline.
    pub timeline: BoxedTimeline,
    /// Whether it is the CUPTI timeline.
    pub cupti: bool,
    /// One line, when [`NvidiaChoice::Auto`] fell back to CUDA events.
    pub fallback: Option<String>,
}

/// The NVIDIA timeline `choice` asks for, on the engine's `stream` (the event timeline marks
/// it; CUPTI needs no stream: it sees every stream of the thread's launches).
pub fn nvidia_timeline(
    stream: Arc<CudaStream>,
    pending_capacity: usize,
    choice: NvidiaChoice,
) -> Result<NvidiaTimeline> {
    let events = |fallback| -> Result<NvidiaTimeline> {
        Ok(NvidiaTimeline {
            timeline: BoxedTimeline::new(CudaTimeline::new(stream.clone(), pending_capacity)?),
            cupti: false,
            fallback,
        })
    };
    match choice {
        NvidiaChoice::Events => events(None),
        NvidiaChoice::Cupti => Ok(NvidiaTimeline {
            timeline: BoxedTimeline::new(CuptiTimeline::new()?),
            cupti: true,
            fallback: None,
        }),
        NvidiaChoice::Auto => match CuptiTimeline::new() {
            Ok(t) => Ok(NvidiaTimeline {
                timeline: BoxedTimeline::new(t),
                cupti: true,
                fallback: None,
            }),
            Err(e @ (Error::NoDevice { .. } | Error::Cupti { .. })) => {
                events(Some(fallback_line(&e)))
            }
            Err(e) => Err(e),
        },
    }
}

/// The timeline a thread of the thread-local front door (and of a tracing layer) marks when no
/// factory says otherwise, with the `cupti` feature (spec/front-doors.md "Device timelines",
/// spec/sync-modes.md "CUPTI", "One subscriber; choosing"): CUPTI, which needs no stream and sees
/// every launch the thread makes, when `$BRICKPROF_NVIDIA_TIMELINE` is unset, `auto` or `cupti` and
/// CUPTI can be had; else the host clock (`None`; the front door has no stream to record
/// events on). Where libcupti is missing (no NVIDIA GPU) nothing is said; where another tool
/// holds CUPTI, or `cupti` was asked for and cannot be had, one line is printed to stderr,
/// once a process.
pub(crate) fn default_thread_timeline() -> Option<BoxedTimeline> {
    static SAID: std::sync::Once = std::sync::Once::new();
    let choice = NvidiaChoice::from_env();
    let required = matches!(choice, Ok(NvidiaChoice::Cupti));
    match choice {
        Ok(NvidiaChoice::Events) => return None,
        Err(e) => {
            SAID.call_once(|| eprintln!("brickprof: {e}; marking the host clock"));
            return None;
        }
        Ok(_) => {}
    }
    match CuptiTimeline::new() {
        Ok(t) => Some(BoxedTimeline::new(t)),
        Err(e) => {
            if required || !matches!(e, Error::NoDevice { .. }) {
                SAID.call_once(|| eprintln!("{}", thread_fallback_line(&e)));
            }
            None
        }
    }
}

/// The line said when a front-door thread cannot have CUPTI.
fn thread_fallback_line(e: &Error) -> String {
    fallback_line(e).replace(
        "timing bricks with CUDA events (about 3 µs of device time a mark)",
        "marking the host clock (give the thread a CudaTimeline for device times)",
    )
}

/// The one line said when CUPTI cannot be had.
pub(crate) fn fallback_line(e: &Error) -> String {
    let why = match e {
        Error::Cupti { code, .. }
            if *code == super::cupti::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED =>
        {
            "another tool holds CUPTI in this process (Nsight Systems, Nsight Compute or \
             another profiler)"
                .to_owned()
        }
        Error::NoDevice { .. } => "libcupti could not be loaded".to_owned(),
        other => other.to_string(),
    };
    format!(
        "brickprof: CUPTI unavailable ({why}); timing bricks with CUDA events (about 3 µs of \
         device time a mark); set {}=events to choose them, or cupti to require CUPTI",
        NvidiaChoice::ENV
    )
}
