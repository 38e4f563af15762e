#!/usr/bin/env bash
# Stop the broker started by scripts/start-kafka.sh (by the PID it wrote).
set -euo pipefail
cd "$(dirname "$0")/.."
PIDFILE=${KAFKA_PIDFILE:-kafka.pid}
if [ ! -f "$PIDFILE" ]; then
  echo "no $PIDFILE: broker not started by start-kafka.sh"
  exit 0
fi
PID=$(cat "$PIDFILE")
if kill -0 "$PID" 2>/dev/null; then
  kill "$PID"
  for _ in $(seq 1 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$PID" 2>/dev/null || true
  echo "broker $PID stopped"
fi
rm -f "$PIDFILE"
