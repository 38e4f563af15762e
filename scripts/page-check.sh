#!/usr/bin/env bash
# The page check: the page a running job serves at GET /, looked at in a real browser.
#
#   scripts/page-check.sh [SCREENSHOT.png]      (default docs/page.png)
#
# 1. Installs Debian's chromium if /usr/bin/chromium is missing (as root: `apt-get update &&
#    apt-get install -y chromium`; about 70 s on a 2-core machine, once).
# 2. Builds `saams` (quick when fresh) and starts a job on the generator (three stock streams
#    that do not end, 5000 tuples/s, five-minute windows: about one window per second of wall
#    time) with no synopsis and `--http 127.0.0.1:PORT` on a free port.
# 3. Starts headless Chromium with a DevTools port and a new empty profile, and drives it with
#    scripts/page-check.mjs (Node's own WebSocket, no package): loads the page, types a
#    HyperLogLog construct and its continuous query into the form and submits it, picks the
#    Count-Min example from the list and sends it too, waits until the table lists the synopsis
#    and both charts have ten windows, checks the ingest rate is shown and that the page loaded
#    nothing from another origin, and saves a screenshot.
# 4. Checks the job saw the synopsis constructed through the form (GET /synopses) and that its
#    answers endpoint has the answers the chart drew; stops the job and Chromium.
#
# Exits 0 when every check passed; 1 with the failing check otherwise. Takes about 20 s once
# Chromium and `saams` are there. Needs node (>= 20) and python3 (to pick a free port).
set -euo pipefail
cd "$(dirname "$0")/.."

SHOT=${1:-docs/page.png}
WORK=$(mktemp -d /tmp/saams-page-check.XXXXXX)
JOB_PID="" CHROME_PID=""
cleanup() {
  [ -n "$CHROME_PID" ] && kill "$CHROME_PID" 2>/dev/null && wait "$CHROME_PID" 2>/dev/null
  [ -n "$JOB_PID" ] && kill "$JOB_PID" 2>/dev/null && wait "$JOB_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

if [ ! -x /usr/bin/chromium ]; then
  echo "page-check: installing Debian's chromium (about 70 s)" >&2
  start=$(date +%s)
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq chromium >/dev/null
  echo "page-check: chromium installed in $(( $(date +%s) - start )) s" >&2
fi

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

cargo build --release --quiet -p saams-jobs --bin saams
: >"$WORK/none.json"
PORT=$(free_port)
target/release/saams --generate stocks:3 --rate 5000 --window 5m --requests "$WORK/none.json" \
  --out "$WORK/answers.jsonl" --progress 0 --http "127.0.0.1:$PORT" 2>"$WORK/job.err" &
JOB_PID=$!
for _ in $(seq 100); do
  grep -q "^saams: http on" "$WORK/job.err" 2>/dev/null && break
  kill -0 "$JOB_PID" 2>/dev/null || { cat "$WORK/job.err" >&2; echo "page-check: the job ended" >&2; exit 1; }
  sleep 0.1
done
grep -q "^saams: http on" "$WORK/job.err" || { echo "page-check: the job serves no HTTP" >&2; exit 1; }

DEVTOOLS=$(free_port)
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --hide-scrollbars --user-data-dir="$WORK/profile" --remote-debugging-address=127.0.0.1 \
  --remote-debugging-port="$DEVTOOLS" about:blank >"$WORK/chromium.log" 2>&1 &
CHROME_PID=$!

node_flags=()
node -e 'process.exit(typeof WebSocket === "undefined" ? 1 : 0)' || node_flags=(--experimental-websocket)
mkdir -p "$(dirname "$SHOT")"
if ! node "${node_flags[@]}" --no-warnings scripts/page-check.mjs "$DEVTOOLS" "http://127.0.0.1:$PORT/" "$SHOT"; then
  echo "page-check: the job said:" >&2; tail -20 "$WORK/job.err" >&2
  exit 1
fi

# What the browser showed is what the job has: the form's synopsis is live, with answers.
python3 - "$PORT" <<'EOF'
import json, sys, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}"
rows = json.load(urllib.request.urlopen(base + "/synopses"))
mine = [r for r in rows if r["requestID"] == "page-check"]
assert mine, f"page-check: FAIL: GET /synopses has no synopsis with requestID page-check: {rows}"
answers = json.load(urllib.request.urlopen(f"{base}/synopses/{mine[0]['id']}/answers"))["answers"]
assert len(answers) >= 10 and all(a["requestID"] == "page-check-q" for a in answers), answers[:2]
print(f"page-check: GET /synopses lists it as id {mine[0]['id']}, with {len(answers)} answers kept")
EOF
echo "page-check: ok ($SHOT)"
