#!/usr/bin/python3
"""Compares aclgrad's autocast policy table with PyTorch's CPU autocast (optional; not in ctest).

Reads the table from ops/autocast.cpp (the one place it is written), runs each op under
torch.cpu.amp.autocast(dtype=torch.bfloat16) in the two situations tests/ops/autocast_test.cpp
checks (every input float32; input 0 bfloat16 beside float32 parameters) and prints PyTorch's
output dtype next to the one our policy gives; backward must give every leaf a gradient of its
own dtype in PyTorch too (as the C++ test checks of ours). Exit status 1 if any differ beyond the deviations
listed in KNOWN (each with its reason).

    /usr/bin/python3 scripts/autocast_policy_pytorch.py

PyTorch 1.13's CPU autocast takes only bfloat16; our policy applies the same lists to float16.
"""
import pathlib
import re
import sys

import torch
import torch.nn.functional as F

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Ops where we differ from PyTorch 1.13 on purpose: name -> why.
KNOWN = {
    "conv_transpose1d": "1.13 keeps it in float32; the issue (and PyTorch 2.x) lowers every conv",
    "conv_transpose2d": "as conv_transpose1d",
    "conv_transpose3d": "as conv_transpose1d",
}


def policy_table():
    text = (ROOT / "ops" / "autocast.cpp").read_text()
    rows = re.findall(r'AutocastRule\{Op::\w+,\s*"(\w+)",\s*P::k(\w+)\}', text)
    if not rows:
        sys.exit("no AutocastRule rows found in ops/autocast.cpp")
    return rows


def r(*shape, lo=-1.0, hi=1.0):
    return torch.rand(*shape) * (hi - lo) + lo


TARGETS = torch.tensor([0, 4, 2, 1, 3, 4])

# name -> (inputs, function): the same ops and shapes as tests/ops/autocast_test.cpp.
CASES = {
    "conv1d": ([r(2, 3, 9), r(4, 3, 3), r(4)], lambda x, w, b: F.conv1d(x, w, b, padding=1)),
    "conv2d": ([r(2, 3, 6, 6), r(4, 3, 3, 3), r(4)],
               lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1)),
    "conv3d": ([r(1, 2, 4, 4, 4), r(3, 2, 2, 2, 2), r(3)], F.conv3d),
    "conv_transpose1d": ([r(2, 3, 5), r(3, 4, 3), r(4)],
                         lambda x, w, b: F.conv_transpose1d(x, w, b, stride=2)),
    "conv_transpose2d": ([r(1, 3, 4, 4), r(3, 2, 3, 3), r(2)],
                         lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2)),
    "conv_transpose3d": ([r(1, 2, 3, 3, 3), r(2, 3, 2, 2, 2), r(3)], F.conv_transpose3d),
    "conv_tbc": ([r(5, 2, 3), r(3, 3, 4), r(4)], lambda x, w, b: torch.conv_tbc(x, w, b, 1)),
    "linear": ([r(4, 6), r(5, 6), r(5)], F.linear),
    "matmul": ([r(2, 3, 4), r(4, 5)], torch.matmul),
    "cross_entropy": ([r(6, 5)], lambda x: F.cross_entropy(x, TARGETS)),
    "nll_loss": ([r(6, 5)], lambda x: F.nll_loss(x, TARGETS)),
    "mse_loss": ([r(3, 4), r(3, 4)], F.mse_loss),
    "binary_cross_entropy_with_logits": (
        [r(3, 4), r(3, 4, lo=0), r(4, lo=0.5, hi=2)],
        lambda x, t, p: F.binary_cross_entropy_with_logits(x, t, pos_weight=p)),
    "max_pool3d": ([r(1, 2, 4, 4, 4)], lambda x: F.max_pool3d(x, 2)),
    "avg_pool3d": ([r(1, 2, 4, 4, 4)], lambda x: F.avg_pool3d(x, 2)),
    "pad_reflect": ([r(2, 3, 5)], lambda x: F.pad(x, (2, 1), mode="reflect")),
    "pad_replicate": ([r(1, 2, 4, 4)], lambda x: F.pad(x, (1, 1, 1, 1), mode="replicate")),
    "add": ([r(3, 4), r(4)], torch.add),
    "sub": ([r(3, 4), r(4)], torch.sub),
    "mul": ([r(3, 4), r(4)], torch.mul),
    "div": ([r(3, 4), r(4, lo=0.5, hi=1.5)], torch.div),
    "pow": ([r(3, 4, lo=0.5, hi=1.5), r(3, 4)], torch.pow),
    "eq": ([r(3, 4), r(3, 4)], torch.eq),
    "gt": ([r(3, 4), r(3, 4)], torch.gt),
    "lt": ([r(3, 4), r(3, 4)], torch.lt),
    "cat": ([r(2, 3), r(4, 3)], lambda a, b: torch.cat([a, b], 0)),
    "stack": ([r(2, 3), r(2, 3)], lambda a, b: torch.stack([a, b], 1)),
    "batch_norm": ([r(4, 3, 2, 2), r(3, lo=0.5, hi=1.5), r(3)],
                   lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True)),
    "softmax": ([r(3, 5)], lambda x: F.softmax(x, 1)),
    "log_softmax": ([r(3, 5)], lambda x: F.log_softmax(x, 1)),
    "exp": ([r(3, 4)], torch.exp),
    "log": ([r(3, 4, lo=0.5, hi=1.5)], torch.log),
    "sum": ([r(3, 4)], torch.sum),
    "mean": ([r(3, 4)], torch.mean),
}
BOOL_OUTPUT = {"eq", "gt", "lt"}
# PyTorch refuses inputs that require grad here: (op, input index).
NOT_DIFFERENTIABLE = {("binary_cross_entropy_with_logits", 2)}


def ours(name, policy, first_is_16bit):
    """The output dtype our policy gives (autocast bfloat16)."""
    if name in BOOL_OUTPUT:
        return "bool"
    if policy == "LowerPrecision":
        return "bfloat16"
    if policy in ("Float32", "Promote"):
        return "float32"
    return "bfloat16" if first_is_16bit else "float32"  # Keep: the input's dtype


def pytorch(name, first_is_16bit):
    """PyTorch's output dtype, and whether backward gave every leaf a gradient of its own dtype
    (what ours does: float32 parameters get float32 gradients)."""
    inputs, fn = CASES[name]
    if first_is_16bit:
        inputs = [inputs[0].bfloat16()] + inputs[1:]
    inputs = [t.clone().requires_grad_((name, i) not in NOT_DIFFERENTIABLE)
              for i, t in enumerate(inputs)]
    with torch.cpu.amp.autocast(dtype=torch.bfloat16):
        out = fn(*inputs)
    grads_ok = True
    if out.is_floating_point():
        (out.float() * torch.rand(out.shape)).sum().backward()
        grads_ok = all(t.grad is not None and t.grad.dtype == t.dtype
                       for t in inputs if t.requires_grad)
    return str(out.dtype).replace("torch.", ""), grads_ok


def main():
    torch.manual_seed(0)
    print(f"PyTorch {torch.__version__}, torch.cpu.amp.autocast(dtype=torch.bfloat16)")
    print(f"{'op':34} {'policy':15} {'fp32 in: torch / ours':24} {'bf16 in: torch / ours':24}")
    unexpected = 0
    for name, policy in policy_table():
        if name not in CASES:
            print(f"{name:34} {policy:15} (no PyTorch case in this script)")
            unexpected += 1
            continue
        cells, differs = [], False
        for first_is_16bit in (False, True):
            (t, grads_ok), o = pytorch(name, first_is_16bit), ours(name, policy, first_is_16bit)
            if not grads_ok:
                print(f"{name}: PyTorch gave a leaf a gradient of another dtype")
                unexpected += 1
            differs |= t != o
            cells.append(f"{t} / {o}" + ("" if t == o else " *"))
        note = ""
        if differs:
            note = f"  known: {KNOWN[name]}" if name in KNOWN else "  UNEXPECTED"
            unexpected += name not in KNOWN
        print(f"{name:34} {policy:15} {cells[0]:24} {cells[1]:24}{note}")
    print("all as PyTorch except the known deviations" if unexpected == 0
          else f"{unexpected} unexpected difference(s)")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
