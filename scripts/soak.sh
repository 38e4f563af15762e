#!/usr/bin/env bash
# Soak test: run `saams` unbounded at full rate for a while and watch its memory, files and threads.
#
#   scripts/soak.sh [SECONDS=600] [OUTDIR=target/soak]
#
# Builds the release binaries, then runs `saams` on the built-in generator without an end
# (`--generate stocks:100`, no rate limit) with the paper workload's continuous queries
# (`--requests datasets/requests/paper-workload.json`), estimations to /dev/null, and `--http` on a
# free loopback port. When `saams --help` lists `--checkpoints`, the job also checkpoints to
# OUTDIR/checkpoints every 10 s. While it runs:
#   - an ad-hoc query over HTTP every second (alternately a Count-Min and a HyperLogLog of the
#     workload), counted as answered or failed;
#   - a sample every second from /proc/<pid>: VmRSS, VmHWM, open files (/proc/<pid>/fd), Threads,
#     and the tuples read so far (sum of saams_tuples_in_total from /metrics), into OUTDIR/soak.tsv.
# After SECONDS it stops the job with SIGTERM, waits for it (its summary line is in
# OUTDIR/saams.stderr) and runs `soak-plot OUTDIR/soak.tsv OUTDIR/soak.png`, which prints the
# figures and the verdict (RSS flat within ±10 % after the warm-up, files and threads not growing).
# Exits 0 when every target is met and the job ended cleanly, 1 otherwise.
#
# Environment: SOAK_WORKERS (default 1), SOAK_WINDOW (the job's --window, default 60s),
# SOAK_GENERATE (default stocks:100; must have no tuple count), SOAK_REQUESTS (default the paper
# workload), SOAK_EXTRA (more saams flags, split on spaces).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-600}
outdir=${2:-target/soak}
workers=${SOAK_WORKERS:-1}
window=${SOAK_WINDOW:-60s}
generate=${SOAK_GENERATE:-stocks:100}
requests=${SOAK_REQUESTS:-datasets/requests/paper-workload.json}
if ! [[ $secs =~ ^[0-9]+$ ]] || ((secs < 30)); then
    echo "soak.sh: SECONDS must be a whole number ≥ 30 (got '$secs'): the verdict needs a warm-up and 10 s medians" >&2
    exit 2
fi
if [[ $generate =~ ^[a-z]+:[0-9]+:[0-9]+$ ]]; then
    echo "soak.sh: SOAK_GENERATE=$generate has a tuple count; a soak needs a generator that does not end" >&2
    exit 2
fi
[[ -f $requests ]] || { echo "soak.sh: $requests not found" >&2; exit 2; }

cargo build --release -p saams-jobs -p saams-tools --bin saams --bin soak-plot
bin=target/release
mkdir -p "$outdir"
tsv=$outdir/soak.tsv
queries=$outdir/queries.log
errlog=$outdir/saams.stderr
: >"$queries"

flags=(-w "$workers" --requests "$requests" --generate "$generate" --window "$window" --out /dev/null
    --http 127.0.0.1:0 --progress 10)
if "$bin/saams" --help | grep -q -- '--checkpoints'; then
    rm -rf "$outdir/checkpoints"
    flags+=(--checkpoints "$outdir/checkpoints" --checkpoint-interval 10s)
    echo "soak.sh: checkpoints every 10 s to $outdir/checkpoints" >&2
else
    echo "soak.sh: this saams has no --checkpoints; running without checkpoints" >&2
fi
if [[ -n ${SOAK_EXTRA:-} ]]; then
    read -r -a extra <<<"$SOAK_EXTRA"
    flags+=("${extra[@]}")
fi

echo "soak.sh: $bin/saams ${flags[*]} for ${secs}s" >&2
"$bin/saams" "${flags[@]}" 2>"$errlog" &
pid=$!
querier=
cleanup() {
    [[ -n $querier ]] && kill "$querier" 2>/dev/null || true
    kill -KILL "$pid" 2>/dev/null || true
}
trap cleanup EXIT
start_us=${EPOCHREALTIME/./}
# Sleep until `start + $1` milliseconds (at once when that is past), so a slow step does not shift the rest.
sleep_until() {
    local us=$((start_us + $1 * 1000 - ${EPOCHREALTIME/./}))
    ((us <= 0)) || sleep "$((us / 1000000)).$(printf '%06d' $((us % 1000000)))"
}

# The HTTP address the job bound (port 0: the kernel picks a free one).
addr=
for _ in $(seq 300); do
    addr=$(sed -n 's|^saams: http on http://||p' "$errlog" | head -1)
    [[ -n $addr ]] && break
    kill -0 "$pid" 2>/dev/null || { echo "soak.sh: saams exited at start:" >&2; cat "$errlog" >&2; exit 1; }
    sleep 0.1
done
[[ -n $addr ]] || { echo "soak.sh: saams did not report its HTTP address within 30 s" >&2; exit 1; }
echo "soak.sh: saams pid $pid, http on $addr" >&2

# Ad-hoc queries, one a second, half a second off the samples (a query's connection is not what
# the samples measure); each line of $queries "ok" or "failed <why>".
ask() {
    local i=0 body reply
    while kill -0 "$pid" 2>/dev/null; do
        i=$((i + 1))
        sleep_until $((i * 1000 + 500))
        if ((i % 2)); then
            body='{"requestID":'$((1000000 + i))',"streamID":"EURTRY","synopsisID":1,"dataSetKey":"Forex","param":[3.2478,"price","Queryable","Ad-hoc"]}'
        else
            body='{"requestID":'$((1000000 + i))',"streamID":"SPY","synopsisID":2,"dataSetKey":"Equity","param":["distinct","price","Queryable","Ad-hoc"]}'
        fi
        if reply=$(curl -sS --max-time 15 -w '\n%{http_code}' --data-binary "$body" "http://$addr/requests" 2>&1) &&
            [[ ${reply##*$'\n'} == 200 && $reply == *'"estimate":'* && $reply != *'"error"'* ]]; then
            echo ok >>"$queries"
        else
            echo "failed ${reply//$'\n'/ }" >>"$queries"
        fi
    done
}
ask &
querier=$!

# One sample a second. Every read tolerates the job ending under it (the loop then stops).
printf 'seconds\trss_kb\thwm_kb\tfds\tthreads\ttuples\tqueries_ok\tqueries_failed\n' >"$tsv"
status_field() { sed -n "s/^$1:[[:space:]]*\\([0-9]*\\).*/\\1/p" "/proc/$pid/status" 2>/dev/null || true; }
died=0
for ((i = 1; i <= secs; i++)); do
    sleep_until $((i * 1000))
    if ! kill -0 "$pid" 2>/dev/null; then
        died=1
        break
    fi
    us=$((${EPOCHREALTIME/./} - start_us))
    t=$((us / 1000000)).$(printf '%03d' $((us % 1000000 / 1000)))
    rss=$(status_field VmRSS) hwm=$(status_field VmHWM) threads=$(status_field Threads)
    fds=$(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l || true)
    [[ -n $rss && -n $hwm && -n $threads ]] || { died=1; break; }
    tuples=$(curl -s --max-time 2 "http://$addr/metrics" |
        awk '/^saams_tuples_in_total[{ ]/ { n += $NF; seen = 1 } END { if (seen) printf "%.0f", n; else print "-" }') || tuples=-
    ok=$(grep -c '^ok' "$queries" || true)
    failed=$(grep -c '^failed' "$queries" || true)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$rss" "$hwm" "$fds" "$threads" "$tuples" "$ok" "$failed" >>"$tsv"
done

# Queries stop before the job does: one posted while it shuts down would fail for that reason alone.
kill "$querier" 2>/dev/null || true
wait "$querier" 2>/dev/null || true
querier=
result=0
if ((died)); then
    echo "soak.sh: saams ended on its own after $i s; its stderr:" >&2
    tail -20 "$errlog" >&2
    result=1
else
    kill -TERM "$pid" 2>/dev/null || true
    # The job closes its windows and prints its summary; give it a minute.
    for _ in $(seq 600); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "soak.sh: saams still running 60 s after SIGTERM; killing it" >&2
        result=1
    fi
fi
job_status=0
kill -KILL "$pid" 2>/dev/null || true
wait "$pid" || job_status=$?
trap - EXIT
if ((job_status != 0)); then
    echo "soak.sh: saams exited with status $job_status" >&2
    result=1
fi
grep '^summary ' "$errlog" >&2 || echo "soak.sh: no summary line in $errlog" >&2
if [[ -d $outdir/checkpoints ]]; then
    echo "soak.sh: checkpoints: $(du -sh "$outdir/checkpoints" | cut -f1) in $(find "$outdir/checkpoints" -type f | wc -l) files" >&2
fi
if grep -q '^failed' "$queries"; then
    echo "soak.sh: failed ad-hoc queries (first 3):" >&2
    grep '^failed' "$queries" | head -3 >&2
fi
plot_status=0
"$bin/soak-plot" "$tsv" "$outdir/soak.png" || plot_status=$?
((plot_status == 0)) || result=1
exit $result
