#!/usr/bin/env python3
# Usage: python3 scripts/fn-lengths.py 120 src crates/brickprof-cli/src  (issue 36: none over 120)
"""Functions longer than N lines: from a line opening a `fn` to the closing brace at its indentation."""
import re, sys, pathlib
limit = int(sys.argv[1]); roots = sys.argv[2:]
fn_re = re.compile(r'^(\s*)(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+"[^"]*"\s+)?fn\s+(\w+)')
out = []
for root in roots:
    for p in sorted(pathlib.Path(root).rglob('*.rs')):
        lines = p.read_text().splitlines()
        i = 0
        while i < len(lines):
            m = fn_re.match(lines[i])
            if m:
                ind = m.group(1); name = m.group(8)
                # find the end: a line that is exactly ind + '}' (or ind+'};')
                j = i
                # one-line or declaration without body
                if lines[i].rstrip().endswith(';'):
                    i += 1; continue
                j = i + 1
                while j < len(lines) and not re.match(r'^' + re.escape(ind) + r'\}\s*;?\s*$', lines[j]):
                    j += 1
                n = j - i + 1
                if n > limit and j < len(lines):
                    out.append((n, str(p), i + 1, name))
            i += 1
for n, p, l, name in sorted(out, reverse=True):
    print(f"{n:5} {p}:{l} {name}")
