//! Perfetto's native trace format (`.pftrace`, TrackEvent protobuf), written one packet at a
//! time by [`PerfettoWriter`] (read back by `perfetto_reader`, for `brickprof convert`).
//!
//! Layout (see `spec/traces.md`): a host process with one track per layer row, a device process
//! with one track per device stream, a `tokens/s` counter track; slices as begin/end pairs,
//! names and categories interned; a flow from each host dispatch slice to its device slice.
//! Memory stays bounded: interned names, and one stack of open slices per track.

use fnv::FnvHashMap;

use prost::Message;

use super::perfetto_proto as pb;
use super::slices::{Flow, Nesting, PassSlice, Slice, TraceSink};
use super::trace_output::TraceOutput;
use crate::profile::trace::Track;
use crate::{profile::RunMeta, Error, Result};

/// The packet sequence every brickprof packet belongs to.
const SEQUENCE: u32 = 1;
/// Track uuid kinds (bits 0..20 of the uuid; the rank + 1 is in bits 20.., which keeps uuids
/// short varints).
const HOST_PROCESS: u64 = 1;
const DEVICE_PROCESS: u64 = 2;
const COUNTER: u64 = 3;
/// The `passes` slice track and the `context tokens` counter track (spec/traces.md "Passes").
pub(super) const PASSES: u64 = 4;
pub(super) const CONTEXT: u64 = 5;
/// The category of a pass slice, and its three debug annotations.
const PASS_CATEGORY: &str = "pass";
pub(super) const PASS_ARGS: [&str; 3] = ["new_tokens", "sequences", "context_tokens"];
const HOST_ROW: u64 = 0x1_0000;
const DEVICE_STREAM: u64 = 0x2_0000;
/// The debug annotation naming a device slice's layer row, and its interned id.
pub(super) const ROW_ANNOTATION: &str = "row";
const ROW_ANNOTATION_IID: u64 = 1;
/// Largest packet [`read`] accepts (brickprof's are well under 1 KiB).
pub(super) const MAX_PACKET: usize = 16 << 20;
/// The most slices reading a trace holds while they wait for the outermost open slice of their
/// track to end (every track together; about 64 MiB): more is an
/// [`Error::TooManyHeldSlices`] (spec/traces.md "Command line").
pub(crate) const MAX_HELD_SLICES: usize = 1 << 20;

/// No track declared yet.
const NO_TRACK: usize = usize::MAX;

/// Streams a Perfetto trace into `out`. See the module docs.
#[derive(Debug)]
pub(crate) struct PerfettoWriter<W: TraceOutput> {
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
    pub(crate) fn new(out: W, meta: &RunMeta) -> Result<Self> {
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
/// the reader reads.
pub(super) const RUN_LABEL: &str = "run";

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
    /// not put in place: an [`crate::io::OutputFile`] is put in place only by
    /// [`TraceSink::finish`].
    fn drop(&mut self) {
        let _ = self.close();
    }
}
