#!/usr/bin/env python3
"""The torch peer of `normcheck bench`, and the merge of their reports.

    torch_peer.py [--peer eager|compiled|FILE.py[:FUNCTION]] [--shapes 128x257,...]
                  [--dtypes fp32,fp16,bf16] [--warmup 20] [--samples 50] [--calls 20]
                  [--out DIR] [--name NAME] [--commit TEXT] [--l2-mb 60]
        times a torch RMSNorm with normcheck bench's protocol and writes DIR/NAME.json
        (normcheck bench's schema) and DIR/NAME.md (NAME: torch, torch.compile, or the
        function's name). The peer: `eager` (default) torch.nn.functional.rms_norm;
        `compiled` the same under torch.compile (compiled per shape and dtype during the
        warm-up); FILE.py[:FUNCTION] a differentiable f(x, weight, eps) -> y or (y, r), the
        autograd style of normcheck's Python kernels (FUNCTION defaults to forward).

    torch_peer.py --merge A.json B.json [more.json ...] [--out DIR]
        joins reports of that schema on (M, N, dtype) into one Markdown table, side by
        side, with the speedup of the first over each other; prints it and writes
        DIR/compare.md (DIR defaults to the first report's folder).

Protocol, as normcheck bench (bench.cpp): 20 warm-up calls, then the median of 50 samples
of 20 calls each; a sample is torch.cuda.Event records on the current stream around its
calls, back to back, divided by 20. Shapes and dtypes the same (weight in x's dtype,
eps 1e-6), inputs random (x in [-2,2), dy in [-1,1), weight in [0.5,1.5)), never zeros.
Inside the timed region:
    fwd      one rms_norm(x, (N,), weight, eps) call, x and weight without requires_grad:
             Python dispatch, the output from the caching allocator, the kernel(s).
    fwd+bwd  rms_norm with requires_grad on x and weight (autograd records the graph),
             then torch.autograd.grad(y, (x, weight), dy): the backward kernels, dx and
             dweight from the caching allocator (no .grad accumulation).
Bytes as BASELINE.md counts them: fwd = read x + write y = 2*M*N*s; fwd+bwd = fwd + read
x and dy + write dx = 5*M*N*s; GB/s = 1e9 bytes/s; "% copy" is over a device-to-device
copy of 1 GiB (bytes read + written) measured in the same run, median of 10. Input sets
rotate while x and y fit in the L2 budget: ceil(2*L2 / (2*M*N*s)) sets, at most 1024.
"""

import argparse
import datetime
import importlib.util
import json
import math
import os
import statistics
import sys

DEFAULT_SHAPES = "128x257,4096x4096,32768x4096,16384x8192,65536x1024,8192x16384"
DTYPE_NAMES = {
    "fp32": "float32", "f32": "float32", "float32": "float32", "float": "float32",
    "fp16": "float16", "f16": "float16", "float16": "float16", "half": "float16",
    "bf16": "bfloat16", "bfloat16": "bfloat16",
}
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
EPSILON = 1e-6
COPY_BYTES = 1 << 30
COPY_WARMUP, COPY_SAMPLES = 3, 10
MAX_INPUT_SETS = 1024


def parse_shapes(text):
    shapes = []
    for part in filter(None, text.split(",")):
        m, sep, n = part.lower().partition("x")
        if not sep or not m.isdigit() or not n.isdigit() or int(m) < 1 or int(n) < 1:
            raise argparse.ArgumentTypeError(f"shape '{part}': need MxN, e.g. 4096x4096")
        shapes.append((int(m), int(n)))
    if not shapes:
        raise argparse.ArgumentTypeError("need at least one MxN")
    return shapes


def parse_dtypes(text):
    names = []
    for part in filter(None, text.split(",")):
        if part not in DTYPE_NAMES:
            raise argparse.ArgumentTypeError(f"dtype '{part}': need fp32, fp16 or bf16")
        names.append(DTYPE_NAMES[part])
    if not names:
        raise argparse.ArgumentTypeError("need at least one dtype")
    return names


def rotation_sets(m, n, elem_bytes, l2_bytes):
    working = 2.0 * m * n * elem_bytes  # x and y
    if working > l2_bytes:
        return 1
    return min(MAX_INPUT_SETS, math.ceil(2.0 * l2_bytes / working))


def nvidia_driver_version():
    try:
        with open("/proc/driver/nvidia/version") as f:
            line = f.readline()
    except OSError:
        return ""
    for token in line.split():
        if token[:1].isdigit() and "." in token and all(c.isdigit() or c == "." for c in token):
            return token
    return ""


def time_calls(torch, fn, warmup, samples, calls):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    us = []
    for _ in range(samples):
        start.record()
        for _ in range(calls):
            fn()
        stop.record()
        stop.synchronize()
        us.append(start.elapsed_time(stop) * 1000.0 / calls)
    return statistics.median(us), min(us), max(us)


def copy_bandwidth(torch):
    src = torch.full((COPY_BYTES,), 0x5A, dtype=torch.uint8, device="cuda")
    dst = torch.full((COPY_BYTES,), 0xA5, dtype=torch.uint8, device="cuda")
    median_us, _, _ = time_calls(torch, lambda: dst.copy_(src), COPY_WARMUP, COPY_SAMPLES, 1)
    del src, dst
    torch.cuda.empty_cache()
    return 2.0 * COPY_BYTES / (median_us * 1e3), median_us


def timed_region_fwd(name):
    return (f"one {name} call (x, weight, eps) under no_grad: Python dispatch, the output from "
            "the caching allocator, the kernel(s)")


def timed_region_fwd_bwd(name):
    return (f"{name} with requires_grad on x and weight (autograd records the graph), then "
            "torch.autograd.grad(y, (x, weight), dy): the backward kernels, dx and dweight from the "
            "caching allocator (no .grad accumulation)")


def protocol_line(a):
    return (f"{a.warmup} warm-up calls, then the median of {a.samples} samples of {a.calls} calls each; "
            f"a sample is torch.cuda.Event records on the current stream around its calls, back to back, "
            f"divided by {a.calls}")


def load_peer(torch, spec):
    """(name, f(x, weight, eps) -> y) for --peer"""
    F = torch.nn.functional
    if spec == "eager":
        return "torch eager", lambda x, w, eps: F.rms_norm(x, (x.shape[-1],), w, eps)
    if spec == "compiled":
        torch._dynamo.config.cache_size_limit = 1 << 20
        compiled = torch.compile(lambda x, w, eps: F.rms_norm(x, (x.shape[-1],), w, eps), dynamic=False)
        return "torch.compile", compiled
    path, _, function = spec.partition(":")
    if not path.endswith(".py") or not os.path.isfile(path):
        raise SystemExit(f"torch_peer.py: --peer '{spec}': need eager, compiled or an existing FILE.py[:FUNCTION]")
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    module_spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    function = function or "forward"
    f = getattr(module, function, None)
    if not callable(f):
        raise SystemExit(f"torch_peer.py: --peer '{spec}': {path} has no function '{function}'")

    def first(x, w, eps):
        y = f(x, w, eps)
        return y[0] if isinstance(y, tuple) else y

    return getattr(f, "normcheck_capabilities", {}).get("name", function), first


def bench_row(torch, a, m, n, dtype_name):
    dtype = getattr(torch, dtype_name)
    s = DTYPE_BYTES[dtype_name]
    row = {"m": m, "n": n, "dtype": dtype_name, "input_sets": 0, "workspace_bytes": None,
           "fwd_bytes": 2 * m * n * s, "fwd_bwd_bytes": 5 * m * n * s,
           "path": a.peer_name, "fwd_path": None, "bwd_path": None,
           "spot_check": None, "spot_check_worst": None, "error": None}
    try:
        k = rotation_sets(m, n, s, a.l2_mb * 1e6)
        row["input_sets"] = k
        gen = torch.Generator(device="cuda")
        gen.manual_seed(1234 + m * 7 + n)

        def uniform(shape, lo, hi):
            u = torch.rand(shape, generator=gen, device="cuda", dtype=torch.float32)
            return (lo + (hi - lo) * u).to(dtype)

        sets = [(uniform((m, n), -2.0, 2.0), uniform((n,), 0.5, 1.5), uniform((m, n), -1.0, 1.0))
                for _ in range(k)]
        state = {"next": 0}

        def pick():
            i = state["next"]
            state["next"] = (i + 1) % k
            return sets[i]

        def fwd():
            x, w, _ = pick()
            with torch.no_grad():
                a.peer(x, w, EPSILON)

        row["fwd_us"], row["fwd_us_min"], row["fwd_us_max"] = time_calls(torch, fwd, a.warmup, a.samples, a.calls)

        sets = [(x.requires_grad_(True), w.requires_grad_(True), dy) for x, w, dy in sets]
        state["next"] = 0

        def fwd_bwd():
            x, w, dy = pick()
            y = a.peer(x, w, EPSILON)
            torch.autograd.grad(y, (x, w), dy)

        row["fwd_bwd_us"], row["fwd_bwd_us_min"], row["fwd_bwd_us_max"] = time_calls(
            torch, fwd_bwd, a.warmup, a.samples, a.calls)
        del sets
    except Exception as e:  # a failing row is reported, the others still run
        row["error"] = f"{type(e).__name__}: {e}"
    torch.cuda.empty_cache()
    return row


def finish_row(row, copy_gbps):
    for part in ("fwd", "fwd_bwd"):
        us = row.get(f"{part}_us")
        if us is None or row["error"]:
            for key in ("us", "us_min", "us_max", "gbps", "pct_copy"):
                row[f"{part}_{key}"] = None
            continue
        gbps = row[f"{part}_bytes"] / (us * 1e3)
        row[f"{part}_gbps"] = round(gbps, 1)
        row[f"{part}_pct_copy"] = round(100.0 * gbps / copy_gbps, 2)
        for key in ("us", "us_min", "us_max"):
            row[f"{part}_{key}"] = round(row[f"{part}_{key}"], 3)
    order = ["m", "n", "dtype", "input_sets", "workspace_bytes",
             "fwd_us", "fwd_us_min", "fwd_us_max", "fwd_bytes", "fwd_gbps", "fwd_pct_copy",
             "fwd_bwd_us", "fwd_bwd_us_min", "fwd_bwd_us_max", "fwd_bwd_bytes", "fwd_bwd_gbps", "fwd_bwd_pct_copy",
             "fwd_path", "bwd_path", "path", "spot_check", "spot_check_worst", "error"]
    return {key: row[key] for key in order}


def fmt(v, digits):
    return "–" if v is None else f"{v:.{digits}f}"


def markdown(report):
    d, p, c = report["device"], report["protocol"], report["copy"]
    lines = [
        f"# {report['tool']} bench: {report['kernel']['name']} ({report['kernel']['backend']})", "",
        f"- date {report['date']}; device {d['name']} (cc {d['compute_capability']}, {d['sms']} SMs); "
        f"driver {report['driver'] or '?'}; CUDA runtime {report['cuda_runtime']}; "
        f"commit {report['commit'] or 'not given'}",
        f"- protocol: {p['description']}",
        f"- timed, fwd: {p['timed_region_fwd']}",
        f"- timed, fwd+bwd: {p['timed_region_fwd_bwd']}",
        f"- bytes: fwd = {p['bytes_fwd']}; fwd+bwd = {p['bytes_fwd_bwd']}; GB/s = 1e9 bytes/s",
        f"- copy: device to device of 1 GiB, read + written, median of {c['samples']}: {fmt(c['gbps'], 0)} GB/s",
        "",
        "| shape | dtype | fwd µs | fwd GB/s | fwd % copy | fwd+bwd µs | GB/s | % copy | path |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["results"]:
        if r["error"]:
            lines.append(f"| {r['m']}×{r['n']} | {r['dtype']} | – | – | – | – | – | – | error: {r['error']} |")
            continue
        path = r["path"] or ""
        if r["input_sets"] and r["input_sets"] > 1:
            path += f" ({r['input_sets']} input sets)"
        lines.append(f"| {r['m']}×{r['n']} | {r['dtype']} | {fmt(r['fwd_us'], 2)} | {fmt(r['fwd_gbps'], 0)} | "
                     f"{fmt(r['fwd_pct_copy'], 1)} | {fmt(r['fwd_bwd_us'], 2)} | {fmt(r['fwd_bwd_gbps'], 0)} | "
                     f"{fmt(r['fwd_bwd_pct_copy'], 1)} | {path} |")
    return "\n".join(lines) + "\n"


def run_peer(a):
    import torch  # only the timing mode needs torch

    if not torch.cuda.is_available():
        print("torch_peer.py: torch finds no CUDA device; the peer times CUDA kernels", file=sys.stderr)
        return 77
    dev = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(dev)
    a.peer_name, peer_function = load_peer(torch, a.peer)
    a.name = a.name or a.peer_name
    a.peer, a.peer_spec = peer_function, a.peer
    print(f"torch_peer.py: {props.name}, torch {torch.__version__}, {a.peer_name}; measuring the copy", file=sys.stderr)
    copy_gbps, copy_us = copy_bandwidth(torch)
    cuda_driver = ""
    try:
        v = torch._C._cuda_getDriverVersion()  # not public API: best effort
        cuda_driver = f"{v // 1000}.{v % 1000 // 10}"
    except Exception:
        pass
    kmod = nvidia_driver_version()
    driver = " ".join(x for x in (kmod, f"(CUDA {cuda_driver})" if cuda_driver else "") if x)
    results = []
    for m, n in a.shapes:
        for dt in a.dtypes:
            row = finish_row(bench_row(torch, a, m, n, dt), copy_gbps)
            results.append(row)
            state = (f"error: {row['error']}" if row["error"]
                     else f"{fmt(row['fwd_us'], 2)} / {fmt(row['fwd_bwd_us'], 2)} us")
            print(f"  {m}x{n} {dt}: {state}", file=sys.stderr)
    l2 = getattr(props, "L2_cache_size", 0)
    report = {
        "schema": "normcheck-bench/1",
        "tool": a.name,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "device": {"name": props.name, "compute_capability": f"{props.major}.{props.minor}",
                   "sms": props.multi_processor_count, "l2_bytes": l2, "memory_bytes": props.total_memory},
        "driver": driver or None,
        "cuda_runtime": torch.version.cuda,
        "commit": a.commit or None,
        "kernel": {"name": a.peer_name, "backend": f"torch {torch.__version__}",
                   "file": a.peer_spec if ".py" in a.peer_spec else None},
        "protocol": {"warmup": a.warmup, "samples": a.samples, "calls": a.calls, "statistic": "median",
                     "epsilon": EPSILON, "l2_rotation_bytes": round(a.l2_mb * 1e6), "alloc_per_call": None,
                     "description": protocol_line(a),
                     "timed_region_fwd": timed_region_fwd(a.peer_name),
                     "timed_region_fwd_bwd": timed_region_fwd_bwd(a.peer_name),
                     "bytes_fwd": "2*M*N*s (read x, write y)",
                     "bytes_fwd_bwd": "5*M*N*s (fwd + read x, dy, write dx)"},
        "copy": {"bytes_per_copy": 2 * COPY_BYTES, "samples": COPY_SAMPLES, "median_us": round(copy_us, 3),
                 "gbps": round(copy_gbps, 1)},
        "results": results,
    }
    md = markdown(report)
    print(md, end="")
    os.makedirs(a.out, exist_ok=True)
    stem = os.path.join(a.out, a.name)
    with open(stem + ".json", "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    with open(stem + ".md", "w") as f:
        f.write(md)
    print(f"torch_peer.py: wrote {stem}.md and {stem}.json", file=sys.stderr)
    return 0 if all(r["error"] is None for r in results) else 1


def labels(reports):
    """each report's name in the table, as a reader knows the kernel: normcheck's own shipped
    kernel as "normcheck", every other one by its kernel's name ("torch eager", "torch.compile",
    a Python kernel's declared name, a plugin's name), never by the file a run wrote; two of one
    name are told apart by their files"""
    kernels = [r["kernel"]["name"] for r in reports]
    names = []
    for i, r in enumerate(reports):
        name = "normcheck" if i == 0 and r["tool"] == "normcheck" else kernels[i]
        if i > 0 and kernels.count(kernels[i]) > 1 and r["kernel"].get("file"):
            name = f"{name} ({r['kernel']['file']})"
        names.append(name)
    return names


def cell(r, part):
    if r is None or r.get("error") or r.get(f"{part}_us") is None:
        return "–"
    return f"{fmt(r[f'{part}_gbps'], 0)} ({fmt(r[f'{part}_us'], 2)})"


def speedup(a, b, part):
    if a is None or b is None or a.get("error") or b.get("error"):
        return "–"
    ua, ub = a.get(f"{part}_us"), b.get(f"{part}_us")
    return "–" if not ua or not ub else f"{ub / ua:.2f}×"


def merge(paths, out):
    reports = []
    for path in paths:
        with open(path) as f:
            reports.append(json.load(f))
    names = labels(reports)
    first = reports[0]
    lines = [f"# RMSNorm side by side: {' vs '.join(names)}", ""]
    for name, r in zip(names, reports):
        p = r["protocol"]
        lines.append(f"- {name}: {r['date']}, {r['device']['name']}, driver {r['driver'] or '?'}, "
                     f"commit {r['commit'] or 'not given'}, copy {fmt(r['copy']['gbps'], 0)} GB/s, "
                     f"{p['warmup']} warm-up / median of {p['samples']} × {p['calls']} calls")
    for r in reports[1:]:
        if r["device"]["name"] != first["device"]["name"]:
            lines.append(f"- **warning**: devices differ ({first['device']['name']} vs {r['device']['name']})")
        keys = ("warmup", "samples", "calls")
        if any(r["protocol"][k] != first["protocol"][k] for k in keys):
            lines.append(f"- **warning**: protocols differ ({names[0]} vs {names[reports.index(r)]})")
    lines += [f"- timed, {name}: fwd: {r['protocol']['timed_region_fwd']}; fwd+bwd: {r['protocol']['timed_region_fwd_bwd']}"
              for name, r in zip(names, reports)]
    lines += ["- cells: GB/s (median µs), bytes as BASELINE.md counts them; speedup = the other's µs / "
              f"{names[0]}'s µs (above 1: {names[0]} is faster)", ""]

    keys, index = [], []
    for r in reports:
        table = {}
        for row in r["results"]:
            # the peers time the plain operator: a variant's rows (bench --variants) stay in
            # normcheck's own table
            if row.get("variant", "rmsnorm") != "rmsnorm":
                continue
            key = (row["m"], row["n"], row["dtype"])
            table[key] = row
            if key not in keys:
                keys.append(key)
        index.append(table)
    head = ["shape", "dtype"]
    for part, title in (("fwd", "fwd"), ("fwd_bwd", "fwd+bwd")):
        head += [f"{name} {title}" for name in names]
        head += [f"{title} speedup vs {name}" for name in names[1:]]
    head.append(f"{names[0]} path")
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for key in keys:
        rows = [t.get(key) for t in index]
        cells = [f"{key[0]}×{key[1]}", key[2]]
        for part in ("fwd", "fwd_bwd"):
            cells += [cell(r, part) for r in rows]
            cells += [speedup(rows[0], r, part) for r in rows[1:]]
        r0 = rows[0]
        cells.append(("error: " + r0["error"]) if r0 and r0.get("error") else (r0 or {}).get("path") or "–")
        lines.append("| " + " | ".join(cells) + " |")
    md = "\n".join(lines) + "\n"
    print(md, end="")
    out = out or os.path.dirname(os.path.abspath(paths[0]))
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "compare.md"), "w") as f:
        f.write(md)
    print(f"torch_peer.py: wrote {os.path.join(out, 'compare.md')}", file=sys.stderr)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--merge", nargs="+", metavar="JSON", help="join these reports instead of timing")
    ap.add_argument("--peer", default="eager", help="eager (default), compiled, or FILE.py[:FUNCTION]")
    ap.add_argument("--name", default="", help="the report's name and file stem (default: the peer's)")
    ap.add_argument("--shapes", type=parse_shapes, default=parse_shapes(DEFAULT_SHAPES))
    ap.add_argument("--dtypes", type=parse_dtypes, default=parse_dtypes("fp32,fp16,bf16"))
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--samples", type=int, default=50)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--out", default=None, help="folder of the reports (default reports/bench; "
                                                "with --merge, the first report's folder)")
    ap.add_argument("--commit", default="")
    ap.add_argument("--l2-mb", type=float, default=60.0)
    a = ap.parse_args(argv)
    if a.merge is not None:
        if len(a.merge) < 2:
            ap.error("--merge needs at least two reports")
        return merge(a.merge, a.out)
    if a.warmup < 0 or a.samples < 1 or a.calls < 1:
        ap.error("need --warmup >= 0, --samples >= 1, --calls >= 1")
    a.out = a.out or os.path.join("reports", "bench")
    return run_peer(a)


if __name__ == "__main__":
    sys.exit(main())
