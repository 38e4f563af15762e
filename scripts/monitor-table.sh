#!/usr/bin/env bash
# Runs monitor-sim over the grid k ∈ {4, 16} × ε ∈ {0.1, 0.01} × τ ∈ {0, W/2} on the shared
# stock (W = 1h) and AIS (W = 10m) data (φ = 0.1), three ways per setting: the seed's protocol
# alone (fallback off), the seed's protocol with the forwarding fallback, and forward/backward
# with the fallback. Writes one TSV row per run — words per window against forwarding every item
# (naive) and against the bound's expression (constant 1, saams_monitoring::sim::bound_per_window),
# the share of items that went through the protocol, switches, peak site memory and the most
# forwarded items the root held — to docs/monitor/monitor.tsv, and draws docs/monitor/monitor.png.
# Usage: scripts/monitor-table.sh [extra monitor-sim args]   (run from the repository root)
# DATASETS, SITES and RUNS narrow the grid (e.g. DATASETS=ais RUNS="seed on") and TSV names another
# output file, so parts of the grid can run side by side; the PNG is drawn from the full grid only.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p saams-tools --bin monitor-sim --bin monitor-plot
bin=target/release/monitor-sim
data=${SAAMS_DATASETS:-../shared/datasets}
out=docs/monitor
mkdir -p "$out"
tsv=${TSV:-$out/monitor.tsv}
IFS=';' read -r -a runs <<<"${RUNS:-seed off;seed on;forward-backward on}"
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }
printf "data\twindow\tk\tepsilon\ttau\tprotocol\tfallback\tviolations\twords_per_window\tnaive_per_window\tbound_per_window\twords_over_naive\twords_over_bound\tprotocol_share\tswitches\tmax_site_memory_words\tmax_root_exact_items\n" >"$tsv"
for d in ${DATASETS:-stocks ais}; do
  # AIS: nearly all rows fall in the day's first hour, so a shorter window.
  if [ "$d" = stocks ]; then w=1h; else w=10m; fi
  for k in ${SITES:-4 16}; do
    for eps in 0.1 0.01; do
      for tau in 0 0.5W; do
        for run in "${runs[@]}"; do
          set -- $run
          r=$($bin --data "$data/$d" --window "$w" --sites "$k" --epsilon "$eps" --phi 0.1 --tardiness "$tau" \
            --protocol "$1" --fallback "$2" | grep -E "^monitor (per_window|summary|memory|fallback)")
          pw=$(echo "$r" | grep "^monitor per_window"); fb=$(echo "$r" | grep "^monitor fallback")
          words=$(echo "$pw" | field words); naive=$(echo "$pw" | field naive); bound=$(echo "$pw" | field bound)
          printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.3f\t%.4f\t%s\t%s\t%s\t%s\n" \
            "$d" "$w" "$k" "$eps" "$tau" "$1" "$2" "$(echo "$r" | grep summary | field violations)" \
            "$words" "$naive" "$bound" "$(echo "$words / $naive" | bc -l)" "$(echo "$words / $bound" | bc -l)" \
            "$(echo "$fb" | field protocol_share)" \
            "$(( $(echo "$fb" | field to_protocol) + $(echo "$fb" | field to_forwarding) ))" \
            "$(echo "$r" | grep "^monitor memory" | field max_site_words)" "$(echo "$fb" | field max_root_exact_items)" \
            | tee -a "$tsv"
        done
      done
    done
  done
done
if [ -z "${DATASETS:-}${SITES:-}${RUNS:-}" ]; then
  target/release/monitor-plot --tsv "$tsv" --out "$out/monitor.png"
fi
