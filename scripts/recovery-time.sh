#!/usr/bin/env bash
# Recovery time of a checkpointed job: kill -9 to the first answer the crashed run had not written.
#
#   scripts/recovery-time.sh [RUN_SECONDS=25] [INTERVAL=10s] [RATE=500000] [OUTDIR=target/recovery]
#
# Runs the paper workload on the unbounded generator at RATE tuples/s with --checkpoints every
# INTERVAL, kills it with SIGKILL after RUN_SECONDS, starts the same command again at once, and
# reports: the output's length at the kill, the checkpoint resumed from, the seconds from the kill
# to the resume message, and to the first byte past the crashed run's output (the first new answer;
# before it come the answers of the span since the checkpoint, read again at RATE).
set -euo pipefail
cd "$(dirname "$0")/.."
run=${1:-25}; interval=${2:-10s}; rate=${3:-500000}; out=${4:-target/recovery}
cargo build --release -q -p saams-jobs --bin saams
rm -rf "$out"; mkdir -p "$out"
args=(-w 2 --requests datasets/requests/paper-workload.json --generate stocks:100 --rate "$rate"
      --progress 0 --out "$out/est.jsonl" --checkpoints "$out/ckpt" --checkpoint-interval "$interval")
target/release/saams "${args[@]}" 2>"$out/first.err" &
pid=$!
sleep "$run"
kill -9 "$pid"; wait "$pid" 2>/dev/null || true
killed=$(date +%s.%N)
at_kill=$(stat -c %s "$out/est.jsonl")
target/release/saams "${args[@]}" 2>"$out/second.err" &
pid=$!
resumed=""; first_new=""
while [[ -z "$first_new" ]]; do
    now=$(date +%s.%N)
    if [[ -z "$resumed" ]] && grep -qs "resuming from checkpoint" "$out/second.err"; then resumed=$now; fi
    if [[ $(stat -c %s "$out/est.jsonl") -gt $at_kill ]]; then first_new=$now; fi
    if (( $(echo "$now - $killed > 120" | bc) )); then echo "no new answer within 120 s" >&2; break; fi
    sleep 0.01
done
kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
echo "recovery output_at_kill=$at_kill resumed_from=$(grep -o 'checkpoint [0-9]* at [^:]*:[^:]*:[0-9]*Z' "$out/second.err" | head -1 | tr ' ' '_')" \
     "kill_to_resume_s=$(echo "$resumed - $killed" | bc) kill_to_first_new_answer_s=$(echo "${first_new:-$now} - $killed" | bc)"
