#!/usr/bin/env python3
"""An independent reading of the vendor files brickprof imports (spec/imports.md), with the
csv and sqlite3 modules only (the SQLite files read table by table and joined here, not with
the importers' queries): per (brick, row) calls, kernels, time (total, min, max ns), DRAM bytes and
FLOPs and what follows from them a call (bytes and FLOPs a call, GB/s, GFLOP/s, FLOPs a byte),
and the kernels outside every range, as JSON on stdout; for a file with pass ranges
(`pass/{phase}/{n}`, spec/imports.md "Pass ranges"), also each (brick, row)'s calls by phase and
the passes (count, time, by phase). The import tests compare brickprof's `import` with it, and
tests/fixtures/vendor/expected/*.json is its output:

    python3 scripts/vendor-check.py tests/fixtures/vendor/ncu_raw_nvtx.csv

With --peaks GFLOPS,GBPS each (brick, row) with counters also gets its measured roofline
(spec/imports.md "Measured roofline", computed here from the roofline's definition in
spec/work-accounting.md, against the DRAM roof): bound, roof, and the achieved rate's percent
of it. With --declared PROFILE.json (a brickprof profile whose engine declared its work), each
(brick, row) both have gets the work a call as declared and as measured, and their ratio
(spec/imports.md "Declared and measured work").

Usage: vendor-check.py FILE [--peaks GFLOPS,GBPS] [--declared PROFILE.json]
       FILE: an ncu raw CSV, a rocprofv3 *kernel_trace.csv, an Nsight Systems SQLite export,
       or a rocpd SQLite database
"""
import csv
import json
import os
import re
import sqlite3
import sys

# brickprof's built-in brick names (src/model/brick.rs, BrickId).
BUILTIN_NAMES = [
    "Embedding", "RmsNorm", "LayerNorm", "QkvProjection", "RopeEmbedding", "AttentionScore",
    "AttentionSoftmax", "AttentionOutput", "OutputProjection", "GateProjection", "UpProjection",
    "Activation", "DownProjection", "ResidualAdd", "LmHead", "Sampling",
]


def pass_phase(name):
    """The phase of a pass range's name (`pass/decode/17`), else None."""
    m = re.fullmatch(r"pass/(unspecified|prefill|decode|mixed)(/[0-9]+)?", name or "")
    return m and m.group(1)


def brick_of(rng):
    m = re.fullmatch(r"L([0-9]+)/(.+)", rng, re.S)
    if m:
        return m.group(2), int(m.group(1))
    return rng, "model"


def num(text):
    return float(text.replace(",", ""))


def ncu(path):
    with open(path, newline="") as f:
        lines = f.read().splitlines(keepends=True)
    start = next(i for i, l in enumerate(lines) if l.startswith('"ID",'))
    rows = list(csv.reader(lines[start:]))
    header, units, data = rows[0], rows[1], [r for r in rows[2:] if r]
    col = {name: i for i, name in enumerate(header)}
    nvtx = next(i for i, n in enumerate(header) if n.startswith("thread Domain:Push/Pop_Range"))
    scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9, "byte": 1, "Kbyte": 1e3, "Mbyte": 1e6,
             "Gbyte": 1e9, "inst": 1, "": 1}

    def metric(r, name):
        i = col[name]
        return int(round(num(r[i]) * scale[units[i]]))

    kernels = []
    for r in data:
        stack = r[nvtx].strip()
        thread = int(re.match(r"[0-9]*", stack).group(0) or 0)
        names = [e.rsplit(":", 6)[0].split(":", 1)[1] for e in re.findall(r'"([^"]*)"', stack)]
        rng = next((n for n in reversed(names) if not pass_phase(n)), None)
        pss = next((n for n in reversed(names) if pass_phase(n)), None)
        # DRAM bytes: read + write, over the columns present; FLOPs when all three FP columns are.
        dram = sum(metric(r, c) for c in ("dram__bytes_read.sum", "dram__bytes_write.sum") if c in col)
        fp = ["smsp__sass_thread_inst_executed_op_%s_pred_on.sum" % op for op in ("ffma", "fadd", "fmul")]
        flops = (2 * metric(r, fp[0]) + metric(r, fp[1]) + metric(r, fp[2])) if all(c in col for c in fp) else None
        kernels.append(dict(thread=thread, range=rng, instance=stack,
                            dur=metric(r, "gpu__time_duration.sum"), start=None, end=None,
                            dram=dram, flops=flops, pass_name=pss, pass_wall=None))
    dram_cols = any(c in col for c in ("dram__bytes_read.sum", "dram__bytes_write.sum"))
    fp_cols = all(k["flops"] is not None for k in kernels)
    return "ncu", kernels, (dram_cols, fp_cols)


def rocprof(path):
    markers = path[: -len("kernel_trace.csv")] + "marker_api_trace.csv"
    ranges, passes = None, {}
    if os.path.isfile(markers):
        ranges = set()
        with open(markers, newline="") as f:
            for r in csv.DictReader(f):
                s, e = int(r["Start_Timestamp"]), int(r["End_Timestamp"])
                dom = r.get("Domain")
                control = dom is not None and dom not in ("MARKER_CORE_API", "MARKER_CORE_RANGE_API")
                if e <= s or control or r["Function"].startswith("roctx"):
                    continue
                if pass_phase(r["Function"]):
                    passes.setdefault(int(r["Thread_Id"]), []).append((s, e, r["Function"]))
                else:
                    ranges.add(r["Function"])
    kernels = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            name = r["Kernel_Name"]
            if ranges is not None:
                inside = name in ranges
            else:
                b, row = brick_of(name)
                inside = row != "model" or b in BUILTIN_NAMES
            s, e, t = int(r["Start_Timestamp"]), int(r["End_Timestamp"]), int(r["Thread_Id"])
            # Its pass, by time: the pass range of its thread that opened last at or before the
            # kernel's start, when the kernel ends at or before the range's end.
            opened = [p for p in passes.get(t, []) if p[0] <= s]
            pss = max(opened, default=None)
            if pss is not None and e > pss[1]:
                pss = None
            kernels.append(dict(thread=t, range=name if inside else None,
                                instance=name, dur=e - s, start=s, end=e, dram=None, flops=None,
                                pass_name=pss and pss[2],
                                pass_wall=pss and pss[1] - pss[0]))
    return "rocprofv3", kernels, (False, False)


def nsys(path):
    """Each kernel's launch call (same correlationId, same process), then the innermost named
    push/pop range (eventType 59) of the launching thread open when the call started."""
    db = sqlite3.connect(path)
    db.text_factory = lambda b: b.decode("utf-8", "replace")
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    strings = dict(db.execute("SELECT id, value FROM StringIds")) if "StringIds" in tables else {}
    ranges = {}
    if "NVTX_EVENTS" in tables:
        for rowid, tid, s, e, text, text_id in db.execute(
                "SELECT rowid, globalTid, start, end, text, textId FROM NVTX_EVENTS WHERE eventType = 59"):
            name = text if text is not None else strings.get(text_id)
            if name is not None and tid is not None:
                ranges.setdefault(tid, []).append((s, float("inf") if e is None else e, rowid, name))
    runtime = {}
    for tid, s, c in db.execute("SELECT globalTid, start, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME"):
        runtime.setdefault(c, []).append((tid, s))
    rows = []
    for rowid, s, e, c, pid in db.execute(
            "SELECT rowid, start, end, correlationId, globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL"):
        for tid, launch in runtime.get(c, []) or [(None, 0)]:
            if tid is not None and pid is not None and tid - tid % (1 << 24) != pid:
                continue
            rows.append((-1 if tid is None else tid, launch, s, rowid, e))
    kernels = []
    for tid, launch, s, _, e in sorted(rows):
        inside = [r for r in ranges.get(tid, []) if r[0] <= launch < r[1]]
        innermost = lambda rs: max(rs, key=lambda r: (r[0], -r[1], r[2]), default=None)
        top = innermost([r for r in inside if not pass_phase(r[3])])
        pss = innermost([r for r in inside if pass_phase(r[3])])
        wall = None if pss is None or pss[1] == float("inf") else pss[1] - pss[0]
        kernels.append(dict(thread=tid, range=top and top[3], instance=top and top[2], dur=e - s,
                            start=s, end=e, dram=None, flops=None,
                            pass_name=pss and pss[3], pass_wall=wall))
    return "nsys", kernels, (False, False)


def rocpd(path):
    """The rocpd tables joined here: a dispatch's region string is its innermost roctx range
    when that string names a range (a region of category MARKER_CORE* that lasts, not roctx's
    own call)."""
    db = sqlite3.connect(path)
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    table = lambda base: next(n for n in sorted(names) if n.startswith(base) and n != base)
    strings = dict(db.execute(f"SELECT id, string FROM {table('rocpd_string')}"))
    threads = dict(db.execute(f"SELECT id, tid FROM {table('rocpd_info_thread')}"))
    category = {i: strings.get(c) for i, c in db.execute(f"SELECT id, category_id FROM {table('rocpd_event')}")}
    ranges = set()
    for name_id, s, e, ev in db.execute(f'SELECT name_id, start, "end", event_id FROM {table("rocpd_region")}'):
        name = strings[name_id]
        if (category.get(ev) or "").startswith("MARKER_CORE") and e > s and not name.startswith("roctx") \
                and not pass_phase(name):
            ranges.add(name)
    passes = {}
    for tid, name_id, s, e, ev in db.execute(f'SELECT tid, name_id, start, "end", event_id FROM {table("rocpd_region")}'):
        name = strings[name_id]
        if (category.get(ev) or "").startswith("MARKER_CORE") and e != s and pass_phase(name):
            passes.setdefault(threads[tid], []).append((s, e, name))
    rows = sorted(db.execute(f'SELECT tid, start, id, "end", region_name_id FROM {table("rocpd_kernel_dispatch")}'),
                  key=lambda r: (threads[r[0]], r[1], r[2]))
    kernels = []
    for tid, s, _, e, region_id in rows:
        name = strings.get(region_id, "")
        if ranges:
            inside = name in ranges
        else:
            b, row = brick_of(name)
            inside = row != "model" or b in BUILTIN_NAMES
        # Its pass, by time, as for the CSV: the pass range of its thread that opened last at
        # or before the kernel's start, when the kernel ends at or before the range's end.
        pss = max((p for p in passes.get(threads[tid], []) if p[0] <= s), default=None)
        if pss is not None and e > pss[1]:
            pss = None
        kernels.append(dict(thread=threads[tid], range=name if inside else None, instance=name,
                            dur=e - s, start=s, end=e, dram=None, flops=None,
                            pass_name=pss and pss[2], pass_wall=pss and pss[1] - pss[0]))
    return "rocprofv3", kernels, (False, False)


def kernels_time(ks):
    """Summed durations (no timestamps), else first start to last end."""
    if ks[0]["start"] is None:
        return sum(k["dur"] for k in ks)
    return max(k["end"] for k in ks) - min(k["start"] for k in ks)


def passes_of(kernels):
    """Consecutive kernels of one thread in one pass range are one pass: (phase, time) each, the
    time the range's own when the file gives it, else its kernels'; and each kernel's phase."""
    open_passes, done = {}, []
    for k in kernels:
        t, name = k["thread"], k.get("pass_name")
        if t in open_passes and open_passes[t]["name"] != name:
            done.append(open_passes.pop(t))
        k["phase"] = pass_phase(name) or "unspecified"
        if name is not None and pass_phase(name):
            p = open_passes.setdefault(t, dict(name=name, wall=k["pass_wall"], kernels=[]))
            p["kernels"].append(k)
    done.extend(open_passes[t] for t in sorted(open_passes))
    return [(pass_phase(p["name"]), p["wall"] if p["wall"] is not None else kernels_time(p["kernels"]))
            for p in done]


def calls(kernels):
    """Consecutive kernels of one thread in one range instance are one call."""
    open_calls, done, outside = {}, [], {"kernels": 0, "busy_ns": 0}
    for k in kernels:
        t = k["thread"]
        if t in open_calls and (k["range"] is None or open_calls[t]["instance"] != k["instance"]):
            done.append(open_calls.pop(t))
        if k["range"] is None:
            outside["kernels"] += 1
            outside["busy_ns"] += k["dur"]
            continue
        c = open_calls.setdefault(t, dict(range=k["range"], instance=k["instance"], kernels=[],
                                          phase=k.get("phase", "unspecified")))
        c["kernels"].append(k)
    done.extend(open_calls[t] for t in sorted(open_calls))
    return done, outside


def div(n, d):
    """n / d, None when either is unknown or d is 0 (as brickprof's per-call figures)."""
    return None if n is None or d is None or d == 0 else n / d


def per_call(cell):
    b, f = cell["dram_bytes"], cell["flops"]
    return {"dram_bytes": div(b, cell["calls"]), "flops": div(f, cell["calls"]),
            "gbps": div(b, cell["total_ns"]), "gflops": div(f, cell["total_ns"]),
            "flop_per_byte": div(f, b)}


def roofline(cell, gflops, gbps):
    """The roofline by its definition, against DRAM (the counters count DRAM bytes): memory-bound
    below the ridge (gflops / gbps FLOP/B), the roof min(peak, intensity x bandwidth); bytes
    only: the bandwidth roof; FLOPs only: the compute roof."""
    f, b, ns = cell["flops"] or 0, cell["dram_bytes"] or 0, cell["total_ns"]
    if (f == 0 and b == 0) or ns == 0:
        return None
    if f > 0 and b > 0:
        ai = f / b
        bound = "memory" if ai < gflops / gbps else "compute"
        roof, achieved = min(gflops, ai * gbps), f / ns
    elif b > 0:
        bound, roof, achieved = "memory", gbps, b / ns
    else:
        bound, roof, achieved = "compute", gflops, f / ns
    return {"bound": bound, "roof": roof, "roof_pct": achieved / roof * 100}


def declared_work(profile_path):
    """Per (brick, row) of a brickprof profile: its calls and the FLOPs and bytes it declared."""
    with open(profile_path) as f:
        profile = json.load(f)
    out = {}
    for b in profile["bricks"]:
        for r in b.get("rows", []):
            st = r["stats"]
            key = (b["name"], r["row"])
            calls, flops, nbytes = out.get(key, (0, 0, 0))
            out[key] = (calls + int(st["count"]), flops + int(st["work"]["flops"]),
                        nbytes + int(st["work"]["bytes"]))
    return out


def compared(cell, declared):
    """The work a call as the profile declared it and as the counters measured it."""
    calls, flops, nbytes = declared.get((cell["brick"], cell["row"]), (0, 0, 0))
    if calls == 0 or (flops == 0 and nbytes == 0) or (cell["flops"] is None and cell["dram_bytes"] is None):
        return None
    pc = per_call(cell)
    out = {}
    for name, d, m in (("flops", flops, pc["flops"]), ("bytes", nbytes, pc["dram_bytes"])):
        d = d / calls if d > 0 else None
        out[name] = {"declared": d, "measured": m, "ratio": div(m, d)}
    return out


def options(argv):
    path, peaks, declared = None, None, None
    args = iter(argv)
    for a in args:
        if a == "--peaks":
            peaks = tuple(float(x) for x in next(args).split(","))
        elif a == "--declared":
            declared = declared_work(next(args))
        else:
            path = a
    return path, peaks, declared


def main():
    path, peaks, declared = options(sys.argv[1:])
    with open(path, "rb") as f:
        head = f.read(65536)
    if head.startswith(b"SQLite format 3\0"):
        db = sqlite3.connect(path)
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
        tool, kernels, counters = rocpd(path) if "kernels" in tables and "regions" in tables else nsys(path)
    elif b'"ID",' in head and b'"Kernel Name"' in head:
        tool, kernels, counters = ncu(path)
    else:
        tool, kernels, counters = rocprof(path)
    passes = passes_of(kernels)
    done, outside = calls(kernels)
    cells = {}
    for c in done:
        ks = c["kernels"]
        ns = kernels_time(ks)
        brick, row = brick_of(c["range"])
        cell = cells.setdefault((brick, row), dict(brick=brick, row=row, calls=0, kernels=0,
                                                   total_ns=0, min_ns=None, max_ns=0,
                                                   dram_bytes=0 if counters[0] else None,
                                                   flops=0 if counters[1] else None))
        cell["calls"] += 1
        cell["kernels"] += len(ks)
        cell["total_ns"] += ns
        cell["min_ns"] = ns if cell["min_ns"] is None else min(cell["min_ns"], ns)
        cell["max_ns"] = max(cell["max_ns"], ns)
        if passes:
            phases = cell.setdefault("phases", {})
            phases[c["phase"]] = phases.get(c["phase"], 0) + 1
        if counters[0]:
            cell["dram_bytes"] += sum(k["dram"] for k in ks)
        if counters[1]:
            cell["flops"] += sum(k["flops"] for k in ks)
    for cell in cells.values():
        cell["per_call"] = per_call(cell)
        if peaks is not None:
            cell["roofline"] = roofline(cell, *peaks)
        if declared is not None:
            cell["declared_vs_measured"] = compared(cell, declared)
    key = lambda c: (c["brick"], (1, 0) if c["row"] == "model" else (0, c["row"]))
    layers = max([c["row"] + 1 for c in cells.values() if c["row"] != "model"], default=0)
    out = dict(timeline=tool, layers=layers, bricks=sorted(cells.values(), key=key), outside=outside)
    if passes:
        times = [ns for _, ns in passes]
        by_phase = {}
        for phase, ns in passes:
            b = by_phase.setdefault(phase, dict(count=0, total_ns=0))
            b["count"] += 1
            b["total_ns"] += ns
        out["passes"] = dict(count=len(passes), total_ns=sum(times), min_ns=min(times),
                             max_ns=max(times), phases=by_phase)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
