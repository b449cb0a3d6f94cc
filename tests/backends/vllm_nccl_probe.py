"""Run with a Python that has vLLM (test_vllm_real.py does): builds vLLM's real NCCL trainer
engine through `spade.backends.weight_sync._vllm_nccl_engine` against a fake vLLM server and
prints, as JSON, the control-plane requests the server received and where the engine stopped
(without a GPU: at the NCCL endpoint, after the worker init was sent)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # this checkout's spade, not an installed one


def main() -> None:
    import torch

    from spade.backends.vllm import VLLMConfig
    from spade.backends.weight_sync import ControlClient, _vllm_nccl_engine

    server = [sys.executable, str(HERE / "fake_vllm_server.py"), "--world-size", "1"]
    proc = subprocess.Popen(server, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    root = f"http://127.0.0.1:{int(proc.stdout.readline().split()[1])}"
    try:
        client = ControlClient(root, VLLMConfig((root + "/v1",), "m", "t", timeout_s=20), None)
        init = {"master_address": "127.0.0.1", "master_port": 29611, "world_size": 2, "rank": 0}
        stopped = None
        try:
            _vllm_nccl_engine(init, client, torch.nn.Linear(4, 4))
        except Exception as e:  # noqa: BLE001 (reported, not handled)
            stopped = f"{type(e).__name__}: {e}"
        with urllib.request.urlopen(root + "/requests") as r:
            received = json.loads(r.read())
    finally:
        proc.terminate()
    print(json.dumps({"stopped": stopped, "received": received}))


if __name__ == "__main__":
    main()
