//! The crate's one error type. Every fallible public function returns [`Result<T>`].
//!
//! Messages name what went wrong and, where there is one, the file and the place in it, so a
//! user can act on them without reading the source.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::base::limits::Limit;
use crate::base::printable::PrintableWriter;

/// Everything that can go wrong in brickprof.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },

    /// A file is larger than brickprof reads (1 GiB).
    FileTooLarge {
        /// The file.
        path: PathBuf,
        /// The limit, bytes.
        limit: u64,
    },

    /// A file is not valid JSON, or not the JSON that was expected, at a known place.
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line of the fault.
        line: usize,
        /// 1-based column of the fault.
        column: usize,
        /// What was expected.
        message: String,
    },

    /// A file is not what brickprof reads, and the fault lies at no one place in its text: the
    /// file is empty, or it parses but breaks a rule of its format (spec/profile-format.md
    /// "Validation"). No line or column is given, as there is none to give.
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the field (names from the file escaped).
        message: String,
    },

    /// A vendor profiler's file (spec/imports.md) is not what its format says, at a line.
    Import {
        /// The file.
        path: PathBuf,
        /// The importer reading it (`ncu-csv`, `rocprofv3-csv`).
        format: &'static str,
        /// 1-based line of the fault.
        line: u64,
        /// What is wrong (values from the file quoted and escaped).
        message: String,
    },

    /// A file was written by a format version this build does not read.
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// What kind of file ("profile", "checksum log").
        what: &'static str,
        /// The version found in the file.
        found: u32,
        /// The version this build reads.
        supported: u32,
    },

    /// A HIP runtime call failed.
    Hip {
        /// The HIP function that failed.
        call: &'static str,
        /// Its raw `hipError_t` value (read as an integer, so codes newer than the bindings survive).
        code: i32,
        /// `hipGetErrorString` for the code, plus a hint where one helps.
        message: String,
    },

    /// An OpenCL call failed.
    OpenCl {
        /// The OpenCL function that failed.
        call: &'static str,
        /// Its raw `cl_int` status.
        code: i32,
        /// The status's name, plus where the error came from when that is not the call itself
        /// (an error of earlier asynchronous work surfacing at a sync).
        message: String,
    },

    /// A CUDA driver call failed.
    Cuda {
        /// The driver function that failed.
        call: &'static str,
        /// The driver's error, plus where it came from when that is not the call itself.
        message: String,
    },

    /// A CUPTI call failed (the CUPTI timeline, cargo feature `cupti`). `code` 39
    /// (`CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED`) means another tool (Nsight Systems,
    /// Nsight Compute, another profiler) holds CUPTI in this process.
    Cupti {
        /// The CUPTI function that failed.
        call: &'static str,
        /// Its raw `CUptiResult`.
        code: u32,
        /// What it means, and where it came from.
        message: String,
    },

    /// A device timeline found no device to run on: no runtime library, no platform, or no
    /// device. The message names what to install.
    NoDevice {
        /// The timeline kind ("opencl", "cuda", ...).
        timeline: &'static str,
        /// What was missing, as the runtime reported it.
        reason: String,
        /// What to install or do about it.
        install: &'static str,
    },

    /// A timeline was asked for something it cannot give (for example a mark that was never
    /// synchronized).
    Timeline(String),

    /// A measurement's timeline mark could not be resolved: the timeline's event pool was
    /// exhausted when it was made, or it was made before the last finalize. The measurement is
    /// counted as dropped. (No allocation: this can be raised on the hot path.)
    InvalidMark {
        /// The timeline kind ("sim", "hip").
        timeline: &'static str,
    },

    /// Two profiles or profilers cannot be merged.
    Merge(String),

    /// A checksum log holds the same kernel key twice, so a comparison would depend on which
    /// entry it picked.
    DuplicateKernel {
        /// The log's file, when it was read from one.
        path: Option<PathBuf>,
        /// "reference" or "candidate".
        log: &'static str,
        /// The kernel recorded twice.
        key: String,
        /// Index of its first entry.
        first: usize,
        /// Index of its second entry.
        second: usize,
    },

    /// Two checksum logs were made with different hash algorithms: their hashes cannot be
    /// compared.
    AlgorithmMismatch {
        /// The reference log's algorithm name.
        reference: &'static str,
        /// The candidate log's algorithm name.
        candidate: &'static str,
    },

    /// A configuration or registration asks for more than a profiler holds; checked before
    /// anything is allocated (spec/hot-path.md "Limits").
    OverLimit {
        /// Which limit.
        limit: Limit,
        /// What was asked for (layers, bricks, cells or entries).
        requested: usize,
    },

    /// A value given to brickprof (an argument, a configuration field, a string to parse) is
    /// out of its range or malformed. `value` is shown as given, escaped.
    InvalidValue {
        /// What the value is ("sampling", "brick name", "device peaks", ...).
        what: &'static str,
        /// The value, quoted and escaped.
        value: String,
        /// What is allowed instead.
        expected: String,
    },

    /// Something was asked of a build that lacks the cargo feature it needs.
    FeatureMissing {
        /// What was asked for.
        what: &'static str,
        /// The feature (or features) that provide it, as `cargo --features` takes them.
        feature: &'static str,
    },

    /// A stream or queue handed to a device timeline cannot carry brick timing.
    UnsuitableStream {
        /// The timeline kind ("hip", "opencl", ...).
        timeline: &'static str,
        /// Why, and what to pass instead.
        reason: &'static str,
    },

    /// There is nothing to collect or compare: no thread published a profile, or two runs
    /// share neither timings nor checksums.
    NothingToDo {
        /// What found nothing.
        what: &'static str,
        /// What to do about it.
        hint: &'static str,
    },

    /// Trace slices reached a writer out of start order on one track.
    TraceOrder {
        /// The slice's name, quoted and escaped.
        name: String,
        /// Its start, ns.
        start_ns: u64,
        /// The start of the slice before it on the track, ns.
        previous_ns: u64,
    },

    /// A trace slice never ends: the file stops while it is open (truncated, or not written by
    /// brickprof). Converting would drop it and every slice waiting for it, so the trace is
    /// refused (spec/traces.md "Command line").
    UnendedSlice {
        /// The trace file.
        path: PathBuf,
        /// The slice's name, quoted and escaped.
        name: String,
        /// Its start, ns.
        start_ns: u64,
        /// The slices that wait for an outermost slice to end when the file stops (it
        /// included; every track).
        slices: u64,
    },

    /// Converting a trace would hold more slices waiting for their outermost slice to end than
    /// `MAX_HELD_SLICES` (2^20): memory stays bounded, so the trace is
    /// refused (spec/traces.md "Command line").
    TooManyHeldSlices {
        /// The trace file.
        path: PathBuf,
        /// The outermost open slice's name, quoted and escaped.
        name: String,
        /// Its start, ns.
        start_ns: u64,
        /// The limit, slices.
        limit: u64,
    },

    /// An output is one of its command's inputs (the same file, by whatever name: `./p.json`,
    /// a symbolic or hard link): writing it would destroy the input, so nothing is written
    /// ([`crate::io::check_outputs_apart`]).
    OutputIsInput {
        /// The output, as given.
        output: PathBuf,
        /// The input it is, as given.
        input: PathBuf,
    },

    /// Encoding an output failed (an internal fault: please report it).
    Encode {
        /// What was being encoded.
        what: &'static str,
        /// What the encoder said.
        message: String,
    },

    /// The calling thread already has its thread-local profiler, so it cannot be given a
    /// timeline now (spec/front-doors.md "Device timelines").
    ThreadHasProfiler {
        /// The timeline the thread's profiler marks ("cpu", "sim", ...).
        timeline: String,
    },

    /// An error about a file that does not name it itself (a merge of profiles read from
    /// files, for example): the file, and the error.
    InFile {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: Box<Error>,
    },

    /// Device peaks (a roofline's roofs) are not valid: a peak that is not a finite positive
    /// number, or cache levels out of order (spec/work-accounting.md "Cache-aware roofline").
    Peaks(String),

    /// A path that an output cannot be written to: a directory, a block device, a socket
    /// (spec/profile-format.md "Reading and writing files"). Nothing was written.
    NotAnOutput {
        /// The path as given.
        path: PathBuf,
        /// What it is ("a directory").
        what: &'static str,
    },

    /// Files read together (a profile and the captures or tokens beside it) carry different
    /// run ids: they come from two runs (spec/profile-format.md "A run folder").
    MixedRun {
        /// The file read first.
        first: PathBuf,
        /// Its run id.
        first_id: String,
        /// The file of another run.
        second: PathBuf,
        /// Its run id.
        second_id: String,
    },

    /// A run folder cannot be written at a path: it is a file, a file of the run there is not
    /// a regular file, the folder is a mount point or the current folder, or its parent cannot
    /// be written (spec/profile-format.md "A run folder").
    RunFolder {
        /// The folder, as named.
        path: PathBuf,
        /// Why, naming what to change.
        reason: String,
    },

    /// The live server could not listen at the address it was given (spec/live.md).
    Serve {
        /// The address, as given.
        addr: String,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },

    /// A graph-replay call could not be honoured (spec/sync-modes.md "Graph capture").
    Graph {
        /// The graph's executable handle.
        exec: u64,
        /// What went wrong.
        problem: GraphProblem,
    },
}

impl fmt::Display for Error {
    /// The message, with every character that could drive a terminal shown as a space
    /// (the `printable` rule of spec/profile-format.md "Reports"): whatever a variant carries (a value from a file, a message a
    /// parser or another crate wrote, a path), it cannot reach the terminal raw. This is the
    /// one place errors are escaped, so no message can forget.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.message(&mut PrintableWriter::new(f))
    }
}

impl Error {
    /// The message, unescaped (see [`fmt::Display`]).
    fn message(&self, w: &mut dyn fmt::Write) -> fmt::Result {
        match self {
            Error::Io { .. }
            | Error::FileTooLarge { .. }
            | Error::Parse { .. }
            | Error::Invalid { .. }
            | Error::Import { .. }
            | Error::UnsupportedVersion { .. }
            | Error::DuplicateKernel { .. }
            | Error::OutputIsInput { .. }
            | Error::NotAnOutput { .. }
            | Error::MixedRun { .. }
            | Error::RunFolder { .. } => self.file_message(w),
            Error::Hip { .. }
            | Error::OpenCl { .. }
            | Error::Cuda { .. }
            | Error::Cupti { .. }
            | Error::NoDevice { .. }
            | Error::Timeline(..)
            | Error::InvalidMark { .. }
            | Error::UnsuitableStream { .. }
            | Error::Graph { .. }
            | Error::Serve { .. } => self.device_message(w),
            Error::Merge(message) => write!(w, "cannot merge: {message}"),
            Error::AlgorithmMismatch {
                reference,
                candidate,
            } => write!(
                w,
                "cannot compare checksums made with different algorithms: the reference used {reference}, the candidate {candidate}; re-record one run with the other's algorithm, so that both use one (brickprof demo --checksum-algorithm {reference}, or ChecksumPlan::algorithm)"
            ),
            Error::OverLimit { limit, requested } => w.write_str(&limit.describe(*requested)),
            Error::InvalidValue {
                what,
                value,
                expected,
            } => write!(w, "invalid {what} {value}: {expected}"),
            Error::FeatureMissing { what, feature } => {
                write!(w, "{what} needs brickprof built with {feature}")
            }
            Error::NothingToDo { what, hint } => write!(w, "{what}: {hint}"),
            Error::TraceOrder { .. }
            | Error::UnendedSlice { .. }
            | Error::TooManyHeldSlices { .. } => self.trace_message(w),
            Error::Encode { what, message } => write!(w, "encoding {what}: {message}"),
            Error::ThreadHasProfiler { timeline } => write!(
                w,
                "this thread already has a profiler, on the {timeline} timeline: give a thread its timeline before its first brick, layer or pass (brickprof::thread::init_thread), or call brickprof::thread::reset first"
            ),
            Error::InFile { path, source } => {
                write!(w, "{}: ", path.display())?;
                source.message(w)
            }
            Error::Peaks(message) => write!(w, "invalid device peaks: {message}"),
        }
    }

    /// A device or timeline error's message.
    fn device_message(&self, w: &mut dyn fmt::Write) -> fmt::Result {
        match self {
            Error::Graph { exec, problem } => {
                write!(w, "graph {exec:#x}: {}", problem.describe())
            }
            Error::Serve { addr, source } => write!(
                w,
                "cannot serve live metrics on {addr}: {source}; give another address (port 0 picks a free port)"
            ),
            Error::Hip {
                call,
                code,
                message,
            } => write!(w, "HIP call {call} failed with code {code}: {message}"),
            Error::OpenCl {
                call,
                code,
                message,
            } => write!(w, "OpenCL call {call} failed with code {code}: {message}"),
            Error::Cuda { call, message } => write!(w, "CUDA call {call} failed: {message}"),
            Error::Cupti {
                call,
                code,
                message,
            } => write!(w, "CUPTI call {call} failed ({code}): {message}"),
            Error::NoDevice {
                timeline,
                reason,
                install,
            } => write!(w, "no {timeline} device: {reason}; {install}"),
            Error::Timeline(message) => write!(w, "timeline: {message}"),
            Error::InvalidMark { timeline } => write!(
                w,
                "{timeline} timeline: a mark was invalid (its event pool was exhausted, or it was made before the last finalize); the measurement was dropped; give the timeline more events or finalize more often"
            ),
            Error::UnsuitableStream { timeline, reason } => {
                write!(w, "{timeline} timeline: {reason}")
            }
            _ => unreachable!("not a device error: dispatched by Error::message"),
        }
    }

    /// A trace conversion error's message.
    fn trace_message(&self, w: &mut dyn fmt::Write) -> fmt::Result {
        match self {
            Error::TraceOrder {
                name,
                start_ns,
                previous_ns,
            } => write!(
                w,
                "trace slice {name} at {start_ns} ns comes after one at {previous_ns} ns on the same track: slices must come in start order"
            ),
            Error::UnendedSlice {
                path,
                name,
                start_ns,
                slices,
            } => write!(
                w,
                "{}: trace slice {name} at {start_ns} ns never ends: the file stops with it open (truncated, or not written by brickprof), and {slices} slices wait for their outermost slice to end (it included); converting would drop them, so nothing is converted",
                path.display()
            ),
            Error::TooManyHeldSlices {
                path,
                name,
                start_ns,
                limit,
            } => write!(
                w,
                "{}: trace slice {name} at {start_ns} ns is still open after {limit} slices: converting holds at most {limit} slices waiting for their outermost slice to end (bounded memory); a slice that never ends, or a trace nested deeper than brickprof converts",
                path.display()
            ),
            _ => unreachable!("not a trace error: dispatched by Error::message"),
        }
    }

    /// A file error's message (reading, writing, run folders).
    fn file_message(&self, w: &mut dyn fmt::Write) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(w, "{}: {source}", path.display()),
            Error::FileTooLarge { path, limit } => write!(
                w,
                "{}: the file is larger than {limit} bytes, the most brickprof reads; it is not a brickprof file",
                path.display()
            ),
            Error::Parse {
                path,
                line,
                column,
                message,
            } => write!(w, "{}: line {line}, column {column}: {message}", path.display()),
            Error::Invalid { path, message } => write!(w, "{}: {message}", path.display()),
            Error::Import {
                path,
                format,
                line,
                message,
            } => write!(w, "{}: line {line} ({format}): {message}", path.display()),
            Error::UnsupportedVersion {
                path,
                what,
                found,
                supported,
            } => write!(
                w,
                "{}: {what} format version {found} is not supported (this build reads version {supported}); re-create the file with this brickprof version",
                path.display()
            ),
            Error::DuplicateKernel {
                path,
                log,
                key,
                first,
                second,
            } => {
                if let Some(p) = path {
                    write!(w, "{}: ", p.display())?;
                }
                write!(
                    w,
                    "the {log} checksum log records {key} twice (entries {first} and {second}); each (pass, layer, brick, call) must be recorded once: re-record the run with this brickprof version"
                )
            }
            Error::OutputIsInput { output, input } => write!(
                w,
                "{}: this output is the input {} (the same file): writing it would destroy the input, so nothing is written; name another output",
                output.display(),
                input.display()
            ),
            Error::NotAnOutput { path, what } => write!(
                w,
                "{}: cannot write an output there: it is {what} (an output goes to a regular file, a new path, a named pipe or a character device, or through a symbolic link to one)",
                path.display()
            ),
            Error::MixedRun {
                first,
                first_id,
                second,
                second_id,
            } => write!(
                w,
                "{}: from another run than {} (run ids {second_id} and {first_id}); the files of a run folder must come from one run: re-run, or give files that one run saved",
                second.display(),
                first.display()
            ),
            Error::RunFolder { path, reason } => write!(
                w,
                "{}: cannot write there ({reason}); choose another folder",
                path.display()
            ),
            _ => unreachable!("not a file error: dispatched by Error::message"),
        }
    }
}

/// `Result` with brickprof's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An [`Error::Io`] for `path`.
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// An [`Error::InvalidValue`]: `value` is quoted, and escaped so that it cannot drive a
    /// terminal.
    ///
    /// ```
    /// let e = brickprof::Error::invalid_value("layer", "x\u{1b}", "a number");
    /// assert_eq!(e.to_string(), "invalid layer \"x \": a number");
    /// ```
    pub fn invalid_value(
        what: &'static str,
        value: impl std::fmt::Display,
        expected: impl Into<String>,
    ) -> Self {
        Error::InvalidValue {
            what,
            value: format!(
                "\"{}\"",
                crate::base::printable::printable(&value.to_string())
            ),
            expected: expected.into(),
        }
    }

    /// An [`Error::Invalid`] for `path`: a fault at no one place in the file.
    pub(crate) fn invalid(path: &Path, message: impl Into<String>) -> Self {
        Error::Invalid {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }

    /// An [`Error::Parse`] for `path` from a serde_json error, keeping its line and column.
    pub(crate) fn json(path: &Path, err: &serde_json::Error) -> Self {
        let message = match err.classify() {
            serde_json::error::Category::Eof if err.line() <= 1 && err.column() == 0 => {
                return Error::invalid(path, "the file is empty");
            }
            serde_json::error::Category::Eof => {
                format!("the file ends early (truncated?): {err}")
            }
            _ => err.to_string(),
        };
        // serde_json appends " at line L column C"; keep the message short, the fields carry it.
        let message = match message.rfind(" at line ") {
            Some(i) => message[..i].to_string(),
            None => message,
        };
        Error::Parse {
            path: path.to_path_buf(),
            line: err.line(),
            column: err.column(),
            message,
        }
    }
}

/// Why a graph-replay call could not be honoured ([`Error::Graph`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GraphProblem {
    /// The graph was adopted, but no pass was captured since the last adoption.
    NothingCaptured,
    /// The graph does not hold the event-record nodes of the last captured pass (it was
    /// captured from another stream, or before the pass).
    MarksNotInGraph,
}

impl GraphProblem {
    /// What went wrong and what to do, for the error's message.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            GraphProblem::NothingCaptured => {
                "no pass was captured since the last adoption; capture a pass (begin_pass .. \
                 end_pass on the capturing stream) before adopting its graph"
            }
            GraphProblem::MarksNotInGraph => {
                "the graph does not hold the last captured pass's marks; adopt the graph that \
                 pass was captured into"
            }
        }
    }
}
