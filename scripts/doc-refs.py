#!/usr/bin/env python3
"""Every reference in the docs points at something that exists.

Checks, from the repository root (or --root):
  links      every relative Markdown link in README.md, CHANGELOG.md, docs/, spec/ and the
             crates' READMEs names a file that exists, and its #anchor a heading there;
  citations  every `spec/NAME.md "Section"` in those files and in the sources (src/, tests/,
             proptests/, crates/, benches/, scripts/) names a heading of that spec file (the
             quoted text is the heading, or its beginning);
  paths      every repository path written in backticks in README.md, docs/ and spec/
             (`src/...`, `tests/...`, ...) exists (a `*` is a glob).

Prints one line a broken reference (FILE:LINE: what) and exits 1 when there is one.
--self-test builds a small tree with one broken reference of each kind and checks that each
is reported, so the checker itself can fail.
"""
import argparse
import glob
import os
import re
import sys
import tempfile

DOCS = ["README.md", "CHANGELOG.md", "docs/**/*.md", "spec/*.md", "crates/*/README.md"]
SOURCES = ["src", "tests", "proptests", "crates", "benches", "scripts"]
PATH_DOCS = ["README.md", "docs/**/*.md", "spec/*.md"]
SOURCE_EXT = (".rs", ".py", ".sh", ".toml", ".md", ".c", ".cu")
CITATION = re.compile(r'spec/([A-Za-z0-9_-]+\.md)[,:]?\s*(?:§\s*)?"([^"\n]+)"')
LINK = re.compile(r"\]\(([^)\s]+)\)")
PATH = re.compile(
    r"`((?:src|tests|proptests|crates|benches|scripts|docs|spec|examples)/[A-Za-z0-9_./*-]+)"
    r"(?::\d+)?`"
)


def norm(s):
    s = re.sub(r"[`*_]", "", s.lower().strip())
    return re.sub(r"\s+", " ", s)


def headings(path):
    out = []
    in_code = False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            in_code = not in_code
        m = re.match(r"^#+\s+(.*?)\s*#*\s*$", line)
        if m and not in_code:
            out.append(m.group(1))
    return out


def anchor(heading):
    """GitHub's anchor for a heading."""
    a = heading.strip().lower()
    a = re.sub(r"[^\w\- ]", "", a)
    return a.replace(" ", "-")


def files(patterns):
    out = []
    for p in patterns:
        out += [f for f in glob.glob(p, recursive=True) if os.path.isfile(f)]
    return sorted(set(out))


def source_files():
    out = []
    for d in SOURCES:
        for base, dirs, names in os.walk(d):
            dirs[:] = [x for x in dirs if x != "target"]
            out += [os.path.join(base, n) for n in names if n.endswith(SOURCE_EXT)]
    # This script's own examples are not references.
    return sorted(f for f in out if os.path.normpath(f) != os.path.join("scripts", "doc-refs.py"))


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def check(root):
    os.chdir(root)
    spec_heads = {os.path.basename(p): [norm(h) for h in headings(p)] for p in glob.glob("spec/*.md")}
    problems = []
    docs = files(DOCS)
    for f in docs:
        text = open(f, encoding="utf-8").read()
        for m in LINK.finditer(text):
            link = m.group(1)
            if re.match(r"^[a-z]+:", link):
                continue
            path, _, frag = link.partition("#")
            target = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            where = f"{f}:{line_of(text, m.start())}"
            if not os.path.exists(target):
                problems.append(f"{where}: link to a missing file: {link}")
            elif frag and target.endswith(".md") and frag not in {anchor(h) for h in headings(target)}:
                problems.append(f"{where}: link to a missing heading: {link}")
    for f in sorted(set(docs + source_files())):
        try:
            text = open(f, encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        for m in CITATION.finditer(text):
            name, section = m.group(1), m.group(2)
            where = f"{f}:{line_of(text, m.start())}"
            if name not in spec_heads:
                problems.append(f'{where}: cites a missing spec file: spec/{name} "{section}"')
                continue
            s = norm(section)
            if not any(h == s or h.startswith(s) for h in spec_heads[name]):
                problems.append(f'{where}: cites a missing section: spec/{name} "{section}"')
    for f in files(PATH_DOCS):
        text = open(f, encoding="utf-8").read()
        for m in PATH.finditer(text):
            path = m.group(1).rstrip(".")
            if not (glob.glob(path) or os.path.exists(path)):
                problems.append(f"{f}:{line_of(text, m.start())}: names a missing path: {path}")
    return problems


def self_test():
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "spec"))
        os.makedirs(os.path.join(d, "src"))
        os.makedirs(os.path.join(d, "docs"))
        with open(os.path.join(d, "spec", "a.md"), "w") as f:
            f.write("# A\n\n## Real section\n")
        with open(os.path.join(d, "src", "lib.rs"), "w") as f:
            f.write('//! spec/a.md "Real section" and spec/a.md "Gone section"\n')
        with open(os.path.join(d, "docs", "g.md"), "w") as f:
            f.write("[ok](../spec/a.md#real-section) [bad](../spec/a.md#gone) [lost](x.md)\n"
                    "`src/lib.rs` `src/missing.rs`\n")
        with open(os.path.join(d, "README.md"), "w") as f:
            f.write("[guide](docs/g.md)\n")
        here = os.getcwd()
        try:
            problems = check(d)
        finally:
            os.chdir(here)
    expected = ["missing heading: ../spec/a.md#gone", "missing file: x.md",
                'missing section: spec/a.md "Gone section"', "missing path: src/missing.rs"]
    for e in expected:
        if not any(e in p for p in problems):
            print(f"self-test FAILED: not reported: {e}\n" + "\n".join(problems))
            return 1
    if len(problems) != len(expected):
        print("self-test FAILED: reported more than the planted ones:\n" + "\n".join(problems))
        return 1
    print(f"self-test: the {len(expected)} planted broken references were reported, nothing else")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    problems = check(args.root)
    for p in problems:
        print(p)
    print(f"doc-refs: {len(problems)} broken reference(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
