#!/usr/bin/env bash
# Fuzz the decoders and parsers with cargo-fuzz (libFuzzer), one target at a time on one core.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]    # default 60 s, every target in fuzz/
#   FUZZ_RUNS=10000000 scripts/fuzz.sh 3600 decode       # stop at 10 M executions (or the time)
#
# Targets (fuzz/fuzz_targets/): decode (registry::decode of every kind), requests (parse_requests,
# query_spec, construct), tuple_jsonl, tuple_stock, tuple_ais (the line parsers of datasets/),
# checkpoint (the checkpoint reader: CheckpointPart::decode, Manifest::from_json).
# Installs cargo-fuzz when missing. cargo-fuzz needs nightly-only rustc flags (sanitizers,
# coverage instrumentation); RUSTC_BOOTSTRAP=1 lets the stable toolchain accept them.
# Each target starts from fuzz/seeds/<target>/ (committed) plus fuzz/corpus/<target>/ (the
# working corpus, git-ignored, grows across runs). A crash leaves its input in
# fuzz/artifacts/<target>/; reproduce with `RUSTC_BOOTSTRAP=1 cargo fuzz run -a <target> <file>`
# from fuzz/. Prints per target the executions and crashes; exits 1 if any target crashed.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs=${1:-60}
shift || true
export RUSTC_BOOTSTRAP=1
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
if [[ $# -gt 0 ]]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo fuzz list)
fi
# -a: debug assertions, so an arithmetic overflow on a crafted input is a crash, as in the tests.
flags=(-O -a)
cargo fuzz build "${flags[@]}"
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
failed=0
summary=()
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "seeds/$t"
    libfuzzer=(-max_total_time="$secs" -print_final_stats=1 -timeout=20 -rss_limit_mb=2048)
    if [[ -n ${FUZZ_RUNS:-} ]]; then
        libfuzzer+=(-runs="$FUZZ_RUNS")
    fi
    echo "fuzz.sh: $t for ${secs}s${FUZZ_RUNS:+ or $FUZZ_RUNS executions}" >&2
    status=0
    cargo fuzz run "${flags[@]}" "$t" "corpus/$t" "seeds/$t" -- "${libfuzzer[@]}" >"$logs/$t" 2>&1 || status=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$t" | tail -1)
    if [[ $status -ne 0 ]]; then
        failed=1
        artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$logs/$t" | tail -1)
        grep -m1 -E "panicked at|ERROR: libFuzzer|ERROR: AddressSanitizer|==ERROR" -A3 "$logs/$t" >&2 || tail -20 "$logs/$t" >&2
        summary+=("$t: ${execs:-?} executions, 1 crash (exit $status), input: ${artifact:-see the log above}")
    else
        summary+=("$t: ${execs:-?} executions, 0 crashes")
    fi
done
printf 'fuzz.sh: %s\n' "${summary[@]}"
exit $failed
