"""Runs one command and prints the CPU-seconds of its whole process tree and its wall seconds.

    python measure.py OUT.json -- CMD [ARGS...]

CPU is read from a cgroup made for the run (cgroup v1 `cpuacct` or cgroup v2 `cpu.stat`, as
root), so it counts every process the command starts, even those its parent never waits for
(PyFlink's JVM, Pathway's and Bytewax's threads are counted either way); processes left in the
cgroup after the command exits are ended and counted. Without a writable cgroup it falls back to
the rusage of waited-for children, and says so in the JSON (`"cpu_source"`).
"""

import json
import os
import resource
import signal
import subprocess
import sys
import time

CGROUP_V1 = "/sys/fs/cgroup/cpuacct"
CGROUP_V2 = "/sys/fs/cgroup/unified"


def make_cgroup():
    name = f"saams-compare-{os.getpid()}"
    for root, kind in ((CGROUP_V2, "v2"), (CGROUP_V1, "v1"), ("/sys/fs/cgroup", "v2")):
        path = os.path.join(root, name)
        try:
            os.mkdir(path)
        except OSError:
            continue
        probe = "cpu.stat" if kind == "v2" else "cpuacct.usage"
        if os.path.exists(os.path.join(path, probe)):
            return path, kind
        os.rmdir(path)
    return None, None


def cgroup_cpu_seconds(path, kind):
    if kind == "v1":
        with open(os.path.join(path, "cpuacct.usage")) as f:
            return int(f.read()) / 1e9
    with open(os.path.join(path, "cpu.stat")) as f:
        for line in f:
            key, value = line.split()
            if key == "usage_usec":
                return int(value) / 1e6
    raise RuntimeError(f"{path}/cpu.stat has no usage_usec")


def end_leftovers(path):
    """Ends what the command left running in its cgroup (a JVM gateway, say), then waits for it."""
    for _ in range(300):
        with open(os.path.join(path, "cgroup.procs")) as f:
            pids = [int(p) for p in f.read().split()]
        if not pids:
            return True
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    return False


def remove_cgroup(path):
    """Removes the run's cgroup; one still busy (an unreaped process) is left, with a warning."""
    for _ in range(50):
        try:
            os.rmdir(path)
            return
        except OSError:
            time.sleep(0.1)
    print(f"measure: could not remove {path} (a process is still in it)", file=sys.stderr)


def main():
    out, sep, *command = sys.argv[1:]
    if sep != "--" or not command:
        raise SystemExit("usage: measure.py OUT.json -- CMD [ARGS...]")
    path, kind = make_cgroup()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()

    def join_cgroup():
        if path:
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

    status = subprocess.call(command, preexec_fn=join_cgroup)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if path:
        end_leftovers(path)
        cpu = cgroup_cpu_seconds(path, kind)
        remove_cgroup(path)
        source = f"cgroup {kind}"
    else:
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        source = "rusage of waited-for children"
    with open(out, "w") as f:
        json.dump({"status": status, "cpu_seconds": cpu, "wall_seconds": wall, "cpu_source": source}, f)
    sys.exit(status)


if __name__ == "__main__":
    main()
