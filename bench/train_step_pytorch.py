#!/usr/bin/python3
"""One training step of the main job's CNN: aclgrad (bench/train_step_bench) vs PyTorch, alternating.

The step (the same on both sides): zero_grad, forward of Conv(1->32,k3,p1)+BatchNorm2d+ReLU+
MaxPool2 -> Conv(32->64,k3,p1)+BN+ReLU+MaxPool2 -> Flatten -> Linear(3136->128)+ReLU+Dropout(0.25)
-> Linear(128->10) in training mode, cross-entropy, backward, Adam(lr 1e-3), on a fixed random
batch [B, 1, 28, 28] with random labels. For every (batch, threads) configuration (PyTorch:
torch.set_num_threads and OpenBLAS's pool set to the same count), each round
runs our benchmark binary on that case alone (Google Benchmark, JSON) and then the PyTorch step
for about as long, with torch.set_num_threads(threads), so both see the same machine state.
Prints per-configuration medians of samples/s (wall clock) and of samples per CPU-second (CPU
time of all the process's threads: on a machine shared with other jobs the fairer measure of
the work, exact for 1 thread; PyTorch's OpenMP threads spin while waiting, which counts as CPU
time), the ratios ours / PyTorch and the load average.

  /usr/bin/python3 bench/train_step_pytorch.py --bench build/bench/train_step_bench
      [--batches 64,128] [--threads 2,1] [--precision fp32|bf16] [--rounds 5] [--min-time 1.0]
      [--json out.json]

--precision bf16 runs forward and loss under autocast on both sides (PyTorch:
torch.autocast("cpu", dtype=torch.bfloat16); ours: AutocastGuard(BFloat16), case bf16:1).

Unsets OPENBLAS_CORETYPE for both sides (see README "Performance").
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from torch_threads import set_openblas_threads


def torch_step(batch, threads, bf16=False):
    import torch
    import torch.nn as nn
    torch.set_num_threads(threads)
    set_openblas_threads(threads)
    torch.manual_seed(1)
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.25), nn.Linear(128, 10))
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(batch, 1, 28, 28)
    y = torch.randint(0, 10, (batch,))

    def step():
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(3):  # warm-up: optimizer state, oneDNN primitives, allocator
        step()
    return step


def time_torch(step, batch, min_time):
    """(samples per wall second, samples per CPU second of the process)."""
    n, start, cpu_start = 0, time.perf_counter(), time.process_time()
    while True:
        step()
        n += 1
        el = time.perf_counter() - start
        if el >= min_time and n >= 3:
            return batch * n / el, batch * n / (time.process_time() - cpu_start)


def time_ours(bench, batch, threads, bf16, min_time):
    out = subprocess.run(
        [bench, f"--benchmark_filter=^train_step/batch:{batch}/threads:{threads}/bf16:{int(bf16)}$",
         f"--benchmark_min_time={min_time}", "--benchmark_format=json"],
        check=True, capture_output=True, text=True).stdout
    b = json.loads(out)["benchmarks"][0]
    return b["samples_per_s"], b["samples_per_cpu_s"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default="build/bench/train_step_bench")
    ap.add_argument("--batches", default="64,128")
    ap.add_argument("--threads", default="2,1")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    bf16 = a.precision == "bf16"
    os.environ.pop("OPENBLAS_CORETYPE", None)
    import torch
    blas = set_openblas_threads(1)
    print(f"# torch {torch.__version__}, {a.precision}, rounds {a.rounds}, min-time {a.min_time} s, "
          f"OpenBLAS {blas or 'not loaded'} (threads set like torch's), "
          f"load average {os.getloadavg()[0]:.2f} at start", flush=True)
    print("samples/s (wall clock) and samples per CPU-second (CPU time of all the process's "
          "threads), medians")
    print(f"{'batch':>5s} {'threads':>7s} {'ours/s':>8s} {'torch/s':>8s} {'ratio':>6s} "
          f"{'ours/cpu-s':>10s} {'torch/cpu-s':>11s} {'ratio':>6s} {'load':>5s}")
    rows = []
    for threads in [int(t) for t in a.threads.split(",")]:
        for batch in [int(b) for b in a.batches.split(",")]:
            step = torch_step(batch, threads, bf16)
            ours, theirs = [], []
            for _ in range(a.rounds):
                ours.append(time_ours(a.bench, batch, threads, bf16, a.min_time))
                theirs.append(time_torch(step, batch, a.min_time))
            mo = statistics.median(r[0] for r in ours)
            mt = statistics.median(r[0] for r in theirs)
            co = statistics.median(r[1] for r in ours)
            ct = statistics.median(r[1] for r in theirs)
            load = os.getloadavg()[0]
            rows.append({"batch": batch, "threads": threads, "ours_samples_per_s": mo,
                         "torch_samples_per_s": mt, "ratio": mo / mt,
                         "ours_samples_per_cpu_s": co, "torch_samples_per_cpu_s": ct,
                         "cpu_ratio": co / ct, "load_average": load,
                         "ours_rounds": ours, "torch_rounds": theirs})
            print(f"{batch:5d} {threads:7d} {mo:8.0f} {mt:8.0f} {mo / mt:6.2f} {co:10.0f} "
                  f"{ct:11.0f} {co / ct:6.2f} {load:5.2f}", flush=True)
    print(f"# load average {os.getloadavg()[0]:.2f} at end")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    sys.exit(main())
