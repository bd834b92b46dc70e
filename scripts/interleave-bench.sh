#!/usr/bin/env bash
# The hot path against an earlier commit, interleaved in one run (brief: "judge a regression
# against the previous release built in the same run"): builds benches/realistic_pass for
# BASE (a git worktree) and for this checkout in one target dir, then runs the floor, Deferred
# and disabled arms at 32 layers, alternating, ROUNDS times. Compare each arm's ratio to the
# floor of its own round.   Usage: scripts/interleave-bench.sh BASE_REV [ROUNDS]
set -euo pipefail
base=${1:?usage: scripts/interleave-bench.sh BASE_REV [ROUNDS]}; rounds=${2:-5}
root=$(git rev-parse --show-toplevel); work=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$root" worktree add -q --detach "$work/base" "$base"
export CARGO_TARGET_DIR="$work/target"
# Since 0.4.0 the benches are their own package (benches/Cargo.toml); earlier trees had them in
# the root package.
build() { local pkg=(); if [ -e "$1/benches/Cargo.toml" ]; then pkg=(-p brickprof-benches); fi
  (cd "$1" && cargo bench --no-run "${pkg[@]}" --bench realistic_pass 2>&1 \
  | grep -o 'target/release/deps/realistic_pass-[0-9a-f]*' | tail -1); }
b=$(build "$work/base"); cp "$work/${b}" "$work/bench-base"
n=$(build "$root"); cp "$work/${n}" "$work/bench-now"
for r in $(seq 1 "$rounds"); do
  for arm in base now; do
    echo "=== round $r $arm"
    "$work/bench-$arm" --bench --warm-up-time 1 --measurement-time 3 \
      'realistic_pass/(floor_rdtsc_count_sum_min_max|brickprof_deferred|brickprof_disabled)/32$' \
      2>&1 | grep -E "realistic_pass/|time:"
  done
done
