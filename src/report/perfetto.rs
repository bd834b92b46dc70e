//! Perfetto's native trace format (`.pftrace`, TrackEvent protobuf), written one packet at a
//! time by [`PerfettoWriter`] and read back by `read` (for `brickprof convert`).
//!
//! Layout (see `spec/traces.md`): a host process with one track per layer row, a device process
//! with one track per device stream, a `tokens/s` counter track; slices as begin/end pairs,
//! names and categories interned; a flow from each host dispatch slice to its device slice.
//! Memory stays bounded: interned names, and one stack of open slices per track.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use prost::Message;

use super::perfetto_proto as pb;
use super::trace_sink::{Flow, OpenSink, Slice, TraceHeader, TraceOutput, TraceSink};
use crate::trace::Track;
use crate::{Error, Result, TimelineKind};

/// The packet sequence every brickprof packet belongs to.
const SEQUENCE: u32 = 1;
/// Track uuid kinds (bits 16..24 of the uuid; the rank + 1 is in bits 32..).
const HOST_PROCESS: u64 = 1;
const DEVICE_PROCESS: u64 = 2;
const COUNTER: u64 = 3;
const HOST_ROW: u64 = 0x1_0000;
const DEVICE_STREAM: u64 = 0x2_0000;
/// The debug annotation naming a device slice's layer row.
const ROW_ANNOTATION: &str = "row";
/// Largest packet [`read`] accepts (brickprof's are well under 1 KiB).
const MAX_PACKET: usize = 16 << 20;

/// Per-track state: the ends of the open slices (innermost last), and the last timestamp.
#[derive(Debug, Default)]
struct TrackState {
    open: Vec<u64>,
    last_ns: u64,
}

/// Streams a Perfetto trace into `out`. See the module docs.
#[derive(Debug)]
pub struct PerfettoWriter<W: TraceOutput> {
    out: W,
    buf: Vec<u8>,
    header: TraceHeader,
    base: u64,
    names: HashMap<String, u64>,
    categories: HashMap<String, u64>,
    tracks: HashMap<u64, TrackState>,
    device_declared: bool,
    counter_declared: bool,
    finished: bool,
    bytes: u64,
}

impl<W: TraceOutput> PerfettoWriter<W> {
    /// Start a trace: writes the host process descriptor.
    pub fn new(out: W, header: &TraceHeader) -> Result<Self> {
        let mut w = PerfettoWriter {
            out,
            buf: Vec::with_capacity(256),
            header: header.clone(),
            base: (u64::from(header.rank) + 1) << 32,
            names: HashMap::new(),
            categories: HashMap::new(),
            tracks: HashMap::new(),
            device_declared: false,
            counter_declared: false,
            finished: false,
            bytes: 0,
        };
        let h = &w.header;
        let host = pb::TrackDescriptor {
            uuid: Some(w.base | HOST_PROCESS),
            process: Some(pb::ProcessDescriptor {
                pid: Some(pid(h.rank, 1)),
                process_name: Some(format!(
                    "rank {} host ({} timeline)",
                    h.rank,
                    h.timeline.name()
                )),
                process_labels: vec![
                    "clock=host".into(),
                    format!("rank={}", h.rank),
                    format!("timeline={}", h.timeline.name()),
                    format!("layers={}", h.layers),
                    format!("dropped={}", h.dropped),
                    format!("tool=brickprof {}", env!("CARGO_PKG_VERSION")),
                ],
            }),
            child_ordering: Some(pb::CHILD_ORDERING_EXPLICIT),
            ..Default::default()
        };
        w.packet(pb::TracePacket {
            track_descriptor: Some(host),
            sequence_flags: Some(pb::SEQ_INCREMENTAL_STATE_CLEARED),
            first_packet_on_sequence: Some(true),
            ..Default::default()
        })?;
        Ok(w)
    }

    /// Bytes written so far.
    pub fn bytes_written(&self) -> u64 {
        self.bytes
    }

    fn packet(&mut self, mut p: pb::TracePacket) -> Result<()> {
        p.trusted_packet_sequence_id = Some(SEQUENCE);
        self.buf.clear();
        self.buf.push(pb::TRACE_PACKET_TAG);
        p.encode_length_delimited(&mut self.buf)
            .map_err(|e| Error::InvalidArgument(format!("encoding a trace packet: {e}")))?;
        self.out
            .write_all(&self.buf)
            .map_err(|e| Error::io(self.out.name(), e))?;
        self.bytes += self.buf.len() as u64;
        Ok(())
    }

    fn descriptor(&mut self, d: pb::TrackDescriptor) -> Result<()> {
        self.packet(pb::TracePacket {
            track_descriptor: Some(d),
            ..Default::default()
        })
    }

    /// The track of a slice, declared on first use.
    fn track_of(&mut self, track: Track, row: u16) -> Result<u64> {
        let (uuid, parent, name, rank) = match track {
            Track::Cpu | Track::Host => (
                self.base | HOST_ROW | u64::from(row),
                self.base | HOST_PROCESS,
                self.header.row_name(row),
                i32::from(row),
            ),
            Track::Device => {
                if !self.device_declared {
                    self.device_declared = true;
                    let h = &self.header;
                    let d = pb::TrackDescriptor {
                        uuid: Some(self.base | DEVICE_PROCESS),
                        process: Some(pb::ProcessDescriptor {
                            pid: Some(pid(h.rank, 2)),
                            process_name: Some(format!(
                                "rank {} device ({} timeline)",
                                h.rank,
                                h.timeline.name()
                            )),
                            process_labels: vec!["clock=device".into()],
                        }),
                        ..Default::default()
                    };
                    self.descriptor(d)?;
                }
                (
                    self.base | DEVICE_STREAM,
                    self.base | DEVICE_PROCESS,
                    "stream 0".to_string(),
                    0,
                )
            }
        };
        if let std::collections::hash_map::Entry::Vacant(v) = self.tracks.entry(uuid) {
            v.insert(TrackState::default());
            self.descriptor(pb::TrackDescriptor {
                uuid: Some(uuid),
                parent_uuid: Some(parent),
                name: Some(name),
                sibling_order_rank: Some(rank),
                ..Default::default()
            })?;
        }
        Ok(uuid)
    }

    /// The iid of `s` in `table`, and whether it is new (must be sent with the packet).
    fn intern(table: &mut HashMap<String, u64>, s: &str) -> (u64, bool) {
        if let Some(&iid) = table.get(s) {
            return (iid, false);
        }
        let iid = table.len() as u64 + 1;
        table.insert(s.to_string(), iid);
        (iid, true)
    }

    fn end_slice(&mut self, uuid: u64, at: u64) -> Result<()> {
        self.packet(pb::TracePacket {
            timestamp: Some(at),
            sequence_flags: Some(pb::SEQ_NEEDS_INCREMENTAL_STATE),
            track_event: Some(pb::TrackEvent {
                r#type: Some(pb::TYPE_SLICE_END),
                track_uuid: Some(uuid),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    /// End the open slices of `uuid` that end at or before `at` (all of them: `u64::MAX`).
    fn close_until(&mut self, uuid: u64, at: u64) -> Result<()> {
        while let Some(end) = self
            .tracks
            .get_mut(&uuid)
            .and_then(|t| t.open.last().copied().filter(|&e| e <= at))
        {
            if let Some(t) = self.tracks.get_mut(&uuid) {
                t.open.pop();
                t.last_ns = end;
            }
            self.end_slice(uuid, end)?;
        }
        Ok(())
    }
}

/// A process id for the trace: distinct per rank and clock, never 0 (the idle task's).
fn pid(rank: u32, clock: u32) -> i32 {
    i32::try_from(u64::from(rank) * 2 + u64::from(clock)).unwrap_or(i32::MAX)
}

impl<W: TraceOutput> TraceSink for PerfettoWriter<W> {
    fn slice(&mut self, s: &Slice<'_>) -> Result<()> {
        let uuid = self.track_of(s.track, s.row)?;
        self.close_until(uuid, s.start_ns)?;
        let state = self.tracks.entry(uuid).or_default();
        if s.start_ns < state.last_ns {
            return Err(Error::InvalidArgument(format!(
                "trace slice {:?} at {} ns comes after one at {} ns on the same track: slices must come in start order",
                s.name, s.start_ns, state.last_ns
            )));
        }
        // A child never outlasts its parent (host clock conversions may round by a tick).
        let mut end = s.start_ns.saturating_add(s.dur_ns);
        if let Some(&parent_end) = state.open.last() {
            end = end.min(parent_end);
        }
        state.open.push(end);
        state.last_ns = s.start_ns;
        let (name_iid, new_name) = Self::intern(&mut self.names, s.name);
        let (cat_iid, new_cat) = Self::intern(&mut self.categories, s.category);
        let interned = (new_name || new_cat).then(|| pb::InternedData {
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
        });
        let (flow_ids, terminating_flow_ids) = match s.flow {
            Flow::None => (vec![], vec![]),
            Flow::Out(id) => (vec![id], vec![]),
            Flow::In(id) => (vec![], vec![id]),
        };
        let debug_annotations = match s.track {
            Track::Device => vec![pb::DebugAnnotation {
                name: Some(ROW_ANNOTATION.into()),
                uint_value: Some(u64::from(s.row)),
            }],
            _ => vec![],
        };
        self.packet(pb::TracePacket {
            timestamp: Some(s.start_ns),
            sequence_flags: Some(pb::SEQ_NEEDS_INCREMENTAL_STATE),
            interned_data: interned,
            track_event: Some(pb::TrackEvent {
                r#type: Some(pb::TYPE_SLICE_BEGIN),
                track_uuid: Some(uuid),
                name_iid: Some(name_iid),
                category_iids: vec![cat_iid],
                flow_ids,
                terminating_flow_ids,
                debug_annotations,
                ..Default::default()
            }),
            ..Default::default()
        })
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

    fn finish(&mut self) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        let mut uuids: Vec<u64> = self.tracks.keys().copied().collect();
        uuids.sort_unstable();
        for uuid in uuids {
            self.close_until(uuid, u64::MAX)?;
        }
        self.out.done()
    }
}

impl<W: TraceOutput> Drop for PerfettoWriter<W> {
    /// An unfinished trace (the run stopped on an error) still ends every open slice.
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// Read a brickprof `.pftrace` from `input`, packet by packet, and feed it to the sink `open`
/// makes. Slices are buffered per track until their outermost slice ends.
pub(crate) fn read(path: &Path, mut input: impl Read, open: &mut OpenSink<'_>) -> Result<()> {
    let bad = |message: String| Error::Parse {
        path: path.to_path_buf(),
        line: 0,
        column: 0,
        message,
    };
    let io = |e| Error::io(path, e);
    let mut sink: Option<Box<dyn TraceSink>> = None;
    let mut header: Option<TraceHeader> = None;
    let mut names: HashMap<u64, String> = HashMap::new();
    let mut categories: HashMap<u64, String> = HashMap::new();
    let mut processes: HashMap<u64, Track> = HashMap::new();
    let mut tracks: HashMap<u64, (Track, u16)> = HashMap::new();
    let mut open_slices: HashMap<u64, PendingTrack> = HashMap::new();
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
                    let num = |key: &str| label(key).and_then(|v| v.parse::<u64>().ok());
                    let timeline = label("timeline")
                        .and_then(|t| t.parse::<TimelineKind>().ok())
                        .ok_or_else(|| bad("the host process names no known timeline".into()))?;
                    let h = TraceHeader {
                        rank: num("rank").unwrap_or(0).try_into().unwrap_or(u32::MAX),
                        timeline,
                        layers: num("layers").unwrap_or(0).try_into().unwrap_or(usize::MAX),
                        dropped: num("dropped").unwrap_or(0),
                    };
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
        match ev.r#type {
            Some(pb::TYPE_COUNTER) => out.counter(at, ev.double_counter_value.unwrap_or(0.0))?,
            Some(pb::TYPE_SLICE_BEGIN) => {
                let &(track, row) = tracks
                    .get(&uuid)
                    .ok_or_else(|| bad(format!("a slice on undeclared track {uuid}")))?;
                let row = ev
                    .debug_annotations
                    .iter()
                    .find(|a| a.name.as_deref() == Some(ROW_ANNOTATION))
                    .and_then(|a| a.uint_value)
                    .and_then(|r| u16::try_from(r).ok())
                    .unwrap_or(row);
                let flow = match (ev.flow_ids.first(), ev.terminating_flow_ids.first()) {
                    (Some(&id), _) => Flow::Out(id),
                    (None, Some(&id)) => Flow::In(id),
                    _ => Flow::None,
                };
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
