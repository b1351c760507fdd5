#!/usr/bin/env python3
"""Pooling kernels of CNNs timed alone on one GPU: forward and backward of max and average
pooling at the shapes of Inception v3, VGG-16, AlexNet and ResNet-50, in fp32 NCHW and bf16
channels_last.

Writes --out/pool.csv: network, op (max, avg), precision, layout, N, C, H, W, kernel, stride,
padding, output H x W, pass (fwd, bwd), median / min / p90 us, and the bytes a single pass over
the input and output moves (fwd: read input, write output; bwd: read grad output (and indices
for max), write grad input), with the GB/s that gives. CUDA events around each repetition,
3 warm-ups, 20 repetitions; batch 256 (AlexNet 1024) so that every kernel runs far longer than
its launch.
"""
import argparse
import csv
import os

import torch
import torch.nn.functional as F

import cnn

SHAPES = [
    # network, op, C, H, W, kernel, stride, padding
    ("inception_v3", "max", 64, 147, 147, 3, 2, 0),
    ("inception_v3", "max", 192, 71, 71, 3, 2, 0),
    ("inception_v3", "avg", 192, 35, 35, 3, 1, 1),
    ("inception_v3", "avg", 288, 35, 35, 3, 1, 1),
    ("inception_v3", "max", 288, 35, 35, 3, 2, 0),
    ("inception_v3", "avg", 768, 17, 17, 3, 1, 1),
    ("inception_v3", "max", 768, 17, 17, 3, 2, 0),
    ("inception_v3", "avg", 1280, 8, 8, 3, 1, 1),
    ("inception_v3", "avg", 2048, 8, 8, 3, 1, 1),
    ("vgg16", "max", 64, 224, 224, 2, 2, 0),
    ("vgg16", "max", 128, 112, 112, 2, 2, 0),
    ("vgg16", "max", 256, 56, 56, 2, 2, 0),
    ("vgg16", "max", 512, 28, 28, 2, 2, 0),
    ("alexnet", "max", 64, 55, 55, 3, 2, 0),
    ("alexnet", "max", 192, 27, 27, 3, 2, 0),
    ("resnet50", "max", 64, 112, 112, 3, 2, 1),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.backends.cudnn.benchmark = True
    with open(os.path.join(a.out, "pool.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["network", "op", "precision", "layout", "n", "c", "h", "w", "kernel",
                     "stride", "padding", "out_h", "out_w", "pass", "time_us_median",
                     "time_us_min", "time_us_p90", "bytes", "GBps"])
        for net, op, c, h, wd, k, s, p in SHAPES:
            n = 1024 if net == "alexnet" else 256
            for prec, layout in (("fp32", "nchw"), ("bf16", "nhwc")):
                dt = torch.float32 if prec == "fp32" else torch.bfloat16
                fmt = torch.contiguous_format if layout == "nchw" else torch.channels_last
                x = torch.randn(n, c, h, wd, device="cuda", dtype=dt).to(memory_format=fmt)
                xr = x.detach().requires_grad_(True)
                if op == "max":
                    y = F.max_pool2d(xr, k, s, p)
                    fwd = lambda: F.max_pool2d(x, k, s, p)
                else:
                    y = F.avg_pool2d(xr, k, s, p)
                    fwd = lambda: F.avg_pool2d(x, k, s, p)
                dy = torch.randn_like(y)
                e = x.element_size()
                ein, eout = x.numel() * e, y.numel() * e
                res = [("fwd", cnn.timed_us(fwd), ein + eout),
                       ("bwd",
                        cnn.timed_us(lambda: torch.autograd.grad(y, xr, dy, retain_graph=True)),
                        eout * (2 if op == "max" else 1) + ein)]
                for ps, (med, mn, p90), nbytes in res:
                    w.writerow([net, op, prec, layout, n, c, h, wd, k, s, p, y.shape[2],
                                y.shape[3], ps, "%.1f" % med, "%.1f" % mn, "%.1f" % p90, nbytes,
                                "%.0f" % (nbytes / med / 1e3)])
                f.flush()
                del x, xr, y, dy
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
