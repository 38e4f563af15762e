#!/usr/bin/env python3
"""The gap in answers during a hand-off (`saams --take-over`), against the job's steady cadence.

    scripts/handoff-gap.py [--rate 200000] [--interval 2s] [--before 12] [--after 8]
                           [--new-shape "-w 2"] [--out target/handoff-gap]

Runs the paper workload on the unbounded generator (100 streams) at --rate tuples/s with -w 1
and a checkpoint every --interval, starts after --before seconds a job of --new-shape with
--take-over (paced at twice the rate, so it can catch up), and stops the new job --after seconds
after it took over. Meanwhile it samples the output file's length every 5 ms and reports:

- steady_gap_s: the longest time the output did not grow in the --before seconds before the new
  job started (with checkpoints, answers are written at each checkpoint's commit: about one
  interval);
- handoff_gap_s: the longest time it did not grow from the new job's start to --after seconds
  after it took over (the hand-off's gap: the last checkpoint, the old job's end, the new job's
  catch-up to the boundary);
- ask_s, old_exit_s, took_over_s: seconds from the new job's start to its request, to the old
  job's exit, and to the new job's "took over" line;
- the answers written, the windows they cover, and how many lines are in the output twice (a
  hand-off that wrote an answer twice would show it: answers are deterministic).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=int, default=200_000)
    ap.add_argument("--interval", default="2s")
    ap.add_argument("--before", type=float, default=12.0)
    ap.add_argument("--after", type=float, default=8.0)
    ap.add_argument("--new-shape", default="-w 2")
    ap.add_argument("--out", default="target/handoff-gap")
    a = ap.parse_args()
    os.chdir(ROOT)
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "saams-jobs", "--bin", "saams"], check=True)
    out = Path(a.out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    answers = out / "est.jsonl"
    common = ["--requests", "datasets/requests/paper-workload.json", "--generate", "stocks:100", "--progress", "0",
              "--out", str(answers), "--checkpoints", str(out / "ckpt"), "--checkpoint-interval", a.interval]
    old = subprocess.Popen(["target/release/saams", "-w", "1", "--rate", str(a.rate), *common],
                           stderr=open(out / "old.err", "w"))
    samples: list[tuple[float, int]] = []

    def sample_until(end: float) -> None:
        while time.monotonic() < end:
            samples.append((time.monotonic(), answers.stat().st_size if answers.exists() else 0))
            time.sleep(0.005)

    sample_until(time.monotonic() + a.before)
    new_start = time.monotonic()
    new_err = out / "new.err"
    new = subprocess.Popen(["target/release/saams", *a.new_shape.split(), "--rate", str(2 * a.rate), "--take-over",
                            *common], stderr=open(new_err, "w"))
    ask = old_exit = took = None
    while took is None or time.monotonic() < took + a.after:
        sample_until(time.monotonic() + 0.05)
        text = new_err.read_text()
        now = time.monotonic()
        if ask is None and "asked it to hand off" in text:
            ask = now
        if old_exit is None and old.poll() is not None:
            old_exit = now
        if took is None and "took over at" in text:
            took = now
        if now - new_start > 120:
            print("no take-over within 120 s", file=sys.stderr)
            break
    new.send_signal(signal.SIGTERM)
    new.wait()
    if old.poll() is None:
        old.kill()
    print(f"old job exit status {old.wait()}, new job exit status {new.returncode}")
    steady = longest_stall([s for s in samples if s[0] < new_start])
    handoff = longest_stall([s for s in samples if s[0] >= new_start])
    rel = lambda t: f"{t - new_start:.3f}" if t is not None else "none"  # noqa: E731
    print(f"handoff rate={a.rate} interval={a.interval} new_shape={a.new_shape.replace(' ', '')} "
          f"steady_gap_s={steady:.3f} handoff_gap_s={handoff:.3f} ask_s={rel(ask)} "
          f"old_exit_s={rel(old_exit)} took_over_s={rel(took)} {check_windows(answers)}")
    return 0


def longest_stall(samples: list[tuple[float, int]]) -> float:
    """The longest time between two samples at which the length grew (from the first sample)."""
    longest, last_growth, last_len = 0.0, None, None
    for t, n in samples:
        if last_len is None:
            last_growth, last_len = t, n
            continue
        if n > last_len:
            longest = max(longest, t - last_growth)
            last_growth, last_len = t, n
    return longest


def check_windows(answers: Path) -> str:
    """No answer line twice (an answer is deterministic: a second copy is byte-identical), and the
    windows answered, by their end."""
    seen: dict[str, int] = {}
    ends: set[str] = set()
    for line in answers.read_text().splitlines():
        seen[line] = seen.get(line, 0) + 1
        try:
            window = json.loads(line).get("window")
        except json.JSONDecodeError:
            continue
        if isinstance(window, dict) and "end" in window:
            ends.add(window["end"])
    twice = sum(1 for n in seen.values() if n > 1)
    return f"answers={sum(seen.values())} window_ends={len(ends)} answered_twice={twice}"


if __name__ == "__main__":
    sys.exit(main())
