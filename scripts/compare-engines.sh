#!/usr/bin/env bash
# The comparison with other engines, reproducible: the same windowed job on the same generated
# file in saams, Apache Flink SQL, Bytewax + Apache DataSketches and Pathway, with their answers
# checked against each other's exact answers and their CPU cost per tuple measured.
#
#   scripts/compare-engines.sh [--streams S] [--tuples T] [--rounds R] [--windows LIST]
#                              [--engines LIST] [--out DIR] [--no-docs] [--no-build] [--add]
#
# The job (the one of the docs' engines table): per stream, a Count-Min and a HyperLogLog of
# `price`, answered per 60 s event-time window, over S streams of T tuples each (default 100 x
# 20,000 = 2 M tuples, the generator's stock streams, one JSON-lines file). Window types
# (`--windows`, default `tumbling,landmark`): `tumbling` (saams' tumbling synopses, Flink's TUMBLE,
# Bytewax's and Pathway's tumbling windows) and `landmark` (saams' default, synopses accumulated from
# their construction on, against Flink's CUMULATE with a 60 s step; Bytewax and Pathway have no such
# window and sit it out).
#
# What it does:
#   1. builds saams and replay (release), writes the input with `replay --generate stocks:S:T`;
#   2. installs each engine into its own virtualenv under .venv-engines/ on first use (PyPI:
#      apache-flink 2.3.0, bytewax 0.21.1 + datasketches 5.2.0, pathway 0.33.0; matplotlib for the
#      chart) and Debian's OpenJDK 17 for Flink when no `java` is on the PATH;
#   3. runs every engine R rounds (default 3), the engines' order rotated each round so that none
#      always runs on a cooler or hotter machine, measuring the CPU-seconds of each run's whole
#      process tree (scripts/engines/measure.py: a cgroup per run, so the JVM and every thread count);
#   4. checks every engine's answers of the first round against the exact answers computed from the
#      file (scripts/engines/compare.py: tuple counts equal, distinct counts equal where exact and
#      within 3 standard errors where sketched) and stops with an error if any disagrees;
#   5. writes the results (TSV), the table into docs/performance.md (between its `engines` markers)
#      and the chart docs/engines.png, unless --no-docs.
#
# It takes about 25 minutes on a 2-core machine with the default size, most of it Flink's and
# Pathway's runs (the first run adds about 5 minutes of installs). It is not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."

STREAMS=100 TUPLES=20000 ROUNDS=3 WINDOWS=tumbling,landmark ENGINES=saams,flink,bytewax,pathway
OUT=target/compare-engines DOCS=1 BUILD=1 ADD=0
while [ $# -gt 0 ]; do
  case "$1" in
    --streams) STREAMS=$2; shift 2 ;;
    --tuples) TUPLES=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --windows) WINDOWS=$2; shift 2 ;;
    --engines) ENGINES=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --no-docs) DOCS=0; shift ;;
    --no-build) BUILD=0; shift ;;  # use target/release/{saams,replay} as they are
    --add) ADD=1; shift ;;  # add this run's rows to --out's results.tsv (the table shows both)
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare-engines: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
has() { case ",$1," in *",$2,"*) return 0 ;; *) return 1 ;; esac; }

ENGINE_DIR=scripts/engines
VENVS=.venv-engines
mkdir -p "$OUT" "$VENVS"

venv() { # $1: name, rest: packages
  local name=$1; shift
  if [ ! -x "$VENVS/$name/bin/python" ] || [ ! -f "$VENVS/$name/.installed" ]; then
    echo "compare-engines: installing $* into $VENVS/$name" >&2
    python3 -m venv "$VENVS/$name"
    "$VENVS/$name/bin/pip" install --quiet --disable-pip-version-check "$@"
    touch "$VENVS/$name/.installed"
  fi
}

[ "$BUILD" = 1 ] && cargo build --release --quiet -p saams-jobs --bin saams --bin replay
venv report matplotlib
has "$ENGINES" flink && venv flink apache-flink==2.3.0
has "$ENGINES" bytewax && venv bytewax bytewax==0.21.1 datasketches==5.2.0
has "$ENGINES" pathway && venv pathway pathway==0.33.0
if has "$ENGINES" flink && ! command -v java >/dev/null; then
  echo "compare-engines: installing Debian's OpenJDK 17 for Flink" >&2
  apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi

INPUT=$OUT/input-$STREAMS-$TUPLES.jsonl
[ -s "$INPUT" ] || target/release/replay --generate "stocks:$STREAMS:$TUPLES" -o "$INPUT" 2>/dev/null
TOTAL=$(wc -l < "$INPUT")
echo "compare-engines: $TOTAL tuples of $STREAMS streams in $INPUT" >&2

# $1: engine, $2: window type, $3: output file; prints the command.
engine_command() {
  case "$1" in
    saams) echo target/release/saams -w 1 --window 60s --requests "$OUT/requests-$2.json" --data "$INPUT" --out "$3" ;;
    flink) echo "$VENVS/flink/bin/python" "$ENGINE_DIR/flink_job.py" "$INPUT" "$3" "$2" ;;
    bytewax) echo "$VENVS/bytewax/bin/python" "$ENGINE_DIR/bytewax_job.py" "$INPUT" "$3" ;;
    pathway) echo env PATHWAY_THREADS=1 "$VENVS/pathway/bin/python" "$ENGINE_DIR/pathway_job.py" "$INPUT" "$3" ;;
  esac
}
takes_part() { # $1: engine, $2: window type
  has "$ENGINES" "$1" && { [ "$2" = tumbling ] || [ "$1" = saams ] || [ "$1" = flink ]; }
}

RESULTS=$OUT/results.tsv
if [ "$ADD" = 0 ] || [ ! -s "$RESULTS" ]; then
  printf 'window\tengine\tround\ttuples\tcpu_seconds\twall_seconds\tcpu_source\n' > "$RESULTS"
fi
IFS=, read -r -a engines <<< "$ENGINES"
IFS=, read -r -a windows <<< "$WINDOWS"
status=0
for window in "${windows[@]}"; do
  python3 "$ENGINE_DIR/compare.py" requests "$INPUT" "$window" > "$OUT/requests-$window.json"
  outputs=()
  for ((round = 1; round <= ROUNDS; round++)); do
    n=${#engines[@]}
    for ((i = 0; i < n; i++)); do
      engine=${engines[$(((i + round - 1) % n))]}
      takes_part "$engine" "$window" || continue
      answers=$OUT/$engine-$window-$round.out
      echo "compare-engines: $window round $round: $engine" >&2
      PYTHONPATH=$ENGINE_DIR python3 "$ENGINE_DIR/measure.py" "$OUT/measure.json" -- \
        $(engine_command "$engine" "$window" "$answers") > "$OUT/$engine-$window-$round.log" 2>&1 || {
        echo "compare-engines: $engine failed ($window, round $round): see $OUT/$engine-$window-$round.log" >&2
        status=1; continue; }
      python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print("\t".join(sys.argv[2:] + [str(m["cpu_seconds"]), str(m["wall_seconds"]), m["cpu_source"]]))' \
        "$OUT/measure.json" "$window" "$engine" "$round" "$TOTAL" >> "$RESULTS"
      [ "$round" = 1 ] && outputs+=("$engine=$answers")
    done
  done
  echo "compare-engines: checking the $window answers against the exact ones" >&2
  python3 "$ENGINE_DIR/compare.py" check "$INPUT" "$window" "${outputs[@]}" | tee "$OUT/check-$window.txt" || status=1
done

"$VENVS/report/bin/python" "$ENGINE_DIR/compare.py" report "$RESULTS" "$OUT/engines.md" "$OUT/engines.png"
cat "$OUT/engines.md"
if [ "$DOCS" = 1 ] && [ "$status" = 0 ]; then
  cp "$OUT/engines.png" docs/engines.png
  python3 - "$OUT/engines.md" docs/performance.md "$STREAMS" "$TUPLES" "$ROUNDS" <<'PY'
import sys
table, doc, streams, tuples, rounds = sys.argv[1:]
text = open(doc).read()
begin, end = "<!-- engines:begin -->", "<!-- engines:end -->"
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
body = open(table).read()
note = (f"\n`scripts/compare-engines.sh --streams {streams} --tuples {tuples} --rounds {rounds}`"
        " wrote this table (medians of the rounds; CPU-seconds of each run's whole process tree).\n\n")
open(doc, "w").write(head + begin + "\n" + note + body + "\n" + end + tail)
PY
  echo "compare-engines: wrote docs/performance.md's table and docs/engines.png" >&2
fi
exit $status
