#!/usr/bin/python3
"""Parity of mixed-precision training with PyTorch (optional; not in ctest).

Runs build/examples/train_fashion_mnist/autocast_parity (the main job's CNN, AdamW lr 1e-3,
weight decay 5e-4, batch 128, no shuffle, augmentation or dropout) for --steps steps in each
precision, then repeats the same steps in PyTorch from the same initial weights on the same
normalised batches, under torch.cpu.amp.autocast(dtype=torch.bfloat16) for bf16 and without
autocast for fp32 (PyTorch 1.13's CPU autocast has no float16), and compares the losses step by
step. Exit status 1 if a loss differs by more than the precision's tolerance (see below).

    /usr/bin/python3 scripts/autocast_parity_pytorch.py [--exe PATH] [--steps 30]
"""
import argparse
import json
import pathlib
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Step 0 runs one forward from identical weights and inputs: only rounding differs (bf16: where
# each framework rounds to bf16). Later steps drift apart as training amplifies any difference:
# fp32 by the summation order alone (measured 6e-4 over 30 steps); bf16 by as much as bf16 itself
# moves the losses, measured as PyTorch bf16 against PyTorch fp32 ("gap"): two bf16
# implementations should be within 2 gaps of each other.
FIRST_STEP_TOLERANCE = {"fp32": 1e-5, "bf16": 1e-3}
FP32_DRIFT_TOLERANCE = 2e-3
DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "BF16": None}


def read_safetensors(path):
    """{name: torch tensor} and the metadata of a safetensors file (no package needed)."""
    raw = pathlib.Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = raw[8 + n:]
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        array = np.frombuffer(data[begin:end], dtype=DTYPES[info["dtype"]])
        out[name] = torch.from_numpy(array.copy()).reshape(info["shape"])
    return out, meta


def make_model():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.0), nn.Linear(128, 10))


def torch_losses(tensors, meta, precision):
    model = make_model()
    init = {k[len("init."):]: v for k, v in tensors.items() if k.startswith("init.")}
    missing, unexpected = model.load_state_dict(init, strict=False)
    if unexpected or any(not k.endswith("num_batches_tracked") for k in missing):
        sys.exit(f"weights do not match the model: missing {missing}, unexpected {unexpected}")
    opt = torch.optim.AdamW(model.parameters(), lr=float(meta["lr"]),
                            weight_decay=float(meta["weight_decay"]))
    batch = int(meta["batch_size"])
    x, y = tensors["x"], tensors["y"]
    losses = []
    for s in range(len(tensors["loss"])):
        with torch.cpu.amp.autocast(enabled=precision == "bf16", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x[s * batch:(s + 1) * batch]),
                                   y[s * batch:(s + 1) * batch])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--exe", default=str(ROOT / "build/examples/train_fashion_mnist/"
                                                    "autocast_parity"))
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    torch.set_num_threads(2)
    failed = False
    torch_fp32 = None
    with tempfile.TemporaryDirectory() as tmp:
        for precision in ("fp32", "bf16"):
            path = pathlib.Path(tmp) / f"{precision}.safetensors"
            subprocess.run([args.exe, str(path), str(args.steps), precision], check=True,
                           stdout=subprocess.DEVNULL)
            tensors, meta = read_safetensors(path)
            ours = tensors["loss"].tolist()
            theirs = torch_losses(tensors, meta, precision)
            rel = [abs(a - b) / abs(b) for a, b in zip(ours, theirs)]
            if precision == "fp32":
                torch_fp32 = theirs
                tolerance = FP32_DRIFT_TOLERANCE
                note = "summation order"
            else:
                gap = max(abs(a - b) / abs(b) for a, b in zip(theirs, torch_fp32))
                tolerance = 2 * gap
                note = f"2 x torch bf16 vs torch fp32 = 2 x {gap:.2e}"
            ok = rel[0] <= FIRST_STEP_TOLERANCE[precision] and max(rel) <= tolerance
            failed |= not ok
            print(f"{precision}: {args.steps} steps, PyTorch {torch.__version__}"
                  f"{' autocast bfloat16' if precision == 'bf16' else ''}")
            for s in sorted({0, 1, 2, args.steps // 2, args.steps - 1}):
                print(f"  step {s:3d}  ours {ours[s]:.6f}  torch {theirs[s]:.6f}  rel {rel[s]:.1e}")
            print(f"  step 0: {rel[0]:.1e} (tolerance {FIRST_STEP_TOLERANCE[precision]:g}); "
                  f"largest: {max(rel):.2e} (tolerance {tolerance:.2e}: {note}) "
                  f"{'ok' if ok else 'FAILED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
