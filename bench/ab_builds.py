#!/usr/bin/python3
"""Before / after: two builds of aclnn_conv_bench timed against each other in one run.

A refactor claims "no speed lost" with this: build the old commit's bench in another worktree,
then time both binaries case by case, back to back, alternating which goes first (so a slow spell
of the shared machine falls on both), and print per-case medians, the ratio after / before in speed
(old time / new time: above 1 is faster) and the geometric mean, naming the CPU.

  /usr/bin/python3 bench/ab_builds.py --before ../old/build/bench/aclnn_conv_bench \\
      --after build/bench/aclnn_conv_bench --threads 2 --rounds 6 [--dtype f32|bf16|f16|usefp16]
      [--filter REGEX] [--min-time 0.3] [--json out.json]
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

DTYPE_SUFFIX = {"f32": "", "bf16": "/bf16", "f16": "/f16", "usefp16": "/usefp16"}


def cpu_name():
    """lscpu's model name, family and model: every quoted figure names the CPU it ran on."""
    info = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            if ":" in line:
                k, v = (s.strip() for s in line.split(":", 1))
                info.setdefault(k, v)
    flags = set(info.get("flags", "").split())
    isa = [x for x in ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16") if x in flags]
    return "%s (family %s model %s; %s)" % (info.get("model name", "?"), info.get("cpu family", "?"),
                                           info.get("model", "?"), " ".join(isa))


def run_once(binary, regex, threads, min_time):
    """One pass of one binary over the cases `regex` matches: {benchmark name: real time in ms}."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as out:
        path = out.name
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)  # as scripts/run.sh: OpenBLAS picks its own kernels
    cmd = [binary, "--threads=%d" % threads, "--benchmark_filter=" + regex,
           "--benchmark_min_time=%g" % min_time, "--benchmark_format=json",
           "--benchmark_out=" + path]
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    try:
        with open(path) as f:
            data = json.load(f)
    finally:
        os.unlink(path)
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
    return {b["name"]: b["real_time"] * scale[b.get("time_unit", "ns")] for b in data["benchmarks"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", required=True, help="the old build's aclnn_conv_bench")
    ap.add_argument("--after", required=True, help="the new build's aclnn_conv_bench")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--min-time", type=float, default=0.3)
    ap.add_argument("--dtype", default="f32", choices=sorted(DTYPE_SUFFIX))
    ap.add_argument("--filter", default="", help="regex on the case name (without dtype suffix)")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    for b in (a.before, a.after):
        if not os.access(b, os.X_OK):
            sys.exit("ab_builds: %s is not an executable bench binary" % b)
    if a.rounds < 1:
        sys.exit("ab_builds: --rounds must be >= 1, got %d" % a.rounds)

    suffix = DTYPE_SUFFIX[a.dtype]
    case = "(%s)" % a.filter if a.filter else "[a-z0-9_]+"
    regex = "^%s%s$" % (case, re.escape(suffix))
    # The case list from the new binary; each case is timed before and after back to back, the
    # order alternating by round and case, so a slow spell of the shared machine falls on both.
    listed = subprocess.run([a.after, "--benchmark_list_tests", "--benchmark_filter=" + regex],
                            check=True, capture_output=True, text=True).stdout.split()
    times = {"before": {}, "after": {}}
    for r in range(a.rounds):
        for i, name in enumerate(listed):
            order = ("before", "after") if (r + i) % 2 == 0 else ("after", "before")
            one = "^%s$" % re.escape(name)
            for which in order:
                for n, ms in run_once(getattr(a, which), one, a.threads, a.min_time).items():
                    times[which].setdefault(n, []).append(ms)
        print("round %d/%d done" % (r + 1, a.rounds), file=sys.stderr)

    names = [n for n in times["before"] if n in times["after"]]
    if not names:
        sys.exit("ab_builds: no benchmark matched %s in both binaries" % regex)
    print("CPU: %s; %d threads, dtype %s, %d rounds alternating, medians" %
          (cpu_name(), a.threads, a.dtype, a.rounds))
    print("| case | before ms | after ms | after / before (speed) |")
    print("|---|---:|---:|---:|")
    rows, logs = [], []
    for n in names:
        b, t = statistics.median(times["before"][n]), statistics.median(times["after"][n])
        rows.append({"case": n, "before_ms": b, "after_ms": t, "speed_ratio": b / t})
        logs.append(math.log(b / t))
        print("| %s | %.2f | %.2f | %.3f |" % (n, b, t, b / t))
    geo = math.exp(sum(logs) / len(logs))
    low = min(rows, key=lambda r: r["speed_ratio"])
    print("geomean %.3f, lowest %.3f (%s)" % (geo, low["speed_ratio"], low["case"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"cpu": cpu_name(), "threads": a.threads, "dtype": a.dtype,
                       "rounds": a.rounds, "rows": rows, "geomean": geo}, f, indent=1)


if __name__ == "__main__":
    main()
