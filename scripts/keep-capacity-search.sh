#!/usr/bin/env bash
# Keeps one `loadtest lab --scenario capacity` search under docs/ so that `loadtest crossover`
# reads it again from a clone: its scenario.json and, for each step, its results file gzipped
# (about a tenth of the JSON; what the causes are read from). Reports and goose pages stay out.
#   scripts/keep-capacity-search.sh <the search's --out folder> <docs/results/capacity/…/name>
set -euo pipefail
src=${1:?usage: keep-capacity-search.sh SEARCH_FOLDER DEST_FOLDER}
dest=${2:?usage: keep-capacity-search.sh SEARCH_FOLDER DEST_FOLDER}
[ -f "$src/scenario.json" ] || { echo "$src has no scenario.json" >&2; exit 1; }
mkdir -p "$dest"
cp "$src/scenario.json" "$dest/scenario.json"
for step in "$src"/*/; do
    name=$(basename "$step")
    for results in "$step"results-*.json; do
        [ -f "$results" ] || continue
        mkdir -p "$dest/$name"
        gzip -9 -n -c "$results" > "$dest/$name/$(basename "$results").gz"
    done
done
echo "kept $(find "$dest" -name '*.gz' | wc -l) steps in $dest ($(du -sh "$dest" | cut -f1))"
