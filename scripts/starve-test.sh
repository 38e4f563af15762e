#!/usr/bin/env bash
# Run one test of one test suite N times while starving chosen threads of chosen `saams`
# processes it starts: the timing bugs of multi-process and recovery code (a take-over thread,
# an intake thread or a checkpoint writer that is slow in real life) that a test on an idle
# machine only hits by chance. Found the loss of answers fixed in 7c24ce7 (hand-off).
#
# usage: scripts/starve-test.sh [options] SUITE TEST
#   SUITE      a test binary (path) or a suite's name (`handoff`: the newest
#              target/release/deps/handoff-<hash> that has TEST; build them first with
#              `cargo test --release --workspace --no-run`)
#   TEST       the test's exact name
# options:
#   -n N       runs (default 5)
#   -p REGEX   victims: `saams` processes under the test whose command line (space-joined)
#              matches REGEX (grep -E; default '--take-over.* -p 1 |-p 1 .*--take-over');
#              every matching process is a victim once, when it appears
#   -t REGEX   the victims' threads to starve, by comm (default '^saams$': the non-worker
#              threads; '^timely:' for timely's; '.' for all); the main thread only with -M
#   -M         starve the main thread too
#   -m MODE    idle (default): the threads at SCHED_IDLE under CPU hogs, set back to
#              SCHED_OTHER when the hogs stop; nice: the threads at nice 19 under hogs;
#              stop: SIGSTOP/SIGCONT the whole process -k times for a random 0.2-2 s at random
#              moments (-w: the longest wait between)
#   -s SECS    wait before starving, after a victim appears (default 0; decimals allowed)
#   -d SECS    hogs run this long (default 3), or, with -u, this long after the line appeared
#   -u GLOB:REGEX  hogs run until a line matching REGEX is in a file matching GLOB (relative to
#              the run's TMPDIR, e.g. '*/run/stderr-new-0:caught up with'), then -d more
#   -H N       hogs: busy loops (default 3, at most 3)
#   -k N       stops per victim in mode stop (default 3)
#   -w SECS    mode stop: longest wait before each stop (default 2)
#   -o DIR     where runs go (default /tmp/starve-runs); each run has TMPDIR=DIR/<run>/tmp, so
#              the test's temporary directories land there
#   -e NAME=VALUE  an environment variable for the test (repeatable)
#   -K         keep passing runs' directories too
# A passing run's directory is deleted; a failing one's is kept with the test's output
# (DIR/<run>/out.txt) and what was starved (DIR/<run>/starve.txt). Ends with
# `starve: P passed, F failed of N` and exits 1 if any failed. Hogs and stopped processes are
# released on exit, whatever ends the script (trap EXIT); processes a failed test left running
# (their command lines name the run's directory) are ended. Run one at a time: the hogs take the
# machine.
set -euo pipefail

runs=5 victims='--take-over.* -p 1 |-p 1 .*--take-over' threads='^saams$' main_too=0 mode=idle
settle=0 hog_secs=3 until_spec='' hogs=3 stops=3 stop_wait=2 out=/tmp/starve-runs
envs=() keep=0
while getopts ":n:p:t:Mm:s:d:u:H:k:w:o:e:Kh" opt; do
  case $opt in
    n) runs=$OPTARG ;; p) victims=$OPTARG ;; t) threads=$OPTARG ;; M) main_too=1 ;;
    m) mode=$OPTARG ;; s) settle=$OPTARG ;; d) hog_secs=$OPTARG ;; u) until_spec=$OPTARG ;;
    H) hogs=$OPTARG ;; k) stops=$OPTARG ;; w) stop_wait=$OPTARG ;; o) out=$OPTARG ;;
    e) envs+=("$OPTARG") ;; K) keep=1 ;;
    h) sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//;$d'; exit 0 ;;
    *) echo "starve: bad option -$OPTARG (-h for help)" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# = 2 ] || { echo "usage: $0 [options] SUITE TEST (-h for help)" >&2; exit 2; }
suite=$1 test=$2
case $mode in idle | nice | stop) ;; *) echo "starve: unknown mode $mode" >&2; exit 2 ;; esac
[ "$hogs" -le 3 ] || { echo "starve: at most 3 hogs" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -x "$suite" ]; then bin=$suite; else
  # The newest build of that name that has the test (crates may have suites of one name).
  bin=''
  for b in $(ls -t "$root"/target/release/deps/"$suite"-* 2>/dev/null | grep -E -- '-[0-9a-f]{16}$' || true); do
    if "$b" --list 2>/dev/null | grep -qx -- "$test: test"; then bin=$b; break; fi
  done
fi
[ -n "$bin" ] && [ -x "$bin" ] || { echo "starve: no test binary $suite with $test (cargo test --release --workspace --no-run)" >&2; exit 2; }

hog_pids=() stopped=()
release() {
  for p in "${hog_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${stopped[@]}"; do kill -CONT "$p" 2>/dev/null || true; done
  hog_pids=() stopped=()
}
trap release EXIT
trap 'exit 130' INT TERM

descendants() { # the processes under $1, depth first
  local c
  for c in $(pgrep -P "$1" 2>/dev/null); do echo "$c"; descendants "$c"; done
}
cmdline() { { tr '\0' ' ' < "/proc/$1/cmdline"; } 2>/dev/null || true; }
start_hogs() { local i; for ((i = 0; i < hogs; i++)); do sh -c 'while :; do :; done' & hog_pids+=($!); done; }
stop_hogs() { local p; for p in "${hog_pids[@]}"; do kill "$p" 2>/dev/null || true; done; hog_pids=(); }
# The victim's chosen threads, as TIDs.
victim_threads() {
  local t tid c
  for t in /proc/"$1"/task/*; do
    tid=${t##*/} c=$(cat "$t/comm" 2>/dev/null || true)
    [ -n "$c" ] || continue
    [ "$tid" != "$1" ] || [ "$main_too" = 1 ] || continue
    if [[ $c =~ $threads ]]; then echo "$tid"; fi
  done
}
hogs_done() { # whether the hog window of a run in $1 (its TMPDIR), started at $2 (s), is over
  local now; now=$(date +%s.%N)
  if [ -n "$until_spec" ]; then
    if [ -z "${seen_at:-}" ]; then
      # shellcheck disable=SC2086 # the glob is meant to expand
      if grep -Eqs -- "${until_spec#*:}" $1/${until_spec%%:*}; then seen_at=$now; echo "line seen at +$(echo "$now - $2" | bc)s"; fi
      return 1
    fi
    (($(echo "$now - $seen_at >= $hog_secs" | bc)))
  else
    (($(echo "$now - $2 >= $hog_secs" | bc)))
  fi
}
# Starve one victim (mode idle or nice) until the hog window ends or the test ends.
starve_threads() {
  local v=$1 tmp=$2 test_pid=$3 started tid; local -A done_tids=()
  start_hogs; started=$(date +%s.%N); seen_at=''
  while kill -0 "$test_pid" 2>/dev/null && [ -d /proc/"$v" ] && ! hogs_done "$tmp" "$started"; do
    for tid in $(victim_threads "$v"); do
      [ -z "${done_tids[$tid]:-}" ] || continue
      done_tids[$tid]=1
      if [ "$mode" = idle ]; then chrt -i -p 0 "$tid" >/dev/null 2>&1 || continue
      else renice -n 19 -p "$tid" >/dev/null 2>&1 || continue; fi
      echo "starved $tid ($(cat /proc/"$v"/task/"$tid"/comm 2>/dev/null)) of $v"
    done
    sleep 0.05
  done
  stop_hogs
  for tid in "${!done_tids[@]}"; do
    if [ "$mode" = idle ]; then chrt -o -p 0 "$tid" 2>/dev/null || true; else renice -n 0 -p "$tid" >/dev/null 2>&1 || true; fi
  done
  echo "released $v after $(echo "$(date +%s.%N) - $started" | bc)s"
}
stop_process() {
  local v=$1 test_pid=$2 i pause
  for ((i = 0; i < stops; i++)); do
    sleep "$(echo "scale=2; $RANDOM % ($stop_wait * 100 + 1) / 100" | bc)"
    kill -0 "$test_pid" 2>/dev/null && [ -d /proc/"$v" ] || return 0
    pause=$(echo "scale=2; (20 + $RANDOM % 181) / 100" | bc)
    kill -STOP "$v" 2>/dev/null || return 0
    stopped+=("$v"); echo "stopped $v for ${pause}s"; sleep "$pause"
    kill -CONT "$v" 2>/dev/null || true; stopped=()
  done
}

passed=0 failed=0 stamp=$(date +%H%M%S)
mkdir -p "$out"
for ((run = 1; run <= runs; run++)); do
  dir=$out/$(basename "$bin" | sed 's/-[0-9a-f]*$//')-$stamp-$run
  rm -rf "$dir"; mkdir -p "$dir/tmp"
  (cd "$root/jobs" && exec env TMPDIR="$dir/tmp" "${envs[@]}" "$bin" --exact "$test" --nocapture --test-threads 1) \
    > "$dir/out.txt" 2>&1 &
  test_pid=$!
  declare -A seen=()
  {
    while kill -0 "$test_pid" 2>/dev/null; do
      for p in $(descendants "$test_pid"); do
        [ -z "${seen[$p]:-}" ] || continue
        line=$(cmdline "$p")
        [[ ${line%% *} == */saams || ${line%% *} == saams ]] || continue
        seen[$p]=1
        grep -Eq -- "$victims" <<< "$line" || continue
        echo "victim $p: $line"
        sleep "$settle"
        if [ "$mode" = stop ]; then stop_process "$p" "$test_pid"; else starve_threads "$p" "$dir/tmp" "$test_pid"; fi
      done
      sleep 0.05
    done
  } > "$dir/starve.txt" 2>&1
  release
  rc=0; wait "$test_pid" || rc=$?
  # A test that failed may leave its children running (orphans): those naming this run's
  # directory are ended, by their ids.
  for p in $(ls /proc | grep -E '^[0-9]+$'); do
    if [[ $(cmdline "$p") == *"$dir/"* ]]; then kill "$p" 2>/dev/null && echo "ended leftover $p" >> "$dir/starve.txt"; fi
  done
  unset seen
  what="$(grep -c '^victim' "$dir/starve.txt" || true) victims, $(grep -c '^starved' "$dir/starve.txt" || true) threads starved, $(grep -c '^stopped' "$dir/starve.txt" || true) stops"
  if [ $rc = 0 ]; then
    passed=$((passed + 1)); echo "run $run: ok ($what)"
    if [ "$keep" = 1 ]; then echo "    kept $dir"; else rm -rf "$dir"; fi
  else
    failed=$((failed + 1))
    echo "run $run: FAILED (rc $rc; $what), kept $dir"
    grep -E "panicked|assert|left:|right:|lines, expected" "$dir/out.txt" | head -5 | sed 's/^/    /'
  fi
done
echo "starve: $passed passed, $failed failed of $runs ($(basename "$bin") $test, mode $mode, victims /$victims/, threads /$threads/)"
[ $failed = 0 ]
