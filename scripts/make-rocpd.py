#!/usr/bin/env python3
"""Write a small rocprofv3 rocpd SQLite database (`rocprofv3 --kernel-trace --marker-trace
--output-format rocpd`) of a run named as brickprof names its roctx ranges, for the import
tests (spec/imports.md "rocpd").

BUILT, NOT RECORDED: no AMD GPU was at hand. The tables follow rocprofiler-sdk's documented
rocpd schema (`rocpd_tables.sql`, schema 3.0: per-run tables suffixed with the run's uuid,
`rocpd_*` views over them) and its data views (`data_views.sql`): brickprof reads only the
views `kernels` (tid, region, name, start, end, ...) and `regions` (category, name, tid,
start, end, ...), as rocprofiler-sdk's own tools do. The tables here hold the columns those
views use; the views are written in the same shape (same names, same joins).

The run: two passes of a 2-layer model on one thread, each layer RmsNorm, QkvProjection,
DownProjection (two kernels), then LmHead; kernels' `region` is the innermost roctx range's
message at dispatch. Also: a kernel before any range (its region its own name), a second
thread with a kernel outside then one Sampling call, a mark (`pass N`, start = end), a roctxGetThreadId call,
the HIP API calls as regions of another category, and a range pushed with no kernel.

With `--passes` (spec/imports.md "Pass ranges", **By time**): three passes on thread 3141, each
inside a pass range region (`pass/prefill/0`, `pass/decode/1`, `pass/decode/2`); the first two
sync before their range closes, the third does not (a Lagged run: its range closes before its
last kernels end).

Usage: make-rocpd.py [--passes] OUT.db
"""
import os
import sqlite3
import sys

U = "_0000abcd"  # the run's uuid suffix
GUID = "00000000-0000-0000-0000-00000000abcd"

SCHEMA = f"""
CREATE TABLE rocpd_metadata{U} (id INTEGER PRIMARY KEY AUTOINCREMENT, tag TEXT NOT NULL, value TEXT NOT NULL);
CREATE TABLE rocpd_string{U} (id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, string TEXT NOT NULL UNIQUE);
CREATE TABLE rocpd_info_node{U} (id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, hash BIGINT NOT NULL UNIQUE,
    machine_id TEXT NOT NULL UNIQUE, hostname TEXT);
CREATE TABLE rocpd_info_process{U} (id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, nid INTEGER NOT NULL,
    ppid INTEGER, pid INTEGER NOT NULL, start BIGINT, "end" BIGINT, command TEXT);
CREATE TABLE rocpd_info_thread{U} (id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, nid INTEGER NOT NULL,
    ppid INTEGER, pid INTEGER NOT NULL, tid INTEGER NOT NULL, name TEXT, start BIGINT, "end" BIGINT);
CREATE TABLE rocpd_info_agent{U} (id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, nid INTEGER NOT NULL,
    pid INTEGER NOT NULL, type TEXT, absolute_index INTEGER, logical_index INTEGER, type_index INTEGER,
    name TEXT, product_name TEXT);
CREATE TABLE rocpd_info_queue{U} (id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, nid INTEGER NOT NULL,
    pid INTEGER NOT NULL, name TEXT);
CREATE TABLE rocpd_info_kernel_symbol{U} (id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL,
    nid INTEGER NOT NULL, pid INTEGER NOT NULL, code_object_id INTEGER NOT NULL, kernel_name TEXT,
    display_name TEXT);
CREATE TABLE rocpd_event{U} (id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, category_id INTEGER,
    stack_id INTEGER, parent_stack_id INTEGER, correlation_id INTEGER);
CREATE TABLE rocpd_region{U} (id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, nid INTEGER NOT NULL,
    pid INTEGER NOT NULL, tid INTEGER NOT NULL, start BIGINT NOT NULL, "end" BIGINT NOT NULL,
    name_id INTEGER NOT NULL, event_id INTEGER);
CREATE TABLE rocpd_kernel_dispatch{U} (id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL,
    nid INTEGER NOT NULL, pid INTEGER NOT NULL, tid INTEGER, agent_id INTEGER NOT NULL,
    kernel_id INTEGER NOT NULL, dispatch_id INTEGER NOT NULL, queue_id INTEGER NOT NULL,
    stream_id INTEGER, start BIGINT NOT NULL, "end" BIGINT NOT NULL,
    workgroup_size_x INTEGER NOT NULL, grid_size_x INTEGER NOT NULL,
    region_name_id INTEGER, event_id INTEGER);
"""
for t in ("metadata", "string", "info_node", "info_process", "info_thread", "info_agent", "info_queue",
          "info_kernel_symbol", "event", "region", "kernel_dispatch"):
    SCHEMA += f"CREATE VIEW rocpd_{t} AS SELECT * FROM rocpd_{t}{U};\n"
SCHEMA += """
CREATE VIEW regions AS SELECT R.id, R.guid,
    (SELECT string FROM rocpd_string RS WHERE RS.id = E.category_id AND RS.guid = E.guid) AS category,
    S.string AS name, R.nid, P.pid, T.tid, R.start, R."end", (R."end" - R.start) AS duration,
    R.event_id, E.stack_id, E.parent_stack_id, E.correlation_id AS corr_id
  FROM rocpd_region R
  INNER JOIN rocpd_event E ON E.id = R.event_id AND E.guid = R.guid
  INNER JOIN rocpd_string S ON S.id = R.name_id AND S.guid = R.guid
  INNER JOIN rocpd_info_process P ON P.id = R.pid AND P.guid = R.guid
  INNER JOIN rocpd_info_thread T ON T.id = R.tid AND T.guid = R.guid;
CREATE VIEW kernels AS SELECT K.id, K.guid, T.tid,
    (SELECT string FROM rocpd_string RS WHERE RS.id = E.category_id AND RS.guid = E.guid) AS category,
    R.string AS region, S.display_name AS name, K.nid, P.pid, A.absolute_index AS agent_abs_index,
    K.kernel_id, K.dispatch_id, K.stream_id, K.queue_id, Q.name AS queue,
    K.start, K."end", (K."end" - K.start) AS duration, K.grid_size_x AS grid_x,
    K.workgroup_size_x AS workgroup_x, K.event_id, E.correlation_id AS corr_id
  FROM rocpd_kernel_dispatch K
  INNER JOIN rocpd_info_agent A ON A.id = K.agent_id AND A.guid = K.guid
  INNER JOIN rocpd_event E ON E.id = K.event_id AND E.guid = K.guid
  INNER JOIN rocpd_string R ON R.id = K.region_name_id AND R.guid = K.guid
  INNER JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid
  LEFT JOIN rocpd_info_queue Q ON Q.id = K.queue_id AND Q.guid = K.guid
  INNER JOIN rocpd_info_process P ON P.id = Q.pid AND P.guid = Q.guid
  INNER JOIN rocpd_info_thread T ON T.id = K.tid AND T.guid = K.guid;
"""


def main():
    with_passes = "--passes" in sys.argv[1:]
    out = [a for a in sys.argv[1:] if a != "--passes"][0]
    if os.path.exists(out):
        os.remove(out)
    db = sqlite3.connect(out)
    db.executescript(SCHEMA)
    ins = lambda table, cols, vals: db.execute(
        f"INSERT INTO rocpd_{table}{U} (guid, {cols}) VALUES (?, {', '.join('?' * len(vals))})",
        (GUID, *vals)).lastrowid
    strings = {}

    def sid(s):
        if s not in strings:
            strings[s] = ins("string", "string", (s,))
        return strings[s]

    db.execute(f"INSERT INTO rocpd_metadata{U} (tag, value) VALUES ('schema_version', '3'), "
               "('built_by', 'brickprof scripts/make-rocpd.py (built, not recorded)')")
    nid = ins("info_node", "hash, machine_id, hostname", (1, "machine-0", "builder"))
    pid = ins("info_process", "nid, ppid, pid, command", (nid, 1, 3141, "./brickprof-demo"))
    threads = {t: ins("info_thread", "nid, ppid, pid, tid, name", (nid, 1, pid, t, f"t{t}")) for t in (3141, 3150)}
    agent = ins("info_agent", "nid, pid, type, absolute_index, logical_index, type_index, name, product_name",
                (nid, pid, "GPU", 1, 1, 0, "gfx942", "AMD Instinct MI300X"))
    queue = ins("info_queue", "nid, pid, name", (nid, pid, "queue 0"))
    symbols = {}
    corr = [0]
    t = [2_000_000]

    def event(category):
        corr[0] += 1
        return ins("event", "category_id, stack_id, parent_stack_id, correlation_id",
                   (sid(category), corr[0], 0, corr[0]))

    def region(tid, start, end, name, category="MARKER_CORE_API"):
        ins("region", "nid, pid, tid, start, \"end\", name_id, event_id",
            (nid, pid, threads[tid], start, end, sid(name), event(category)))

    def kernel(tid, name, region_name, dur, offset=500):
        s = t[0]
        region(tid, s, s + 200, "hipLaunchKernel", "HIP_RUNTIME_API")
        if name not in symbols:
            symbols[name] = ins("info_kernel_symbol", "nid, pid, code_object_id, kernel_name, display_name",
                                (nid, pid, 1, name + ".kd", name))
        ks = s + offset
        ins("kernel_dispatch", "nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id, stream_id, start, "
            "\"end\", workgroup_size_x, grid_size_x, region_name_id, event_id",
            (nid, pid, threads[tid], agent, symbols[name], corr[0] + 1, queue, 0, ks, ks + dur, 256, 4096,
             sid(region_name), event("KERNEL_DISPATCH")))
        t[0] += 300 + dur

    def brick(tid, name, kernels):
        s = t[0]
        t[0] += 100
        for k, dur in kernels:
            kernel(tid, k, name, dur)
        t[0] += 100
        region(tid, s, t[0], name)

    region(3141, t[0], t[0] + 40, "roctxGetThreadId")
    t[0] += 100
    kernel(3141, "warmup", "warmup", 6000)
    for p in range(3 if with_passes else 2):
        region(3141, t[0], t[0], f"pass {p}")  # a mark
        t[0] += 50
        ps = t[0]
        for layer in range(2):
            brick(3141, f"L{layer}/RmsNorm", [("rms_norm", 3100 + 100 * layer + p)])
            brick(3141, f"L{layer}/QkvProjection", [("gemm_qkv", 22000 + 5 * p)])
            brick(3141, f"L{layer}/DownProjection", [("gemm_down", 17000 + p), ("split_k_reduce", 950)])
        brick(3141, "LmHead", [("gemm_lm_head", 41000 + 13 * p)])
        if with_passes:
            phase = "prefill" if p == 0 else "decode"
            # Synced: the range closes after the last kernel; Lagged (pass 2): before LmHead's
            # kernel ends, while it still runs.
            pe = t[0] + 300 if p < 2 else t[0] - 20_000
            region(3141, ps - 20, pe, f"pass/{phase}/{p}")
            t[0] += 400
    kernel(3150, "prep", "prep", 400)  # outside, on the second thread
    brick(3150, "Sampling", [("sample_top_p", 2600), ("sample_argmax", 650)])
    s = t[0]
    t[0] += 500
    region(3141, s, t[0], "L1/ResidualAdd")  # pushed, no kernel
    db.commit()
    db.execute("VACUUM")
    db.close()


if __name__ == "__main__":
    main()
