#!/usr/bin/env bash
# Monitoring sites on devices against forwarding the items: the four equity_usa tick files of the
# shared stocks, one saams-edge device per file running one site of a dataset-wide monitor of
# k = 4 sites (W = 1h, φ = 0.1, prices in cents; ε from EPS, default "0.1 0.01"), shipping its
# sites' messages to a saams job that runs the coordinator. Prints one TSV row per ε: the items the
# sites took, the messages, words and payload bytes they sent, the shipped group bytes against the
# bytes the same items take as raw values (forwarding), the words the cloud's last answer counts
# (`sent`, which must equal the devices' sum), and the ratios.
# Usage: SAAMS_KAFKA_BROKERS=host:port scripts/edge-monitor-figure.sh   (from the repository root,
# after cargo build --release -p saams-jobs)
set -euo pipefail
cd "$(dirname "$0")/.."
brokers=${SAAMS_KAFKA_BROKERS:?set SAAMS_KAFKA_BROKERS to a Kafka broker}
data=${SAAMS_DATASETS:-../shared/datasets}/stocks/tick
files=("$data"/equity_usa_*_tick_trade.csv)
[ "${#files[@]}" -eq 4 ] || { echo "expected the four equity_usa tick files in $data" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sum() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" "$tmp"/dev*.err | paste -sd+ | bc; }
printf "epsilon\tk\titems\tmessages\twords\tpayload_bytes\tshipped_bytes\traw_bytes\tcloud_sent_words\twords_over_items\tshipped_over_raw\n"
for eps in ${EPS:-0.1 0.01}; do
  topic="edge-monitor-figure-$$-$(date +%s%N)"
  printf '%s\n' \
    "{\"streamID\":\"\",\"synopsisID\":14,\"dataSetKey\":\"equity_usa\",\"param\":[\"SlidingWindowMonitor\",\"price\",\"NotQueryable\",\"1h\",$eps,0.1,4,100]}" \
    '{"streamID":"","synopsisID":14,"dataSetKey":"equity_usa","param":["count","price","Queryable","Continuous"],"requestID":1}' \
    >"$tmp/requests.json"
  rm -f "$tmp"/dev*.err
  for i in 0 1 2 3; do
    target/release/saams-edge --device "dev$i" --brokers "$brokers" --partials-topic "$topic" \
      --requests "$tmp/requests.json" --window 1m --partition "$i" --format stock-csv \
      --data "${files[$i]}" --monitor-site "$i" 2>"$tmp/dev$i.err"
  done
  target/release/saams --requests "$tmp/requests.json" --window 1m -w 2 --progress 0 \
    --brokers "$brokers" --partials-topic "$topic" --from earliest --partitions 4 \
    --exit-when-idle 3s --device-timeout 2s >"$tmp/answers.json"
  cloud=$(grep -o '"words":[0-9]*' "$tmp/answers.json" | cut -d: -f2 | sort -n | tail -1)
  items=$(sum monitor_items) words=$(sum monitor_words) shipped=$(sum monitor_shipped_bytes) raw=$(sum monitor_raw_bytes)
  printf "%s\t4\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.3f\t%.3f\n" "$eps" "$items" "$(sum monitor_messages)" "$words" \
    "$(sum monitor_bytes)" "$shipped" "$raw" "$cloud" "$(echo "$words / $items" | bc -l)" "$(echo "$shipped / $raw" | bc -l)"
done
