#!/usr/bin/python3
"""Runs the aclnn_conv_bench suite against PyTorch's CPU convolution backward, alternating.

For every case (the same list as bench/cases.cpp), each round runs our benchmark binary on that
case alone (Google Benchmark, JSON) and then PyTorch's `torch.ops.aten.convolution_backward`
(all three outputs) or `aten::conv_tbc_backward`, both with the same thread count, so the two
see the same machine state. Prints per-case medians over the rounds, the ratio ours / PyTorch
and the geometric means.

  /usr/bin/python3 bench/compare_pytorch.py --bench build/bench/aclnn_conv_bench [--threads 2]
      [--rounds 5] [--min-time 0.3] [--filter REGEX] [--json out.json]

Unsets OPENBLAS_CORETYPE for both sides (see README "Performance").
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time

from torch_threads import set_openblas_threads

# name, tbc, transposed, x, w, stride, pad, dil, out_pad, groups  (keep in sync with cases.cpp)
CASES = [
    ("c2d_resnet3x3", False, False, [32, 64, 56, 56], [64, 64, 3, 3], [1, 1], [1, 1], [1, 1], [0, 0], 1),
    ("c2d_resnet1x1", False, False, [32, 256, 56, 56], [64, 256, 1, 1], [1, 1], [0, 0], [1, 1], [0, 0], 1),
    ("c2d_stride2", False, False, [32, 128, 28, 28], [256, 128, 3, 3], [2, 2], [1, 1], [1, 1], [0, 0], 1),
    ("c2d_first7x7", False, False, [16, 3, 224, 224], [64, 3, 7, 7], [2, 2], [3, 3], [1, 1], [0, 0], 1),
    ("c2d_depthwise", False, False, [32, 128, 56, 56], [128, 1, 3, 3], [1, 1], [1, 1], [1, 1], [0, 0], 128),
    ("c2d_grouped", False, False, [32, 128, 28, 28], [128, 16, 3, 3], [1, 1], [1, 1], [1, 1], [0, 0], 8),
    ("c2d_dilated", False, False, [16, 64, 56, 56], [64, 64, 3, 3], [1, 1], [2, 2], [2, 2], [0, 0], 1),
    ("c2d_mnist1", False, False, [64, 1, 28, 28], [32, 1, 5, 5], [1, 1], [2, 2], [1, 1], [0, 0], 1),
    ("c2d_mnist2", False, False, [64, 32, 14, 14], [64, 32, 5, 5], [1, 1], [2, 2], [1, 1], [0, 0], 1),
    ("c1d_audio", False, False, [16, 64, 4096], [128, 64, 9], [1], [4], [1], [0], 1),
    ("c3d_video", False, False, [4, 32, 16, 56, 56], [64, 32, 3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1], [0, 0, 0], 1),
    ("ct2d_decoder", False, True, [16, 64, 16, 16], [64, 32, 4, 4], [2, 2], [1, 1], [1, 1], [0, 0], 1),
    ("ct3d", False, True, [2, 32, 8, 28, 28], [32, 16, 3, 3, 3], [2, 2, 2], [1, 1, 1], [1, 1, 1], [1, 1, 1], 1),
    ("tbc", True, False, [512, 32, 256], [3, 256, 256], [], [1], [], [], 1),
]


def out_shape(c):
    name, tbc, tr, x, w, s, p, d, op, g = c
    if tbc:
        return [x[0] + 2 * p[0] + 1 - w[0], x[1], w[2]]
    y = [x[0], w[1] * g if tr else w[0]]
    for i in range(len(x) - 2):
        k, n = w[i + 2], x[i + 2]
        y.append((n - 1) * s[i] - 2 * p[i] + d[i] * (k - 1) + op[i] + 1 if tr
                 else (n + 2 * p[i] - d[i] * (k - 1) - 1) // s[i] + 1)
    return y


def flops(c):
    """4 * nominal MACs of one gradient (grad_input + grad_weight, every tap counted)."""
    name, tbc, tr, x, w, s, p, d, op, g = c
    y = out_shape(c)
    if tbc:
        return 4 * y[0] * y[1] * w[0] * w[1] * w[2]
    k = math.prod(w[2:])
    spatial = math.prod((x if tr else y)[2:])
    c_out = w[0] if tr else y[1]
    return 4 * x[0] * c_out * spatial * w[1] * k


def torch_runner(c, threads):
    import torch
    torch.set_num_threads(threads)
    set_openblas_threads(threads)  # conv_tbc and transposed convs run OpenBLAS GEMMs
    name, tbc, tr, x, w, s, p, d, op, g = c
    gen = torch.Generator().manual_seed(0)
    rnd = lambda shape: torch.rand(shape, generator=gen) * 2 - 1
    X, W, GY = rnd(x), rnd(w), rnd(out_shape(c))
    if tbc:
        B = rnd([w[2]])
        return lambda: torch.ops.aten.conv_tbc_backward(GY, X, W, B, p[0])
    bias_sizes = [w[1] * g if tr else w[0]]
    return lambda: torch.ops.aten.convolution_backward(
        GY, X, W, bias_sizes, s, p, d, tr, op, g, [True, True, True])


def time_torch(fn, min_time):
    fn()  # warm-up (first call sets up oneDNN primitives)
    n, start = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        el = time.perf_counter() - start
        if el >= min_time and n >= 3:
            return el / n


def time_ours(bench, name, threads, min_time):
    out = subprocess.run(
        [bench, f"--threads={threads}", f"--benchmark_filter=^{re.escape(name)}$",
         f"--benchmark_min_time={min_time}", "--benchmark_format=json"],
        check=True, capture_output=True, text=True).stdout
    b = json.loads(out)["benchmarks"][0]
    return b["wall_ms"] * 1e-3, int(b.get("workspace_bytes", 0))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default="build/bench/aclnn_conv_bench")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.3)
    ap.add_argument("--filter", default="")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    os.environ.pop("OPENBLAS_CORETYPE", None)
    import torch
    print(f"# torch {torch.__version__}, threads {a.threads} (oneDNN and OpenBLAS), "
          f"rounds {a.rounds}, load average {os.getloadavg()[0]:.2f} at start", flush=True)
    print(f"{'case':15s} {'ours GF/s':>10s} {'torch GF/s':>11s} {'ratio':>6s} {'ws MB':>7s}")
    rows = []
    for c in CASES:
        if a.filter and not re.search(a.filter, c[0]):
            continue
        fn = torch_runner(c, a.threads)
        ours, theirs, ws = [], [], 0
        for _ in range(a.rounds):
            t, ws = time_ours(a.bench, c[0], a.threads, a.min_time)
            ours.append(t)
            theirs.append(time_torch(fn, a.min_time))
        f = flops(c)
        go, gt = f / statistics.median(ours) * 1e-9, f / statistics.median(theirs) * 1e-9
        rows.append({"case": c[0], "ours_gflops": go, "torch_gflops": gt, "ratio": go / gt,
                     "workspace_bytes": ws})
        print(f"{c[0]:15s} {go:10.1f} {gt:11.1f} {go / gt:6.2f} {ws / 1e6:7.2f}", flush=True)
    if rows:
        gm = lambda k: math.exp(sum(math.log(r[k]) for r in rows) / len(rows))
        print(f"{'geomean':15s} {gm('ours_gflops'):10.1f} {gm('torch_gflops'):11.1f} "
              f"{gm('ratio'):6.2f}")
        print(f"# load average {os.getloadavg()[0]:.2f} at end")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    sys.exit(main())
