#!/usr/bin/env python3
"""Write a small Nsight Systems SQLite export (`nsys export --type sqlite`) of a run named as
brickprof names its NVTX ranges, for the import tests (spec/imports.md "Nsight Systems").

BUILT, NOT RECORDED: no Nsight Systems run was at hand. The tables and columns are those of
the documented export schema (Nsight Systems User Guide, "SQLite Schema Reference"; the same
columns as the real 2022.1 export in tests/fixtures/vendor/nsys/extrap_profile1.sqlite):
StringIds, NVTX_EVENTS (push/pop ranges are eventType 59; a registered string's name is in
textId), CUPTI_ACTIVITY_KIND_RUNTIME (launch calls, by globalTid and correlationId) and
CUPTI_ACTIVITY_KIND_KERNEL (kernels, by correlationId; names are StringIds).

The run: two passes of a 2-layer model on thread A, each layer RmsNorm, QkvProjection,
DownProjection (two kernels), then LmHead outside layers; every brick range inside a
`pass N` range. Also: a kernel launched before any range, a kernel with no runtime row, a
second thread with one brick, a range named through textId, a cudaGraphLaunch whose kernels
were not traced per node, a mark (eventType 34) and a kernel on a second stream that starts
before the call's first kernel.

With --pass-ranges (tests/fixtures/vendor/nsys/brickprof_passes.sqlite) the passes are the
ranges brickprof pushes around each pass (spec/imports.md "Pass ranges"): three passes,
`pass/prefill/0`, `pass/decode/1`, `pass/decode/2`, each also launching one kernel inside the
pass but outside every brick (after LmHead); the rest as above.

Usage: make-nsys-sqlite.py [--pass-ranges] OUT.sqlite
"""
import os
import sqlite3
import sys

SCHEMA = """
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE NVTX_EVENTS (
    start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
    category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,
    textId INTEGER REFERENCES StringIds(id), domainId INTEGER, uint64Value INTEGER,
    int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER,
    floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (
    start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
    globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL REFERENCES StringIds(id),
    returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (
    start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
    contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER,
    globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL,
    mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER,
    registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL,
    gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL,
    blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
    dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL,
    localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER,
    graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER);
CREATE TABLE EXPORT_META_DATA (name TEXT, value TEXT);
"""

PID = 0x0100_0000_4200_0000  # serialized GlobalId: a process (tid bits 0)
TID_A = PID + 4201
TID_B = PID + 4202


def main():
    pass_ranges = "--pass-ranges" in sys.argv[1:]
    out = [a for a in sys.argv[1:] if a != "--pass-ranges"][0]
    if os.path.exists(out):
        os.remove(out)
    db = sqlite3.connect(out)
    db.executescript(SCHEMA)
    strings = {}

    def sid(s):
        if s not in strings:
            strings[s] = len(strings) + 1
            db.execute("INSERT INTO StringIds VALUES (?, ?)", (strings[s], s))
        return strings[s]

    db.executemany("INSERT INTO EXPORT_META_DATA VALUES (?, ?)", [
        ("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"),
        ("EXPORT_SCHEMA_VERSION", "3.11.0"),
        ("BUILT_BY", "brickprof scripts/make-nsys-sqlite.py (built, not recorded)"),
    ])
    corr = [1000]
    t = [1_000_000]

    def rng(tid, start, end, name, via_id=False):
        text, text_id = (None, sid(name)) if via_id else (name, None)
        db.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId, domainId)"
                   " VALUES (?, ?, 59, ?, ?, ?, 0)", (start, end, text, tid, text_id))

    def launch(tid, kernel, dur, offset=400, api="cudaLaunchKernel_v7000", stream=7, kernel_row=True,
               runtime_row=True):
        """A launch call at t on `tid`; its kernel runs `offset` ns later for `dur` ns."""
        corr[0] += 1
        c = corr[0]
        s = t[0]
        t[0] += 300
        if runtime_row:
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, ?, 0, NULL)",
                       (s, s + 250, tid, c, sid(api)))
        if kernel_row:
            ks = s + offset
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId,"
                       " correlationId, globalPid, demangledName, shortName, registersPerThread, gridX,"
                       " gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory,"
                       " localMemoryPerThread, localMemoryTotal, gridId)"
                       " VALUES (?, ?, 0, 1, ?, ?, ?, ?, ?, 32, 1, 1, 1, 256, 1, 1, 0, 0, 0, 0, ?)",
                       (ks, ks + dur, stream, c, PID, sid(kernel + "(float*)"), sid(kernel), c))
        t[0] += dur + 200

    def brick(tid, name, kernels, via_id=False):
        s = t[0]
        t[0] += 100
        for k, dur in kernels:
            launch(tid, k, dur)
        t[0] += 100
        rng(tid, s, t[0], name, via_id)

    launch(TID_A, "warmup", 5000)  # before any range: outside the bricks
    for p in range(3 if pass_ranges else 2):
        ps = t[0]
        t[0] += 50
        for layer in range(2):
            brick(TID_A, f"L{layer}/RmsNorm", [("rms_norm", 3000 + 100 * layer + p)])
            brick(TID_A, f"L{layer}/QkvProjection", [("gemm_qkv", 21000 + 7 * p)], via_id=(layer == 1))
            brick(TID_A, f"L{layer}/DownProjection", [("gemm_down", 18000 + p), ("split_k_reduce", 900)])
        brick(TID_A, "LmHead", [("gemm_lm_head", 40000 + 11 * p)])
        if pass_ranges:
            launch(TID_A, "copy_logits", 600 + p)  # in the pass, outside every brick
        t[0] += 50
        name = (f"pass/{'prefill' if p == 0 else 'decode'}/{p}" if pass_ranges else f"pass {p}")
        rng(TID_A, ps, t[0], name)
        db.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?, NULL, 34, ?, ?)",
                   (t[0], f"mark {p}", TID_A))
    # A second thread: one Sampling call, whose second kernel (another stream) starts first.
    s = t[0]
    t[0] += 100
    launch(TID_B, "sample_top_p", 2500, offset=5000)
    launch(TID_B, "sample_argmax", 700, offset=100, stream=8)
    rng(TID_B, s, t[0], "Sampling")
    # A kernel whose runtime row is missing (outside), a graph launch traced as a whole.
    launch(TID_A, "orphan", 1234, runtime_row=False)
    launch(TID_A, "graph", 0, api="cudaGraphLaunch_v10000", kernel_row=False)
    db.commit()
    db.execute("VACUUM")
    db.close()


if __name__ == "__main__":
    main()
