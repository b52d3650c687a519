"""torch_peer.py --merge: the side-by-side table compares the peers with normcheck's rows of the
plain operator; the rows `normcheck bench --variants` adds for the variants never stand in for
them (a per-head row of the same shape and dtype once did). Each column is named as a reader
knows the kernel (never by the file stem a run gave it, "peer-1"), and two plugins of one name by
their files."""
import json
import os
import subprocess
import sys
import tempfile

PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_peer.py")


def report(tool, rows, kernel, file=None):
    return {"tool": tool, "kernel": {"name": kernel, "file": file}, "date": "2026-12-06T00:00:00Z",
            "device": {"name": "test device"}, "driver": "1", "commit": "0000000",
            "copy": {"gbps": 3000.0}, "protocol": {"warmup": 1, "samples": 1, "calls": 1,
                                                    "timed_region_fwd": "f", "timed_region_fwd_bwd": "fb"},
            "results": rows}


def row(variant, fwd_us, fwd_bwd_us):
    r = {"m": 128, "n": 257, "dtype": "float32", "fwd_us": fwd_us, "fwd_gbps": 1.0, "fwd_bwd_us": fwd_bwd_us,
         "fwd_bwd_gbps": 1.0, "path": variant + "-path", "error": None}
    if variant:
        r["variant"] = variant
    return r


def merge(d, named_reports):
    paths = []
    for name, r in named_reports:
        paths.append(os.path.join(d, name + ".json"))
        with open(paths[-1], "w") as f:
            json.dump(r, f)
    subprocess.run([sys.executable, "-B", PEER, "--merge", *paths, "--out", d], check=True, capture_output=True)
    return open(os.path.join(d, "compare.md")).read()


with tempfile.TemporaryDirectory() as d:
    ours = report("normcheck", [row("rmsnorm", 4.0, 12.0), row("head_rmsnorm", 5.0, 13.0)], "normcheck-cuda",
                  "libnormcheck_cuda.so")
    # the bench names a torch peer's report by its file stem ("peer-1"); its kernel is torch eager
    peer = report("peer-1", [row("", 16.0, 96.0)], "torch eager")
    table = merge(d, (("normcheck", ours), ("peer-1", peer)))
    lines = [l for l in table.splitlines() if l.startswith("| 128×257")]
    assert len(lines) == 1, table
    cells = [c.strip() for c in lines[0].strip("|").split("|")]
    assert cells[2] == "1 (4.00)" and cells[4] == "4.00×", f"not the plain operator's row: {lines[0]}"
    assert cells[-1] == "rmsnorm-path", lines[0]
    head = [l for l in table.splitlines() if l.startswith("| shape")][0]
    assert "normcheck fwd" in head and "torch eager fwd" in head and "peer-1" not in head, head

    # a plugin peer of the shipped kernel's own name (an older build, say): told apart by its file
    older = report("normcheck", [row("rmsnorm", 6.0, 14.0)], "normcheck-cuda", "libnormcheck_cuda_old.so")
    head = [l for l in merge(d, (("normcheck", ours), ("peer-2", older))).splitlines() if l.startswith("| shape")][0]
    assert "normcheck fwd" in head and "normcheck-cuda (libnormcheck_cuda_old.so) fwd" in head, head
print("torch_peer_merge_test: the plain operator's rows are compared, each peer by its name")
