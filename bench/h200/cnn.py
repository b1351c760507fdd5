#!/usr/bin/env python3
"""CNN training steps and their convolution and batch-norm layers, measured on one GPU.

Writes, under --out:
  env.txt      the software and the GPU (versions, clocks, peak checks)
  steps.csv    whole training steps (forward, backward, SGD with momentum) of torchvision
               networks on synthetic input: median, min and p90 of the step, in ms
  profile.csv  one profiled step per network and precision: kernel time by kind, kernel count,
               and how much of the step the GPU was busy
  layers.csv   every distinct convolution and batch norm of ResNet-50 (v1 and v1.5) and
               Inception v3, timed alone: forward, backward-data, backward-weights

Precisions: fp32 with TF32 off (cuDNN's CUDA-core kernels, as on pre-Ampere GPUs) and bf16
under autocast with channels_last (what frameworks run on Hopper). Times are CUDA events
around each repetition after warm-up; cudnn.benchmark picks each layer's algorithm first.
"""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

T0 = time.time()


def elapsed():
    return time.time() - T0


def stats(times_ms):
    s = sorted(times_ms)
    p90 = s[min(len(s) - 1, int(0.9 * len(s)))]
    return statistics.median(s), s[0], p90


def time_reps(fn, reps, warm):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b))
    return out


def timed_us(fn, reps=20):
    """Median, min and p90 in us of `reps` timed calls after 3 warm-ups."""
    return tuple(t * 1000.0 for t in stats(time_reps(fn, reps, 3)))


def set_precision(prec):
    """fp32 runs without TF32 (CUDA cores); bf16 runs under autocast, unaffected."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True


def resnet50_v1():
    """torchvision's ResNet-50 with the stride of each stage's first block on the 1x1 (v1)."""
    m = torchvision.models.resnet50()
    for layer in (m.layer2, m.layer3, m.layer4):
        blk = layer[0]
        blk.conv1.stride = (2, 2)
        blk.conv2.stride = (1, 1)
    return m


def build(name):
    if name == "resnet50":
        return torchvision.models.resnet50(), 224
    if name == "resnet50-v1":
        return resnet50_v1(), 224
    if name == "resnet152":
        return torchvision.models.resnet152(), 224
    if name == "inception_v3":
        return torchvision.models.inception_v3(aux_logits=False, init_weights=False), 299
    if name == "vgg16":
        return torchvision.models.vgg16(), 224
    if name == "alexnet":
        return torchvision.models.alexnet(), 224
    raise ValueError(name)


def make_step(model, prec, batch, size):
    dev = "cuda"
    model = model.to(dev)
    fmt = torch.channels_last if prec == "bf16" else torch.contiguous_format
    model = model.to(memory_format=fmt)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 3, size, size, device=dev).to(memory_format=fmt)
    y = torch.randint(0, 1000, (batch,), device=dev)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        if prec == "bf16":
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = loss_fn(model(x), y)
        else:
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    return step


KINDS = [
    ("batchnorm", re.compile(r"bn_|batch_norm|batchnorm|welford", re.I)),
    ("optimizer", re.compile(r"multi_tensor|foreach|sgd", re.I)),
    ("layout", re.compile(r"nchwToNhwc|nhwcToNchw|transpose|permute|convert", re.I)),
    ("winograd", re.compile(r"winograd", re.I)),
    ("fft", re.compile(r"fft", re.I)),
    ("conv_gemm", re.compile(r"conv|cudnn|xmma|implicit|gemm|sm90|sm80|cutlass|wgrad|dgrad|fprop|scudnn", re.I)),
    ("pool", re.compile(r"pool", re.I)),
    ("concat", re.compile(r"CatArray|cat_|concat", re.I)),
    ("reduce", re.compile(r"reduce", re.I)),
    ("elementwise", re.compile(r"elementwise|vectorized|unrolled|threshold|relu|add", re.I)),
]


def kind_of(name):
    for k, rx in KINDS:
        if rx.search(name):
            return k
    return "other"


def profile_step(step):
    from torch.profiler import profile, ProfilerActivity
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        step()
        b.record()
        b.synchronize()
    step_ms = a.elapsed_time(b)
    per_kind = {}
    spans = []
    count = 0
    for ev in prof.events():
        dt = getattr(ev, "device_type", None)
        if dt is None or "CUDA" not in str(dt):
            continue
        if ev.name.startswith("Memcpy") or ev.name.startswith("Memset"):
            k = "memcpy"
        else:
            k = kind_of(ev.name)
        us = ev.time_range.elapsed_us()
        c, t = per_kind.get(k, (0, 0.0))
        per_kind[k] = (c + 1, t + us)
        spans.append((ev.time_range.start, ev.time_range.end))
        count += 1
    spans.sort()
    busy = 0.0
    cur_s, cur_e = None, None
    for s, e in spans:
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                busy += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        busy += cur_e - cur_s
    return step_ms, count, busy / 1000.0, per_kind


def run_steps(plan, steps_path, profile_path, reps, deadline_s, set_prec):
    """Times the training steps of `plan`, (precision, network, batches) triples, and profiles
    one step at the last batch of each: steps.csv and profile.csv rows. `set_prec(precision)`
    sets the math mode; bf16 runs under autocast with channels_last, any other precision with
    fp32 tensors. Stops when `deadline_s` seconds have passed since the start."""
    with open(steps_path, "w", newline="") as fs, open(profile_path, "w", newline="") as fp:
        ws = csv.writer(fs)
        wp = csv.writer(fp)
        ws.writerow(["model", "precision", "batch", "step_ms_median", "step_ms_min",
                     "step_ms_p90", "reps", "images_per_s"])
        wp.writerow(["model", "precision", "batch", "step_ms", "kernels", "busy_ms", "kind",
                     "kind_kernels", "kind_ms"])
        for prec, name, batches in plan:
            set_prec(prec)
            for bi, batch in enumerate(batches):
                if elapsed() > deadline_s:
                    print("steps: out of time at %s %s %d" % (name, prec, batch), flush=True)
                    return
                torch.manual_seed(0)
                try:
                    model, size = build(name)
                    step = make_step(model, "bf16" if prec == "bf16" else "fp32", batch, size)
                    ts = time_reps(step, reps, 8)
                except Exception as e:  # noqa: BLE001
                    print("%s %s b%d failed: %s" % (name, prec, batch, e), flush=True)
                    torch.cuda.empty_cache()
                    continue
                med, mn, p90 = stats(ts)
                ws.writerow([name, prec, batch, "%.3f" % med, "%.3f" % mn, "%.3f" % p90, reps,
                             "%.1f" % (batch * 1000.0 / med)])
                fs.flush()
                if bi == len(batches) - 1:
                    try:
                        sm, cnt, busy, kinds = profile_step(step)
                    except Exception as e:  # noqa: BLE001
                        print("profile failed: %s" % e, flush=True)
                        kinds = {}
                    for k in sorted(kinds):
                        wp.writerow([name, prec, batch, "%.3f" % sm, cnt, "%.3f" % busy, k,
                                     kinds[k][0], "%.3f" % (kinds[k][1] / 1000.0)])
                    fp.flush()
                print("%s %s b%d: %.2f ms (%.0f s)" % (name, prec, batch, med, elapsed()),
                      flush=True)
                del model, step
                torch.cuda.empty_cache()


def conv_layers(name, batch, prec):
    """Distinct Conv2d and BatchNorm2d shapes of a network, with how often each occurs."""
    model, size = build(name)
    model = model.cuda().train()
    shapes = {}

    def hook_conv(mod, inp, out):
        x = inp[0]
        key = ("conv", x.shape[1], x.shape[2], x.shape[3], mod.out_channels, mod.kernel_size[0],
               mod.kernel_size[1], mod.stride[0], mod.stride[1], mod.padding[0], mod.padding[1],
               out.shape[2], out.shape[3])
        shapes[key] = shapes.get(key, 0) + 1

    def hook_bn(mod, inp, out):
        x = inp[0]
        key = ("bn", x.shape[1], x.shape[2], x.shape[3], 0, 0, 0, 0, 0, 0, 0, x.shape[2],
               x.shape[3])
        shapes[key] = shapes.get(key, 0) + 1

    hooks = []
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            hooks.append(m.register_forward_hook(hook_conv))
        elif isinstance(m, nn.BatchNorm2d):
            hooks.append(m.register_forward_hook(hook_bn))
    with torch.no_grad():
        model(torch.randn(2, 3, size, size, device="cuda"))
    for h in hooks:
        h.remove()
    del model
    return shapes


def time_layer(key, batch, prec, reps):
    kind, c, h, w, k, kh, kw, sh, sw, ph, pw, p, q = key
    dtype = torch.bfloat16 if prec == "bf16" else torch.float32
    fmt = torch.channels_last if prec == "bf16" else torch.contiguous_format
    x = torch.randn(batch, c, h, w, device="cuda", dtype=dtype).to(memory_format=fmt)
    res = {}
    if kind == "conv":
        wt = torch.randn(k, c, kh, kw, device="cuda", dtype=dtype).to(memory_format=fmt)
        y = F.conv2d(x, wt, None, (sh, sw), (ph, pw))
        dy = torch.randn_like(y)
        args = (dy, x, wt, None, (sh, sw), (ph, pw), (1, 1), False, (0, 0), 1)
        res["fwd"] = time_reps(lambda: F.conv2d(x, wt, None, (sh, sw), (ph, pw)), reps, 3)
        res["bwd_data"] = time_reps(
            lambda: torch.ops.aten.convolution_backward(*args, [True, False, False]), reps, 3)
        res["bwd_weights"] = time_reps(
            lambda: torch.ops.aten.convolution_backward(*args, [False, True, False]), reps, 3)
        flops = 2.0 * batch * k * c * kh * kw * p * q
    else:
        g = torch.ones(c, device="cuda")
        bta = torch.zeros(c, device="cuda")
        rm = torch.zeros(c, device="cuda")
        rv = torch.ones(c, device="cuda")
        res["fwd"] = time_reps(lambda: F.batch_norm(x, rm, rv, g, bta, True, 0.1, 1e-3), reps, 3)
        xr = x.detach().requires_grad_(True)
        gr = g.detach().requires_grad_(True)
        br = bta.detach().requires_grad_(True)
        out = F.batch_norm(xr, rm, rv, gr, br, True, 0.1, 1e-3)
        dy = torch.randn_like(out)
        res["bwd"] = time_reps(
            lambda: torch.autograd.grad(out, (xr, gr, br), dy, retain_graph=True), reps, 3)
        flops = 0.0
    return res, flops


def nvsmi(query):
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=" + query, "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:  # noqa: BLE001
        return "unavailable (%s)" % e


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=360.0)
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)

    with open(os.path.join(a.out, "env.txt"), "w") as f:
        p = torch.cuda.get_device_properties(0)
        f.write("gpu: %s, %d SMs, %.1f GiB\n" % (p.name, p.multi_processor_count,
                                                 p.total_memory / 2**30))
        f.write("nvidia-smi: %s\n" % nvsmi("name,driver_version,power.limit,clocks.max.sm,"
                                             "clocks.max.mem"))
        f.write("torch %s, CUDA %s, cuDNN %s, torchvision %s, python %s\n" % (
            torch.__version__, torch.version.cuda, torch.backends.cudnn.version(),
            torchvision.__version__, sys.version.split()[0]))
        set_precision("fp32")
        n = 8192
        A = torch.randn(n, n, device="cuda")
        B = torch.randn(n, n, device="cuda")
        t = stats(time_reps(lambda: A @ B, 10, 3))[0]
        f.write("fp32 GEMM 8192^3, TF32 off: %.3f ms = %.1f TFLOP/s\n" % (t, 2 * n**3 / t / 1e9))
        A16, B16 = A.bfloat16(), B.bfloat16()
        t = stats(time_reps(lambda: A16 @ B16, 10, 3))[0]
        f.write("bf16 GEMM 8192^3: %.3f ms = %.1f TFLOP/s\n" % (t, 2 * n**3 / t / 1e9))
        big = torch.empty(2**28, device="cuda")
        big2 = torch.empty_like(big)
        t = stats(time_reps(lambda: big2.copy_(big), 20, 3))[0]
        f.write("copy of 1 GiB fp32: %.3f ms = %.0f GB/s read+written\n" % (
            t, 2 * 4 * 2**28 / t / 1e6))
        del A, B, A16, B16, big, big2
        f.write("nvidia-smi after: %s\n" % nvsmi("clocks.sm,clocks.mem,temperature.gpu,"
                                                 "power.draw"))
    print("env done at %.0f s" % elapsed(), flush=True)

    nets = [("resnet50", (32, 64)), ("resnet50-v1", (32, 64)), ("inception_v3", (32, 64)),
            ("vgg16", (32, 64)), ("alexnet", (128, 512)), ("resnet152", (32, 64))]
    plan = [(prec, name, batches) for prec in ("fp32", "bf16") for name, batches in nets]
    run_steps(plan, os.path.join(a.out, "steps.csv"), os.path.join(a.out, "profile.csv"),
              a.reps, a.budget_s * 0.55, set_precision)

    with open(os.path.join(a.out, "layers.csv"), "w", newline="") as fl:
        wl = csv.writer(fl)
        wl.writerow(["model", "precision", "batch", "layer", "in_c", "in_h", "in_w", "out_c",
                     "kh", "kw", "sh", "sw", "ph", "pw", "out_h", "out_w", "count", "pass",
                     "time_us_median", "time_us_min", "time_us_p90", "tflops"])
        order = [("fp32", "inception_v3"), ("fp32", "resnet50-v1"), ("bf16", "inception_v3"),
                 ("fp32", "resnet50"), ("bf16", "resnet50-v1")]
        for prec, name in order:
            set_precision(prec)
            batch = 64
            shapes = conv_layers(name, batch, prec)
            for key, count in shapes.items():
                if elapsed() > a.budget_s:
                    print("layers: out of time", flush=True)
                    return
                try:
                    res, flops = time_layer(key, batch, prec, a.reps)
                except Exception as e:  # noqa: BLE001
                    print("layer %s failed: %s" % (key, e), flush=True)
                    continue
                for ps, ts in res.items():
                    med, mn, p90 = stats(ts)
                    tf = "%.2f" % (flops / med / 1e9) if flops else ""
                    wl.writerow([name, prec, batch, key[0]] + list(key[1:]) +
                                [count, ps, "%.1f" % (med * 1000), "%.1f" % (mn * 1000),
                                 "%.1f" % (p90 * 1000), tf])
                fl.flush()
            print("layers %s %s done (%.0f s)" % (name, prec, elapsed()), flush=True)
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
