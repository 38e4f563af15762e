#!/usr/bin/env bash
# Run the paper's experiments (horizontal, vertical, federated) on this machine.
#
#   scripts/experiments.sh            # the full set (a few minutes on 2 cores)
#   scripts/experiments.sh --quick    # a small version: CI's smoke test (well under 2 minutes)
#
# Any other arguments go to the `experiment` binary (see `experiment --help`). Results go to
# results/<git-commit>-<params>/ (git-ignored): horizontal.tsv, vertical.tsv, federated.tsv and
# fig9-horizontal.png, fig10-vertical.png, fig11-federated.png. The script checks that every TSV
# and PNG exists and is non-empty, and prints the directory.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p saams-jobs -p saams-tools --bin saams --bin experiment
log=$(mktemp)
trap 'rm -f "$log"' EXIT
target/release/experiment "$@" | tee "$log"
dir=$(sed -n 's/^experiment: results in //p' "$log" | tail -1)
if [[ -z $dir ]]; then
    echo "experiments.sh: the experiment binary did not say where it wrote its results" >&2
    exit 1
fi
for f in horizontal.tsv vertical.tsv federated.tsv fig9-horizontal.png fig10-vertical.png fig11-federated.png; do
    if [[ ! -s $dir/$f ]]; then
        echo "experiments.sh: $dir/$f is missing or empty" >&2
        exit 1
    fi
done
for f in "$dir"/*.tsv; do
    echo "== $f"
    column -t -s $'\t' "$f" 2>/dev/null || cat "$f"
done
echo "experiments.sh: results in $dir"
