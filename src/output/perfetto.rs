//! Perfetto's native trace format (`.pftrace`, TrackEvent protobuf), written one packet at a
//! time by [`PerfettoWriter`] and read back by `read` (for `brickprof convert`).
//!
//! Layout (see `spec/traces.md`): a host process with one track per layer row, a device process
//! with one track per device stream, a `tokens/s` counter track; slices as begin/end pairs,
//! names and categories interned; a flow from each host dispatch slice to its device slice.
//! Memory stays bounded: interned names, and one stack of open slices per track.

use std::collections::HashMap;

use fnv::FnvHashMap;
use std::io::Read;
use std::path::Path;

use prost::Message;

use super::perfetto_proto as pb;
use super::slices::{Flow, Nesting, OpenSink, PassSlice, Slice, TraceSink};
use super::trace_output::TraceOutput;
use crate::model::phase::{PassShape, Phase};
use crate::profile::trace::Track;
use crate::{Error, Result, RunMeta, TimelineKind};

/// The packet sequence every brickprof packet belongs to.
const SEQUENCE: u32 = 1;
/// Track uuid kinds (bits 0..20 of the uuid; the rank + 1 is in bits 20.., which keeps uuids
/// short varints).
const HOST_PROCESS: u64 = 1;
const DEVICE_PROCESS: u64 = 2;
const COUNTER: u64 = 3;
/// The `passes` slice track and the `context tokens` counter track (spec/traces.md "Passes").
const PASSES: u64 = 4;
const CONTEXT: u64 = 5;
/// The category of a pass slice, and its three debug annotations.
const PASS_CATEGORY: &str = "pass";
const PASS_ARGS: [&str; 3] = ["new_tokens", "sequences", "context_tokens"];
const HOST_ROW: u64 = 0x1_0000;
const DEVICE_STREAM: u64 = 0x2_0000;
/// The debug annotation naming a device slice's layer row, and its interned id.
const ROW_ANNOTATION: &str = "row";
const ROW_ANNOTATION_IID: u64 = 1;
/// Largest packet [`read`] accepts (brickprof's are well under 1 KiB).
const MAX_PACKET: usize = 16 << 20;
/// The most slices reading a trace holds while they wait for the outermost open slice of their
/// track to end (every track together; about 64 MiB): more is an
/// [`Error::TooManyHeldSlices`] (spec/traces.md "Command line").
pub const MAX_HELD_SLICES: usize = 1 << 20;

/// No track declared yet.
const NO_TRACK: usize = usize::MAX;

/// Streams a Perfetto trace into `out`. See the module docs.
#[derive(Debug)]
pub struct PerfettoWriter<W: TraceOutput> {
    out: W,
    buf: Vec<u8>,
    meta: RunMeta,
    /// The rank: the pid of its processes, and the high bits of its track uuids.
    rank: u32,
    base: u64,
    names: FnvHashMap<String, u64>,
    categories: FnvHashMap<String, u64>,
    /// Uuids of the declared slice tracks; `host_rows[row]` and `device_stream` index into
    /// it, and so do the lanes of `nesting`.
    tracks: Vec<u64>,
    nesting: Nesting,
    host_rows: Vec<usize>,
    device_stream: usize,
    /// Packets reused for every slice begin and end.
    begin: pb::TracePacket,
    end: pb::TracePacket,
    counter_declared: bool,
    /// The `passes` and `context tokens` tracks are declared; the end of the last pass slice.
    passes_declared: bool,
    last_pass_end: u64,
    finished: bool,
    bytes: u64,
}

impl<W: TraceOutput> PerfettoWriter<W> {
    /// Start a trace: writes the host process descriptor.
    pub fn new(out: W, meta: &RunMeta) -> Result<Self> {
        let rank = meta.rank.unwrap_or(0);
        let mut w = PerfettoWriter {
            out,
            buf: Vec::with_capacity(256),
            meta: meta.clone(),
            rank,
            base: (u64::from(rank) + 1) << 20,
            names: FnvHashMap::default(),
            categories: FnvHashMap::default(),
            tracks: Vec::new(),
            nesting: Nesting::default(),
            host_rows: Vec::new(),
            device_stream: NO_TRACK,
            begin: pb::TracePacket {
                trusted_packet_sequence_id: Some(SEQUENCE),
                sequence_flags: Some(pb::SEQ_NEEDS_INCREMENTAL_STATE),
                ..Default::default()
            },
            // Ends use no interned data, so they do not depend on the incremental state.
            end: pb::TracePacket {
                trusted_packet_sequence_id: Some(SEQUENCE),
                ..Default::default()
            },
            counter_declared: false,
            passes_declared: false,
            last_pass_end: 0,
            finished: false,
            bytes: 0,
        };
        let host = pb::TrackDescriptor {
            uuid: Some(w.base | HOST_PROCESS),
            process: Some(pb::ProcessDescriptor {
                pid: Some(pid(rank, 1)),
                process_name: Some(format!(
                    "rank {rank} host ({} timeline)",
                    meta.timeline.name()
                )),
                process_labels: run_labels(meta)?,
            }),
            child_ordering: Some(pb::CHILD_ORDERING_EXPLICIT),
            ..Default::default()
        };
        w.packet(pb::TracePacket {
            trusted_packet_sequence_id: Some(SEQUENCE),
            track_descriptor: Some(host),
            sequence_flags: Some(pb::SEQ_INCREMENTAL_STATE_CLEARED),
            first_packet_on_sequence: Some(true),
            interned_data: Some(pb::InternedData {
                debug_annotation_names: vec![pb::InternedString {
                    iid: Some(ROW_ANNOTATION_IID),
                    name: Some(ROW_ANNOTATION.into()),
                }],
                ..Default::default()
            }),
            ..Default::default()
        })?;
        Ok(w)
    }

    /// Bytes written so far.
    pub fn bytes_written(&self) -> u64 {
        self.bytes
    }

    fn packet(&mut self, p: pb::TracePacket) -> Result<()> {
        emit(&mut self.out, &mut self.buf, &mut self.bytes, &p)
    }

    fn descriptor(&mut self, d: pb::TrackDescriptor) -> Result<()> {
        self.packet(pb::TracePacket {
            trusted_packet_sequence_id: Some(SEQUENCE),
            track_descriptor: Some(d),
            ..Default::default()
        })
    }

    /// The index in `tracks` of a slice's track, declared on first use.
    fn track_of(&mut self, track: Track, row: u16) -> Result<usize> {
        let slot = match track {
            Track::Cpu | Track::Host => {
                let r = usize::from(row);
                if self.host_rows.len() <= r {
                    self.host_rows.resize(r + 1, NO_TRACK);
                }
                self.host_rows[r]
            }
            Track::Device => self.device_stream,
        };
        if slot != NO_TRACK {
            return Ok(slot);
        }
        let (uuid, parent, name, rank) = match track {
            Track::Cpu | Track::Host => (
                self.base | HOST_ROW | u64::from(row),
                self.base | HOST_PROCESS,
                self.meta.row_name(row),
                i32::from(row),
            ),
            Track::Device => {
                let d = pb::TrackDescriptor {
                    uuid: Some(self.base | DEVICE_PROCESS),
                    process: Some(pb::ProcessDescriptor {
                        pid: Some(pid(self.rank, 2)),
                        process_name: Some(format!(
                            "rank {} device ({} timeline)",
                            self.rank,
                            self.meta.timeline.name()
                        )),
                        process_labels: vec!["clock=device".into()],
                    }),
                    ..Default::default()
                };
                self.descriptor(d)?;
                (
                    self.base | DEVICE_STREAM,
                    self.base | DEVICE_PROCESS,
                    "stream 0".to_string(),
                    0,
                )
            }
        };
        self.descriptor(pb::TrackDescriptor {
            uuid: Some(uuid),
            parent_uuid: Some(parent),
            name: Some(name),
            sibling_order_rank: Some(rank),
            ..Default::default()
        })?;
        let slot = self.tracks.len();
        self.tracks.push(uuid);
        match track {
            Track::Cpu | Track::Host => self.host_rows[usize::from(row)] = slot,
            Track::Device => self.device_stream = slot,
        }
        Ok(slot)
    }

    /// The iid of `s` in `table`, and whether it is new (must be sent with the packet).
    fn intern(table: &mut FnvHashMap<String, u64>, s: &str) -> (u64, bool) {
        if let Some(&iid) = table.get(s) {
            return (iid, false);
        }
        let iid = table.len() as u64 + 1;
        table.insert(s.to_string(), iid);
        (iid, true)
    }
}

/// Bytes and packets of a writer that end slices (split from the writer so the nesting can
/// call them while it is borrowed).
struct Ends<'a, W: TraceOutput> {
    out: &'a mut W,
    buf: &'a mut Vec<u8>,
    bytes: &'a mut u64,
    end: &'a mut pb::TracePacket,
}

impl<W: TraceOutput> Ends<'_, W> {
    fn end_slice(&mut self, uuid: u64, at: u64) -> Result<()> {
        let p = &mut *self.end;
        p.timestamp = Some(at);
        let te = p.track_event.get_or_insert_with(Default::default);
        te.r#type = Some(pb::TYPE_SLICE_END);
        te.track_uuid = Some(uuid);
        emit(self.out, self.buf, self.bytes, self.end)
    }
}

/// Encode `p` (on brickprof's sequence) as one `Trace.packet` field and write it.
fn emit<W: TraceOutput>(
    out: &mut W,
    buf: &mut Vec<u8>,
    bytes: &mut u64,
    p: &pb::TracePacket,
) -> Result<()> {
    buf.clear();
    buf.push(pb::TRACE_PACKET_TAG);
    p.encode_length_delimited(buf).map_err(|e| Error::Encode {
        what: "a Perfetto trace packet",
        message: e.to_string(),
    })?;
    out.write_all(buf).map_err(|e| Error::io(out.name(), e))?;
    *bytes += buf.len() as u64;
    Ok(())
}

/// The host process's label carrying the run's facts ([`RunMeta`]) as compact JSON: what
/// [`read`] reads.
const RUN_LABEL: &str = "run";

/// The host process's labels: `clock=host`, the writing tool, the trace events dropped, one
/// human `key=value` label per scalar fact of the run, and the facts themselves as JSON under
/// [`RUN_LABEL`] (spec/traces.md "Perfetto").
fn run_labels(meta: &RunMeta) -> Result<Vec<String>> {
    let encode = |e: serde_json::Error| Error::Encode {
        what: "a trace's run facts",
        message: e.to_string(),
    };
    let mut labels = vec![
        "clock=host".to_string(),
        format!("tool=brickprof {}", env!("CARGO_PKG_VERSION")),
        format!("dropped={}", meta.counters.trace_dropped),
    ];
    if let serde_json::Value::Object(facts) = serde_json::to_value(meta).map_err(encode)? {
        for (key, value) in facts {
            match value {
                serde_json::Value::String(v) => labels.push(format!("{key}={v}")),
                serde_json::Value::Number(v) => labels.push(format!("{key}={v}")),
                serde_json::Value::Bool(v) => labels.push(format!("{key}={v}")),
                _ => {}
            }
        }
    }
    labels.push(format!(
        "{RUN_LABEL}={}",
        serde_json::to_string(meta).map_err(encode)?
    ));
    Ok(labels)
}

/// The facts a brickprof 0.3.0 trace's host process states in its labels (`timeline`, `rank`,
/// `layers`, `dropped`, `calibration_bound_ns`, `tool`); the rest take [`RunMeta::new`]'s
/// defaults. `None` without a known timeline. Frozen: it never reads another label.
fn legacy_meta<'a>(label: &impl Fn(&str) -> Option<&'a str>) -> Option<RunMeta> {
    let num = |key: &str| label(key).and_then(|v| v.parse::<u64>().ok());
    let timeline = label("timeline")?.parse::<TimelineKind>().ok()?;
    let layers = num("layers").unwrap_or(0).try_into().unwrap_or(usize::MAX);
    let mut m = RunMeta::new(timeline, layers);
    if let Some(v) = label("tool").and_then(|t| t.strip_prefix("brickprof ")) {
        m.tool_version = v.to_string();
    }
    m.rank = Some(num("rank").unwrap_or(0).try_into().unwrap_or(u32::MAX));
    m.counters.trace_dropped = num("dropped").unwrap_or(0);
    m.calibration_bound_ns = num("calibration_bound_ns");
    Some(m)
}

/// A process id for the trace: distinct per rank and clock, never 0 (the idle task's).
fn pid(rank: u32, clock: u32) -> i32 {
    i32::try_from(u64::from(rank) * 2 + u64::from(clock)).unwrap_or(i32::MAX)
}

impl<W: TraceOutput> TraceSink for PerfettoWriter<W> {
    fn slice(&mut self, s: &Slice<'_>) -> Result<()> {
        let slot = self.track_of(s.track, s.row)?;
        let uuid = self.tracks[slot];
        let mut ends = Ends {
            out: &mut self.out,
            buf: &mut self.buf,
            bytes: &mut self.bytes,
            end: &mut self.end,
        };
        // Its end (clipped to its parent's) is emitted when a later slice or `finish` closes it.
        self.nesting
            .place(slot, s, |end| ends.end_slice(uuid, end))?;
        let (name_iid, new_name) = Self::intern(&mut self.names, s.name);
        let (cat_iid, new_cat) = Self::intern(&mut self.categories, s.category);
        // One packet reused for every begin: no allocation once its vectors have grown.
        let p = &mut self.begin;
        p.timestamp = Some(s.start_ns);
        p.interned_data = (new_name || new_cat).then(|| pb::InternedData {
            event_categories: new_cat
                .then(|| pb::InternedString {
                    iid: Some(cat_iid),
                    name: Some(s.category.to_string()),
                })
                .into_iter()
                .collect(),
            event_names: new_name
                .then(|| pb::InternedString {
                    iid: Some(name_iid),
                    name: Some(s.name.to_string()),
                })
                .into_iter()
                .collect(),
            ..Default::default()
        });
        let te = p.track_event.get_or_insert_with(Default::default);
        te.r#type = Some(pb::TYPE_SLICE_BEGIN);
        te.track_uuid = Some(uuid);
        te.name_iid = Some(name_iid);
        te.category_iids.clear();
        te.category_iids.push(cat_iid);
        te.flow_ids.clear();
        te.terminating_flow_ids.clear();
        match s.flow {
            Flow::None => {}
            Flow::Out(id) => te.flow_ids.push(id),
            Flow::In(id) => te.terminating_flow_ids.push(id),
        }
        te.debug_annotations.clear();
        if s.track == Track::Device {
            te.debug_annotations.push(pb::DebugAnnotation {
                name_iid: Some(ROW_ANNOTATION_IID),
                uint_value: Some(u64::from(s.row)),
                name: None,
            });
        }
        emit(&mut self.out, &mut self.buf, &mut self.bytes, &self.begin)
    }

    fn counter(&mut self, at_ns: u64, tokens_per_sec: f64) -> Result<()> {
        let uuid = self.base | COUNTER;
        if !self.counter_declared {
            self.counter_declared = true;
            self.descriptor(pb::TrackDescriptor {
                uuid: Some(uuid),
                parent_uuid: Some(self.base | HOST_PROCESS),
                name: Some("tokens/s".into()),
                counter: Some(pb::CounterDescriptor {
                    unit_name: Some("tokens/s".into()),
                }),
                sibling_order_rank: Some(-1),
                ..Default::default()
            })?;
        }
        self.packet(pb::TracePacket {
            trusted_packet_sequence_id: Some(SEQUENCE),
            timestamp: Some(at_ns),
            track_event: Some(pb::TrackEvent {
                r#type: Some(pb::TYPE_COUNTER),
                track_uuid: Some(uuid),
                double_counter_value: Some(if tokens_per_sec.is_finite() {
                    tokens_per_sec
                } else {
                    0.0
                }),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    fn pass(&mut self, p: &PassSlice) -> Result<()> {
        let (passes, context) = (self.base | PASSES, self.base | CONTEXT);
        if !self.passes_declared {
            self.passes_declared = true;
            self.descriptor(pb::TrackDescriptor {
                uuid: Some(passes),
                parent_uuid: Some(self.base | HOST_PROCESS),
                name: Some("passes".into()),
                sibling_order_rank: Some(-3),
                ..Default::default()
            })?;
            self.descriptor(pb::TrackDescriptor {
                uuid: Some(context),
                parent_uuid: Some(self.base | HOST_PROCESS),
                name: Some("context tokens".into()),
                counter: Some(pb::CounterDescriptor {
                    unit_name: Some("tokens".into()),
                }),
                sibling_order_rank: Some(-2),
                ..Default::default()
            })?;
        }
        // One track, no nesting: a pass never starts before the previous one ended.
        let start = p.start_ns.max(self.last_pass_end);
        let end = p.start_ns.saturating_add(p.dur_ns).max(start);
        self.last_pass_end = end;
        let shape = &p.shape;
        let phase: &'static str = shape.phase().into();
        let (name_iid, new_name) = Self::intern(&mut self.names, phase);
        let (cat_iid, new_cat) = Self::intern(&mut self.categories, PASS_CATEGORY);
        let values = [
            u64::from(shape.new_tokens()),
            u64::from(shape.sequences()),
            shape.context_tokens(),
        ];
        self.packet(pb::TracePacket {
            trusted_packet_sequence_id: Some(SEQUENCE),
            sequence_flags: Some(pb::SEQ_NEEDS_INCREMENTAL_STATE),
            timestamp: Some(start),
            interned_data: (new_name || new_cat).then(|| pb::InternedData {
                event_categories: new_cat
                    .then(|| pb::InternedString {
                        iid: Some(cat_iid),
                        name: Some(PASS_CATEGORY.into()),
                    })
                    .into_iter()
                    .collect(),
                event_names: new_name
                    .then(|| pb::InternedString {
                        iid: Some(name_iid),
                        name: Some(phase.into()),
                    })
                    .into_iter()
                    .collect(),
                ..Default::default()
            }),
            track_event: Some(pb::TrackEvent {
                r#type: Some(pb::TYPE_SLICE_BEGIN),
                track_uuid: Some(passes),
                name_iid: Some(name_iid),
                category_iids: vec![cat_iid],
                debug_annotations: PASS_ARGS
                    .iter()
                    .zip(values)
                    .map(|(name, v)| pb::DebugAnnotation {
                        name_iid: None,
                        uint_value: Some(v),
                        name: Some((*name).into()),
                    })
                    .collect(),
                ..Default::default()
            }),
            ..Default::default()
        })?;
        let mut ends = Ends {
            out: &mut self.out,
            buf: &mut self.buf,
            bytes: &mut self.bytes,
            end: &mut self.end,
        };
        ends.end_slice(passes, end)?;
        self.packet(pb::TracePacket {
            trusted_packet_sequence_id: Some(SEQUENCE),
            timestamp: Some(start),
            track_event: Some(pb::TrackEvent {
                r#type: Some(pb::TYPE_COUNTER),
                track_uuid: Some(context),
                double_counter_value: Some(shape.context_tokens() as f64),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    fn finish(&mut self) -> Result<()> {
        self.close()?;
        self.out.done()
    }
}

impl<W: TraceOutput> PerfettoWriter<W> {
    /// End every open slice (once).
    fn close(&mut self) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        let tracks = &self.tracks;
        let mut ends = Ends {
            out: &mut self.out,
            buf: &mut self.buf,
            bytes: &mut self.bytes,
            end: &mut self.end,
        };
        self.nesting
            .close_all(|slot, end| ends.end_slice(tracks[slot], end))
    }
}

impl<W: TraceOutput> Drop for PerfettoWriter<W> {
    /// An unfinished trace (the run stopped on an error) still ends every open slice, but is
    /// not put in place: an [`crate::OutputFile`] is put in place only by
    /// [`TraceSink::finish`].
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// Read a brickprof `.pftrace` from `input`, packet by packet, and feed it to the sink `open`
/// makes. Slices are buffered per track until their outermost slice ends, at most
/// [`MAX_HELD_SLICES`] in all; a slice still open when the file ends is an
/// [`Error::UnendedSlice`] (never a silent loss).
pub(crate) fn read(path: &Path, input: impl Read, open: &mut OpenSink<'_>) -> Result<()> {
    read_holding(path, input, open, MAX_HELD_SLICES)
}

/// [`read`], holding at most `limit` slices.
fn read_holding(
    path: &Path,
    mut input: impl Read,
    open: &mut OpenSink<'_>,
    limit: usize,
) -> Result<()> {
    let bad = |message: String| Error::invalid(path, message);
    let io = |e| Error::io(path, e);
    let mut sink: Option<Box<dyn TraceSink>> = None;
    let mut header: Option<RunMeta> = None;
    let mut names: HashMap<u64, String> = HashMap::new();
    let mut categories: HashMap<u64, String> = HashMap::new();
    let mut annotations: HashMap<u64, String> = HashMap::new();
    let mut processes: HashMap<u64, Track> = HashMap::new();
    let mut tracks: HashMap<u64, (Track, u16)> = HashMap::new();
    let mut open_slices: HashMap<u64, PendingTrack> = HashMap::new();
    // Slices held in `open_slices`, every track.
    let mut held = 0usize;
    // The `passes` and `context tokens` tracks, and the pass slice begun on it.
    let mut pass_tracks: Vec<u64> = Vec::new();
    let mut open_pass: Option<(u64, PassShape)> = None;
    let quoted = |names: &HashMap<u64, String>, s: &Pending| {
        let name = names.get(&s.name).map_or("?", String::as_str);
        format!("\"{}\"", crate::base::printable::printable(name))
    };
    let mut buf = Vec::new();
    let mut offset = 0u64;
    loop {
        let mut tag = [0u8; 1];
        if input.read(&mut tag).map_err(io)? == 0 {
            break;
        }
        if tag[0] != pb::TRACE_PACKET_TAG {
            return Err(bad(format!(
                "byte {offset}: expected a trace packet, found tag byte {:#04x}",
                tag[0]
            )));
        }
        let len = read_varint(&mut input)
            .map_err(io)?
            .ok_or_else(|| bad(format!("byte {offset}: the file ends inside a packet")))?;
        let len = usize::try_from(len)
            .ok()
            .filter(|&l| l <= MAX_PACKET)
            .ok_or_else(|| {
                bad(format!(
                    "byte {offset}: a packet of {len} bytes is too large"
                ))
            })?;
        buf.resize(len, 0);
        input
            .read_exact(&mut buf)
            .map_err(|_| bad(format!("byte {offset}: the file ends inside a packet")))?;
        offset += 1 + len as u64;
        let p = pb::TracePacket::decode(buf.as_slice())
            .map_err(|e| bad(format!("byte {offset}: not a trace packet: {e}")))?;
        if let Some(d) = p.interned_data {
            for s in d.event_names {
                names.insert(s.iid.unwrap_or(0), s.name.unwrap_or_default());
            }
            for s in d.event_categories {
                categories.insert(s.iid.unwrap_or(0), s.name.unwrap_or_default());
            }
            for s in d.debug_annotation_names {
                annotations.insert(s.iid.unwrap_or(0), s.name.unwrap_or_default());
            }
        }
        if let Some(d) = p.track_descriptor {
            let uuid = d.uuid.unwrap_or(0);
            if let Some(proc_) = d.process {
                let label = |key: &str| {
                    proc_
                        .process_labels
                        .iter()
                        .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
                };
                if label("clock") == Some("host") {
                    let h = match label(RUN_LABEL) {
                        Some(json) => serde_json::from_str::<RunMeta>(json).map_err(|e| {
                            bad(format!("the host process's {RUN_LABEL} label: {e}"))
                        })?,
                        None => legacy_meta(&label).ok_or_else(|| {
                            bad("the host process names no known timeline".into())
                        })?,
                    };
                    let timeline = h.timeline;
                    let host = if timeline == TimelineKind::Cpu {
                        Track::Cpu
                    } else {
                        Track::Host
                    };
                    processes.insert(uuid, host);
                    sink = Some(open(&h)?);
                    header = Some(h);
                } else {
                    processes.insert(uuid, Track::Device);
                }
            } else if d.parent_uuid.is_some_and(|p| processes.contains_key(&p))
                && matches!(uuid & 0xF_FFFF, PASSES | CONTEXT)
            {
                pass_tracks.push(uuid);
            } else if let Some(&kind) = d.parent_uuid.and_then(|p| processes.get(&p)) {
                if d.counter.is_none() {
                    let row = u16::try_from(d.sibling_order_rank.unwrap_or(0)).unwrap_or(0);
                    tracks.insert(uuid, (kind, row));
                }
            }
        }
        let Some(ev) = p.track_event else {
            continue;
        };
        let Some(out) = sink.as_mut() else {
            return Err(bad(
                "not a brickprof trace: events before the host process descriptor".into(),
            ));
        };
        let uuid = ev.track_uuid.unwrap_or(0);
        let at = p.timestamp.unwrap_or(0);
        if pass_tracks.contains(&uuid) {
            match ev.r#type {
                Some(pb::TYPE_SLICE_BEGIN) => {
                    let name = ev.name_iid.and_then(|i| names.get(&i));
                    open_pass = pass_shape(&ev, name.map(String::as_str)).map(|s| (at, s));
                }
                Some(pb::TYPE_SLICE_END) => {
                    if let Some((start_ns, shape)) = open_pass.take() {
                        out.pass(&PassSlice {
                            start_ns,
                            dur_ns: at.saturating_sub(start_ns),
                            shape,
                        })?;
                    }
                }
                // The context counter follows from the passes' shapes.
                _ => {}
            }
            continue;
        }
        match ev.r#type {
            Some(pb::TYPE_COUNTER) => out.counter(at, ev.double_counter_value.unwrap_or(0.0))?,
            Some(pb::TYPE_SLICE_BEGIN) => {
                let &(track, row) = tracks
                    .get(&uuid)
                    .ok_or_else(|| bad(format!("a slice on undeclared track {uuid}")))?;
                let row = ev
                    .debug_annotations
                    .iter()
                    .find(|a| {
                        let name = a.name.as_deref().or_else(|| {
                            a.name_iid
                                .and_then(|i| annotations.get(&i))
                                .map(String::as_str)
                        });
                        name == Some(ROW_ANNOTATION)
                    })
                    .and_then(|a| a.uint_value)
                    .and_then(|r| u16::try_from(r).ok())
                    .unwrap_or(row);
                let flow = match (ev.flow_ids.first(), ev.terminating_flow_ids.first()) {
                    (Some(&id), _) => Flow::Out(id),
                    (None, Some(&id)) => Flow::In(id),
                    _ => Flow::None,
                };
                if held >= limit {
                    // This track's outermost open slice (else another track's) keeps them.
                    let outer = open_slices
                        .get(&uuid)
                        .and_then(|t| t.slices.first())
                        .or_else(|| open_slices.values().find_map(|t| t.slices.first()));
                    let (name, start_ns) =
                        outer.map_or((String::from("?"), at), |s| (quoted(&names, s), s.start_ns));
                    return Err(Error::TooManyHeldSlices {
                        path: path.to_path_buf(),
                        name,
                        start_ns,
                        limit: limit as u64,
                    });
                }
                held += 1;
                let t = open_slices.entry(uuid).or_default();
                t.stack.push(t.slices.len());
                t.slices.push(Pending {
                    track,
                    row,
                    name: ev.name_iid.unwrap_or(0),
                    category: ev.category_iids.first().copied().unwrap_or(0),
                    start_ns: at,
                    dur_ns: 0,
                    flow,
                });
            }
            Some(pb::TYPE_SLICE_END) => {
                let t = open_slices.entry(uuid).or_default();
                let i = t.stack.pop().ok_or_else(|| {
                    bad(format!("a slice ends on track {uuid} where none is open"))
                })?;
                t.slices[i].dur_ns = at.saturating_sub(t.slices[i].start_ns);
                if t.stack.is_empty() {
                    held -= t.slices.len();
                    for s in t.slices.drain(..) {
                        out.slice(&Slice {
                            track: s.track,
                            row: s.row,
                            name: names.get(&s.name).map_or("?", String::as_str),
                            category: categories.get(&s.category).map_or("Other", String::as_str),
                            start_ns: s.start_ns,
                            dur_ns: s.dur_ns,
                            flow: s.flow,
                        })?;
                    }
                }
            }
            _ => {}
        }
    }
    // The first slice of a track is its outermost open one: the earliest of them never ended.
    if let Some(s) = open_slices
        .values()
        .filter_map(|t| t.slices.first())
        .min_by_key(|s| s.start_ns)
    {
        return Err(Error::UnendedSlice {
            path: path.to_path_buf(),
            name: quoted(&names, s),
            start_ns: s.start_ns,
            slices: held as u64,
        });
    }
    match (sink, header) {
        (Some(mut s), Some(_)) => s.finish(),
        _ => Err(bad(
            "not a brickprof trace: no host process descriptor".into()
        )),
    }
}

#[derive(Debug, Default)]
struct PendingTrack {
    slices: Vec<Pending>,
    stack: Vec<usize>,
}

#[derive(Debug)]
struct Pending {
    track: Track,
    row: u16,
    name: u64,
    category: u64,
    start_ns: u64,
    dur_ns: u64,
    flow: Flow,
}

/// A protobuf varint; `None` at end of input.
fn read_varint(input: &mut impl Read) -> std::io::Result<Option<u64>> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let mut b = [0u8; 1];
        if input.read(&mut b)? == 0 {
            return Ok(None);
        }
        v |= u64::from(b[0] & 0x7f) << shift;
        if b[0] & 0x80 == 0 {
            return Ok(Some(v));
        }
    }
    Ok(None)
}

/// The shape a `passes` slice's annotations give (spec/traces.md "Passes"), its phase from the
/// slice's name when that says `mixed`; `None` when they make no shape (the slice is left out).
fn pass_shape(ev: &pb::TrackEvent, name: Option<&str>) -> Option<PassShape> {
    let arg = |k: &str| {
        ev.debug_annotations
            .iter()
            .find(|a| a.name.as_deref() == Some(k))?
            .uint_value
    };
    let [new, seqs, context] = PASS_ARGS.map(arg);
    let shape = PassShape::new(
        u32::try_from(new?).ok()?,
        u32::try_from(seqs?).ok()?,
        context?,
    )
    .ok()?;
    Some(match name.and_then(|n| n.parse::<Phase>().ok()) {
        Some(Phase::Mixed) => shape.with_phase(Phase::Mixed),
        _ => shape,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::ChromeWriter;

    /// A trace of one host track: an outer slice holding `children` slices.
    fn nested(children: u64) -> Vec<u8> {
        let meta = RunMeta::new(TimelineKind::Sim, 1);
        let mut out = Vec::new();
        let mut w = PerfettoWriter::new(&mut out, &meta).unwrap();
        let slice = |start_ns, dur_ns| Slice {
            track: Track::Host,
            row: 0,
            name: "b",
            category: "Other",
            start_ns,
            dur_ns,
            flow: Flow::None,
        };
        w.slice(&slice(0, 10 * children + 10)).unwrap();
        for i in 0..children {
            w.slice(&slice(10 * i + 1, 5)).unwrap();
        }
        w.finish().unwrap();
        drop(w);
        out
    }

    fn convert_holding(bytes: &[u8], limit: usize) -> Result<()> {
        let mut open = |h: &RunMeta| -> Result<Box<dyn TraceSink>> {
            Ok(Box::new(ChromeWriter::new(Vec::new(), h)?))
        };
        read_holding(Path::new("t.pftrace"), bytes, &mut open, limit)
    }

    #[test]
    fn slices_waiting_for_their_outermost_slice_are_bounded() {
        // spec/traces.md "Command line": memory stays bounded whatever the file nests; before,
        // every slice inside a slice that never ends was held (3,000,001 slices: 169 MB).
        let bytes = nested(10);
        convert_holding(&bytes, 11).expect("11 slices held at most");
        let err = convert_holding(&bytes, 10).unwrap_err();
        assert!(
            matches!(
                &err,
                Error::TooManyHeldSlices {
                    limit: 10,
                    start_ns: 0,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().starts_with("t.pftrace: "), "{err}");
    }
}
