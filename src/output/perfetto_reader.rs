//! Reading Perfetto's native trace format back (`.pftrace` written by [`PerfettoWriter`], and
//! brickprof 0.3.0's): packets framed and decoded one at a time, interned names and track
//! descriptors kept, slices held per track until their outermost slice ends, then fed to a
//! [`TraceSink`] (for `brickprof convert`). Memory stays bounded: at most
//! [`MAX_HELD_SLICES`] slices held.
//!
//! [`PerfettoWriter`]: super::perfetto_writer::PerfettoWriter

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use prost::Message;

use super::perfetto_proto as pb;
use super::perfetto_writer::{
    CONTEXT, MAX_HELD_SLICES, MAX_PACKET, PASSES, PASS_ARGS, ROW_ANNOTATION, RUN_LABEL,
};
use super::slices::{Flow, OpenSink, PassSlice, Slice, TraceSink};
use crate::model::phase::{PassShape, Phase};
use crate::profile::trace::Track;
use crate::{profile::RunMeta, timeline::TimelineKind, Error, Result};

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
    let mut r = Reader::new(path, open, limit);
    let mut buf = Vec::new();
    let mut offset = 0u64;
    while let Some(p) = r.next_packet(&mut input, &mut buf, &mut offset)? {
        r.packet(p)?;
    }
    r.finish()
}

/// What a reader keeps between packets: interned strings, the tracks declared, and the slices
/// open on each track.
struct Reader<'p, 'o, 's> {
    path: &'p Path,
    open: &'o mut OpenSink<'s>,
    /// The most slices held at once, every track.
    limit: usize,
    sink: Option<Box<dyn TraceSink>>,
    header: Option<RunMeta>,
    names: HashMap<u64, String>,
    categories: HashMap<u64, String>,
    annotations: HashMap<u64, String>,
    processes: HashMap<u64, Track>,
    tracks: HashMap<u64, (Track, u16)>,
    open_slices: HashMap<u64, PendingTrack>,
    /// Slices held in `open_slices`, every track.
    held: usize,
    /// The `passes` and `context tokens` tracks, and the pass slice begun on it.
    pass_tracks: Vec<u64>,
    open_pass: Option<(u64, PassShape)>,
}

impl<'p, 'o, 's> Reader<'p, 'o, 's> {
    fn new(path: &'p Path, open: &'o mut OpenSink<'s>, limit: usize) -> Self {
        Reader {
            path,
            open,
            limit,
            sink: None,
            header: None,
            names: HashMap::new(),
            categories: HashMap::new(),
            annotations: HashMap::new(),
            processes: HashMap::new(),
            tracks: HashMap::new(),
            open_slices: HashMap::new(),
            held: 0,
            pass_tracks: Vec::new(),
            open_pass: None,
        }
    }

    fn bad(&self, message: String) -> Error {
        Error::invalid(self.path, message)
    }

    /// A slice's name, quoted and made printable, for an error message.
    fn quoted(&self, s: &Pending) -> String {
        let name = self.names.get(&s.name).map_or("?", String::as_str);
        format!("\"{}\"", crate::base::printable::printable(name))
    }

    /// The next length-delimited packet of the trace; `None` at the end of the input.
    fn next_packet(
        &self,
        input: &mut impl Read,
        buf: &mut Vec<u8>,
        offset: &mut u64,
    ) -> Result<Option<pb::TracePacket>> {
        let io = |e| Error::io(self.path, e);
        let mut tag = [0u8; 1];
        if input.read(&mut tag).map_err(io)? == 0 {
            return Ok(None);
        }
        if tag[0] != pb::TRACE_PACKET_TAG {
            return Err(self.bad(format!(
                "byte {offset}: expected a trace packet, found tag byte {:#04x}",
                tag[0]
            )));
        }
        let len = read_varint(input)
            .map_err(io)?
            .ok_or_else(|| self.bad(format!("byte {offset}: the file ends inside a packet")))?;
        let len = usize::try_from(len)
            .ok()
            .filter(|&l| l <= MAX_PACKET)
            .ok_or_else(|| {
                self.bad(format!(
                    "byte {offset}: a packet of {len} bytes is too large"
                ))
            })?;
        buf.resize(len, 0);
        input
            .read_exact(buf)
            .map_err(|_| self.bad(format!("byte {offset}: the file ends inside a packet")))?;
        *offset += 1 + len as u64;
        pb::TracePacket::decode(buf.as_slice())
            .map(Some)
            .map_err(|e| self.bad(format!("byte {offset}: not a trace packet: {e}")))
    }

    /// One packet: its interned strings, its track descriptor, its event.
    fn packet(&mut self, p: pb::TracePacket) -> Result<()> {
        if let Some(d) = p.interned_data {
            for s in d.event_names {
                self.names
                    .insert(s.iid.unwrap_or(0), s.name.unwrap_or_default());
            }
            for s in d.event_categories {
                self.categories
                    .insert(s.iid.unwrap_or(0), s.name.unwrap_or_default());
            }
            for s in d.debug_annotation_names {
                self.annotations
                    .insert(s.iid.unwrap_or(0), s.name.unwrap_or_default());
            }
        }
        if let Some(d) = p.track_descriptor {
            self.track_descriptor(d)?;
        }
        let Some(ev) = p.track_event else {
            return Ok(());
        };
        if self.sink.is_none() {
            return Err(
                self.bad("not a brickprof trace: events before the host process descriptor".into())
            );
        }
        let uuid = ev.track_uuid.unwrap_or(0);
        let at = p.timestamp.unwrap_or(0);
        if self.pass_tracks.contains(&uuid) {
            return self.pass_event(&ev, at);
        }
        match ev.r#type {
            Some(pb::TYPE_COUNTER) => self
                .sink()
                .counter(at, ev.double_counter_value.unwrap_or(0.0)),
            Some(pb::TYPE_SLICE_BEGIN) => self.begin_slice(&ev, uuid, at),
            Some(pb::TYPE_SLICE_END) => self.end_slice(uuid, at),
            _ => Ok(()),
        }
    }

    /// The sink, opened by the host process descriptor (checked before any event).
    fn sink(&mut self) -> &mut dyn TraceSink {
        self.sink.as_deref_mut().expect("checked before any event")
    }

    /// A track descriptor: the host process (whose labels carry the run's facts, and open the
    /// sink), the device process, the passes' tracks, or a row's track.
    fn track_descriptor(&mut self, d: pb::TrackDescriptor) -> Result<()> {
        let uuid = d.uuid.unwrap_or(0);
        if let Some(proc_) = d.process {
            let label = |key: &str| {
                proc_
                    .process_labels
                    .iter()
                    .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            };
            if label("clock") != Some("host") {
                self.processes.insert(uuid, Track::Device);
                return Ok(());
            }
            let h = match label(RUN_LABEL) {
                Some(json) => serde_json::from_str::<RunMeta>(json)
                    .map_err(|e| self.bad(format!("the host process's {RUN_LABEL} label: {e}")))?,
                None => legacy_meta(&label)
                    .ok_or_else(|| self.bad("the host process names no known timeline".into()))?,
            };
            let host = if h.timeline == TimelineKind::Cpu {
                Track::Cpu
            } else {
                Track::Host
            };
            self.processes.insert(uuid, host);
            self.sink = Some((self.open)(&h)?);
            self.header = Some(h);
        } else if d
            .parent_uuid
            .is_some_and(|p| self.processes.contains_key(&p))
            && matches!(uuid & 0xF_FFFF, PASSES | CONTEXT)
        {
            self.pass_tracks.push(uuid);
        } else if let Some(&kind) = d.parent_uuid.and_then(|p| self.processes.get(&p)) {
            if d.counter.is_none() {
                let row = u16::try_from(d.sibling_order_rank.unwrap_or(0)).unwrap_or(0);
                self.tracks.insert(uuid, (kind, row));
            }
        }
        Ok(())
    }

    /// An event on the passes' tracks: a pass slice begins or ends.
    fn pass_event(&mut self, ev: &pb::TrackEvent, at: u64) -> Result<()> {
        match ev.r#type {
            Some(pb::TYPE_SLICE_BEGIN) => {
                let name = ev.name_iid.and_then(|i| self.names.get(&i));
                self.open_pass = pass_shape(ev, name.map(String::as_str)).map(|s| (at, s));
            }
            Some(pb::TYPE_SLICE_END) => {
                if let Some((start_ns, shape)) = self.open_pass.take() {
                    self.sink().pass(&PassSlice {
                        start_ns,
                        dur_ns: at.saturating_sub(start_ns),
                        shape,
                    })?;
                }
            }
            // The context counter follows from the passes' shapes.
            _ => {}
        }
        Ok(())
    }

    /// A slice begins on track `uuid`: held until its track's outermost slice ends.
    fn begin_slice(&mut self, ev: &pb::TrackEvent, uuid: u64, at: u64) -> Result<()> {
        let &(track, row) = self
            .tracks
            .get(&uuid)
            .ok_or_else(|| self.bad(format!("a slice on undeclared track {uuid}")))?;
        let row = ev
            .debug_annotations
            .iter()
            .find(|a| {
                let name = a.name.as_deref().or_else(|| {
                    a.name_iid
                        .and_then(|i| self.annotations.get(&i))
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
        if self.held >= self.limit {
            // This track's outermost open slice (else another track's) keeps them.
            let outer = self
                .open_slices
                .get(&uuid)
                .and_then(|t| t.slices.first())
                .or_else(|| self.open_slices.values().find_map(|t| t.slices.first()));
            let (name, start_ns) =
                outer.map_or((String::from("?"), at), |s| (self.quoted(s), s.start_ns));
            return Err(Error::TooManyHeldSlices {
                path: self.path.to_path_buf(),
                name,
                start_ns,
                limit: self.limit as u64,
            });
        }
        self.held += 1;
        let t = self.open_slices.entry(uuid).or_default();
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
        Ok(())
    }

    /// A slice ends on track `uuid`; when it was the track's outermost, the track's held
    /// slices go to the sink.
    fn end_slice(&mut self, uuid: u64, at: u64) -> Result<()> {
        let t = self.open_slices.entry(uuid).or_default();
        let Some(i) = t.stack.pop() else {
            return Err(self.bad(format!("a slice ends on track {uuid} where none is open")));
        };
        t.slices[i].dur_ns = at.saturating_sub(t.slices[i].start_ns);
        if !t.stack.is_empty() {
            return Ok(());
        }
        self.held -= t.slices.len();
        let slices = std::mem::take(&mut t.slices);
        let sink = self.sink.as_deref_mut().expect("checked before any event");
        for s in slices {
            sink.slice(&Slice {
                track: s.track,
                row: s.row,
                name: self.names.get(&s.name).map_or("?", String::as_str),
                category: self
                    .categories
                    .get(&s.category)
                    .map_or("Other", String::as_str),
                start_ns: s.start_ns,
                dur_ns: s.dur_ns,
                flow: s.flow,
            })?;
        }
        Ok(())
    }

    /// The end of the file: every slice ended, the sink finished.
    fn finish(self) -> Result<()> {
        // The first slice of a track is its outermost open one: the earliest of them never ended.
        if let Some(s) = self
            .open_slices
            .values()
            .filter_map(|t| t.slices.first())
            .min_by_key(|s| s.start_ns)
        {
            return Err(Error::UnendedSlice {
                path: self.path.to_path_buf(),
                name: self.quoted(s),
                start_ns: s.start_ns,
                slices: self.held as u64,
            });
        }
        match (self.sink, self.header) {
            (Some(mut s), Some(_)) => s.finish(),
            _ => Err(Error::invalid(
                self.path,
                "not a brickprof trace: no host process descriptor".to_string(),
            )),
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::chrome_writer::ChromeWriter;
    use crate::output::perfetto_writer::PerfettoWriter;

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
