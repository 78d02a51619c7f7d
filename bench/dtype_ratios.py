#!/usr/bin/python3
"""Our own dtypes against our fp32, case by case, in one run.

The targets "fp16 and cubeMathType USE_FP16 >= 0.9x our fp32 on every case, on every tier" and
"bf16 >= 0.9x our fp32 on AVX2-only CPUs" compare one build with itself. Each round times, per
case, fp32 and the chosen dtypes back to back (so a slow spell of the shared machine falls on all
of them), each form in its own process, the order of the forms rotating and that of the cases
alternating between rounds. Prints per-case
medians, the speed ratio dtype / fp32 (fp32 time / dtype time: above 1 is faster) and the geometric
means, naming the CPU and the ISA tier in force (ACLNN_CPU_MAX_ISA caps it, as in ctest).

  /usr/bin/python3 bench/dtype_ratios.py --bench build/bench/aclnn_conv_bench --threads 2 \\
      --rounds 4 [--dtypes f16,usefp16,bf16] [--filter REGEX] [--min-time 0.3] [--json out.json]
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess

from ab_builds import DTYPE_SUFFIX, cpu_name, run_once


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", required=True, help="aclnn_conv_bench")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--min-time", type=float, default=0.3)
    ap.add_argument("--dtypes", default="f16,usefp16", help="comma list of bf16, f16, usefp16")
    ap.add_argument("--filter", default="", help="regex on the case name (without dtype suffix)")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    dtypes = [d for d in args.dtypes.split(",") if d]
    for d in dtypes:
        if d not in DTYPE_SUFFIX or d == "f32":
            ap.error("--dtypes: %r is not one of bf16, f16, usefp16" % d)
    listed = subprocess.run(
        [args.bench, "--benchmark_list_tests"], check=True, capture_output=True,
        text=True).stdout.split()
    cases = [c for c in listed if "/" not in c and re.search(args.filter, c)]
    if not cases:
        ap.error("--filter %r matches no case" % args.filter)
    times = {}  # (case, dtype) -> [ms per round]
    forms = ["f32"] + dtypes
    for rnd in range(args.rounds):
        order = cases if rnd % 2 == 0 else list(reversed(cases))
        for case in order:
            # One process per form, the forms' order rotating by round: a form timed first in
            # a process (or always after another) would carry that position's bias.
            for d in forms[rnd % len(forms):] + forms[:rnd % len(forms)]:
                name = case + DTYPE_SUFFIX[d]
                got = run_once(args.bench, "^%s$" % re.escape(name), args.threads, args.min_time)
                times.setdefault((case, d), []).append(got[name])
    print("# CPU: %s" % cpu_name())
    print("# ACLNN_CPU_MAX_ISA=%s, threads %d, rounds %d (medians, ms; ratio = fp32 time / dtype "
          "time)" % (os.environ.get("ACLNN_CPU_MAX_ISA", "(unset)"), args.threads, args.rounds))
    head = "%-16s %9s" % ("case", "f32 ms") + "".join(" %9s %7s" % (d + " ms", d) for d in dtypes)
    print(head)
    logs = {d: [] for d in dtypes}
    out = []
    for case in cases:
        base = statistics.median(times[(case, "f32")])
        line = "%-16s %9.2f" % (case, base)
        row = {"case": case, "f32_ms": base}
        for d in dtypes:
            t = statistics.median(times[(case, d)])
            line += " %9.2f %7.2f" % (t, base / t)
            logs[d].append(math.log(base / t))
            row[d + "_ms"], row[d + "_ratio"] = t, base / t
        print(line)
        out.append(row)
    print("%-16s %9s" % ("geomean", "") +
          "".join(" %9s %7.2f" % ("", math.exp(sum(logs[d]) / len(logs[d]))) for d in dtypes))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpu": cpu_name(), "threads": args.threads, "rows": out}, f, indent=1)


if __name__ == "__main__":
    main()
