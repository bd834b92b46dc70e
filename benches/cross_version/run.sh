#!/usr/bin/env bash
# The hot path against the previous release, interleaved in one process (spec/hot-path.md
# "Costs"). Checks the previous release out into benches/cross_version/prev (a detached git
# worktree, built in this folder's own target/, never the main one), builds both into one
# binary, runs the interleaved comparison RUNS times (default 3) and the marking/end_pass split
# once, pinned to CPU $CPU when taskset is present. Arguments go to every run.
#
#   benches/cross_version/run.sh [--rounds N] [--sample-ms MS] [--layers 32,128]
# Environment: PREV (the commit to compare with; default 8d4fd59, release 0.2.0), RUNS, CPU.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
prev="${PREV:-8d4fd59}"
runs="${RUNS:-3}"
cpu="${CPU:-1}"
if [ ! -e "$here/prev/Cargo.toml" ]; then
    git -C "$here" worktree add --detach "$here/prev" "$prev"
fi
git -C "$here/prev" checkout --quiet --detach "$prev"
echo "prev: $(git -C "$here/prev" log -1 --format='%h %s' | cut -c1-80)"
dirty=$(git -C "$here" diff --quiet HEAD -- ../../src || echo ' (+ uncommitted changes)')
echo "new:  $(git -C "$here" log -1 --format='%h %s' | cut -c1-80)$dirty"
echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, $(date -u +%F)"
cargo build --release --quiet --manifest-path "$here/Cargo.toml"
bin="$here/target/release/brickprof-cross-version"
pin=()
if command -v taskset >/dev/null; then pin=(taskset -c "$cpu"); fi
for run in $(seq 1 "$runs"); do
    echo "== run $run of $runs"
    "${pin[@]}" "$bin" "$@" | grep -v ' round '
done
echo "== where the time goes"
"${pin[@]}" "$bin" --split 1 "$@"
