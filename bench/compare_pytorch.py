#!/usr/bin/python3
"""Ours against the best CPU peers, case by case, in one run: PyTorch tuned, PyTorch as run and
oneDNN's own primitives.

For every case (the same list as bench/cases.cpp) and dtype, each round times, one after the
other on the same machine state:
  ours         aclnn_conv_bench (Google Benchmark, JSON): phase 1 + phase 2 of
               aclnnConvolutionBackward (all three outputs) or aclnnConvTbcBackward;
  torch tuned  PyTorch's aten::convolution_backward / conv_tbc_backward in a worker process with
               OPENBLAS_CORETYPE unset and GLIBC_TUNABLES=glibc.malloc.mmap_max=0:
               glibc.malloc.trim_threshold=68719476736 (glibc keeps its large buffers instead of
               returning them to the kernel between calls: otherwise PyTorch pays tens of
               thousands of page faults per call on these VMs, which a speed-conscious user
               avoids by setting this once);
  torch as run the same in a worker with this process's environment;
  oneDNN       onednn_conv_bench (when --onednn is given and exists): oneDNN's backward-data and
               backward-weights primitives from and to plain NC[D]HW tensors, reorders counted
               ("+reorders"), and alone on their preferred layouts ("prim", for reference).
Prints per-case medians over the rounds, the ratio ours / best peer (best of torch tuned, torch
as run and oneDNN with reorders) and geometric means, and names the CPU.

  /usr/bin/python3 bench/compare_pytorch.py --bench build/bench/aclnn_conv_bench \\
      --onednn build/bench/onednn_conv_bench --threads 2 --rounds 3 [--dtype f32|bf16|f16]
      [--min-time 0.3] [--filter REGEX] [--json out.json] [--markdown]

fp16: PyTorch 1.13 has no CPU fp16 convolution backward and the oneDNN bench runs f32/bf16 only,
so those columns say n/a. --dtype usefp16 times our fp32 with cubeMathType USE_FP16.
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
TUNED = "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736"


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


def cpu_name():
    info = {}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            k, _, v = line.partition(":")
            info[k.strip()] = v.strip()
    except OSError:
        pass
    return (f"{info.get('Model name', '?')} (vendor {info.get('Vendor ID', '?')}, "
            f"family {info.get('CPU family', '?')}, model {info.get('Model', '?')})")


# ---- the PyTorch worker (a child process: one per environment) ----

def worker(threads):
    """Reads "case dtype min_time" lines, answers seconds per call (or "nan")."""
    import torch
    torch.set_num_threads(threads)
    set_openblas_threads(threads)  # conv_tbc and transposed convs run OpenBLAS GEMMs
    cache = {}
    for line in sys.stdin:
        name, dtype, min_time = line.split()
        try:
            key = (name, dtype)
            if key not in cache:
                cache[key] = torch_runner(next(c for c in CASES if c[0] == name), dtype)
            fn = cache[key]
            print(time_call(fn, float(min_time)), flush=True)
        except Exception:  # e.g. a dtype without a CPU kernel in this PyTorch
            print("nan", flush=True)


def torch_runner(c, dtype):
    import torch
    if dtype not in ("f32", "bf16"):
        raise RuntimeError("no CPU kernel")
    tdt = torch.float32 if dtype == "f32" else torch.bfloat16
    name, tbc, tr, x, w, s, p, d, op, g = c
    gen = torch.Generator().manual_seed(0)
    rnd = lambda shape: (torch.rand(shape, generator=gen) * 2 - 1).to(tdt)
    X, W, GY = rnd(x), rnd(w), rnd(out_shape(c))
    if tbc:
        B = rnd([w[2]])
        fn = lambda: torch.ops.aten.conv_tbc_backward(GY, X, W, B, p[0])
    else:
        bias_sizes = [w[1] * g if tr else w[0]]
        fn = lambda: torch.ops.aten.convolution_backward(
            GY, X, W, bias_sizes, s, p, d, tr, op, g, [True, True, True])
    fn()  # warm-up (sets up oneDNN primitives); raises here if the dtype has no kernel
    return fn


def time_call(fn, min_time):
    n, start = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        el = time.perf_counter() - start
        if el >= min_time and n >= 3:
            return el / n


class Worker:
    def __init__(self, threads, env):
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker",
                                   "--threads", str(threads)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=env,
                                  cwd=os.path.dirname(os.path.abspath(__file__)))

    def time(self, name, dtype, min_time):
        self.p.stdin.write(f"{name} {dtype} {min_time}\n")
        self.p.stdin.flush()
        v = float(self.p.stdout.readline())
        return None if math.isnan(v) else v

    def close(self):
        self.p.stdin.close()
        self.p.wait()


# ---- our side and oneDNN: Google Benchmark binaries ----

def time_bench(binary, name, threads, min_time, env=None):
    out = subprocess.run(
        [binary, f"--threads={threads}", f"--benchmark_filter=^{re.escape(name)}$",
         f"--benchmark_min_time={min_time}", "--benchmark_format=json"],
        check=True, capture_output=True, text=True, env=env).stdout
    runs = json.loads(out)["benchmarks"]
    if not runs or runs[0].get("error_occurred"):
        return None, 0
    b = runs[0]
    return b["wall_ms"] * 1e-3, int(b.get("workspace_bytes", 0))


def ours_name(case, dtype):
    return case + {"f32": "", "bf16": "/bf16", "f16": "/f16", "usefp16": "/usefp16"}[dtype]


def med(xs):
    xs = [x for x in xs if x]
    return statistics.median(xs) if xs else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default="build/bench/aclnn_conv_bench")
    ap.add_argument("--onednn", default="build/bench/onednn_conv_bench")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.3)
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16", "f16", "usefp16"])
    ap.add_argument("--filter", default="")
    ap.add_argument("--json", default="")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        return worker(a.threads)

    tuned_env = dict(os.environ, GLIBC_TUNABLES=TUNED)
    tuned_env.pop("OPENBLAS_CORETYPE", None)
    plain_env = dict(os.environ)
    ours_env = dict(os.environ)
    ours_env.pop("OPENBLAS_CORETYPE", None)  # (our fp32 kernels do not use OpenBLAS's anyway)
    onednn_env = dict(os.environ, OMP_WAIT_POLICY="passive")
    have_onednn = os.path.exists(a.onednn)
    peer_dtype = {"f32": "f32", "bf16": "bf16"}.get(a.dtype)  # peers' dtype, or none
    tuned, plain = Worker(a.threads, tuned_env), Worker(a.threads, plain_env)
    print(f"# CPU: {cpu_name()}")
    print(f"# dtype {a.dtype}, threads {a.threads}, rounds {a.rounds} (medians), "
          f"load average {os.getloadavg()[0]:.2f} at start", flush=True)
    cols = ["ours", "torch tuned", "torch as run", "oneDNN+reord", "oneDNN prim", "ours/best"]
    print(f"{'case':15s} " + " ".join(f"{c:>12s}" for c in cols) + f" {'ws MB':>7s}")
    rows = []
    for c in CASES:
        if a.filter and not re.search(a.filter, c[0]):
            continue
        t = {k: [] for k in ("ours", "tuned", "plain", "dnnl", "prim")}
        ws = 0
        for _ in range(a.rounds):
            o, ws = time_bench(a.bench, ours_name(c[0], a.dtype), a.threads, a.min_time, ours_env)
            t["ours"].append(o)
            if peer_dtype:
                t["tuned"].append(tuned.time(c[0], peer_dtype, a.min_time))
                t["plain"].append(plain.time(c[0], peer_dtype, a.min_time))
                if have_onednn:
                    for key, mode in (("dnnl", "reorder"), ("prim", "prim")):
                        t[key].append(time_bench(a.onednn, f"{c[0]}/{peer_dtype}/{mode}",
                                                 a.threads, a.min_time, onednn_env)[0])
        f = flops(c)
        g = {k: (f / med(v) * 1e-9 if med(v) else None) for k, v in t.items()}
        peers = [g[k] for k in ("tuned", "plain", "dnnl") if g[k]]
        best = max(peers) if peers else None
        row = {"case": c[0], "dtype": a.dtype, "threads": a.threads, "ours_gflops": g["ours"],
               "torch_tuned_gflops": g["tuned"], "torch_as_run_gflops": g["plain"],
               "onednn_reorder_gflops": g["dnnl"], "onednn_prim_gflops": g["prim"],
               "ratio_to_best": g["ours"] / best if best and g["ours"] else None,
               "workspace_bytes": ws}
        rows.append(row)
        fmt = lambda v, p=1: f"{v:12.{p}f}" if v else f"{'n/a':>12s}"
        print(f"{c[0]:15s} {fmt(g['ours'])} {fmt(g['tuned'])} {fmt(g['plain'])} {fmt(g['dnnl'])} "
              f"{fmt(g['prim'])} {fmt(row['ratio_to_best'], 2)} {ws / 1e6:7.2f}", flush=True)
    tuned.close()
    plain.close()
    if rows:
        def gm(k):
            v = [r[k] for r in rows if r[k]]
            return math.exp(sum(math.log(x) for x in v) / len(v)) if v else None
        keys = ["ours_gflops", "torch_tuned_gflops", "torch_as_run_gflops",
                "onednn_reorder_gflops", "onednn_prim_gflops", "ratio_to_best"]
        print(f"{'geomean':15s} " + " ".join(
            f"{gm(k):12.{2 if k == 'ratio_to_best' else 1}f}" if gm(k) else f"{'n/a':>12s}"
            for k in keys))
        print(f"# load average {os.getloadavg()[0]:.2f} at end")
        if a.markdown:
            print("\n| case | ours | PyTorch tuned | PyTorch as run | oneDNN + reorders | "
                  "oneDNN prim | ours / best |\n|---|---:|---:|---:|---:|---:|---:|")
            cell = lambda v, p=1: f"{v:.{p}f}" if v else "n/a"
            for r in rows + [dict({k: gm(k) for k in keys}, case="**geomean**")]:
                print(f"| {r['case']} | {cell(r['ours_gflops'])} | {cell(r['torch_tuned_gflops'])}"
                      f" | {cell(r['torch_as_run_gflops'])} | {cell(r['onednn_reorder_gflops'])}"
                      f" | {cell(r['onednn_prim_gflops'])} | {cell(r['ratio_to_best'], 2)} |")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
