#!/usr/bin/env bash
# Checkpoints at the asked cadence whatever the input layout, and the input a kill -9 makes a
# restart read again.
#
#   scripts/checkpoint-cadence.sh [BIN=target/release/saams] [OUTDIR=target/cadence] [RATE=400000] [INTERVAL=200ms]
#
# Makes a JSON-lines file of the paper workload's streams (stocks:100:20000: 2 M tuples, ~255 MB,
# about ten hours of event time, sorted by time) and its two halves (two files of different time
# spans), then for each layout
#   file -w 1 | file -w 2, default byte ranges | file -w 2, one range (--chunk-bytes 1000000000) |
#   generator -w 2 | two files of different time spans -w 2
# runs the paper workload at RATE tuples/s with --checkpoints every INTERVAL:
#   1. 5 s, stopped with SIGTERM: the checkpoints it wrote;
#   2. again from scratch, killed with SIGKILL right after its third progress line (~3 s): the
#      tuples read by then; the same command again, to the end: the tuples it read. The input
#      read again is restart + before the kill - the whole input; one interval's worth is
#      RATE x INTERVAL.
# Prints one line per layout (LAYOUTS="NAME ..." runs those only). Under --rate the progress
# counters are published in batches: "read before the kill" is its last progress line's, so the
# input read again is good to a few ten thousand tuples.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/saams}; out=${2:-target/cadence}; rate=${3:-400000}; interval=${4:-200ms}
mkdir -p "$out"
big="$out/stocks-100-20000.jsonl"
if [[ ! -s "$big" ]]; then
    target/release/replay --generate stocks:100:20000 -o "$big" 2>/dev/null
fi
if [[ ! -s "$out/half-2.jsonl" ]]; then
    lines=$(wc -l <"$big")
    head -n $((lines / 2)) "$big" >"$out/half-1.jsonl"
    tail -n +$((lines / 2 + 1)) "$big" >"$out/half-2.jsonl"
fi
total=$(wc -l <"$big")
base=(--requests datasets/requests/paper-workload.json --checkpoint-interval "$interval")

run_layout() {
    local name=$1; shift
    # LAYOUTS="file-w1 generator-w2" runs those only.
    if [[ -n "${LAYOUTS:-}" && " $LAYOUTS " != *" $name "* ]]; then return 0; fi
    local dir="$out/$name"
    rm -rf "$dir"; mkdir -p "$dir"
    # 1. Five seconds: the checkpoints written.
    timeout -s TERM 5 "$bin" "${base[@]}" --rate "$rate" --progress 0 --checkpoints "$dir/five" --out "$dir/five.jsonl" "$@" 2>"$dir/five.err" || true
    local written
    written=$(grep -o 'checkpoints written=[0-9]*' "$dir/five.err" | head -1 | cut -d= -f2)
    # 2. Killed after its third progress line, then run to the end.
    "$bin" "${base[@]}" --rate "$rate" --progress 1 --checkpoints "$dir/kill" --out "$dir/kill.jsonl" "$@" 2>"$dir/first.err" &
    local pid=$!
    while [[ $(grep -c '^progress' "$dir/first.err" || true) -lt 3 ]]; do
        if ! kill -0 "$pid" 2>/dev/null; then echo "$name: the job ended before 3 s" >&2; return 1; fi
        sleep 0.005
    done
    kill -9 "$pid"; wait "$pid" 2>/dev/null || true
    local before
    before=$(grep '^progress' "$dir/first.err" | tail -1 | grep -o 'tuples=[0-9]*' | cut -d= -f2)
    local kept
    kept=$(ls "$dir/kill" | grep -c '^[0-9]*$' || true)
    "$bin" "${base[@]}" --progress 0 --checkpoints "$dir/kill" --out "$dir/kill.jsonl" "$@" 2>"$dir/second.err"
    local again
    again=$(grep -o '^summary tuples=[0-9]*' "$dir/second.err" | cut -d= -f2)
    local interval_ms=${interval%ms}
    echo "cadence layout=$name checkpoints_in_5s=$written read_before_kill=$before restart_read=$again" \
         "read_again=$((again + before - total)) one_interval=$((rate * interval_ms / 1000)) checkpoints_kept_at_kill=$kept"
}

run_layout file-w1 -w 1 --data "$big"
run_layout file-w2-ranges -w 2 --data "$big"
run_layout file-w2-one-range -w 2 --data "$big" --chunk-bytes 1000000000
run_layout generator-w2 -w 2 --generate stocks:100:20000
run_layout two-files-w2 -w 2 --data "$out/half-1.jsonl" --data "$out/half-2.jsonl"
