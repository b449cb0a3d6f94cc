"""Fixtures shared by the whole suite: a throw-away model cache (every test), the ~1M-parameter
`tiny-test` model, and fake OpenAI-compatible and vLLM server processes on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

FAKE_SERVER = Path(__file__).parent / "backends" / "fake_openai_server.py"


@pytest.fixture(scope="session", autouse=True)
def _model_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Build tiny models into a temporary cache, never the user's. SPADE_TEST_MODEL_CACHE names a
    folder to reuse across sessions instead (mutmut runs hundreds of sessions: docs/testing.md)."""
    reuse = os.environ.get("SPADE_TEST_MODEL_CACHE")
    path = Path(reuse) if reuse else tmp_path_factory.mktemp("spade-cache")
    path.mkdir(parents=True, exist_ok=True)
    old = os.environ.get("SPADE_CACHE_DIR")
    os.environ["SPADE_CACHE_DIR"] = str(path)
    yield path
    if old is None:
        os.environ.pop("SPADE_CACHE_DIR", None)
    else:
        os.environ["SPADE_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def torch_threads() -> None:
    """Two torch threads, or SPADE_TEST_THREADS (mutmut runs with 1: two workers share the
    cores, and idle OpenMP threads spinning count against each worker's CPU-time limit)."""
    import torch

    torch.set_num_threads(int(os.environ.get("SPADE_TEST_THREADS", min(2, os.cpu_count() or 1))))


@pytest.fixture
def make_local(torch_threads: None) -> Callable[..., object]:
    """LocalBackend on tiny-test; keyword arguments go to PPOConfig (lr defaults to 1e-3).

    fp32 unless asked: "auto" picks bf16 autocast on CPUs with native bf16, whose rounding the
    numeric tolerances of most tests do not allow (test_precision.py covers bf16-mixed)."""
    from spade.backends.base import PPOConfig
    from spade.backends.local import LocalBackend, LocalConfig

    def make(
        seed: int = 0,
        model: str = "tiny-test",
        lora=None,
        precision: str = "fp32",
        prefix_cache_mb: int = 512,
        prefill_tokens: int = 4096,
        **ppo: object,
    ) -> LocalBackend:
        ppo.setdefault("learning_rate", 1e-3)
        return LocalBackend(
            LocalConfig(
                model=model,
                seed=seed,
                device="cpu",
                precision=precision,
                ppo=PPOConfig(**ppo),  # type: ignore[arg-type]
                lora=lora,
                prefix_cache_mb=prefix_cache_mb,
                prefill_tokens=prefill_tokens,
            )
        )

    return make


@pytest.fixture(scope="session")
def tiny_tokenizer(_model_cache: Path):
    from transformers import AutoTokenizer

    from spade.backends.tiny import tiny_model_path

    return AutoTokenizer.from_pretrained(tiny_model_path("tiny-test"), local_files_only=True)


class Servers:
    """Fake servers in their own processes: `start(*args, port=0)` -> base URL (…/v1),
    `stop(url)`; all are stopped at the end of the test."""

    def __init__(self, script: Path) -> None:
        self.script = script
        self.procs: dict[str, subprocess.Popen[str]] = {}

    def start(self, *args: str, port: int = 0) -> str:
        proc = subprocess.Popen(
            [sys.executable, str(self.script), "--port", str(port), *args],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("PORT "), f"fake server did not start: {line!r}"
        url = f"http://127.0.0.1:{int(line.split()[1])}/v1"
        self.procs[url] = proc
        return url

    def stop(self, url: str) -> None:
        proc = self.procs.pop(url)
        proc.terminate()
        proc.wait(timeout=5)

    def close(self) -> None:
        for url in list(self.procs):
            self.stop(url)


@pytest.fixture
def fake_server() -> Iterator[Callable[..., str]]:
    """start(*args) -> base URL of a fresh fake OpenAI-compatible server."""
    servers = Servers(FAKE_SERVER)
    yield servers.start
    servers.close()


@pytest.fixture
def fake_vllm() -> Iterator[Servers]:
    """Fake vLLM servers (tests/backends/fake_vllm_server.py)."""
    servers = Servers(FAKE_SERVER.with_name("fake_vllm_server.py"))
    yield servers
    servers.close()
