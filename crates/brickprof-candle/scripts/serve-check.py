#!/usr/bin/env python3
"""The real model scraped (spec/live.md "Command line", issue 27 §2): runs
`brickprof-candle generate --profile MODE --serve 127.0.0.1:0 --duration 3 --linger 4`, scrapes
/metrics once generation has stopped, and checks that candle's bricks are there with their
phase labels (prefill and decode), and that the scrape equals the saved profile's passes. In
explicit mode it also takes /trace?passes=1 while the model generates.

Usage: serve-check.py BRICKPROF_CANDLE MODEL MODE OUT_DIR   (MODE: tracing or explicit)
Prints the scraped calls of each brick; exit 0 when every check passes, 1 otherwise.
"""

import json
import subprocess
import sys
import urllib.request

BRICKS = ["QkvProjection", "OutputProjection", "GateProjection", "UpProjection",
          "DownProjection", "LmHead"]


def fail(msg):
    print(f"serve-check: FAILED: {msg}", file=sys.stderr)
    sys.exit(1)


def get(url):
    with urllib.request.urlopen(url, timeout=120) as r:
        return r.status, r.read()


def main():
    candle, model, mode, out = sys.argv[1:5]
    p = subprocess.Popen(
        [candle, "generate", "--model", model, "--tokens", "4", "--profile", mode,
         "--serve", "127.0.0.1:0", "--duration", "3", "--linger", "4", "--out", out],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stderr.readline()
        if "serving http://" not in line:
            fail(f"no 'serving http://' line on stderr: {line!r}")
        addr = line.split("http://", 1)[1].split("/", 1)[0]
        if mode == "explicit":
            status, trace = get(f"http://{addr}/trace?passes=1")
            if status != 200 or not trace:
                fail(f"/trace?passes=1 answered {status} with {len(trace)} bytes")
            print(f"{mode}: /trace?passes=1 while generating: {len(trace)} bytes of Perfetto trace")
        # Up to the line saying generation stopped (the final state is served from then on).
        for _ in range(100):
            line = p.stderr.readline()
            if not line or "serving the final state" in line:
                break
        if "serving the final state" not in line:
            fail(f"no 'serving the final state' line on stderr (last: {line!r})")
        status, body = get(f"http://{addr}/metrics")
        if status != 200:
            fail(f"/metrics answered {status}")
        text = body.decode()
        rc = p.wait(timeout=300)
        if rc != 0:
            fail(f"brickprof-candle exited {rc}: {p.stderr.read()}")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()

    calls = {}
    passes = None
    for line in text.splitlines():
        if line.startswith("brickprof_passes_total "):
            passes = int(float(line.split()[1]))
        if line.startswith("brickprof_brick_calls_total{"):
            labels = dict(kv.split("=", 1) for kv in line[line.index("{") + 1:line.index("}")].split(","))
            labels = {k: v.strip('"') for k, v in labels.items()}
            calls[(labels["brick"], labels["phase"])] = int(float(line.rsplit(" ", 1)[1]))
    missing = [(b, ph) for b in BRICKS for ph in ("prefill", "decode") if not calls.get((b, ph))]
    if missing:
        fail(f"no calls scraped for {missing}; scraped {sorted(calls)}")
    if not any(l.startswith("brickprof_brick_seconds_bucket{") and 'phase="decode"' in l
               for l in text.splitlines()):
        fail("no decode histogram bucket in /metrics")
    with open(f"{out}/profile.json") as f:
        saved = json.load(f)["meta"]["counters"]["passes"]
    if passes != saved:
        fail(f"brickprof_passes_total {passes} scraped after generation, {saved} saved")
    print(f"{mode}: scraped http://{addr}/metrics after generation: brickprof_passes_total "
          f"{passes} (= the saved profile's), calls per (brick, phase):")
    for (brick, ph), n in sorted(calls.items()):
        print(f"  brickprof_brick_calls_total{{brick=\"{brick}\",phase=\"{ph}\"}} {n}")


if __name__ == "__main__":
    main()
