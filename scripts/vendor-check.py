#!/usr/bin/env python3
"""An independent reading of the vendor files brickprof imports (spec/imports.md), with the
csv module only: per (brick, row) calls, kernels, time (total, min, max ns), DRAM bytes and
FLOPs, and the kernels outside every range, as JSON on stdout. The import tests compare
brickprof's `import` with it, and tests/fixtures/vendor/expected/*.json is its output:

    python3 scripts/vendor-check.py tests/fixtures/vendor/ncu_raw_nvtx.csv

Usage: vendor-check.py FILE   (an ncu raw CSV, or a rocprofv3 *kernel_trace.csv)
"""
import csv
import json
import os
import re
import sys

# brickprof's built-in brick names (src/model/brick.rs, BrickId).
BUILTIN_NAMES = [
    "Embedding", "RmsNorm", "LayerNorm", "QkvProjection", "RopeEmbedding", "AttentionScore",
    "AttentionSoftmax", "AttentionOutput", "OutputProjection", "GateProjection", "UpProjection",
    "Activation", "DownProjection", "ResidualAdd", "LmHead", "Sampling",
]


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
        entries = re.findall(r'"([^"]*)"', stack)
        rng = entries[-1].rsplit(":", 6)[0].split(":", 1)[1] if entries else None
        # DRAM bytes: read + write, over the columns present; FLOPs when all three FP columns are.
        dram = sum(metric(r, c) for c in ("dram__bytes_read.sum", "dram__bytes_write.sum") if c in col)
        fp = ["smsp__sass_thread_inst_executed_op_%s_pred_on.sum" % op for op in ("ffma", "fadd", "fmul")]
        flops = (2 * metric(r, fp[0]) + metric(r, fp[1]) + metric(r, fp[2])) if all(c in col for c in fp) else None
        kernels.append(dict(thread=thread, range=rng, instance=stack,
                            dur=metric(r, "gpu__time_duration.sum"), start=None, end=None,
                            dram=dram, flops=flops))
    dram_cols = any(c in col for c in ("dram__bytes_read.sum", "dram__bytes_write.sum"))
    fp_cols = all(k["flops"] is not None for k in kernels)
    return "ncu", kernels, (dram_cols, fp_cols)


def rocprof(path):
    markers = path[: -len("kernel_trace.csv")] + "marker_api_trace.csv"
    ranges = None
    if os.path.isfile(markers):
        ranges = set()
        with open(markers, newline="") as f:
            for r in csv.DictReader(f):
                s, e = int(r["Start_Timestamp"]), int(r["End_Timestamp"])
                dom = r.get("Domain")
                control = dom is not None and dom not in ("MARKER_CORE_API", "MARKER_CORE_RANGE_API")
                if e > s and not control and not r["Function"].startswith("roctx"):
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
            s, e = int(r["Start_Timestamp"]), int(r["End_Timestamp"])
            kernels.append(dict(thread=int(r["Thread_Id"]), range=name if inside else None,
                                instance=name, dur=e - s, start=s, end=e, dram=None, flops=None))
    return "rocprofv3", kernels, (False, False)


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
        c = open_calls.setdefault(t, dict(range=k["range"], instance=k["instance"], kernels=[]))
        c["kernels"].append(k)
    done.extend(open_calls[t] for t in sorted(open_calls))
    return done, outside


def main():
    path = sys.argv[1]
    with open(path, newline="") as f:
        head = f.read(65536)
    tool, kernels, counters = ncu(path) if '"ID",' in head and '"Kernel Name"' in head else rocprof(path)
    done, outside = calls(kernels)
    cells = {}
    for c in done:
        ks = c["kernels"]
        if ks[0]["start"] is None:
            ns = sum(k["dur"] for k in ks)
        else:
            ns = max(k["end"] for k in ks) - min(k["start"] for k in ks)
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
        if counters[0]:
            cell["dram_bytes"] += sum(k["dram"] for k in ks)
        if counters[1]:
            cell["flops"] += sum(k["flops"] for k in ks)
    key = lambda c: (c["brick"], (1, 0) if c["row"] == "model" else (0, c["row"]))
    layers = max([c["row"] + 1 for c in cells.values() if c["row"] != "model"], default=0)
    out = dict(timeline=tool, layers=layers, bricks=sorted(cells.values(), key=key), outside=outside)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
