#!/usr/bin/env python3
"""Measure the timing verdicts' false-positive rate and power (spec/timing-verdicts.md
"Measured rates"): a report, never a gate (exit 0 whatever the counts; 2 on a broken run).

Each pair is a reference, NOISE runs of the reference setup and an identical candidate, all
with the same configuration, then one candidate per planted slowdown (`--slow`). Every
candidate is compared with `brickprof diff REF CAND --noise N1 --noise N2 --format json`
(default settings unless --diff-arg adds some), and the script counts the pairs in which the
identical candidate had any row judged faster or slower, and the pairs in which the planted
brick's row was judged slower. Flagged rows are printed with their ratio, interval and band,
so a false positive can be traced to its brick, phase and noise.

A planted slowdown counts as caught when the brick's decode row, or with --spot naming one
layer that layer's (layer, brick) cell, is judged slower; the cell's verdict alone is "named
with its layer". Identical pairs count any flagged row, cells included.

  scripts/timing-rates.py demo --pairs 20                       # the CPU demo
  scripts/timing-rates.py demo --pairs 20 --tokens 48 --prompt 4 --spot 1:up_proj --brick UpProjection --slow 40
  scripts/timing-rates.py demo --timeline sim --sim-jitter 15,5 --vary-seed --spot 1:up_proj \
      --brick UpProjection --slow 40                            # sim, machine-wide jitter
  scripts/timing-rates.py candle --pairs 5 --model M.gguf       # the real model (release build)
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def run(cmd, quiet=True):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.stderr.write(f"timing-rates: `{' '.join(cmd)}` failed ({r.returncode}):\n{r.stderr}\n")
        sys.exit(2)
    return r.stdout


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", choices=["demo", "candle"])
    p.add_argument("--pairs", type=int, default=20)
    p.add_argument("--noise", type=int, default=2, help="noise runs per pair")
    p.add_argument("--slow", default="10,5,3", help="planted slowdowns, percent (comma list; empty: none)")
    p.add_argument("--brickprof", default="target/release/brickprof")
    p.add_argument("--candle", default="target/release/brickprof-candle")
    p.add_argument("--model", help="the GGUF model (candle)")
    p.add_argument("--tokens", type=int, default=200, help="decode passes per run")
    p.add_argument("--spot", help="where to plant: LAYER:BRICK (default demo *:down_proj, candle *:down_proj)")
    p.add_argument("--brick", help="the planted brick's name in the profile (default DownProjection)")
    p.add_argument("--prompt", type=int, help="demo: prompt length")
    p.add_argument("--layers", type=int, help="demo: layers")
    p.add_argument("--timeline", help="demo: timeline (cpu, sim)")
    p.add_argument("--sim-jitter", help="demo: --sim-jitter RUN[,KERNEL] (sim)")
    p.add_argument("--vary-seed", action="store_true",
                   help="demo: a new --seed per run (the sim's jitter is drawn from it)")
    p.add_argument("--diff-arg", action="append", default=[], help="extra argument to brickprof diff")
    p.add_argument("--keep", help="keep the runs in this folder")
    p.add_argument("--reuse", action="store_true",
                   help="with --keep: judge the runs already there again (another method or setting) instead of running new ones")
    a = p.parse_args()
    spot = a.spot or "*:down_proj"
    brick = a.brick or "DownProjection"
    layer = spot.split(":")[0]
    layer = int(layer) if layer.isdigit() else None
    seeds = iter(range(1000, 100000))
    slows = [int(s) for s in a.slow.split(",") if s.strip()]
    work = a.keep or tempfile.mkdtemp(prefix="timing-rates-")
    os.makedirs(work, exist_ok=True)

    def one(name, slow=None):
        out = os.path.join(work, name)
        if a.reuse and os.path.exists(os.path.join(out, "profile.json")):
            return os.path.join(out, "profile.json")
        if a.kind == "demo":
            cmd = [a.brickprof, "demo", "--tokens", str(a.tokens), "--out", out, "--trace-format", "chrome"]
            for flag, value in (("--prompt", a.prompt), ("--layers", a.layers),
                                ("--timeline", a.timeline), ("--sim-jitter", a.sim_jitter)):
                if value is not None:
                    cmd += [flag, str(value)]
            if a.vary_seed:
                cmd += ["--seed", str(next(seeds))]
        else:
            if not a.model:
                sys.exit("timing-rates: candle needs --model")
            cmd = [a.candle, "generate", "--model", a.model, "--profile", "explicit",
                   "--tokens", str(a.tokens), "--out", out]
        if slow:
            cmd += ["--slow", f"{spot}:{slow}"]
        run(cmd)
        return os.path.join(out, "profile.json")

    def diff(ref, cand, noise):
        cmd = [a.brickprof, "diff", ref, cand, "--format", "json"] + a.diff_arg
        for n in noise:
            cmd += ["--noise", n]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode == 2:
            sys.stderr.write(f"timing-rates: diff failed:\n{r.stderr}\n")
            sys.exit(2)
        return json.loads(r.stdout)["verdicts"]

    def changed(v):
        return [r for r in v["rows"] if r.get("judgement", {}).get("verdict") in ("slower", "faster")]

    def describe(r):
        j = r["judgement"]
        band = j.get("band")
        band = f"band ±{(2.718281828459045 ** band - 1) * 100:.1f} %" if band is not None else "no band"
        name = r["name"] + (f" layer {r['layer']}" if r.get("layer") is not None else "")
        return (f"[{r['phase']}] {name} {j['verdict']} {(j['ratio'] - 1) * 100:+.1f} % "
                f"[{(j['interval']['lo'] - 1) * 100:+.1f}, {(j['interval']['hi'] - 1) * 100:+.1f}] {band}")

    def row_of(v, at_layer):
        return next((r for r in v["rows"] if r["phase"] == "decode" and r["name"] == brick
                     and r.get("layer") == at_layer), None)

    def slower(row):
        return bool(row) and row.get("judgement", {}).get("verdict") == "slower"

    started = time.time()
    load_before = os.getloadavg()
    flagged = 0
    detected = {s: 0 for s in slows}
    named = {s: 0 for s in slows}
    ratios = {s: [] for s in slows}
    for i in range(a.pairs):
        ref = one(f"p{i}-ref")
        noise = [one(f"p{i}-noise{k}") for k in range(a.noise)]
        same = one(f"p{i}-same")
        v = diff(ref, same, noise)
        hits = changed(v)
        if hits:
            flagged += 1
        line = f"pair {i:2}: identical: " + ("; ".join(describe(r) for r in hits) if hits else "nothing flagged")
        for s in slows:
            cand = one(f"p{i}-slow{s}", slow=s)
            v = diff(ref, cand, noise)
            row = row_of(v, None)
            cell = row_of(v, layer) if layer is not None else None
            j = (row or {}).get("judgement")
            if j:
                ratios[s].append(j["ratio"])
            if slower(row) or slower(cell):
                detected[s] += 1
            if slower(cell):
                named[s] += 1
            line += f" | {s} %: " + (describe(row) if j else "no verdict")
            if cell and cell.get("judgement"):
                line += "; " + describe(cell)
        print(line, flush=True)
    load = os.getloadavg()
    print(f"\n{a.kind}: {a.pairs} pairs, {a.noise} noise runs each, {a.tokens} decode passes per run, "
          f"diff args {a.diff_arg or 'default'}; {time.time() - started:.0f} s; "
          f"load average before {load_before[0]:.1f}, after {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}, "
          f"{os.cpu_count()} CPUs")
    print(f"identical runs: {flagged} of {a.pairs} pairs flagged something")
    for s in slows:
        rs = sorted(ratios[s])
        span = f" (measured ratios {(rs[0] - 1) * 100:+.1f} to {(rs[-1] - 1) * 100:+.1f} %)" if rs else ""
        where = f", named with layer {layer} in {named[s]}" if layer is not None else ""
        print(f"{brick} planted {s} % slower ({spot}): caught in {detected[s]} of {a.pairs} pairs{where}{span}")


if __name__ == "__main__":
    main()
