"""The checks and the report of scripts/compare-engines.sh.

    python compare.py requests INPUT.jsonl WINDOW_TYPE > requests.json
    python compare.py check INPUT.jsonl WINDOW_TYPE saams=ANSWERS.jsonl flink=OUT.csv ...
    python compare.py report RESULTS.tsv OUT.md OUT.png

`requests` writes saams' job for the comparison: on every stream of the input, a Count-Min
(ε 0.002, δ 0.01) and a HyperLogLog (relative error 0.02) of `price`, each with a continuous query,
in windows of WINDOW_TYPE (`tumbling`: 60 s tumbling windows; `landmark`: from construction on,
answered every 60 s).

`check` computes the exact answers from the input — per stream and 60 s window (tumbling) or per
stream from its first tuple to each window's end (landmark): the tuples and the distinct prices —
and holds every engine's rows against them: the tuple counts must be equal, exactly; an exact
distinct count must be equal; a sketch's distinct estimate must be within 3 standard errors of the
exact count (relative standard error 2 % for saams' HLL, 1.6 % for DataSketches' and Pathway's at
lg_k 12) in at least 99 % of the windows, and within 5 of them in every window of at most 64
distinct values (where the sketches count exactly or nearly). It prints one line per engine and
exits 1 if any disagrees.

`report` writes the engines table (markdown) and a bar chart of tuples per CPU-second.
"""

import collections
import csv
import json
import statistics
import sys
from datetime import datetime, timezone

from common import event_ms

WINDOW_MS = 60_000
SKETCH_RSE = {"saams": 0.02, "bytewax": 0.016, "pathway": 0.016}


def read_tuples(path):
    with open(path) as f:
        for line in f:
            if line.strip():
                record = json.loads(line)
                yield record, event_ms(record["date"], record["time"])


def write_requests(path, window_type):
    first = {}
    for record, _ in read_tuples(path):
        first.setdefault((record["dataSetKey"], record["streamID"]), record["price"])
    window = {"type": "tumbling", "size": "60s"} if window_type == "tumbling" else None
    request_id = 0
    for (dataset, stream), price in sorted(first.items()):
        for synopsis_id, param, query in (
            (1, ["CountMin", "price", "NotQueryable", 0.002, 0.99, 12345], [price]),
            (2, ["HyperLogLog", "price", "NotQueryable", 0.02], ["distinct"]),
        ):
            for body in (param, query + ["price", "Queryable", "Continues"]):
                request_id += 1
                request = {
                    "dataSetKey": dataset,
                    "noOfP": 1,
                    "param": body,
                    "requestID": request_id,
                    "streamID": stream,
                    "synopsisID": synopsis_id,
                }
                if window and body is param:
                    request["window"] = window
                print(json.dumps(request))


def exact_answers(path, window_type):
    """{(stream, window_end_ms): (tuples, distinct prices)} of every window a stream has tuples in."""
    per_window = collections.defaultdict(lambda: [0, set()])
    for record, when in read_tuples(path):
        entry = per_window[(record["streamID"], when // WINDOW_MS * WINDOW_MS + WINDOW_MS)]
        entry[0] += 1
        entry[1].add(record["price"])
    if window_type == "tumbling":
        return {key: (count, len(prices)) for key, (count, prices) in per_window.items()}
    answers, running = {}, collections.defaultdict(lambda: [0, set()])
    for (stream, end), (count, prices) in sorted(per_window.items()):
        total = running[stream]
        total[0] += count
        total[1] |= prices
        answers[(stream, end)] = (total[0], len(total[1]))
    return answers


def iso_ms(text):
    return int(datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp() * 1000)


def engine_rows(engine, path):
    """{(stream, window_end_ms): (tuples, distinct)} of one engine's output."""
    rows = {}
    if engine == "saams":
        with open(path) as f:
            for line in f:
                answer = json.loads(line)
                if answer.get("kind") == "HyperLogLog" and "window" in answer:
                    key = (answer["streamID"], iso_ms(answer["window"]["end"]))
                    rows[key] = (answer["tuples"], answer["estimate"])
        return rows
    with open(path) as f:
        for stream, _start, end, tuples, distinct in csv.reader(f):
            rows[(stream, int(end))] = (int(tuples), float(distinct))
    return rows


def check(path, window_type, outputs):
    exact = exact_answers(path, window_type)
    failed = False
    for spec in outputs:
        engine, _, output = spec.partition("=")
        rows = engine_rows(engine, output)
        problems = []
        if window_type == "tumbling" and set(rows) != set(exact):
            problems.append(f"{len(set(exact) - set(rows))} windows missing, {len(set(rows) - set(exact))} extra")
        keys = [key for key in rows if key in exact]
        if window_type == "landmark" and engine == "saams" and len(keys) != len(rows):
            problems.append(f"{len(rows) - len(keys)} answers for windows without tuples")
        wrong_counts = sum(rows[key][0] != exact[key][0] for key in keys)
        if wrong_counts:
            problems.append(f"{wrong_counts} windows with a wrong tuple count")
        rse = SKETCH_RSE.get(engine)
        outside = [key for key in keys if not within(rows[key][1], exact[key][1], rse)]
        if rse is None and outside:
            problems.append(f"{len(outside)} windows with a wrong exact distinct count")
        elif rse is not None:
            small = [key for key in outside if exact[key][1] <= 64]
            if small or len(outside) > 0.01 * len(keys):
                problems.append(f"{len(outside)} windows outside 3 standard errors ({len(small)} of at most 64 values)")
        status = "agrees" if not problems else "DISAGREES: " + "; ".join(problems)
        print(f"{engine}: {len(keys)} windows compared with the exact answers: {status}")
        failed |= bool(problems)
    return 1 if failed else 0


def within(estimate, exact, rse):
    if rse is None:
        return estimate == exact
    if exact <= 64:
        return abs(estimate - exact) <= 5
    return abs(estimate - exact) <= 3 * rse * exact


def report(results, out_md, out_png):
    """results: TSV rows `window engine round tuples cpu_seconds wall_seconds`."""
    runs = collections.defaultdict(list)
    with open(results) as f:
        for row in csv.DictReader(f, delimiter="\t"):
            runs[(row["window"], row["engine"])].append(int(row["tuples"]) / float(row["cpu_seconds"]))
    names = {
        "saams": "saams `-w 1`",
        "flink": "Apache Flink 2.3 SQL (PyFlink, mini-cluster, exact COUNT DISTINCT), parallelism 1",
        "bytewax": "Bytewax 0.21 + Apache DataSketches for Python, 1 worker",
        "pathway": "Pathway 0.33, 1 worker",
    }
    lines = []
    for window in ("tumbling", "landmark"):
        base = runs.get((window, "saams"))
        if not base:
            continue
        saams_rate = statistics.median(base)
        lines += [
            f"**{window}** windows ({'TUMBLE' if window == 'tumbling' else 'CUMULATE'} in Flink SQL):",
            "",
            "| system | tuples per CPU-second (median) | rounds | CPU per tuple vs saams |",
            "|---|---:|---:|---:|",
        ]
        for engine in ("saams", "flink", "bytewax", "pathway"):
            rates = runs.get((window, engine))
            if rates:
                rate = statistics.median(rates)
                lines.append(f"| {names[engine]} | {rate:,.0f} | {len(rates)} | {saams_rate / rate:.1f}× |")
        lines.append("")
    with open(out_md, "w") as f:
        f.write("\n".join(lines))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    labels, values = [], []
    order = {"tumbling": 0, "landmark": 1, "saams": 0, "flink": 1, "bytewax": 2, "pathway": 3}
    for (window, engine), rates in sorted(runs.items(), key=lambda item: (order[item[0][0]], order[item[0][1]])):
        labels.append(f"{engine}\n{window}")
        values.append(statistics.median(rates))
    ax.bar(labels, values, color=["#2b6cb0" if label.startswith("saams") else "#a0aec0" for label in labels])
    ax.set_yscale("log")
    ax.set_ylabel("tuples per CPU-second (log)")
    ax.set_title("Per-stream Count-Min + HLL of price, 60 s windows, one file")
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "requests":
        write_requests(*args)
    elif command == "check":
        sys.exit(check(args[0], args[1], args[2:]))
    elif command == "report":
        report(*args)
    else:
        raise SystemExit(f"unknown command {command!r}: requests, check or report")
