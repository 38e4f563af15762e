#!/usr/bin/env bash
# Runs monitor-sim over the grid k ∈ {4, 16, 64} × ε ∈ {0.1, 0.01} × τ ∈ {0, W/2} on the shared
# stock (W = 1h) and AIS (W = 10m) data, for both protocols, and prints one markdown table of words per
# window: total and per query (count / items / frequent / quantiles) for each protocol, the
# bound's value (constant 1, see saams_monitoring::sim::bound_per_window), naive and periodic,
# and the peak site memory in words for each protocol (counting part + quantile part) against the
# peak window (all sites) and the peak site window.
# Usage: scripts/monitor-table.sh [extra monitor-sim args]   (run from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p saams-tools --bin monitor-sim
bin=target/release/monitor-sim
data=../shared/datasets
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }
echo "| data (W) | k | ε | τ | viol seed/fb | seed words/W (count, items, FI, quant) | fb words/W (count, items, FI) | bound/W | naive/W | periodic/W | seed/bound | fb/bound | seed/naive | (k/ε)log(N/k) | FI seed/that | FI fb/that | FI fb/seed | mem/site seed (count+quant) | mem/site fb (count+quant) | window (site) |"
echo "|---|---:|---:|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|"
for d in stocks ais; do
  # AIS: nearly all rows fall in the day's first hour, so a shorter window.
  if [ "$d" = stocks ]; then w=1h; else w=10m; fi
  for k in 4 16 64; do
    for eps in 0.1 0.01; do
      for tau in 0 0.5W; do
        s=$($bin --data "$data/$d" --window "$w" --sites "$k" --epsilon "$eps" --tardiness "$tau" --protocol seed "$@" | grep -E "^monitor (per_window|summary|memory)")
        f=$($bin --data "$data/$d" --window "$w" --sites "$k" --epsilon "$eps" --tardiness "$tau" --protocol forward-backward "$@" | grep -E "^monitor (per_window|summary|memory)")
        sm=$(echo "$s" | grep "^monitor memory"); fm=$(echo "$f" | grep "^monitor memory")
        sp=$(echo "$s" | grep "^monitor per_window"); fp=$(echo "$f" | grep "^monitor per_window")
        sv=$(echo "$s" | grep summary | field violations); fv=$(echo "$f" | grep summary | field violations)
        sw=$(echo "$sp" | field words); fw=$(echo "$fp" | field words)
        b=$(echo "$sp" | field bound); n=$(echo "$sp" | field naive); p=$(echo "$sp" | field periodic)
        sfi=$(echo "$sp" | field frequent); ffi=$(echo "$fp" | field frequent)
        bi=$(echo "$sp" | field bound_items)
        printf "| %s | %s | %s | %s | %s/%s | %s (%s, %s, %s, %s) | %s (%s, %s, %s) | %s | %s | %s | %.3f | %.3f | %.2f | %s | %.2f | %.2f | %.2f | %s (%s+%s) | %s (%s+%s) | %s (%s) |\n" \
          "$d ($w)" "$k" "$eps" "$tau" "$sv" "$fv" \
          "$sw" "$(echo "$sp" | field count)" "$(echo "$sp" | field items)" "$sfi" "$(echo "$sp" | field quantiles)" \
          "$fw" "$(echo "$fp" | field count)" "$(echo "$fp" | field items)" "$ffi" \
          "$b" "$n" "$p" \
          "$(echo "$sw / $b" | bc -l)" "$(echo "$fw / $b" | bc -l)" "$(echo "$sw / $n" | bc -l)" "$bi" "$(echo "$sfi / $bi" | bc -l)" "$(echo "$ffi / $bi" | bc -l)" "$(echo "$ffi / $sfi" | bc -l)" \
          "$(echo "$sm" | field max_site_words)" "$(echo "$sm" | field counting_words)" "$(echo "$sm" | field quantile_words)" \
          "$(echo "$fm" | field max_site_words)" "$(echo "$fm" | field counting_words)" "$(echo "$fm" | field quantile_words)" \
          "$(echo "$sm" | field max_window)" "$(echo "$sm" | field max_site_window)"
      done
    done
  done
done
