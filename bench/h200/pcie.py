#!/usr/bin/env python3
"""Host-to-device and device-to-host copy rates of one GPU over its PCIe link.

Writes --out/pcie.csv: direction (h2d, d2h, both), host memory (pinned, pageable), bytes, the
median, min and p90 time of the copy in us, and GB/s (1e9 bytes/s, per direction; "both" runs
an h2d and a d2h copy of that size at once on two streams and reports each direction's rate).
Each copy is timed with CUDA events after 3 warm-ups; 20 repetitions (10 at 256 MiB and up).
"""
import argparse
import csv
import os
import subprocess

import torch

import cnn


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    sizes = [4096, 65536, 1 << 20, 16 << 20, 256 << 20, 1 << 30]
    with open(os.path.join(a.out, "pcie.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["direction", "host_memory", "bytes", "time_us_median", "time_us_min",
                    "time_us_p90", "GBps"])
        for n in sizes:
            reps = 10 if n >= (256 << 20) else 20
            dev = torch.empty(n, dtype=torch.uint8, device="cuda")
            for kind in ("pinned", "pageable"):
                if kind == "pageable" and n > (256 << 20):
                    continue
                host = torch.empty(n, dtype=torch.uint8, pin_memory=(kind == "pinned"))
                host.fill_(1)
                for d, fn in (("h2d", lambda: dev.copy_(host, non_blocking=True)),
                              ("d2h", lambda: host.copy_(dev, non_blocking=True))):
                    med, mn, p90 = cnn.timed_us(fn, reps)
                    w.writerow([d, kind, n, "%.2f" % med, "%.2f" % mn, "%.2f" % p90,
                                "%.2f" % (n / med / 1e3)])
                    f.flush()
            if n >= (16 << 20):
                src = torch.empty(n, dtype=torch.uint8, pin_memory=True)
                dst = torch.empty(n, dtype=torch.uint8, pin_memory=True)
                dev2 = torch.empty(n, dtype=torch.uint8, device="cuda")
                s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()

                def both():
                    with torch.cuda.stream(s1):
                        dev.copy_(src, non_blocking=True)
                    with torch.cuda.stream(s2):
                        dst.copy_(dev2, non_blocking=True)
                    s1.synchronize()
                    s2.synchronize()

                med, mn, p90 = cnn.timed_us(both, reps)
                w.writerow(["both", "pinned", n, "%.2f" % med, "%.2f" % mn, "%.2f" % p90,
                            "%.2f" % (n / med / 1e3)])
                f.flush()
    with open(os.path.join(a.out, "pcie-env.txt"), "w") as f:
        for q in ("name,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,"
                  "pcie.link.width.max",):
            r = subprocess.run(["nvidia-smi", "--query-gpu=" + q, "--format=csv"],
                               capture_output=True, text=True)
            f.write(r.stdout)
        f.write("torch %s, CUDA %s\n" % (torch.__version__, torch.version.cuda))
        try:
            f.write(subprocess.run(["lscpu"], capture_output=True, text=True).stdout)
        except Exception as e:  # noqa: BLE001
            f.write("lscpu: %s\n" % e)


if __name__ == "__main__":
    main()
