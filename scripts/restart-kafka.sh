#!/usr/bin/env bash
# Restart the durable broker of `scripts/start-kafka.sh --durable` as a crash would: kill -9 by its
# PID, stay down for DOWN seconds (first argument, default 0), then start it again on the same
# storage and wait until it accepts connections. Topics, records and committed offsets survive.
# It comes back on the address and object store it had; KAFKA_PIDFILE, KAFKA_S3_PIDFILE, KAFKA_VENV
# and KAFKA_LOG as for start-kafka.sh.
set -euo pipefail
SCRIPTS="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=kafka-home.sh
. "$SCRIPTS/kafka-home.sh"
DOWN=${1:-0}
PIDFILE=${KAFKA_PIDFILE:-kafka-durable.pid}
S3_PIDFILE=${KAFKA_S3_PIDFILE:-kafka-s3.pid}
if ! [ -f "$S3_PIDFILE" ] || ! kill -0 "$(cat "$S3_PIDFILE")" 2>/dev/null; then
  echo "error: no object store running ($S3_PIDFILE): start the broker with scripts/start-kafka.sh --durable" >&2
  exit 1
fi
if [ -f "$PIDFILE" ]; then
  PID=$(cat "$PIDFILE")
  if kill -0 "$PID" 2>/dev/null; then
    # start it again where it was: its listener and object store, whatever the environment says
    LISTENER=$(tr '\0' '\n' <"/proc/$PID/cmdline" | sed -n '/^--listener-url$/{n;p;q}')
    ENDPOINT=$(tr '\0' '\n' <"/proc/$PID/environ" | sed -n 's/^AWS_ENDPOINT=//p')
    if [[ "$LISTENER" =~ ^tcp://(.+):([0-9]+)$ ]]; then
      export KAFKA_HOST=${BASH_REMATCH[1]} KAFKA_PORT=${BASH_REMATCH[2]}
    fi
    if [[ "$ENDPOINT" =~ :([0-9]+)$ ]]; then
      export KAFKA_S3_PORT=${BASH_REMATCH[1]}
    fi
    kill -9 "$PID"
    for _ in $(seq 1 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
    echo "broker $PID killed"
  fi
  rm -f "$PIDFILE"
fi
sleep "$DOWN"
exec "$SCRIPTS/start-kafka.sh" --durable
