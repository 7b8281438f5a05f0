#!/usr/bin/env bash
# The README's timing line, measured: a fresh `git clone` of this checkout's HEAD into a temporary
# directory, then the README's main command there, `cargo run --release -p loadtest -- lab`, from
# an empty target directory (CARGO_TARGET_DIR unset: the clone's own `target/`). Each line the
# command prints is stamped with the seconds since it started, so the split is read off the log:
# the lab's build (to "building the services:"), the services' build (to the first line after it)
# and the runs (to the verdict). Run it on an otherwise idle machine: a build sharing the cores
# with another takes longer in proportion, and the figure is the machine's, not the code's.
#
#   scripts/time-fresh-clone.sh            # the default profile, as the README's command
#   scripts/time-fresh-clone.sh --help     # extra arguments go to `loadtest lab`
#
# Leaves the clone (its reports/ and target/) under the printed directory; cargo's registry cache
# is not cleared (downloads are the network's time, not the build's).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/fresh-clone.XXXXXX")
git clone --quiet "$src" "$dir/clone"
cd "$dir/clone"
unset CARGO_TARGET_DIR
echo "fresh clone of $(git rev-parse --short HEAD) in $dir/clone, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
start=$SECONDS
set +e
cargo run --release -p loadtest -- lab "$@" 2>&1 | while IFS= read -r line; do
    printf '%4d s  %s\n' $((SECONDS - start)) "$line"
done | tee "$dir/lab.log"
status=${PIPESTATUS[0]}
set -e
echo "main command: $((SECONDS - start)) s to the verdict (exit $status); log: $dir/lab.log"
exit "$status"
