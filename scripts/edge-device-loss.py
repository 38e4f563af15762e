#!/usr/bin/env python3
"""How long a device that dies holds the other devices' windows (issue 34's target: no window of
the others delayed by more than `--device-timeout`), measured on a live job.

Two `saams-edge` devices read tuples stamped with the wall clock from their standard input (this
script writes them, paced), each ships its windows to its own partition of a partials topic, and
the cloud job (`saams --partials-topic`) merges them. Part way through, one device is killed with
SIGKILL (or, with `--leave`, its input is closed so that it says goodbye). Every answer line is
stamped when the job writes it; a window's delay is the time from its end (event time = wall
time here) to its first answer line. The report gives the delays of the windows before the loss,
of those that were open when it happened, and of the later ones, and which devices each answer
names.

    scripts/edge-device-loss.py --brokers 127.0.0.1:9092 --device-timeout 5s --window 2s

Needs the release binaries (`cargo build --release -p saams-jobs`) and a broker
(`scripts/start-kafka.sh`). Prints a TSV of windows and a summary; exits non-zero when a window
after the loss took longer than the window plus the device timeout plus `--slack`, or when an
answer names a device that had stopped shipping before the window.
"""

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REQUESTS = os.path.join(ROOT, "jobs/tests/edge_data/requests.json")
STREAMS = [
    [("EURTRY", "Forex", 3.2478), ("IBM", "Equity", 120.0), ("BTCUSD", "Crypto", 3500.0)],
    [("XAUUSD", "Forex", 1290.0), ("SPY", "Equity", 250.0), ("ETHUSD", "Crypto", 110.0)],
]


def seconds(text):
    """`5s`, `500ms`, `2m` as seconds."""
    for unit, scale in (("ms", 0.001), ("s", 1.0), ("m", 60.0)):
        if text.endswith(unit) and text[: -len(unit)].replace(".", "", 1).isdigit():
            return float(text[: -len(unit)]) * scale
    raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 500ms, 5s, 2m)")


def tuple_line(stream, dataset, price, now):
    at = datetime.fromtimestamp(now, tz=timezone.utc)
    stamp = at.strftime("%H:%M:%S.") + f"{at.microsecond // 1000:03d}"
    return json.dumps(
        {"streamID": stream, "objectID": None, "dataSetKey": dataset, "date": at.strftime("%m/%d/%Y"),
         "time": stamp, "price": round(price, 4), "volume": 1},
        separators=(",", ":"),
    )


def window_end_ms(answer):
    end = answer["window"]["end"]
    return int(datetime.strptime(end, "%Y-%m-%dT%H:%M:%S%z").timestamp() * 1000) if "." not in end else int(
        datetime.strptime(end, "%Y-%m-%dT%H:%M:%S.%f%z").timestamp() * 1000)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--brokers", default=os.environ.get("SAAMS_KAFKA_BROKERS", "127.0.0.1:9092"))
    p.add_argument("--window", default="2s", type=str)
    p.add_argument("--device-timeout", default="5s", type=str)
    p.add_argument("--rate", type=float, default=20.0, help="tuples a second per stream")
    p.add_argument("--lose-at", type=float, default=20.0, help="seconds after the start")
    p.add_argument("--duration", type=float, default=45.0, help="seconds the surviving device runs")
    p.add_argument("--leave", action="store_true", help="the lost device says goodbye instead of kill -9")
    p.add_argument("--follow", action="store_true",
                   help="the devices follow the job's control topic (`saams-edge --follow`) instead of reading its requests file")
    p.add_argument("--slack", type=float, default=2.0, help="seconds allowed beyond window + timeout")
    p.add_argument("--bin", default=os.path.join(ROOT, "target/release"))
    p.add_argument("--tsv", help="write the windows' table here too")
    a = p.parse_args()
    window, timeout = seconds(a.window), seconds(a.device_timeout)
    topic = f"devloss-{os.getpid()}-{int(time.time())}"
    edge = os.path.join(a.bin, "saams-edge")
    for binary in (edge, os.path.join(a.bin, "saams")):
        if not os.access(binary, os.X_OK):
            sys.exit(f"edge-device-loss: {binary} is missing: cargo build --release -p saams-jobs")

    devices = []
    for d in range(2):
        devices.append(subprocess.Popen(
            [edge, "--device", f"dev{d}", "--brokers", a.brokers, "--partials-topic", topic]
            + (["--follow"] if a.follow else ["--requests", REQUESTS])
            + ["--window", a.window, "--partition", str(d), "--partitions", "2", "--data", "-"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
    # The devices create the topic; the job starts once they ship (its device timeout covers a
    # device that starts later).
    cloud = subprocess.Popen(
        [os.path.join(a.bin, "saams"), "--brokers", a.brokers, "--partials-topic", topic, "--partitions", "2",
         "--requests", REQUESTS, "--window", a.window, "--device-timeout", a.device_timeout, "--idle-timeout",
         a.device_timeout, "--exit-when-idle", f"{max(10.0, 2 * timeout):.0f}s", "--progress", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    answers = []

    def read_answers():
        for line in cloud.stdout:
            if line.startswith("{"):
                answers.append((time.time(), json.loads(line)))

    reader = threading.Thread(target=read_answers, daemon=True)
    reader.start()
    rng = random.Random(7)
    prices = [[s[2] for s in streams] for streams in STREAMS]
    start = time.time()
    lost_at = None
    step = 1.0 / a.rate
    next_at = start
    while True:
        now = time.time()
        if now - start >= a.duration:
            break
        if lost_at is None and now - start >= a.lose_at:
            lost_at = now
            if a.leave:
                devices[0].stdin.close()
            else:
                devices[0].send_signal(signal.SIGKILL)
        for d, streams in enumerate(STREAMS):
            if d == 0 and lost_at is not None:
                continue
            lines = []
            for i, (stream, dataset, _) in enumerate(streams):
                prices[d][i] *= 1 + rng.gauss(0, 0.0005)
                lines.append(tuple_line(stream, dataset, prices[d][i], now))
            devices[d].stdin.write("\n".join(lines) + "\n")
            devices[d].stdin.flush()
        next_at += step
        time.sleep(max(0.0, next_at - time.time()))
    ended = time.time()
    devices[1].stdin.close()
    for d in devices:
        d.wait()
    cloud.wait()
    reader.join()
    errors = cloud.stderr.read() + "".join(d.stderr.read() for d in devices)

    windows = {}
    for at, answer in answers:
        end = window_end_ms(answer)
        first, names, count = windows.get(end, (at, set(), 0))
        names.update(answer.get("devices", []))
        windows[end] = (min(first, at), names, count + 1)
    rows, worst_after, worst_before, bad = [], 0.0, 0.0, []
    for end in sorted(windows):
        first, names, count = windows[end]
        delay = first - end / 1000
        if lost_at is None or end / 1000 <= lost_at:
            phase = "before"
            worst_before = max(worst_before, delay) if end / 1000 < lost_at - window else worst_before
        elif end / 1000 - window < lost_at:
            phase = "open at the loss"
        else:
            phase = "after"
        if end / 1000 > ended:
            phase = "after the end"
        if phase in ("open at the loss", "after"):
            worst_after = max(worst_after, delay)
            if delay > window + timeout + a.slack:
                bad.append(f"window ending {end} answered {delay:.2f} s after its end")
        if phase == "after" and "dev0" in names and end / 1000 - window > lost_at + 1:
            bad.append(f"window ending {end} names dev0, which stopped before it")
        rows.append((end, phase, f"{delay:.3f}", ",".join(sorted(names)), count))
    table = "window_end_ms\tphase\tdelay_s\tdevices\tanswers\n" + "".join(
        "\t".join(map(str, r)) + "\n" for r in rows)
    print(table, end="")
    if a.tsv:
        with open(a.tsv, "w") as f:
            f.write(table)
    how = "said goodbye" if a.leave else "was killed (SIGKILL)"
    print(f"edge-device-loss: window {a.window}, device timeout {a.device_timeout}, dev0 {how} at "
          f"{a.lose_at:.0f} s of {a.duration:.0f} s; {len(rows)} windows answered; longest delay before the "
          f"loss {worst_before:.2f} s, of the windows open at the loss and after {worst_after:.2f} s "
          f"(bound: window + timeout = {window + timeout:.1f} s)")
    if not rows:
        bad.append("no answers: " + errors[-2000:])
    for b in bad:
        print(f"edge-device-loss: FAIL {b}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
