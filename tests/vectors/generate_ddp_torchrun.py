"""Generate tests/vectors/ddp_torchrun.json: the per-epoch losses PyTorch's torchrun +
DDP gives for tests/python/distributed_jobs/torchrun_style.py on 2 processes.

Run from the repository root with the separate PyTorch environment:

    .torch-venv/bin/python tests/vectors/generate_ddp_torchrun.py

The script is run with its ``import rustgrad as torch`` line replaced by ``import torch``
(its only rustgrad-specific line), under ``torchrun --nproc-per-node 2`` with the gloo
backend on the loopback interface and one thread per process. Read by
tests/python/test_distributed_ddp.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "python" / "distributed_jobs" / "torchrun_style.py"
NPROC = 2


def main() -> None:
    source = SCRIPT.read_text()
    assert source.count("import rustgrad as torch\n") == 1
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "torchrun_style_torch.py"
        script.write_text(source.replace("import rustgrad as torch\n", "import torch\n"))
        env = dict(os.environ, OMP_NUM_THREADS="1")
        proc = subprocess.run(
            [
                str(Path(sys.executable).parent / "torchrun"),
                f"--nproc-per-node={NPROC}",
                "--master-addr=127.0.0.1",
                "--master-port=29611",
                str(script),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
    losses = [float(v) for v in re.findall(r"^epoch \d+ loss (\S+)", proc.stdout, re.M)]
    assert losses, proc.stdout + proc.stderr
    out = Path(__file__).with_name("ddp_torchrun.json")
    out.write_text(json.dumps({"nproc": NPROC, "losses": losses}, indent=1) + "\n")


if __name__ == "__main__":
    main()
