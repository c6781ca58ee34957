"""Header reading, measured: eagle3_lint.weights.read_header against safetensors' safe_open
(docs/drafter-checkpoints.md).

Writes a ~1 GB safetensors file of 300 tensors with the safetensors package (numpy needed: pip install
safetensors numpy), then times both readers on it. Usage: python scripts/bench_weights.py [DIR]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time


def main() -> None:
    import numpy as np
    from safetensors.numpy import save_file

    from eagle3_lint.weights import read_header

    folder = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="bench-weights-")
    path = os.path.join(folder, "model.safetensors")
    if not os.path.exists(path):
        save_file({f"layers.{i}.weight": np.zeros((1024, 832), dtype=np.float32) for i in range(300)}, path)
    print(f"{path}: {os.path.getsize(path) / 1e9:.2f} GB")
    reps = 200
    t = time.perf_counter()
    for _ in range(reps):
        read_header(path)
    print(f"eagle3_lint.weights.read_header: {(time.perf_counter() - t) / reps * 1e3:.3f} ms per file")
    # safe_open in a fresh interpreter, so the import of numpy it needs is counted once.
    code = ("import time; t=time.perf_counter(); from safetensors import safe_open\n"
            f"with safe_open({path!r}, framework='numpy') as f: [f.get_slice(k).get_shape() for k in f.keys()]\n"
            "t1=time.perf_counter(); print(f'first safe_open (imports included): {(t1-t)*1e3:.1f} ms')\n"
            f"t=time.perf_counter()\nfor _ in range({reps}):\n"
            f"    with safe_open({path!r}, framework='numpy') as f: [f.get_slice(k).get_shape() for k in f.keys()]\n"
            f"print(f'safe_open + get_slice().get_shape(): {{(time.perf_counter()-t)/{reps}*1e3:.3f}} ms per file')\n"
            "import sys; print('numpy imported:', 'numpy' in sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)


if __name__ == "__main__":
    main()
