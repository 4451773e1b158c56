"""Run the long profile of the property tests: CHUNKS pytest processes, one hypothesis seed each.

    python -m tests.property.run_long [--chunks 10] [--first 1] [--log-dir /tmp/symgrad-long]

Each chunk runs every property test with SYMGRAD_PROPERTY_PROFILE=long (about 1,000
examples; see EXAMPLES["long"] in conftest.py) and ``--hypothesis-seed=<chunk>``, in its own
process (memory stays bounded: every compiled kernel stays loaded until its process exits).
Logs and a JSON report per chunk go to the log directory; the totals are printed at the end
and after every chunk (so a run stopped early still says how far it got).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=10)
    ap.add_argument("--first", type=int, default=1, help="seed of the first chunk (to resume)")
    ap.add_argument("--log-dir", default="/tmp/symgrad-property-long")
    args = ap.parse_args(argv)
    logs = Path(args.log_dir)
    logs.mkdir(parents=True, exist_ok=True)
    failed_chunks = []
    for seed in range(args.first, args.first + args.chunks):
        report = logs / f"chunk{seed}.json"
        env = dict(os.environ, SYMGRAD_PROPERTY_PROFILE="long", SYMGRAD_PROPERTY_REPORT=str(report))
        t = time.time()
        with open(logs / f"chunk{seed}.log", "w") as fh:
            r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:warnings", "tests/property",
                                f"--hypothesis-seed={seed}", "-k", "not regressions"],
                               cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            failed_chunks.append(seed)
        print(f"chunk {seed}: exit {r.returncode} in {time.time() - t:.0f} s", flush=True)
        summarize(logs, failed_chunks)
    return 1 if failed_chunks else 0


def summarize(logs: Path, failed_chunks) -> None:
    examples: dict = {}
    programs: set = set()
    events: dict = {}
    times: dict = {}
    n = 0
    for path in sorted(logs.glob("chunk*.json")):
        rep = json.loads(path.read_text())
        n += 1
        for k, v in rep["examples"].items():
            examples[k] = examples.get(k, 0) + v
        programs.update(rep["programs"])
        for k, v in rep["events"].items():
            events[k] = events.get(k, 0) + v
        for k, v in rep["time"].items():
            times[k] = times.get(k, 0.0) + v
    print(f"  {n} chunk(s) reported: {sum(examples.values())} examples, {len(programs)} distinct programs; "
          f"failed chunks: {failed_chunks or 'none'}", flush=True)
    for k, v in sorted(examples.items()):
        print(f"    {k}: {v}", flush=True)
    for k, v in sorted(events.items()):
        print(f"    {k}: {v}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
