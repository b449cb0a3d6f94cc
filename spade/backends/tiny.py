"""`tiny-test`: a ~1M-parameter decoder built locally in a second, for fast tests (no download).

    from spade.backends.tiny import tiny_model_path
    path = tiny_model_path("tiny-test")        # builds once (~1 s), then reuses the cache
    LocalBackend(LocalConfig(model="tiny-test"))  # the same thing through the backend

A preset is a Qwen2- (or Llama-) style config plus a byte-level BPE tokenizer trained with
`tokenizers` on text the package ships: the seed environments (spade/seeds/), the grounding
corpus (spade/data/) and spade/tokenizer_data/. Digits are split one per token (arithmetic games).
The result is an ordinary Hugging Face model directory (config.json, model.safetensors,
tokenizer.json with a ChatML chat template), cached under the user cache directory in a folder
keyed by the preset, its seed and a hash of the training text, so changing any of them builds a
new one and two processes never share a half-written folder.

Its weights are random: it exercises every code path (sampling, training, checkpoints) at unit-test
speed but writes nothing useful. The real default model is SmolLM2-135M-Instruct
(spade.backends.smollm); the from-scratch 6M `tiny` and 26M `small` presets that used to be the
default were removed once a pretrained model could be installed offline (after 22 minutes of
warm start `tiny` still wrote no valid environment).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from spade.backends._hf import quiet_progress
from spade.backends.chat import DEFAULT_CHAT_TEMPLATE

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
FORMAT_VERSION = 1  # bump when the build recipe below changes


@dataclass(frozen=True)
class TinyConfig:
    """A locally built model: architecture, tokenizer size and the seed of its initial weights."""

    name: str
    arch: str = "qwen2"
    """"qwen2" (biases on q/k/v) or "llama"."""
    vocab_size: int = 4096
    hidden_size: int = 256
    num_layers: int = 6
    num_heads: int = 4
    num_kv_heads: int = 2
    intermediate_size: int = 768
    max_positions: int = 8192
    rope_theta: float = 10000.0
    seed: int = 0

    def key(self, corpus_hash: str) -> str:
        payload = json.dumps(
            {**asdict(self), "corpus": corpus_hash, "v": FORMAT_VERSION}, sort_keys=True
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


PRESETS: dict[str, TinyConfig] = {
    # ~1.0M parameters: tests.
    "tiny-test": TinyConfig(
        name="tiny-test", vocab_size=2048, hidden_size=128, num_layers=4, intermediate_size=384
    ),
}


def cache_dir() -> Path:
    """$SPADE_CACHE_DIR, else the platform's user cache dir (platformdirs), else ~/.cache/spade."""
    if env := os.environ.get("SPADE_CACHE_DIR"):
        return Path(env)
    try:
        import platformdirs

        return Path(platformdirs.user_cache_dir("spade"))
    except ImportError:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return Path(base) / "spade"


def resolve(preset: str | TinyConfig, seed: int | None = None) -> TinyConfig:
    if isinstance(preset, TinyConfig):
        config = preset
    elif preset in PRESETS:
        config = PRESETS[preset]
    else:
        raise ValueError(f"unknown tiny preset {preset!r}; known: {sorted(PRESETS)}")
    return config if seed is None else replace(config, seed=seed)


def corpus_texts() -> list[str]:
    """The shipped text the tokenizer is trained on, in a fixed order."""
    texts: list[str] = []
    for pattern in ("seeds/**/*.py", "seeds/**/*.md", "tokenizer_data/*.txt"):
        for path in sorted(PACKAGE_ROOT.glob(pattern)):
            texts.append(path.read_text(encoding="utf-8"))
    for path in sorted(PACKAGE_ROOT.glob("data/*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                texts.append(str(json.loads(line).get("text", "")))
    if not texts:
        raise FileNotFoundError(f"no tokenizer training text under {PACKAGE_ROOT}")
    return texts


def corpus_hash(texts: list[str]) -> str:
    h = hashlib.sha256()
    for t in texts:
        h.update(hashlib.sha256(t.encode()).digest())
    return h.hexdigest()[:16]


def train_tokenizer(texts: list[str], vocab_size: int):  # -> PreTrainedTokenizerFast
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    hf = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token=None
    )
    hf.chat_template = DEFAULT_CHAT_TEMPLATE
    return hf


def build_model(
    config: TinyConfig, vocab_size: int, eos_id: int, pad_id: int
):  # -> PreTrainedModel
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    common: dict[str, Any] = dict(
        vocab_size=vocab_size,
        hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_heads,
        num_key_value_heads=config.num_kv_heads,
        max_position_embeddings=config.max_positions,
        rope_theta=config.rope_theta,
        tie_word_embeddings=True,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        bos_token_id=None,
        attention_dropout=0.0,
    )
    hf_config: Any
    cls: Any
    if config.arch == "qwen2":
        hf_config, cls = Qwen2Config(**common), Qwen2ForCausalLM
    elif config.arch == "llama":
        hf_config, cls = LlamaConfig(**common), LlamaForCausalLM
    else:
        raise ValueError(f"unknown arch {config.arch!r}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        return cls(hf_config)


def tiny_model_path(
    preset: str | TinyConfig = "tiny-test", seed: int | None = None, root: Path | None = None
) -> Path:
    """The cached model directory for a preset, building it first if needed."""
    config = resolve(preset, seed)
    texts = corpus_texts()
    target = (root or cache_dir()) / "models" / f"{config.name}-{config.key(corpus_hash(texts))}"
    if (target / "spade_tiny.json").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        tokenizer = train_tokenizer(texts, config.vocab_size)
        model = build_model(
            config,
            len(tokenizer),
            tokenizer.convert_tokens_to_ids("<|im_end|>"),
            tokenizer.pad_token_id,
        )
        with quiet_progress():
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
        meta = {
            "preset": asdict(config),
            "corpus_hash": corpus_hash(texts),
            "format": FORMAT_VERSION,
            "parameters": sum(p.numel() for p in model.parameters()),
        }
        (tmp / "spade_tiny.json").write_text(json.dumps(meta, indent=2))
        try:
            tmp.rename(target)
        except OSError:  # another process finished first: use theirs
            if not (target / "spade_tiny.json").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
