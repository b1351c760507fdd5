#!/usr/bin/env python3
"""Hostile inputs for dtsim, by category, with every outcome counted.

    python3 bench/hostile/hostile.py [DTSIM] [--jobs N] [--timeout S] [--list]

DTSIM defaults to build/dtsim; give the ASan build (build-asan/dtsim) to count sanitizer
reports too. Each case runs dtsim once in a fresh folder and is judged:

  ok        exit 0 for an input that is valid, or exit 2 with one line on stderr that names the
            option, key or file at fault, nothing on stdout, and no output file written
  crash     killed by a signal (exit 128 and up, or a negative status)
  sanitizer an AddressSanitizer, LeakSanitizer or UndefinedBehaviorSanitizer report
  hang      still running after --timeout seconds (default 30)
  internal  exit 1 (an internal error) for input that a check should have refused
  unclear   refused, but in more than one line, or without naming the option, key or file
  accepted  exit 0 for a value that is nonsense (NaN, text for a number, an unknown name)
  output    an output that is not what its format says (CSV rows of unequal width, JSON that
            does not parse, an input file changed or replaced, a partial file left behind)

The categories are those of the reliability issue: nesting (deeply nested JSON), work
(sizes that would take unbounded time or memory), locale (decimal-comma locales), outputs
(outputs that are an input or each other), values (hostile values of every option with an
argument, of every command), injection (control characters in values written to files),
files (special files where a file is read) and combinations (options that do not apply).
Cases are generated from each command's --help-all, so new options are covered as they land.
Prints one line per case that is not ok, then a table of counts by category and outcome.
Exits 1 if any case is a crash, sanitizer report, hang or internal error.
"""
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMMANDS = ["run", "sweep", "search", "collective", "describe", "calibrate"]
OUTPUT_OPTIONS = {"trace", "csv", "plot", "link-heatmap", "chakra-out", "o", "output", "export"}
# Options whose values are file or folder names read by dtsim.
FILE_OPTIONS = {"model", "calibration", "system", "device", "intra", "inter", "chakra"}
# Values that are no number, no name and no list: each must be refused by every option that
# takes a value, except where the value could name a file (then: refused as a missing file).
NONSENSE = ["", "nan", "inf", "-inf", "1e999", "-1e999", "abc", "1,5", "1e", "--",
            "5abc", "\x01", "9" * 300, "-" + "9" * 300, "0x", "1..2", " "]
# Numbers at the edges of the integer and floating-point ranges.
EDGES = ["-1", "0", "1", "2147483647", "2147483648", "4294967296", "9223372036854775807",
         "9223372036854775808", "18446744073709551616", "1e308", "4.9e-324", "-0", "1e-320"]
SANITIZER = re.compile(r"(AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|"
                       r"runtime error:)")


def options_of(dtsim, command):
    """(name, argument) of every option --help-all lists for a command (argument None for a
    flag: "LIST", "SIZE", "N"... as the help names it)."""
    out = subprocess.run([dtsim, command, "--help-all"], capture_output=True, text=True,
                         timeout=60).stdout
    opts = []
    for line in out.splitlines():
        m = re.match(r"\s+(?:-\w, )?--([\w-]+)(=\S+)?\s", line)
        if m and not m.group(1).startswith("help"):
            opts.append((m.group(1), m.group(2)[1:] if m.group(2) else None))
    return opts


class Case:
    def __init__(self, category, command, args, expect, files=None, check=None, env=None):
        self.category = category      # one of the categories above
        self.command = command        # dtsim command
        self.args = args              # list of arguments after the command
        self.expect = expect          # "refuse", "accept" or "either"
        self.files = files or {}      # name -> bytes, written into the case's folder first
        self.check = check            # f(folder) -> error text or None, after the run
        self.env = env or {}
        self.blame = None             # text the refusal must contain (an option or file name)
        self.timeout = None           # seconds, when not the campaign's

    def label(self):
        shown = " ".join(repr(a) if (not a or any(c in a for c in " \t\n\x01\x1b")) else a
                         for a in self.args)
        return f"{self.command} {shown}"[:200]


def csv_ok(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            import csv
            widths = {len(row) for row in csv.reader(f) if row}
        return len(widths) <= 1
    except OSError:
        return True


def judge(dtsim, case, timeout):
    folder = tempfile.mkdtemp(prefix="dtsim-hostile-")
    try:
        for name, data in case.files.items():
            path = os.path.join(folder, name)
            if data is None:
                os.mkfifo(path)
            elif isinstance(data, str) and data == "<dir>":
                os.mkdir(path)
            else:
                with open(path, "wb") as f:
                    f.write(data)
        before = {n: os.stat(os.path.join(folder, n)).st_ino for n in os.listdir(folder)}
        env = dict(os.environ, DTSIM_DATA_DIR=TOP, ASAN_OPTIONS="detect_leaks=1",
                   G_SLICE="always-malloc", **case.env)
        args = [a.replace("@", folder + "/") if isinstance(a, str) else a for a in case.args]
        try:
            timeout = case.timeout or timeout
            p = subprocess.run([dtsim, case.command] + args, cwd=folder, env=env,
                               capture_output=True, timeout=timeout,
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return "hang", f"past {timeout} s"
        err = p.stderr.decode("utf-8", "replace")
        if SANITIZER.search(err):
            return "sanitizer", SANITIZER.search(err).group(0)
        if p.returncode < 0 or p.returncode >= 128:
            return "crash", f"status {p.returncode}"
        if p.returncode == 1:
            return "internal", err.strip().splitlines()[-1][:160] if err.strip() else "exit 1"
        changed = [n for n, ino in before.items()
                   if not os.path.lexists(os.path.join(folder, n)) or
                   os.stat(os.path.join(folder, n)).st_ino != ino]
        if changed:
            return "output", "input replaced: " + ", ".join(changed)
        if case.check:
            bad = case.check(folder)
            if bad:
                return "output", bad
        if p.returncode == 2:
            lines = [ln for ln in err.splitlines() if ln.strip()]
            left = sorted(set(os.listdir(folder)) - set(before))
            if left:
                return "output", "refused but wrote " + ", ".join(left)
            if len(lines) != 1 or p.stdout:
                return "unclear", f"{len(lines)} lines: " + err.strip()[:160]
            if case.blame and case.blame not in lines[0]:
                return "unclear", f"names no {case.blame}: " + lines[0][:160]
            return ("accepted-but-refused", lines[0][:160]) if case.expect == "accept" else ("ok", "")
        if p.returncode == 0:
            for n in os.listdir(folder):
                path = os.path.join(folder, n)
                if n.endswith(".csv") and n not in before and not csv_ok(path):
                    return "output", f"{n}: rows of unequal width"
            if "--json" in args:
                try:
                    json.loads(p.stdout.decode("utf-8", "replace") or "null")
                except ValueError as e:
                    return "output", f"stdout JSON does not parse: {e}"
            if case.expect == "refuse":
                return "accepted", p.stdout.decode("utf-8", "replace").strip()[:80]
            return "ok", ""
        return "unclear", f"status {p.returncode}: " + err.strip()[:160]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# Small, fast jobs per command, so that only the hostile part of a case costs time.
BASE = {
    "run": ["--model", "lenet5", "--iterations", "1"],
    "sweep": ["--model", "lenet5", "--devices", "1,2"],
    "search": ["--model", "lenet5", "--nodes", "1", "--top", "2", "--max-time", "20"],
    "collective": ["--bytes", "1M"],
    "describe": ["lenet5"],
    "calibrate": [],
}


def nested(depth):
    return ("[" * depth + "]" * depth).encode()


def cases(dtsim):
    out = []
    opts = {c: options_of(dtsim, c) for c in COMMANDS}
    # values: every option that takes a value, every command, nonsense and edge values.
    for cmd, olist in opts.items():
        if cmd == "calibrate":
            continue
        for name, arg in olist:
            if not arg or name in OUTPUT_OPTIONS:
                continue
            for v in NONSENSE:
                # Lists take "1,5" and "1..2"; sizes take "1e" (an exbibyte).
                if (v in ("1,5", "1..2") and ("LIST" in arg or "," in arg)) or \
                        (v == "1e" and arg == "SIZE"):
                    continue
                c = Case("values", cmd, BASE[cmd] + [f"--{name}={v}"],
                         "either" if name in FILE_OPTIONS else "refuse")
                c.blame = None if name in FILE_OPTIONS else f"--{name}"
                out.append(c)
            for v in EDGES:
                out.append(Case("values", cmd, BASE[cmd] + [f"--{name}={v}"], "either"))
    # nesting: JSON workloads nested to various depths, as arrays and as objects.
    for depth in (1, 63, 64, 65, 1000, 100000):
        for kind, data in (("arrays", nested(depth)),
                           ("objects", ('{"a":' * depth + "1" + "}" * depth).encode())):
            for cmd, args in (("describe", ["@d.json"]), ("run", ["--model", "@d.json"])):
                out.append(Case("nesting", cmd, args, "refuse", files={"d.json": data}))
    # work: sizes that would take unbounded time or memory.
    big = ["1099511627776", "16777216", "1000000", "4294967295"]
    for v in big:
        for opt in ("global-batch", "batch", "nodes", "iterations", "micro-batches",
                    "seq-len", "devices-per-node"):
            out.append(Case("work", "run", ["--model", "gpt3-1.7b", "--strategy", "3d",
                                            "--pp", "2", "--devices-per-node", "2",
                                            f"--{opt}={v}"], "either"))
            out.append(Case("work", "run", ["--model", "lenet5", f"--{opt}={v}"], "either"))
        out.append(Case("work", "run", ["--model", "lenet5", "--nodes", v, "--symmetry", "off"],
                        "either"))
        out.append(Case("work", "sweep", ["--model", "lenet5", "--devices", f"1-{v}"], "either"))
    out.append(Case("work", "search", ["--model", "lenet5", "--nodes", "125000",
                                       "--global-batch", "1000000", "--max-time", "10"],
                    "either"))
    # A legitimate job may take a minute (a million micro-batches): more than a hang's time.
    for c in out:
        if c.category == "work":
            c.timeout = 240
    # locale: machine-read outputs under a decimal-comma locale must parse as in C.
    for cmd, args in (("run", ["--model", "lenet5", "--csv", "@o.csv", "--json"]),
                      ("sweep", ["--model", "lenet5", "--devices", "1,2", "--csv", "@o.csv",
                                 "--plot", "@o.svg"]),
                      ("collective", ["--bytes", "1M", "--json"])):
        for loc in ("de_DE.UTF-8", "fr_FR.UTF-8", "C.UTF-8"):
            out.append(Case("locale", cmd, args, "accept", env={"LC_ALL": loc},
                            check=lambda d: None if not os.path.exists(d + "/o.svg") or
                            not re.search(r'="\d+,\d+"', open(d + "/o.svg").read())
                            else "decimal comma in the SVG"))
    # outputs: an output that is an input, or two outputs that are one file.
    scen = b"[scenario]\nmodel = lenet5\niterations = 1\ncsv = s.ini\n"
    out.append(Case("outputs", "run", ["@s.ini"], "refuse", files={"s.ini": scen}))
    for a, b in (("trace", "csv"), ("csv", "link-heatmap"), ("trace", "link-heatmap")):
        out.append(Case("outputs", "run", ["--model", "lenet5", "--iterations", "1",
                                           f"--{a}", "@x", f"--{b}", "@x"], "refuse"))
    out.append(Case("outputs", "sweep", ["--model", "lenet5", "--devices", "1,2", "--csv", "@p",
                                         "--plot", "@p"], "refuse"))
    out.append(Case("outputs", "run", ["--model", "@m.json", "--csv", "@m.json"], "refuse",
                    files={"m.json": subprocess.run([dtsim, "describe", "lenet5", "--export"],
                                                    capture_output=True).stdout}))
    for opt in ("trace", "csv"):
        for target in ("@dir", "@fifo-noreader"):
            files = {"dir": "<dir>"} if target == "@dir" else {"fifo-noreader": None}
            out.append(Case("outputs", "run", ["--model", "lenet5", f"--{opt}", target +
                                               ("/" if target == "@dir" else "")],
                            "refuse", files=files))
        out.append(Case("outputs", "run", ["--model", "lenet5", f"--{opt}", "@no/such/x"],
                        "refuse"))
    # injection: control characters in values that end up in written files.
    for ch in ("\n", "\r", "\x1b", "\t", "\u2028"):
        v = f"x{ch}[device]{ch}peak_tflops_fp32 = 1000"
        # Refused, or written so that no line of the overlay starts a group of its own.
        out.append(Case("injection", "calibrate", ["@m.csv", "--stack", v, "-o", "@inj.ini",
                                                   "--generations", "2", "--no-loo"],
                        "either" if ch == "\u2028" else "refuse", files={"m.csv": CALIB},
                        check=lambda d: "a [device] group was injected" if os.path.exists(
                            d + "/inj.ini") and re.search(r"^\s*\[device\]", open(
                                d + "/inj.ini", encoding="utf-8").read(), re.M) else None))
        out.append(Case("injection", "run", ["--model", "lenet5", "--iterations", "1",
                                             "--straggler", f"0{ch}:2", "--csv", "@o.csv"],
                        "refuse"))
        scen = f"[scenario]\nmodel = lenet5\nsystem = dgx1{ch}\n".encode()
        out.append(Case("injection", "run", ["@s.ini"], "refuse", files={"s.ini": scen}))
    # files: special files wherever a file is read.
    specials = {"/dev/zero": None, "/dev/null": None, "@dir/": {"dir": "<dir>"},
                "@empty": {"empty": b""}, "@garbage": {"garbage": bytes(range(256)) * 64},
                "@fifo": {"fifo": None}, "@long": {"long": b"x" * ((64 << 20) + 1)}}
    for opt in ("model", "calibration", "system", "device", "intra", "inter"):
        for path, files in specials.items():
            out.append(Case("files", "run", ["--model", "lenet5", f"--{opt}", path]
                            if opt != "model" else ["--model", path], "refuse",
                            files=files or {}))
    for path, files in specials.items():
        out.append(Case("files", "run", [path], "refuse", files=files or {}))
        out.append(Case("files", "describe", [path], "refuse", files=files or {}))
        out.append(Case("files", "calibrate", [path, "-o", "@o.ini"], "refuse",
                        files=files or {}))
    # combinations: options of one strategy given to another.
    strategies = ["dp", "ps", "mp", "pp", "hybrid", "3d", "chaos"]
    own = {"3d": ["--tp=2", "--zero=1", "--sequence-parallel=on", "--ep=2"],
           "pp": ["--micro-batches=2", "--schedule=gpipe"], "ps": ["--ps-count=2"],
           "hybrid": ["--hybrid=owt"], "dp": ["--bucket-mib=10"]}
    # hybrid is data parallel over pipelines: it takes the keys of both.
    takes = {"hybrid": {"pp", "dp"}}
    for s in strategies:
        for owner, flags in own.items():
            if owner == s or owner in takes.get(s, ()):
                continue
            for f in flags:
                out.append(Case("combinations", "run", ["--model", "lenet5", "--strategy", s, f],
                                "refuse"))
    return out


CALIB = (b"model,framework,precision,device,system,nodes,devices_per_node,batch_per_device,"
         b"strategy,ps_placement,measured,unit,source\n"
         b"resnet50,x,fp32,v100-sxm2-16gb,dgx1-v100,1,1,32,fwd+bwd,none,110,ms,test\n")


def main():
    argv = sys.argv[1:]
    jobs, timeout, listing, dtsim = 2, 30.0, False, os.path.join(TOP, "build", "dtsim")
    while argv:
        a = argv.pop(0)
        if a == "--jobs":
            jobs = int(argv.pop(0))
        elif a == "--timeout":
            timeout = float(argv.pop(0))
        elif a == "--list":
            listing = True
        else:
            dtsim = os.path.abspath(a)
    all_cases = cases(dtsim)
    if listing:
        for c in all_cases:
            print(c.category, c.label())
        return 0
    counts = {}
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda c: (c, judge(dtsim, c, timeout)), all_cases))
    for c, (verdict, why) in results:
        counts.setdefault(c.category, {}).setdefault(verdict, 0)
        counts[c.category][verdict] += 1
        if verdict != "ok":
            print(f"{verdict:9} {c.category:12} {c.label()}: {why}")
    verdicts = ["ok", "crash", "sanitizer", "hang", "internal", "unclear", "accepted",
                "accepted-but-refused", "output"]
    print()
    print("| category | cases | " + " | ".join(verdicts) + " |")
    print("|---|---:|" + "---:|" * len(verdicts))
    total = {}
    for cat in sorted(counts):
        row = counts[cat]
        n = sum(row.values())
        print(f"| {cat} | {n} | " + " | ".join(str(row.get(v, 0)) for v in verdicts) + " |")
        for v, k in row.items():
            total[v] = total.get(v, 0) + k
    print(f"| all | {sum(total.values())} | " +
          " | ".join(str(total.get(v, 0)) for v in verdicts) + " |")
    bad = sum(total.get(v, 0) for v in ("crash", "sanitizer", "hang", "internal"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
