#!/usr/bin/env python3
"""README and docs/ samples are real output of the command beside them: this script runs them.

It reads README.md and every docs/*.md (README first, then the guide in name order; --doc
names other files instead).

A sample is a fenced block right after a marker comment, either on one line:

    <!-- sample: COMMAND -->

or on several, one `key: value` a line:

    <!-- sample
    cmd: target/release/brickprof-candle generate --model "$MODEL" --tokens 8
    needs: model
    keep: ^(TTFT|TPOT|Prefill|Decode)
    tags: quick
    compare: exact
    -->

Keys:
  cmd      the command (bash, run in the work folder); its stdout and stderr, merged, are the
           block. Without `cmd` the block is a transcript: each line starting with `$ ` is a
           command (a line ending with `\\` goes on), and the lines after it, up to the next
           `$ `, are its output.
  needs    `model`: the real model (MODEL is set from crates/brickprof-candle/scripts/
           fetch-model.sh); such samples run only with --model, and
           always in the repository root (their paths are relative to it).
  keep     a Python regular expression: only matching lines are kept, each run of dropped
           lines between kept ones becomes one `...` line (an excerpt).
  lines    line ranges of the output to keep, `1,10-76,166-177` (1-based, inclusive), each gap
           becoming one `...` line; applied before `keep`.
  exit     the exit status the command must end with (default 0; `diff` exits 1 on a
           divergence); in a transcript, one status a command, in order (the last one given
           holds for the rest).
  setup    a command run first, in the work folder (its output is dropped; it must exit 0):
           the runs a transcript's commands read.
  tags     words that --tags selects on.
  compare  `exact` (the output is deterministic: --check compares it line for line) or
           `structure` (the default: numbers masked, runs of blanks squeezed, bars dropped,
           the lines compared as a multiset, since a table is sorted by times that move).
  vary     a Python regular expression: lines that depend on the machine or on timing
           (measured cache levels, roofline levels, which flags a noisy run raises) match it;
           --check leaves them out of the comparison on both sides (they still must not
           make the command fail, and --update still records them).
  needs    `gpu`: recorded on a GPU machine (the device named in the text); such samples never
           run here or in CI (--check counts them as not run), and the text says when they ran.
           `opencl`: a release build with the opencl feature on an OpenCL driver (PoCL); run
           only with --opencl (CI runs the same demo on PoCL in the CLI test `opencl_demo`
           and spares the docs step a release rebuild).

Modes:
  --check   run the selected samples; fail (exit 1) when a command fails or its output no
            longer matches the block (exact or structure, as the sample says). A real-model
            sample whose structure differs is reported (WARN), not failed: which fits get a
            note or which tail a table shows follows the machine's noise.
  --update  run them and rewrite their blocks in the files they are in.

The commands run in a fresh temporary folder unless --workdir says otherwise (what they write
never lands in the repository; $REPO names it), with PATH starting
with --bin-dir folders (default target/release). --no-cargo rewrites `cargo run --release --`
and `cargo run --` to `brickprof` (a test passes its own binary's folder as --bin-dir).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FENCE = re.compile(r"^```")
ONE_LINE = re.compile(r"^<!-- sample: (?P<cmd>.*) -->$")


class Sample:
    def __init__(self, doc, line, keys, fence_start, fence_end):
        self.doc = doc  # the file, relative to the repository root where it is inside it
        self.line = line  # 1-based line of the marker
        self.keys = keys
        self.start = fence_start  # index of the opening fence
        self.end = fence_end  # index of the closing fence

    def tags(self):
        return set(self.keys.get("tags", "").split())

    def name(self):
        return f"{self.doc}:{self.line} ({self.keys.get('cmd', 'transcript')[:60]})"


def parse(doc, lines):
    samples = []
    i = 0
    while i < len(lines):
        line = lines[i].rstrip("\n")
        keys = None
        marker_line = i + 1
        m = ONE_LINE.match(line)
        if m:
            keys = {"cmd": m.group("cmd")}
            i += 1
        elif line == "<!-- sample -->":
            keys = {}
            i += 1
        elif line == "<!-- sample":
            keys = {}
            i += 1
            while i < len(lines) and lines[i].rstrip("\n") != "-->":
                k, sep, v = lines[i].rstrip("\n").partition(": ")
                if not sep:
                    sys.exit(f"{doc}:{i + 1}: a sample's key line must be `key: value`")
                keys[k.strip()] = v
                i += 1
            i += 1
        else:
            i += 1
            continue
        if i >= len(lines) or not FENCE.match(lines[i]):
            sys.exit(f"{doc}:{marker_line}: a sample marker must be followed by a fenced block")
        start = i
        i += 1
        while i < len(lines) and not FENCE.match(lines[i]):
            i += 1
        if i >= len(lines):
            sys.exit(f"{doc}:{marker_line}: the sample's block is never closed")
        samples.append(Sample(doc, marker_line, keys, start, i))
        i += 1
    return samples


def run(cmd, env, cwd, no_cargo):
    if no_cargo:
        cmd = re.sub(r"\bcargo run (--release )?-- ", "brickprof ", cmd)
    p = subprocess.run(
        ["bash", "-c", cmd],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return p.returncode, p.stdout.rstrip("\n").split("\n") if p.stdout.strip() else []


def kept_with_gaps(out, keep_line):
    """The lines `keep_line(number, line)` keeps, each run of dropped lines between kept ones
    becoming one `...` line."""
    kept, dropped = [], False
    for n, line in enumerate(out, 1):
        if keep_line(n, line):
            if dropped and kept:
                kept.append("...")
            kept.append(line)
            dropped = False
        else:
            dropped = True
    return kept


def select_lines(out, ranges):
    if not ranges:
        return out
    wanted = set()
    for part in ranges.split(","):
        a, _, b = part.partition("-")
        wanted.update(range(int(a), int(b or a) + 1))
    return kept_with_gaps(out, lambda n, _line: n in wanted)


def excerpt(out, keep):
    if not keep:
        return out
    pattern = re.compile(keep)
    return kept_with_gaps(out, lambda _n, line: pattern.search(line))


def produce(sample, block, env, cwd, no_cargo):
    """The block's new lines, or an error string."""
    exits = [int(e) for e in sample.keys.get("exit", "0").split()]
    want_exit = exits[0]
    if "setup" in sample.keys:
        rc, out = run(sample.keys["setup"], env, cwd, no_cargo)
        if rc != 0:
            return None, f"setup: exit status {rc}:\n" + "\n".join(out[-20:])
    if "cmd" in sample.keys:
        rc, out = run(sample.keys["cmd"], env, cwd, no_cargo)
        if rc != want_exit:
            return None, f"exit status {rc}, expected {want_exit}:\n" + "\n".join(out[-20:])
        return excerpt(select_lines(out, sample.keys.get("lines")), sample.keys.get("keep")), None
    new = []
    new_cmds = []
    i = 0
    while i < len(block):
        line = block[i]
        if not line.startswith("$ "):
            i += 1
            continue
        cmd_lines = [line]
        while cmd_lines[-1].endswith("\\") and i + 1 < len(block):
            i += 1
            cmd_lines.append(block[i])
        i += 1
        while i < len(block) and not block[i].startswith("$ "):
            i += 1
        cmd = "\n".join(cmd_lines)[2:]
        want_exit = exits[min(len(new_cmds), len(exits) - 1)]
        new_cmds.append(cmd)
        rc, out = run(cmd, env, cwd, no_cargo)
        if rc != want_exit:
            return None, f"`{cmd}`: exit status {rc}, expected {want_exit}:\n" + "\n".join(out[-20:])
        new.extend(cmd_lines)
        new.extend(excerpt(out, sample.keys.get("keep")))
    return new, None


# A number with its sign and unit (a duration's unit and a rate's SI prefix change with the
# value: 950µs, 1.02ms; 950k/s, 1.02M/s).
NUMBER = re.compile(r"[-+]?\d[\d,]*(\.\d+)?(e[-+]?\d+)?(ns|µs|ms|min|s|h|d|y|[kMGT](?=/s| tok/s))?")
SIGNED = re.compile(r" [-+] #")
BARS = re.compile(r"[█▏▎▍▌▋▊▉]+")


def structure(lines, vary=None):
    masked = []
    pattern = re.compile(vary) if vary else None
    for line in lines:
        if pattern and pattern.search(line):
            continue
        line = BARS.sub("", line)
        line = NUMBER.sub("#", line)
        line = SIGNED.sub(" ± #", line)
        masked.append(" ".join(line.split()))
    return sorted(masked)


def default_docs():
    """README.md, then the guide's pages in name order."""
    guide = os.path.join(ROOT, "docs")
    pages = sorted(f for f in os.listdir(guide) if f.endswith(".md")) if os.path.isdir(guide) else []
    return [os.path.join(ROOT, "README.md")] + [os.path.join(guide, f) for f in pages]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--update", action="store_true")
    ap.add_argument(
        "--doc",
        "--readme",
        action="append",
        default=[],
        help="a Markdown file to read (repeatable; default: README.md and docs/*.md)",
    )
    ap.add_argument("--model", action="store_true", help="also the samples that need the real model")
    ap.add_argument("--opencl", action="store_true", help="also the samples that need the opencl feature")
    ap.add_argument("--tags", nargs="*", default=[], help="only samples with one of these tags")
    ap.add_argument("--match", default=None, help="only samples whose command contains this text")
    ap.add_argument("--bin-dir", action="append", default=[], help="put first on PATH (repeatable)")
    ap.add_argument("--workdir", default=None, help="where the commands run (default: a fresh temporary folder)")
    ap.add_argument("--no-cargo", action="store_true", help="run `cargo run [--release] --` as `brickprof`")
    args = ap.parse_args()
    if args.workdir is None:
        args.workdir = tempfile.mkdtemp(prefix="readme-samples-")
        print(f"running in {args.workdir}")

    docs = args.doc or default_docs()
    texts = {}
    samples = []
    for path in docs:
        doc = os.path.relpath(os.path.abspath(path), ROOT)
        if doc.startswith(".."):
            doc = path
        with open(path, encoding="utf-8") as f:
            texts[doc] = (path, f.read().split("\n"))
        samples.extend(parse(doc, texts[doc][1]))
    env = dict(os.environ)
    bins = args.bin_dir or [os.path.join(ROOT, "target", "release")]
    env["PATH"] = os.pathsep.join([os.path.abspath(b) for b in bins] + [env.get("PATH", "")])
    env["REPO"] = ROOT
    selected = []
    skipped = 0
    for s in samples:
        if s.keys.get("needs") == "gpu":
            skipped += 1
            continue
        if s.keys.get("needs") == "opencl" and not args.opencl:
            skipped += 1
            continue
        if s.keys.get("needs") == "model" and not args.model:
            continue
        if args.tags and not (s.tags() & set(args.tags)):
            continue
        if args.match and args.match not in s.keys.get("cmd", "\n".join(texts[s.doc][1][s.start : s.end])):
            continue
        selected.append(s)
    if any(s.keys.get("needs") == "model" for s in selected):
        fetch = os.path.join(ROOT, "crates", "brickprof-candle", "scripts", "fetch-model.sh")
        env["MODEL"] = subprocess.run([fetch], check=True, stdout=subprocess.PIPE, text=True).stdout.strip()

    failures = 0
    updates = []
    # In document order (the files in the order above): a later sample may read what an earlier
    # one wrote.
    for s in selected:
        block = texts[s.doc][1][s.start + 1 : s.end]
        # The real model's samples read the release binaries and write under target/rm by
        # paths relative to the repository root: they run there.
        cwd = ROOT if s.keys.get("needs") == "model" else args.workdir
        new, err = produce(s, block, env, cwd, args.no_cargo)
        if err:
            print(f"FAIL {s.name()}: {err}", file=sys.stderr)
            failures += 1
            continue
        if args.update:
            updates.append((s, new))
            print(f"updated {s.name()}: {len(new)} lines")
            continue
        exact = s.keys.get("compare") == "exact"
        vary = s.keys.get("vary")
        same = new == block if exact else structure(new, vary) == structure(block, vary)
        if same:
            print(f"ok   {s.name()}")
        else:
            # The real model's timings decide some lines (which fits get a note, which rows
            # a noisy run adds): there a structure difference is reported, not failed.
            strict = exact or s.keys.get("needs") != "model"
            failures += strict
            word = "DIFF" if strict else "WARN (timing-dependent lines; not a failure)"
            print(f"{word} {s.name()} ({'exact' if exact else 'structure'}):", file=sys.stderr)
            vary = s.keys.get("vary")
            a, b = (block, new) if exact else (structure(block, vary), structure(new, vary))
            for line in sorted(set(a) - set(b)):
                print(f"  - {line}", file=sys.stderr)
            for line in sorted(set(b) - set(a)):
                print(f"  + {line}", file=sys.stderr)
    if args.update:
        # From the bottom up, so the earlier blocks' line numbers stay valid.
        for s, new in reversed(updates):
            texts[s.doc][1][s.start + 1 : s.end] = new
        for doc in sorted({s.doc for s, _ in updates}):
            path, lines = texts[doc]
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(lines))
    gpu = f" ({skipped} not run: GPU or OpenCL transcripts)" if skipped else ""
    print(f"{len(selected)} samples, {failures} failed{gpu}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
