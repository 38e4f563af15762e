#!/usr/bin/env bash
# Launch a local multi-process saams cluster: P processes x W workers on 127.0.0.1, free ports.
#
#   scripts/local-cluster.sh P W OUTDIR -- <saams arguments>
#
# Each process p writes its estimations to OUTDIR/out-p.jsonl and its stderr (progress, summary) to
# OUTDIR/log-p.txt; the union of the out files equals a single-process run's output (compare with
# `sort OUTDIR/out-*.jsonl | diff - <(sort single.jsonl)`). Do not pass --out: it is set per process.
# Across hosts, write the hostfile by hand (one host:port per process, the same file everywhere) and
# start `saams -w W -n P -p i -h hostfile ...` on host i.
set -euo pipefail
if [[ $# -lt 4 || $4 != "--" ]]; then
    echo "usage: $0 PROCESSES WORKERS OUTDIR -- <saams arguments>" >&2
    exit 2
fi
processes=$1
workers=$2
outdir=$3
shift 4
cd "$(dirname "$0")/.."
cargo build --release -q -p saams-jobs --bin saams
bin=target/release/saams
mkdir -p "$outdir"
hostfile="$outdir/hostfile"
: > "$hostfile"
for ((p = 0; p < processes; p++)); do
    # Ask the kernel for a free port (bind to port 0), then release it for saams.
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
    echo "127.0.0.1:$port" >> "$hostfile"
done
pids=()
for ((p = 0; p < processes; p++)); do
    "$bin" -w "$workers" -n "$processes" -p "$p" -h "$hostfile" --out "$outdir/out-$p.jsonl" "$@" \
        2> "$outdir/log-$p.txt" &
    pids+=($!)
done
status=0
for pid in "${pids[@]}"; do
    wait "$pid" || status=$?
done
grep -h '^summary' "$outdir"/log-*.txt || true
cat "$outdir"/out-*.jsonl | wc -l | xargs echo "estimations:"
exit $status
