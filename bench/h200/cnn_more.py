#!/usr/bin/env python3
"""More CNN training steps on one GPU, beside cnn.py (same helpers, same method).

Writes, under --out (bench/h200/more holds one run, its two CSV files renamed steps.csv and
profile.csv so that cnn.sh reads them as it reads cnn.py's):
  host.txt         PyTorch eager's host time per operator: a loop of small additions, timed on
                   the host, with the GPU synchronised only at the end
  steps_more.csv   bf16 (autocast, channels_last) at batches where the GPU, not the host, bounds
                   the step, and tf32 (fp32 tensors, TF32 tensor-core convolutions and matmuls:
                   PyTorch's default for cuDNN convolutions) at batch 64 and 128
  profile_more.csv one profiled step per network and precision at the largest batch
"""
import argparse
import os
import time

import torch

import cnn


def host_overhead(f):
    a = torch.randn(1024, device="cuda")
    b = torch.randn(1024, device="cuda")
    c = torch.empty_like(a)
    for n in (1000, 10000):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            torch.add(a, b, out=c)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        f.write("torch.add on 1024 fp32, %d ops: host %.2f us/op, with the final sync %.2f us/op\n"
                % (n, (t1 - t0) / n * 1e6, (t2 - t0) / n * 1e6))
    with torch.autocast("cuda", dtype=torch.bfloat16):
        w = torch.randn(64, 64, device="cuda")
        x = torch.randn(64, 64, device="cuda")
        n = 5000
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            torch.mm(x, w)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        f.write("torch.mm 64x64 under bf16 autocast (a cast and a GEMM each), %d calls: "
                "host %.2f us/call\n" % (n, (t1 - t0) / n * 1e6))


def set_prec(prec):
    cnn.set_precision("fp32")
    if prec == "tf32":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=240.0)
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "host.txt"), "w") as f:
        host_overhead(f)
    print("host done at %.0f s" % cnn.elapsed(), flush=True)
    plan = [
        ("bf16", "resnet50", (128, 256)), ("bf16", "inception_v3", (128, 256)),
        ("bf16", "vgg16", (128, 256)), ("bf16", "resnet152", (128, 256)),
        ("bf16", "alexnet", (1024, 2048)), ("bf16", "resnet50-v1", (256,)),
        ("tf32", "resnet50", (64, 128)), ("tf32", "inception_v3", (64, 128)),
        ("tf32", "vgg16", (64, 128)), ("tf32", "alexnet", (512,)), ("tf32", "resnet152", (64,)),
    ]
    cnn.run_steps(plan, os.path.join(a.out, "steps_more.csv"),
                  os.path.join(a.out, "profile_more.csv"), a.reps, a.budget_s, set_prec)


if __name__ == "__main__":
    main()
