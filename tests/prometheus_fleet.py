#!/usr/bin/env python3
"""A real Prometheus scrapes a fleet of two brickprof demo processes ("ranks"), and its PromQL
answers are checked against `brickprof merge` of the two ranks' final profiles
(spec/live.md "Fleet").

Steps:
1. Two `brickprof demo --serve 127.0.0.1:0 --duration D --linger L --rank R --out DIR`
   processes, each printing the address it bound on stderr.
2. Prometheus (its own temporary storage, a generated config: scrape_interval 1s, one job, the
   two targets, each with a `rank` label) on a free loopback port.
3. Once both demos have exited (each stopped generating after D s, served its final state for
   L s more, then saved), the time T of the last sample Prometheus scraped from both is found,
   and every query is evaluated at T:
   - `brickprof_passes_total` of each rank equals its saved profile's passes (so Prometheus
     scraped the final state);
   - `sum by (brick) (brickprof_brick_calls_total)` (and `by (brick, phase)`) equals the merged
     profile's calls, exactly;
   - `histogram_quantile(0.99, sum by (le, brick, phase) (brickprof_brick_seconds_bucket))`
     (the final cumulative buckets): the merged profile's p99 lies in the same power-of-two
     bucket. Why it must: the `le` edges are bucket edges of brickprof's log-linear histogram,
     so both pick the first edge 2^k ns whose cumulative count reaches 0.99 x calls.
     Prometheus interpolates inside (2^(k-1), 2^k]; brickprof reports the midpoint of its
     1/16-of-an-octave sub-bucket, inside [2^(k-1), 2^k) (the first bucket is [0, 32 ns)).
   - `histogram_quantile(0.99, sum by (le, brick, phase) (rate(brickprof_brick_seconds_bucket[W])))`
     with W covering the whole run: the p99 of the calls between the first and the last scrape
     (the calls before the first scrape are not in a rate); it must be within a factor of 2 of
     the merged profile's p99 (one power-of-two bucket's width).
4. The queries and Prometheus' answers are printed.

Exit 0 when every check passes, 1 when one fails, 2 when it cannot run. Without a Prometheus
binary it prints a line saying the check was SKIPPED and exits 0, unless --require is given
(CI gives it once apt-get has installed Prometheus).
"""

import argparse
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

QUERIES = {
    "calls": "sum by (brick) (brickprof_brick_calls_total)",
    "calls_phase": "sum by (brick, phase) (brickprof_brick_calls_total)",
    "p99_final": "histogram_quantile(0.99, sum by (le, brick, phase) (brickprof_brick_seconds_bucket))",
    "p99_rate": "histogram_quantile(0.99, sum by (le, brick, phase) (rate(brickprof_brick_seconds_bucket[{w}s])))",
}


def fail(msg):
    print(f"prometheus_fleet: FAILED: {msg}", file=sys.stderr)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


def query(prom, q, at):
    url = f"http://{prom}/api/v1/query?" + urllib.parse.urlencode({"query": q, "time": f"{at:.3f}"})
    body = json.loads(http_get(url))
    if body.get("status") != "success":
        fail(f"query {q!r}: {body}")
    return body["data"]


def vector(prom, q, at, keys):
    """An instant vector as {tuple(label values of keys): float}."""
    data = query(prom, q, at)
    out = {}
    for r in data["result"]:
        out[tuple(r["metric"].get(k, "") for k in keys)] = float(r["value"][1])
    return out


def start_demo(brickprof, rank, addr, duration, linger, out_dir):
    p = subprocess.Popen(
        [brickprof, "demo", "--serve", addr, "--duration", str(duration),
         "--linger", str(linger), "--rank", str(rank), "--out", out_dir,
         "--trace-format", "perfetto"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # The first stderr line names the bound address.
    line = p.stderr.readline()
    if f"serving http://{addr}/" not in line:
        p.kill()
        fail(f"rank {rank}: no 'serving http://{addr}/' line on stderr, got {line!r}")
    return p


def run_brickprof(brickprof, *args):
    r = subprocess.run([brickprof, *args], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"brickprof {' '.join(args)} exited {r.returncode}: {r.stderr}")
    return r.stdout


def report(brickprof, profile):
    """{(brick, phase): (calls, p99_ns)} of `profile` (`report --format json` lists each
    brick once per phase)."""
    bricks = json.loads(run_brickprof(brickprof, "report", profile, "--format", "json"))["bricks"]
    return {(b["name"], b["phase"]): (b["calls"], b["p99_ns"]) for b in bricks}


def same_bucket(prom_s, p99_ns):
    """The power-of-two bucket (2^(k-1), 2^k] ns holding Prometheus' interpolated value, and
    whether brickprof's p99 lies in [2^(k-1), 2^k) (the first bucket: [0, 32 ns))."""
    ns = prom_s * 1e9
    # The smallest edge 2^k >= ns, with a relative slack for the float round trip of `le`.
    k = max(5, math.ceil(math.log2(ns * (1 - 1e-9))))
    high = 2 ** k
    low = 0 if k == 5 else high // 2
    return (low, high), low <= p99_ns < high


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--brickprof", default="target/release/brickprof")
    ap.add_argument("--prometheus", default=shutil.which("prometheus"))
    ap.add_argument("--duration", type=float, default=20)
    ap.add_argument("--linger", type=float, default=4)
    ap.add_argument("--out", default="target/ci-fleet")
    ap.add_argument("--require", action="store_true",
                    help="fail (instead of skipping) when there is no Prometheus binary")
    args = ap.parse_args()

    if not args.prometheus or not os.access(args.prometheus, os.X_OK):
        msg = "no prometheus binary on PATH (apt-get install prometheus)"
        if args.require:
            print(f"prometheus_fleet: FAILED: {msg}", file=sys.stderr)
            sys.exit(2)
        print(f"prometheus_fleet: SKIPPED: {msg}; the fleet check did not run")
        return
    if not os.access(args.brickprof, os.X_OK):
        print(f"prometheus_fleet: no brickprof binary at {args.brickprof} "
              "(cargo build --release)", file=sys.stderr)
        sys.exit(2)

    started = time.time()
    os.makedirs(args.out, exist_ok=True)
    procs = []
    prom_proc = None
    storage = tempfile.mkdtemp(prefix="brickprof-prometheus-")
    try:
        # Prometheus first, scraping the two ports the demos will bind (free ones picked
        # here), so that it scrapes each demo from its first second on.
        demos = [f"127.0.0.1:{free_port()}" for _ in (0, 1)]
        prom = f"127.0.0.1:{free_port()}"
        config = os.path.join(storage, "prometheus.yml")
        targets = "\n".join(
            f"      - targets: ['{addr}']\n        labels: {{rank: '{rank}'}}"
            for rank, addr in enumerate(demos))
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: brickprof\n    scrape_timeout: 1s\n"
                    f"    static_configs:\n{targets}\n")
        prom_log = open(os.path.join(args.out, "prometheus.log"), "w")
        prom_proc = subprocess.Popen(
            [args.prometheus, f"--config.file={config}",
             f"--storage.tsdb.path={os.path.join(storage, 'data')}",
             f"--web.listen-address={prom}"],
            stdout=prom_log, stderr=subprocess.STDOUT)
        for _ in range(600):
            try:
                if http_get(f"http://{prom}/-/ready", timeout=2):
                    break
            except OSError:
                time.sleep(0.1)
        else:
            fail(f"Prometheus did not get ready on {prom} (see {args.out}/prometheus.log)")
        # Its scrape loops start a few seconds after it is ready (target discovery): wait
        # until it has tried both targets (`up` is 0 for them, nothing listens yet).
        for _ in range(600):
            if len(query(prom, 'up{job="brickprof"}', time.time())["result"]) == 2:
                break
            time.sleep(0.1)
        else:
            fail("Prometheus never tried to scrape the two targets")
        for rank in (0, 1):
            procs.append(start_demo(args.brickprof, rank, demos[rank], args.duration,
                                    args.linger, os.path.join(args.out, f"rank{rank}")))
        print(f"Prometheus {prom} scraping rank 0 at {demos[0]} and rank 1 at {demos[1]} "
              "every 1 s")

        for rank, p in enumerate(procs):
            try:
                rc = p.wait(timeout=args.duration + args.linger + 120)
            except subprocess.TimeoutExpired:
                fail(f"rank {rank} did not exit")
            err = p.stderr.read()
            if rc != 0:
                fail(f"rank {rank} exited {rc}: {err}")

        # The last sample scraped from each rank (raw samples: a range selector).
        now = time.time()
        raw = query(prom, "brickprof_passes_total[10m]", now)["result"]
        last = {r["metric"]["rank"]: r["values"] for r in raw}
        if set(last) != {"0", "1"}:
            fail(f"Prometheus has passes of ranks {sorted(last)}, not 0 and 1")
        at = min(v[-1][0] for v in last.values())
        first = min(v[0][0] for v in last.values())
        window = math.ceil(at - first) + 10
        failures = []
        for rank, values in sorted(last.items()):
            print(f"rank {rank}: {len(values)} scrapes of brickprof_passes_total, "
                  f"first {values[0][1]}, last {values[-1][1]}")
            # A rate covers the calls after a series' first scrape: the run's p99 is the
            # rate's only when nearly every pass came after it.
            if float(values[0][1]) > 0.1 * float(values[-1][1]):
                failures.append(f"rank {rank}: the first scrape came after "
                                f"{values[0][1]} of {values[-1][1]} passes (over 10 %)")

        profiles = [os.path.join(args.out, f"rank{r}", "profile.json") for r in (0, 1)]
        merged = os.path.join(args.out, "merged.json")
        run_brickprof(args.brickprof, "merge", *profiles, "-o", merged)

        passes = vector(prom, "brickprof_passes_total", at, ["rank"])
        for rank, path in enumerate(profiles):
            with open(path) as f:
                saved = json.load(f)["meta"]["counters"]["passes"]
            got = passes.get((str(rank),))
            print(f"rank {rank}: brickprof_passes_total at the last scrape {got}, "
                  f"saved profile {saved}")
            if got != saved:
                failures.append(f"rank {rank}: Prometheus' last passes {got} != saved {saved}")

        merged_stats = report(args.brickprof, merged)
        merged_calls = {}
        for (brick, _), (c, _) in merged_stats.items():
            merged_calls[brick] = merged_calls.get(brick, 0) + c
        print(f"\n$ {QUERIES['calls']}\n  (at the last scrape; merged = brickprof merge of "
              "the ranks' profiles, every phase)")
        calls = vector(prom, QUERIES["calls"], at, ["brick"])
        print(f"  {'brick':<18} {'Prometheus':>12} {'merged':>12}")
        for (brick,), v in sorted(calls.items()):
            want = merged_calls.get(brick)
            print(f"  {brick:<18} {v:>12.0f} {want!s:>12}")
            if want != v:
                failures.append(f"calls of {brick}: Prometheus {v}, merged {want}")
        if {b for (b,) in calls} != set(merged_calls):
            failures.append(f"bricks differ: {sorted(calls)} vs {sorted(merged_calls)}")

        calls_phase = vector(prom, QUERIES["calls_phase"], at, ["brick", "phase"])
        for key in set(calls_phase) | set(merged_stats):
            got, want = calls_phase.get(key), merged_stats.get(key, (None, None))[0]
            if got != want:
                failures.append(f"calls of {key}: Prometheus {got}, merged {want}")
        print(f"\n$ {QUERIES['calls_phase']}\n  {len(calls_phase)} (brick, phase) series, "
              f"each equal to the merged profile's calls: "
              f"{all(calls_phase.get(k) == v[0] for k, v in merged_stats.items())}")

        for name, bound in (("p99_final", "in the same power-of-two bucket"),
                            ("p99_rate", "within a factor of 2")):
            q = QUERIES[name].format(w=window)
            print(f"\n$ {q}\n  (the merged profile's p99: {bound})")
            got = vector(prom, q, at, ["brick", "phase"])
            print(f"  {'brick':<18} {'phase':<8} {'Prometheus':>12} {'merged p99':>12}  bucket")
            for (brick, ph), v in sorted(got.items()):
                want = merged_stats.get((brick, ph), (None, None))[1]
                if want is None or math.isnan(v):
                    failures.append(f"{name} {brick} {ph}: Prometheus {v}, merged {want}")
                    continue
                (low, high), ok = same_bucket(v, want)
                if name == "p99_rate":
                    ok = 0.5 <= v * 1e9 / max(want, 1) <= 2.0
                print(f"  {brick:<18} {ph:<8} {v * 1e6:>9.3f} us {want / 1e3:>9.3f} us  "
                      f"[{low / 1e3:g}, {high / 1e3:g}) us{'' if ok else '  <- FAILS'}")
                if not ok:
                    failures.append(f"{name} {brick} {ph}: Prometheus {v} s, merged {want} ns")
            if len(got) != len(calls_phase):
                failures.append(f"{name}: {len(got)} series, {len(calls_phase)} expected")

        print(f"\nfleet check took {time.time() - started:.1f} s "
              f"(demos {args.duration:g} s + {args.linger:g} s linger)")
        if failures:
            fail("; ".join(failures))
        print("prometheus_fleet: OK: counts exact, p99 in the same power-of-two bucket "
              "(final buckets) and within a factor of 2 (rate over the run)")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if prom_proc is not None:
            prom_proc.terminate()
            try:
                prom_proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                prom_proc.kill()
                prom_proc.wait()
        shutil.rmtree(storage, ignore_errors=True)


if __name__ == "__main__":
    main()
