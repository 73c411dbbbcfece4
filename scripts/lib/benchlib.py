"""What scripts/bench and scripts/bench-profile share: where things are, the suite's spec (read from
the Swift in Benchmarks/Sources/FastFutureBenchmarkSpec/Spec.swift through the PrintBenchmarkSpec
executable), building a product of the benchmark package, and the identity of the measured code.
Python 3 standard library only."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH_PACKAGE = os.path.join(ROOT, "Benchmarks")
RESULTS = os.path.join(ROOT, "bench-results")


def build_products(products, log_path=None):
    """Builds `products` of the benchmark package (release) and returns its bin folder. Output goes
    to `log_path` if given (else to the terminal); a failed build exits with its status."""
    swift_build = ["swift", "build", "-c", "release", "--package-path", BENCH_PACKAGE]
    out = open(log_path, "w") if log_path else None
    try:
        for product in products:
            rc = subprocess.call(swift_build + ["--product", product], stdout=out,
                                 stderr=subprocess.STDOUT if out else None)
            if rc != 0:
                where = f"; see {os.path.relpath(log_path, ROOT)}" if log_path else ""
                print(f"error: building {product} failed{where}", flush=True)
                sys.exit(rc)
    finally:
        if out:
            out.close()
    return subprocess.run(swift_build + ["--show-bin-path"], capture_output=True, text=True,
                          check=True).stdout.strip()


def load_spec(log_path=None):
    """The suite's spec as a dict: `sizes`, `implementations`, `scenarios`, `targets`."""
    bin_dir = build_products(["PrintBenchmarkSpec"], log_path)
    return json.loads(subprocess.run([os.path.join(bin_dir, "PrintBenchmarkSpec")], capture_output=True,
                                     text=True, check=True).stdout)


def _git(*args):
    return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True).stdout


def git_commit():
    """The measured commit, as both scripts record it: the short hash, marked when Sources/ has
    uncommitted changes."""
    try:
        dirty = _git("status", "--porcelain", "--", "Sources").strip()
        return _git("rev-parse", "--short", "HEAD").strip() + (" (+ uncommitted changes in Sources/)" if dirty else "")
    except OSError:
        return "unknown"


def code_id():
    """What instruction counts depend on: the git trees of Sources/ and the benchmark sources (not
    the commit, so a commit that touches only scripts or docs keeps compare.json valid), or None
    if any of them has uncommitted changes."""
    try:
        paths = ["Sources", "Benchmarks/Sources", "Benchmarks/Benchmarks"]
        if _git("status", "--porcelain", "--", *paths).strip():
            return None
        return "+".join(_git("rev-parse", *[f"HEAD:{p}" for p in paths]).split()) or None
    except OSError:
        return None
