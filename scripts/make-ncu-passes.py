#!/usr/bin/env python3
"""Write tests/fixtures/vendor/ncu_raw_nvtx_passes.csv: the recorded Nsight Compute raw CSV
(tests/fixtures/vendor/ncu_raw_nvtx.csv, one forward pass of a 2-layer run on an H200) made
into a run of three passes with brickprof's pass ranges (spec/imports.md "Pass ranges").

BUILT FROM A RECORDED FILE, not recorded itself: the recorded run pushed no pass range. Each
of its kernel rows is written three times, the NVTX stack cell of each copy led by the pass's
range (`pass/prefill/0`, `pass/decode/1`, `pass/decode/2`: one more quoted entry, outermost,
as ncu writes a nested push/pop stack), the IDs numbered anew; after each pass's LmHead a copy
of the Activation kernel whose stack holds the pass range only (a kernel inside the pass but
outside every brick). The lines before the header, the header and the units row are kept.

Usage: make-ncu-passes.py SOURCE.csv OUT.csv
"""
import csv
import io
import sys

PASSES = ["pass/prefill/0", "pass/decode/1", "pass/decode/2"]


def entry(name):
    return '"<default domain>:%s:none:none:none:none:none:none"' % name


def main():
    src, out = sys.argv[1], sys.argv[2]
    with open(src, newline="") as f:
        text = f.read()
    lines = text.splitlines(keepends=True)
    start = next(i for i, l in enumerate(lines) if l.startswith('"ID",'))
    rows = list(csv.reader(lines[start:]))
    header, units, data = rows[0], rows[1], [r for r in rows[2:] if r]
    stack = next(i for i, n in enumerate(header) if n.startswith("thread Domain:Push/Pop_Range"))
    ident = header.index("ID")
    between = next(r for r in data if "Activation" in r[stack])
    body = []
    for p in PASSES:
        for r in data + [None]:
            outside = r is None
            r = list(between if outside else r)
            thread, _, ranges = r[stack].strip().partition(" ")
            kept = "" if outside else " " + ranges.strip()
            r[stack] = "%s  %s%s " % (thread, entry(p), kept)
            r[ident] = str(len(body))
            body.append(r)
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for r in [header, units] + body:
        w.writerow(r)
    with open(out, "w", newline="") as f:
        f.write("".join(lines[:start]) + buf.getvalue())


if __name__ == "__main__":
    main()
