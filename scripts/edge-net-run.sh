#!/usr/bin/env bash
# Figure 11 over a real network: D `saams-edge` devices, each in its own network namespace behind
# a shaped link (scripts/edge-net.sh), ship their windows to the broker; `saams --partials-topic`
# merges them. Checks that the answers equal one job over the same tuples read raw, and reports
# per device the bytes the application shipped, the bytes its link carried (the veth counters),
# and the time per shipment over the link against the same devices over plain loopback.
#
#   scripts/edge-net-run.sh [--devices 3] [--rate 1mbit] [--delay 50ms] [--jitter 5ms] [--loss 0]
#                           [--streams 6] [--tuples 3000] [--window 600s] [--broker 127.0.0.1:9092]
#                           [--resident]
#
# --resident: the devices keep their streams' groups resident (`saams-edge --resident`) and ship
# per window and group the query view, the raw values or the whole state as their byte budget
# chooses; the last columns count each form (they are 0 without it, whole states aside).
#
# Needs root and a Kafka-protocol broker. Prints one TSV row per device to stdout, then `answers
# equal the raw run` (or fails). Tears the namespaces down at the end, also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
devices=3 rate=1mbit delay=50ms jitter=5ms loss=0 streams=6 tuples=3000 window=600s resident=()
broker=${SAAMS_KAFKA_BROKERS:-127.0.0.1:9092}
while [[ $# -gt 0 ]]; do
    case $1 in
        --devices) devices=$2; shift 2 ;;
        --rate) rate=$2; shift 2 ;;
        --delay) delay=$2; shift 2 ;;
        --jitter) jitter=$2; shift 2 ;;
        --loss) loss=$2; shift 2 ;;
        --streams) streams=$2; shift 2 ;;
        --tuples) tuples=$2; shift 2 ;;
        --window) window=$2; shift 2 ;;
        --broker) broker=$2; shift 2 ;;
        --resident) resident=(--resident); shift ;;
        *) echo "edge-net-run.sh: unknown flag $1" >&2; exit 2 ;;
    esac
done
[[ $devices -ge 1 && $devices -le $streams ]] || { echo "edge-net-run.sh: 1 <= devices <= streams" >&2; exit 2; }
bin=target/release
for b in saams saams-edge replay saams-netem-proxy; do
    [[ -x $bin/$b ]] || { echo "edge-net-run.sh: $bin/$b missing (cargo build --release -p saams-jobs -p saams-tools)" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'scripts/edge-net.sh down >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
requests=$work/requests.json
# The paper workload's exact-merge part (CountMin + HyperLogLog + a distinct count) per stream.
"$bin/replay" --generate "stocks:$streams:$tuples" --progress none -o "$work/all.json"
python3 - "$work" "$devices" <<'EOF'
import json, sys
work, devices = sys.argv[1], int(sys.argv[2])
streams = []
lines = open(f"{work}/all.json").read().splitlines()
for l in lines:
    t = json.loads(l)
    if (t["dataSetKey"], t["streamID"]) not in streams:
        streams.append((t["dataSetKey"], t["streamID"]))
out = [open(f"{work}/dev{i + 1}.json", "w") for i in range(devices)]
for l in lines:
    t = json.loads(l)
    out[streams.index((t["dataSetKey"], t["streamID"])) % devices].write(l + "\n")
rid = 1
with open(f"{work}/requests.json", "w") as f:
    for ds, s in streams:
        for syn, p in [(1, ["CountMin", "price", "NotQueryable", 0.002, 0.99, 12345]),
                       (2, ["HyperLogLog", "price", "NotQueryable", 0.02]),
                       (2, ["distinct", "price", "Queryable", "Continues"])]:
            f.write(json.dumps({"dataSetKey": ds, "noOfP": 1, "param": p, "requestID": rid,
                                "streamID": s, "synopsisID": syn}) + "\n")
            rid += 1
EOF
"$bin/saams" --requests "$requests" --window "$window" -w 1 --progress 0 --data "$work/all.json" | sort >"$work/raw.txt"

# Run the devices (in parallel) to `topic`; $1 = netns or loopback.
run_devices() {
    local how=$1 topic=$2
    for i in $(seq 1 "$devices"); do
        local cmd=("$bin/saams-edge" --device "dev$i" --brokers "$broker" --partials-topic "$topic"
            --requests "$requests" --window "$window" --partition $((i - 1)) --partitions "$devices"
            --data "$work/dev$i.json" "${resident[@]}")
        if [[ $how == netns ]]; then
            scripts/edge-net.sh bytes "$i" >"$work/$how-$i.before"
            (start=$(date +%s.%N); scripts/edge-net.sh exec "$i" "${cmd[@]}" 2>"$work/$how-$i.err"
             echo "seconds=$(echo "$(date +%s.%N) - $start" | bc)" >"$work/$how-$i.time") &
        else
            (start=$(date +%s.%N); "${cmd[@]}" 2>"$work/$how-$i.err"
             echo "seconds=$(echo "$(date +%s.%N) - $start" | bc)" >"$work/$how-$i.time") &
        fi
    done
    wait
}
# The cloud job's sorted answers, each without the devices it names (the raw run names none).
cloud() {
    "$bin/saams" --requests "$requests" --window "$window" -w 2 --progress 0 --brokers "$broker" \
        --partials-topic "$1" --from earliest --exit-when-idle 3s --device-timeout 2s \
        --partitions "$devices" 2>"$work/cloud-$1.err" | sed 's/,"devices":\[[^]]*\]}$/}/' | sort
}
field() { sed -n "s/.*\b$2=\([0-9.]*\).*/\1/p" "$1" | head -1; }

stamp=$(date +%s)-$$
run_devices loopback "edgenet-lo-$stamp"
scripts/edge-net.sh up "$devices" --rate "$rate" --delay "$delay" --jitter "$jitter" --loss "$loss" --broker "$broker" >&2
run_devices netns "edgenet-ns-$stamp"
for i in $(seq 1 "$devices"); do scripts/edge-net.sh bytes "$i" >"$work/netns-$i.after"; done
cloud "edgenet-ns-$stamp" >"$work/fed.txt"

printf 'device\tlink\twindows\tshipped_bytes\traw_bytes\tlink_tx_bytes\tlink_rx_bytes\tseconds_link\tseconds_loopback\tms_per_shipment_link\tms_per_shipment_loopback\tview_groups\tresident_raw_groups\twhole_groups\n'
for i in $(seq 1 "$devices"); do
    e=$work/netns-$i.err
    windows=$(field "$e" windows)
    tx=$(( $(field "$work/netns-$i.after" tx_bytes) - $(field "$work/netns-$i.before" tx_bytes) ))
    rx=$(( $(field "$work/netns-$i.after" rx_bytes) - $(field "$work/netns-$i.before" rx_bytes) ))
    sl=$(field "$work/netns-$i.time" seconds) sb=$(field "$work/loopback-$i.time" seconds)
    # Shipments: the windows plus hello and goodbye, each waited for (acks=all).
    ships=$((windows + 2))
    printf 'dev%s\t%s/%s/%s/%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%.2f\t%.0f\t%.0f\t%s\t%s\t%s\n' "$i" "$rate" "$delay" "$jitter" "$loss" \
        "$windows" "$(field "$e" shipped_bytes)" "$(field "$e" raw_bytes)" "$tx" "$rx" "$sl" "$sb" \
        "$(echo "$sl * 1000 / $ships" | bc -l)" "$(echo "$sb * 1000 / $ships" | bc -l)" \
        "$(field "$e" view_groups)" "$(field "$e" resident_raw_groups)" "$(field "$e" whole_groups)"
done
if cmp -s "$work/raw.txt" "$work/fed.txt" && [[ -s $work/raw.txt ]]; then
    echo "edge-net-run.sh: answers equal the raw run ($(wc -l <"$work/raw.txt") lines, $devices devices over $rate/$delay links)"
else
    echo "edge-net-run.sh: answers DIFFER from the raw run" >&2
    diff "$work/raw.txt" "$work/fed.txt" | head -20 >&2
    cat "$work"/cloud-*.err >&2
    exit 1
fi
