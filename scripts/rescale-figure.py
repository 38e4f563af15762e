#!/usr/bin/env python3
"""Move time and bytes moved by an in-job rescale, against the state's size.

For each stream count N (default 100 and 500): the paper's per-stream workload (Count-Min,
HyperLogLog, DFT and a continuous query each) over the generator's first N streams, a job of
`-w 4` started on one active worker (`--active-workers 1`) at `--rate`, then `POST /rescale`
to 4 workers and back to 1. Per rescale it prints a TSV row: the state's size then (the sum of
the live synopses' `bytes` in `GET /synopses`), the bytes the owners sent
(`saams_rescale_bytes_moved_total`), the time to the acknowledgement (the fence agreed, the map
applied) and the time until `GET /status` says the move is over (`rescaling: false`: the job's
frontier is in the last batch's window, every moved state installed). Each stream count runs
once per `--batches` value: the job's `--rescale-batch` (0: every bin at the fence; B: the bins
holding groups B a window).

    python3 scripts/rescale-figure.py [--streams 100,500] [--batches 0,8] [--rate 40000] [--bin target/release]
"""

import argparse
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

WORKLOAD = [
    (1, '["CountMin","price","NotQueryable",0.002,0.99,12345]'),
    (2, '["HyperLogLog","price","NotQueryable",0.02]'),
    (4, '["DFT","price","NotQueryable",1,500,2000,8]'),
    (1, '[3.2478,"price","Queryable","Continues"]'),
    (2, '["distinct","price","Queryable","Continues"]'),
    (4, '["coefficients","price","Queryable","Continues"]'),
]


def streams_of(binary_dir, n):
    """The generator's first n (dataset, stream) pairs, as `replay` writes them."""
    out = subprocess.run(
        [f"{binary_dir}/replay", "--generate", f"stocks:{n}:1", "-o", "-"],
        check=True, capture_output=True, text=True,
    ).stdout
    seen = []
    for line in out.splitlines():
        t = json.loads(line)
        pair = (t["dataSetKey"], t["streamID"])
        if pair not in seen:
            seen.append(pair)
    return seen[:n]


def requests_for(pairs):
    lines, rid = [], 1
    for ds, stream in pairs:
        for syn, param in WORKLOAD:
            lines.append(f'{{"dataSetKey":"{ds}","noOfP":1,"param":{param},"requestID":{rid},'
                         f'"streamID":"{stream}","synopsisID":{syn}}}')
            rid += 1
    return "\n".join(lines) + "\n"


def get(addr, path):
    with urllib.request.urlopen(f"http://{addr}{path}", timeout=30) as r:
        return r.read().decode()


def post(addr, path, body):
    req = urllib.request.Request(f"http://{addr}{path}", data=body.encode(), method="POST")
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read().decode())


def metric(addr, name):
    m = re.search(rf"^{name} (\d+)", get(addr, "/metrics"), re.M)
    return int(m.group(1)) if m else 0


def rescale(addr, n):
    """(ms to the acknowledgement, ms until the move is over, bytes moved, bins moved)."""
    before = metric(addr, "saams_rescale_bytes_moved_total")
    t0 = time.monotonic()
    ack = post(addr, "/rescale", json.dumps({"activeWorkers": n}))
    t1 = time.monotonic()
    while json.loads(get(addr, "/status"))["rescaling"]:
        time.sleep(0.002)
    t2 = time.monotonic()
    moved = metric(addr, "saams_rescale_bytes_moved_total") - before
    return (t1 - t0) * 1000, (t2 - t0) * 1000, moved, ack["moves"]


def run(binary_dir, n, rate, batch):
    pairs = streams_of(binary_dir, n)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(requests_for(pairs))
        requests = f.name
    job = subprocess.Popen(
        [f"{binary_dir}/saams", "-w", "4", "--active-workers", "1", "--http", "127.0.0.1:0", "--progress", "0",
         "--requests", requests, "--generate", f"stocks:{n}", "--rate", str(rate), "--window", "1s",
         "--out", "/dev/null", "--rescale-batch", str(batch)],
        stderr=subprocess.PIPE, text=True,
    )
    addr = None
    for line in job.stderr:
        m = re.search(r"http on http://(\S+)", line)
        if m:
            addr = m.group(1)
            break
    threading.Thread(target=lambda: [None for _ in job.stderr], daemon=True).start()
    rows = []
    try:
        time.sleep(4)
        for to in (4, 1):
            state = sum(row.get("bytes", 0) for row in json.loads(get(addr, "/synopses")))
            ack_ms, moved_ms, moved, bins = rescale(addr, to)
            rows.append((n, len(pairs) * 3, state, f"{1 if to == 4 else 4}->{to}", batch, bins, moved, ack_ms, moved_ms))
            time.sleep(2)
    finally:
        job.terminate()
        job.wait()
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--streams", default="100,500")
    p.add_argument("--batches", default="0,8")
    p.add_argument("--rate", type=int, default=40000)
    p.add_argument("--bin", default="target/release")
    a = p.parse_args()
    print("streams\tsynopses\tstate_bytes\trescale\tbins_per_fence\tbins_moved\tbytes_moved\tack_ms\tmoved_ms")
    for n, batch in ((int(s), int(b)) for s in a.streams.split(",") for b in a.batches.split(",")):
        for row in run(a.bin, n, a.rate, batch):
            print("\t".join(f"{v:.1f}" if isinstance(v, float) else str(v) for v in row))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
