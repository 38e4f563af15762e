#!/usr/bin/env python3
"""The in-job rescale's targets: throughput around the rescale and each window's answer delay.

The paper workload (`datasets/requests/paper-workload.json`: 100 streams, 300 synopses) over
`--generate stocks:100`, a job of `-w 4` started on one active worker, `POST /rescale` to 4 at
`--at` seconds; three ways in one run: no rescale, every bin at one fence (`--rescale-batch 0`)
and a few bins a window (`--rescale-batch B`). Two passes each:

- at full rate (the generator as fast as it goes): tuples/s over the 10 s around the rescale
  (`saams_tuples_in_total`, sampled every 100 ms) against the steady rate before it;
- at `--rate` (the input paced by the wall clock, so a window's answers are due at the same
  time in every run): per window, when its last answer line came out, against the run without
  rescale (aligned on the windows before the rescale); the largest delay after it, and how
  many windows are later than 200 ms.

`--streams N` other than 100 runs the same per-stream workload over the generator's first N
streams instead (the requests `scripts/rescale-figure.py` writes). Prints one TSV row per way, and the machine's load average (the machine is shared: only the
ratios of one run mean anything).

    python3 scripts/rescale-targets.py [--streams 100] [--batch 8] [--rate 20000] [--at 6] [--bin target/release]
"""

import argparse
import importlib.util
import json
import os
import re
import subprocess
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def get(addr, path):
    with urllib.request.urlopen(f"http://{addr}{path}", timeout=30) as r:
        return r.read().decode()


def post(addr, path, body):
    req = urllib.request.Request(f"http://{addr}{path}", data=body.encode(), method="POST")
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read().decode())


def tuples_in(addr):
    text = get(addr, "/metrics")
    return sum(int(float(v)) for v in re.findall(r"^saams_tuples_in_total\{[^}]*\} (\S+)", text, re.M))


def workload(binary_dir, streams):
    """The request file: the paper workload for 100 streams, else rescale-figure.py's."""
    if streams == 100:
        return f"{ROOT}/datasets/requests/paper-workload.json"
    spec = importlib.util.spec_from_file_location("figure", f"{ROOT}/scripts/rescale-figure.py")
    figure = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(figure)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(figure.requests_for(figure.streams_of(binary_dir, streams)))
        return f.name


def job(binary_dir, batch, rate, at, length, requests, streams):
    """One job: (samples [(t, tuples)], window end → last answer time, rescale time or None)."""
    args = [f"{binary_dir}/saams", "-w", "4", "--active-workers", "1", "--http", "127.0.0.1:0",
            "--progress", "0", "--requests", requests,
            "--generate", f"stocks:{streams}", "--window", "1s", "--out", "-"]
    if batch is not None:
        args += ["--rescale-batch", str(batch)]
    if rate:
        args += ["--rate", str(rate)]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    answered = {}

    def read_answers():
        for line in p.stdout:
            m = re.search(r'"end":"([^"]+)"', line)
            if m:
                answered[m.group(1)] = time.monotonic() - t0

    threading.Thread(target=read_answers, daemon=True).start()
    addr = None
    for line in p.stderr:
        m = re.search(r"http on http://(\S+)", line)
        if m:
            addr = m.group(1)
            break
    threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
    samples, rescaled = [], None
    try:
        while time.monotonic() - t0 < length:
            now = time.monotonic() - t0
            if batch is not None and rescaled is None and now >= at:
                post(addr, "/rescale", json.dumps({"activeWorkers": 4}))
                rescaled = now
            samples.append((now, tuples_in(addr)))
            time.sleep(0.1)
    finally:
        p.terminate()
        p.wait()
    return samples, dict(answered), rescaled


def rate_between(samples, a, b):
    inside = [s for s in samples if a <= s[0] <= b]
    if len(inside) < 2:
        return 0.0
    return (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])


def delays(reference, run, rescaled):
    """Per window answered in both: its delay against the reference, aligned on the windows
    answered before the rescale (the runs start at different moments)."""
    both = sorted(set(reference) & set(run))
    before = [run[w] - reference[w] for w in both if run[w] < rescaled - 0.5]
    offset = sorted(before)[len(before) // 2] if before else 0.0
    return [(w, run[w] - reference[w] - offset) for w in both if run[w] >= rescaled]


def main():
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("--batch", type=int, default=8, help="bins per fence of the batched way")
    a.add_argument("--rate", type=int, default=20000, help="tuples/s of the paced pass")
    a.add_argument("--at", type=float, default=6.0, help="seconds after the start of the rescale")
    a.add_argument("--streams", type=int, default=100)
    a.add_argument("--bin", default="target/release")
    o = a.parse_args()
    length = o.at + 8
    ways = [("no rescale", None), ("one fence", 0), (f"{o.batch} bins a window", o.batch)]
    requests = workload(o.bin, o.streams)
    full = {name: job(o.bin, batch, None, o.at, length, requests, o.streams) for name, batch in ways}
    paced = {name: job(o.bin, batch, o.rate, o.at, length, requests, o.streams) for name, batch in ways}
    print(f"# {o.streams} streams; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("way\tsteady_tuples_s\taround_tuples_s\tratio\twindows_compared\tmax_delay_ms\twindows_over_200ms")
    reference = paced["no rescale"][1]
    for name, _ in ways:
        samples, _, rescaled = full[name]
        at = rescaled if rescaled is not None else o.at
        steady = rate_between(samples, 1.0, at)
        around = rate_between(samples, at - 5.0, at + 5.0)
        _, answered, paced_at = paced[name]
        late = delays(reference, answered, paced_at if paced_at is not None else o.at)
        worst = max((d for _, d in late), default=0.0) * 1000
        over = sum(1 for _, d in late if d > 0.2)
        print(f"{name}\t{steady:.0f}\t{around:.0f}\t{around / steady if steady else 0:.2f}\t{len(late)}\t{worst:.0f}\t{over}")


if __name__ == "__main__":
    main()
