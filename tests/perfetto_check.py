#!/usr/bin/env python3
"""Parse every brickprof .pftrace under the given files/directories with Perfetto's own protos
(the `perfetto` Python package's bundled perfetto_trace_pb2: no binary download) and check the
layout spec/traces.md ("Perfetto") promises:

- track structure: unique uuids, each track declared before use, every child track under a
  declared process, one host process (label clock=host), the counters under it (tokens/s;
  "context tokens" when passes have shapes, spec/traces.md "Passes");
- slice nesting per track: begin/end pairs balance, a slice ends within its parent;
- timestamps are monotone per track;
- flows pair up: each id starts once on a host track and ends once on a device track;
- interned names: every name/category iid was interned earlier on the sequence.

Exit status 1 on any violation, or when no .pftrace was found.
"""

import collections
import pathlib
import sys

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

# The counter tracks spec/traces.md names, all under the host process.
HOST_COUNTERS = {"tokens/s", "context tokens"}

BEGIN = pb.TrackEvent.TYPE_SLICE_BEGIN
END = pb.TrackEvent.TYPE_SLICE_END
COUNTER = pb.TrackEvent.TYPE_COUNTER


def check(path):
    trace = pb.Trace()
    trace.ParseFromString(path.read_bytes())
    errors = []
    err = errors.append
    packets = list(trace.packet)
    if not packets:
        return ["no packets"], {}
    if not packets[0].sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
        err("first packet does not clear the incremental state")
    processes, tracks = {}, {}  # uuid -> labels / (parent, name, is_counter)
    names, cats, annotation_names = set(), set(), set()
    stacks = collections.defaultdict(list)  # uuid -> begin timestamps of open slices
    last_ts = {}
    flows_out, flows_in = collections.Counter(), collections.Counter()
    slices = collections.Counter()
    counters = 0
    for i, p in enumerate(packets):
        if p.trusted_packet_sequence_id != 1:
            err(f"packet {i}: sequence id {p.trusted_packet_sequence_id}")
        if p.HasField("interned_data"):
            for n in p.interned_data.event_names:
                names.add(n.iid)
            for c in p.interned_data.event_categories:
                cats.add(c.iid)
            for a in p.interned_data.debug_annotation_names:
                annotation_names.add(a.iid)
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            if d.uuid in processes or d.uuid in tracks:
                err(f"packet {i}: track uuid {d.uuid} declared twice")
            if d.HasField("process"):
                processes[d.uuid] = set(d.process.process_labels)
            else:
                if d.parent_uuid not in processes:
                    err(f"packet {i}: track {d.name!r} has no declared parent process")
                tracks[d.uuid] = (d.parent_uuid, d.name, d.HasField("counter"))
        if not p.HasField("track_event"):
            continue
        e = p.track_event
        u = e.track_uuid
        if u not in tracks:
            err(f"packet {i}: event on undeclared track {u}")
            continue
        if p.timestamp < last_ts.get(u, 0):
            err(f"packet {i}: timestamp {p.timestamp} goes back on track {tracks[u][1]!r}")
        last_ts[u] = p.timestamp
        if e.type == COUNTER:
            counters += 1
            if not tracks[u][2]:
                err(f"packet {i}: counter value on a slice track")
            continue
        if e.type == BEGIN:
            if not p.sequence_flags & pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE:
                err(f"packet {i}: uses interned names without SEQ_NEEDS_INCREMENTAL_STATE")
            for a in e.debug_annotations:
                if a.HasField("name_iid") and a.name_iid not in annotation_names:
                    err(f"packet {i}: debug annotation name iid {a.name_iid} not interned")
            if e.name_iid not in names:
                err(f"packet {i}: name iid {e.name_iid} not interned")
            if any(c not in cats for c in e.category_iids):
                err(f"packet {i}: category iid not interned")
            stacks[u].append(p.timestamp)
            slices[u] += 1
            host_side = "clock=host" in processes.get(tracks[u][0], set())
            for f in e.flow_ids:
                flows_out[f] += 1
                if not host_side:
                    err(f"packet {i}: flow {f} starts off the host process")
            for f in e.terminating_flow_ids:
                flows_in[f] += 1
                if host_side:
                    err(f"packet {i}: flow {f} ends on the host process")
        elif e.type == END:
            if not stacks[u]:
                err(f"packet {i}: slice end without a begin on {tracks[u][1]!r}")
                continue
            begin = stacks[u].pop()
            # With begin/end pairs, LIFO ends on monotone timestamps are proper nesting:
            # a slice ends after it begins and before the slice enclosing it ends.
            if p.timestamp < begin:
                err(f"packet {i}: slice ends before it begins on {tracks[u][1]!r}")
        else:
            err(f"packet {i}: unexpected event type {e.type}")
    for u, s in stacks.items():
        if s:
            err(f"track {tracks[u][1]!r}: {len(s)} slices never end")
    hosts = [u for u, labels in processes.items() if "clock=host" in labels]
    if len(hosts) != 1:
        err(f"{len(hosts)} host processes (want 1)")
    for u, (parent, name, is_counter) in tracks.items():
        if is_counter and (name not in HOST_COUNTERS or parent not in hosts):
            err(f"counter track {name!r} is not one of {sorted(HOST_COUNTERS)} under the host process")
    for f, n in flows_out.items():
        if n != 1 or flows_in.get(f) != 1:
            err(f"flow {f}: starts {n} times, ends {flows_in.get(f, 0)} times")
    for f in flows_in:
        if f not in flows_out:
            err(f"flow {f} ends but never starts")
    summary = {
        "packets": len(packets),
        "tracks": len(tracks),
        "slices": sum(slices.values()),
        "flows": len(flows_out),
        "counters": counters,
    }
    return errors, summary


def self_test(path):
    """The checker can fail: a trace with its last slice end removed and its first timestamp
    moved late must be rejected."""
    trace = pb.Trace()
    trace.ParseFromString(path.read_bytes())
    ends = [i for i, p in enumerate(trace.packet) if p.track_event.type == END]
    del trace.packet[ends[-1]]
    broken = path.with_suffix(".broken")
    broken.write_bytes(trace.SerializeToString())
    errors, _ = check(broken)
    broken.unlink()
    assert any("never end" in e for e in errors), errors
    print(f"self-test ok: a corrupted {path.name} is rejected ({len(errors)} faults)")


def main(args):
    if args[:1] == ["--self-test"]:
        self_test(pathlib.Path(args[1]))
        return 0
    files = []
    for a in args or ["target/tmp/pftrace"]:
        p = pathlib.Path(a)
        files += sorted(p.rglob("*.pftrace")) if p.is_dir() else [p]
    if not files:
        print("perfetto_check: no .pftrace files found", file=sys.stderr)
        return 1
    bad = 0
    for f in files:
        errors, summary = check(f)
        if errors:
            bad += 1
            print(f"FAIL {f}")
            for e in errors[:20]:
                print(f"  {e}")
        else:
            print(f"ok   {f}: {summary}")
    print(f"perfetto_check: {len(files) - bad}/{len(files)} traces valid")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
