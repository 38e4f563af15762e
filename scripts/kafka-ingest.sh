#!/usr/bin/env bash
# Kafka ingest per job CPU-second against the file path: the paper's workload at -w 2 from a
# JSON-lines file, from a topic of one tuple per record, from a topic of the batched format
# (`replay --batch`), and from the one-tuple topic under each consumer setting given, in
# alternating rounds, beside a Kafka run that reads nothing (an empty topic of as many partitions,
# read to its end: its cost is what any Kafka run pays whatever it reads). Prints one TSV row per run and, at the end, the medians per setting with
# each setting's ratio to the file's tuples per CPU-second, also without that fixed cost. Every run's sorted answers must equal
# the file run's (the script fails otherwise).
#
#   scripts/kafka-ingest.sh [-n TUPLES_PER_STREAM] [-r ROUNDS] [-b BATCH] [-X key=value[,key=value…]]…
#
# Each -X adds a setting: the one-tuple topic read with those librdkafka settings (comma-separated
# for several at once). The job's CPU-seconds (user+sys) and peak resident memory come from
# /usr/bin/time; the broker's CPU-seconds beside them from /proc of the process listening on the
# broker's port (or BROKER_PID), read before and after each Kafka run, not counted in the job's.
# The summary gives the median and the lowest job CPU-seconds of each setting: on shared cores
# other work inflates a run's CPU-seconds, never deflates them.
#
# Environment: BROKERS (default 127.0.0.1:9092), BROKER_PID, SAAMS_BIN (default
# target/release), REQUESTS (default datasets/requests/paper-workload.json).
set -euo pipefail
cd "$(dirname "$0")/.."

per_stream=50000
rounds=3
batch=1000
tunings=()
while getopts "n:r:b:X:" opt; do
  case $opt in
    n) per_stream=$OPTARG ;;
    r) rounds=$OPTARG ;;
    b) batch=$OPTARG ;;
    X) tunings+=("$OPTARG") ;;
    *) sed -n '2,18p' "$0" >&2; exit 2 ;;
  esac
done
brokers=${BROKERS:-127.0.0.1:9092}
bin=${SAAMS_BIN:-target/release}
requests=${REQUESTS:-datasets/requests/paper-workload.json}
port=${brokers##*:}
broker_pid=${BROKER_PID:-$(ss -ltnp 2>/dev/null | awk -v p=":$port\$" '$4 ~ p' | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)}
[ -n "$broker_pid" ] || { echo "kafka-ingest: no process listens on $brokers (set BROKER_PID)" >&2; exit 1; }
tick=$(getconf CLK_TCK)
work=$(mktemp -d "${TMPDIR:-/tmp}/kafka-ingest.XXXXXX")
trap 'rm -rf "$work"' EXIT
tag="kafka-ingest-$$-$per_stream"

broker_cpu() { awk -v t="$tick" '{ print ($14 + $15) / t }' "/proc/$broker_pid/stat"; }

"$bin/replay" --generate "stocks:100:$per_stream" --output "$work/tuples.jsonl" --progress none
"$bin/replay" --generate "stocks:100:$per_stream" --brokers "$brokers" --topic "$tag-one" --partitions 4 --progress none
"$bin/replay" --generate "stocks:100:$per_stream" --brokers "$brokers" --topic "$tag-batched" --partitions 4 \
  --batch "$batch" --progress none
# The empty topic of the run that reads nothing, created (by a job that reads it) before the rounds.
"$bin/saams" -w 1 --progress 0 --requests "$requests" --brokers "$brokers" --data-topic "$tag-empty" --partitions 4 \
  --from earliest --exit-when-idle 0s --group-id "$tag-create" --out /dev/null 2>/dev/null

# name|input|-X settings (comma-separated); "idle" reads the empty topic: no tuples, only what a
# Kafka run costs whatever it reads (start, assignment, the 2 s idle tail). Not the one-tuple
# topic from `--from latest`: on the local broker (Tansu) such a run started before the end and
# read 4,000-13,000 of its tuples (and answered their windows).
settings=("file|file|" "kafka-one-tuple|$tag-one|" "kafka-batched-$batch|$tag-batched|" "kafka-idle|idle|")
for t in "${tunings[@]}"; do settings+=("kafka-one-tuple $t|$tag-one|$t"); done

run() { # name input tunings round
  local name=$1 input=$2 tuning=$3 round=$4 args=() out="$work/out.json" b0 b1
  if [ "$input" = file ]; then
    args=(--data "$work/tuples.jsonl")
  else
    local topic=$input from=earliest
    if [ "$input" = idle ]; then topic=$tag-empty; fi
    args=(--brokers "$brokers" --data-topic "$topic" --from "$from" --exit-when-idle 2s
      --group-id "$tag-$round-$RANDOM")
    IFS=, read -ra xs <<<"$tuning"
    for x in "${xs[@]}"; do [ -n "$x" ] && args+=(-X "$x"); done
  fi
  b0=$(broker_cpu)
  /usr/bin/time -f "%U %S %M" -o "$work/time" "$bin/saams" -w 2 --progress 0 --requests "$requests" \
    "${args[@]}" --out "$out" 2>"$work/stderr"
  b1=$(broker_cpu)
  local tuples cpu sum rss
  tuples=$(grep -o 'summary tuples=[0-9]*' "$work/stderr" | cut -d= -f2)
  cpu=$(awk '{ print $1 + $2 }' "$work/time")
  rss=$(awk '{ printf "%.0f", $3 / 1024 }' "$work/time")
  sum=$(sort "$out" | md5sum | cut -d' ' -f1)
  if [ "$input" = file ]; then
    echo "$sum" >"$work/want"
  elif [ "$input" != idle ] && [ "$sum" != "$(cat "$work/want")" ]; then
    echo "kafka-ingest: $name: answers differ from the file run's" >&2
    exit 1
  fi
  if [ "$input" = file ]; then b1=$b0; fi
  printf '%s\t%s\t%s\t%s\t%.3f\t%.3f\t%.0f\t%s\n' "$round" "$name" "$tuples" "$([ "$input" = file ] && echo - || echo kafka)" \
    "$cpu" "$(echo "$b1 - $b0" | bc -l)" "$(echo "${tuples:-0} / $cpu" | bc -l)" "$rss"
}

printf 'round\tsetting\ttuples\tinput\tjob_cpu_s\tbroker_cpu_s\ttuples_per_job_cpu_s\tjob_max_rss_mb\n'
for round in $(seq 1 "$rounds"); do
  for s in "${settings[@]}"; do
    IFS='|' read -r name input tuning <<<"$s"
    run "$name" "$input" "$tuning" "$round"
  done
done | tee "$work/runs.tsv"

echo
printf 'setting\tmedian_job_cpu_s\tmin_job_cpu_s\tmedian_broker_cpu_s\ttuples_per_job_cpu_s\tover_file\tover_file_without_idle_cost\tjob_max_rss_mb\n'
python3 - "$work/runs.tsv" <<'EOF'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if not l.startswith("round")]
names = list(dict.fromkeys(r[1] for r in rows))
med = {n: (statistics.median(float(r[4]) for r in rows if r[1] == n),
           statistics.median(float(r[5]) for r in rows if r[1] == n),
           statistics.median(float(r[6]) for r in rows if r[1] == n),
           min(float(r[4]) for r in rows if r[1] == n),
           statistics.median(float(r[7]) for r in rows if r[1] == n)) for n in names}
idle = med["kafka-idle"][0]
tuples = max(float(r[2] or 0) for r in rows)
for n in names:
    cpu, broker, per, low, rss = med[n]
    net = "-" if n in ("file", "kafka-idle") else f"{tuples / (cpu - idle) / med['file'][2]:.2f}"
    print(f"{n}\t{cpu:.2f}\t{low:.2f}\t{broker:.2f}\t{per / 1e6:.2f} M\t{per / med['file'][2]:.2f}\t{net}\t{rss:.0f}")
EOF
