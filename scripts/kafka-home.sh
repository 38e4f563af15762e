# Sourced by start-kafka.sh, stop-kafka.sh and restart-kafka.sh: change to the directory that
# keeps the test brokers' PID files, logs and venv. The brokers are the machine's, not one
# checkout's: a linked worktree (`git worktree add`) uses the main checkout's, so its tests
# (jobs/tests/kafka_restart.rs) find and restart the broker the main checkout started. Elsewhere
# (the main checkout, a copy without git) it is the checkout itself. KAFKA_HOME overrides it.
kafka_home() {
  local here common
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  if [ -n "${KAFKA_HOME:-}" ]; then
    cd "$KAFKA_HOME"
    return
  fi
  common=$(git -C "$here" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
  if [ "${common##*/}" = .git ] && [ -d "${common%/.git}" ]; then
    cd "${common%/.git}"
  else
    cd "$here"
  fi
}
kafka_home
