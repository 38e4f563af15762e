#!/usr/bin/env bash
# Stop the broker started by scripts/start-kafka.sh (by the PID it wrote); with --durable, the
# durable broker and then its object store (whose contents are lost: it keeps them in memory).
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

# Stops the process of PID file $1 (TERM, then KILL after 5 s) and removes the file; $2 names it.
stop() {
  if [ ! -f "$1" ]; then
    echo "no $1: $2 not started by start-kafka.sh"
    return 0
  fi
  local pid
  pid=$(cat "$1")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    echo "$2 $pid stopped"
  fi
  rm -f "$1"
}

if [ "$DURABLE" = 1 ]; then
  stop "${KAFKA_PIDFILE:-kafka-durable.pid}" broker
  stop "${KAFKA_S3_PIDFILE:-kafka-s3.pid}" "object store"
else
  stop "${KAFKA_PIDFILE:-kafka.pid}" broker
fi
