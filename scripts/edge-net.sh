#!/usr/bin/env bash
# A real network for the edge devices (issue 34): N device network namespaces, each linked to a
# cloud-side namespace by a veth pair shaped by `tc tbf` (bandwidth), with the project's own
# TCP relay (saams-netem-proxy) for delay, jitter and loss, since this kernel has no netem.
#
#   scripts/edge-net.sh up N [--rate 1mbit] [--delay 50ms] [--jitter 5ms] [--loss 0.01] [--broker 127.0.0.1:9092]
#   scripts/edge-net.sh status [N]          # namespaces, qdiscs, link byte counters
#   scripts/edge-net.sh bytes I             # device I's link counters: `tx_bytes=… rx_bytes=…`
#   scripts/edge-net.sh exec I CMD...       # run CMD on device I (inside saams-dev<I>)
#   scripts/edge-net.sh down [N]            # stop the relays this script started, delete the namespaces
#
# Layout (every address lives in a namespace this script makes; needs root):
#   saams-dev<I>: lo, and sd<I> 10.77.<I>.2/30; a relay listens on 127.0.0.1:<broker port> and
#                 forwards to 10.77.<I>.1 with the delay, jitter and loss. Kafka clients on the
#                 device use --brokers 127.0.0.1:<broker port>, and the broker's advertised
#                 address 127.0.0.1:<port> leads to the same relay.
#   saams-cloud:  sc<I> 10.77.<I>.1/30 for every device; one relay (started in the host's
#                 namespace, listening inside saams-cloud) forwards to the broker on the host's
#                 loopback, with no delay.
#   Both ends of every veth get `tbf rate <rate>`: each direction is shaped.
# The byte counters of sd<I> (/sys/class/net/sd<I>/statistics) are what crossed device I's link.
set -euo pipefail
cd "$(dirname "$0")/.."
STATE=/run/saams-edge-net
PROXY=${SAAMS_NETEM_PROXY:-target/release/saams-netem-proxy}

die() { echo "edge-net.sh: $*" >&2; exit 1; }
dev_ns() { echo "saams-dev$1"; }

stop_pidfile() {
    local f=$1 pid
    [[ -f $f ]] || return 0
    pid=$(cat "$f")
    # Only a relay this script started: the pid must still run saams-netem-proxy.
    if [[ -n $pid ]] && grep -q saams-netem-proxy "/proc/$pid/cmdline" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
}

down() {
    if [[ -d $STATE ]]; then
        for f in "$STATE"/*.pid; do [[ -e $f ]] && stop_pidfile "$f"; done
    fi
    for ns in $(ip netns list | awk '{print $1}' | grep -E '^saams-(dev[0-9]+|cloud)$' || true); do
        ip netns del "$ns" 2>/dev/null || true
    done
    rm -rf "$STATE"
}

up() {
    local n=$1; shift
    [[ $n =~ ^[0-9]+$ && $n -ge 1 && $n -le 50 ]] || die "up N: N devices, 1..50 (got $n)"
    local rate=1mbit delay=50ms jitter=0ms loss=0 broker=127.0.0.1:9092
    while [[ $# -gt 0 ]]; do
        case $1 in
            --rate) rate=$2; shift 2 ;;
            --delay) delay=$2; shift 2 ;;
            --jitter) jitter=$2; shift 2 ;;
            --loss) loss=$2; shift 2 ;;
            --broker) broker=$2; shift 2 ;;
            *) die "unknown flag $1" ;;
        esac
    done
    [[ $EUID -eq 0 ]] || die "needs root (network namespaces)"
    [[ -x $PROXY ]] || die "$PROXY missing: cargo build --release -p saams-tools --bin saams-netem-proxy"
    local port=${broker##*:}
    ip netns list | grep -qE '^saams-(dev[0-9]+|cloud)' && die "already up (scripts/edge-net.sh down first)"
    trap 'echo "edge-net.sh: setup failed, tearing down" >&2; down' ERR
    mkdir -p "$STATE"
    echo "devices=$n rate=$rate delay=$delay jitter=$jitter loss=$loss broker=$broker" >"$STATE/config"
    ip netns add saams-cloud
    ip -n saams-cloud link set lo up
    # tbf: burst of ~10 ms at the rate (at least 2 KiB), queue of 400 ms.
    for i in $(seq 1 "$n"); do
        local ns; ns=$(dev_ns "$i")
        ip netns add "$ns"
        ip -n "$ns" link set lo up
        ip link add "sd$i" netns "$ns" type veth peer name "sc$i" netns saams-cloud
        ip -n "$ns" addr add "10.77.$i.2/30" dev "sd$i"
        ip -n saams-cloud addr add "10.77.$i.1/30" dev "sc$i"
        ip -n "$ns" link set "sd$i" up
        ip -n saams-cloud link set "sc$i" up
        ip netns exec "$ns" tc qdisc add dev "sd$i" root tbf rate "$rate" burst 16kbit latency 400ms
        ip netns exec saams-cloud tc qdisc add dev "sc$i" root tbf rate "$rate" burst 16kbit latency 400ms
    done
    "$PROXY" --listen-netns saams-cloud --listen "0.0.0.0:$port" --to "$broker" \
        --stats "$STATE/cloud.stats" 2>>"$STATE/cloud.log" &
    echo $! >"$STATE/cloud.pid"
    for i in $(seq 1 "$n"); do
        ip netns exec "$(dev_ns "$i")" "$PROXY" --listen "127.0.0.1:$port" --to "10.77.$i.1:$port" \
            --delay "$delay" --jitter "$jitter" --loss "$loss" --seed "$i" \
            --stats "$STATE/dev$i.stats" 2>>"$STATE/dev$i.log" &
        echo $! >"$STATE/dev$i.pid"
    done
    sleep 0.3
    for f in "$STATE"/*.pid; do
        kill -0 "$(cat "$f")" 2>/dev/null || { cat "$STATE"/*.log >&2; false; }
    done
    trap - ERR
    echo "edge-net.sh: up: $n devices ($(cat "$STATE/config")); devices use --brokers 127.0.0.1:$port"
}

bytes() {
    local i=$1 ns; ns=$(dev_ns "$i")
    ip netns exec "$ns" sh -c "echo tx_bytes=\$(cat /sys/class/net/sd$i/statistics/tx_bytes) rx_bytes=\$(cat /sys/class/net/sd$i/statistics/rx_bytes)"
}

status() {
    [[ -f $STATE/config ]] || { echo "edge-net.sh: down"; return 0; }
    echo "edge-net.sh: up ($(cat "$STATE/config"))"
    local n; n=$(sed -n 's/^devices=\([0-9]*\).*/\1/p' "$STATE/config")
    for i in $(seq 1 "${1:-$n}"); do
        echo "dev$i: $(bytes "$i") qdisc: $(ip netns exec "$(dev_ns "$i")" tc qdisc show dev "sd$i" | head -1)"
    done
}

case ${1:-} in
    up) shift; [[ $# -ge 1 ]] || die "up N"; up "$@" ;;
    down) down; echo "edge-net.sh: down" ;;
    status) shift; status "$@" ;;
    bytes) [[ $# -eq 2 ]] || die "bytes I"; bytes "$2" ;;
    exec) [[ $# -ge 3 ]] || die "exec I CMD..."; i=$2; shift 2; exec ip netns exec "$(dev_ns "$i")" "$@" ;;
    *) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
