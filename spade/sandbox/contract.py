"""What trusted code and the sandbox agree on: a worker's limits (`SandboxConfig`), the records a
call returns (`LoadInfo`, `StepResult`) and the error every failed call raises (`SandboxError`),
with the values their `kind` fields take (`EnvKind`, `ErrorKind`). Plain values, no processes:
the local `Sandbox` (supervisor.py, session.py) and the Ray hosts (cluster.py) share them."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from spade.sandbox import isolation
from spade.types import EnvKind

"""What an environment file defines: a game (moves in `\\boxed{}`) or a tool-use environment."""
ErrorKind = Literal["timeout", "crashed", "exception", "invalid", "protocol", "closed"]
"""How a call failed; `SandboxError` lists what each means."""

DEFAULT_PRELOAD = (
    "math random re json itertools collections functools string copy heapq operator statistics "
    "typing inspect fractions decimal bisect dataclasses enum textwrap hashlib datetime time "
    "numbers "
    "array struct cmath difflib pprint abc contextlib types warnings weakref io base64 "
    "unicodedata zlib secrets calendar graphlib csv _strptime locale fnmatch queue threading "
    "traceback numpy math_verify"
).split()


@dataclasses.dataclass(frozen=True)
class SandboxConfig:
    """Limits and behaviour of sandbox workers. Every limit applies per worker (one session)."""

    call_timeout_s: float = 5.0
    """Deadline of one reset, step, tool call or solution() call."""
    load_timeout_s: float = 10.0
    """Deadline for executing the file and constructing the environment, timed from when the
    worker is ready (its start is bounded by `start_timeout_s`)."""
    start_timeout_s: float = 30.0
    """Deadline for the sandbox's own start of a worker: the zygote's fork (a fresh interpreter
    in strict mode) until the worker has isolated itself and said hello. No program code runs
    before that, so this is not the program's deadline and is generous: on a loaded 2-core
    machine (hostile programs in the sessions beside it, a Ray node starting) a fork took over
    3 s, and a start timed by the program's `load_timeout_s` was failed as the program's fault
    (CI, session 21)."""
    episode_timeout_s: float = 120.0
    """Time a session's environment may spend in calls, all calls together (the time a model
    takes between calls does not count)."""
    cpu_seconds: int = 60
    """CPU-time rlimit of a worker (hard limit + 1 s delivers SIGKILL)."""
    memory_mb: int = 1024
    """Address-space rlimit of a worker (the zygote's mappings, numpy included, count too)."""
    cgroup_memory_mb: int = 256
    """Memory cgroup limit of a worker, where a cgroup hierarchy is writable."""
    pids_max: int = 16
    """Processes and threads per worker (cgroup pids controller)."""
    nproc: int = 4096
    """RLIMIT_NPROC after the uid drop (counts every process of the sandbox uid: a backstop)."""
    nofile: int = 64
    """Open file descriptors per worker."""
    file_mb: int = 8
    """Largest file a worker may write (RLIMIT_FSIZE)."""
    tmpfs_mb: int = 64
    """Size of each worker's private scratch tmpfs (its working directory and $TMPDIR)."""
    max_reply_bytes: int = 1 << 20
    """Largest reply frame accepted from a worker; a larger one kills it."""
    max_output_bytes: int = 64 << 10
    """Captured stdout+stderr kept per session; the rest is read and dropped."""
    max_observation_chars: int = 20_000
    """Largest observation accepted from an environment."""
    reward_bound: float = 10.0
    """Rewards must be finite and within [-reward_bound, reward_bound]."""
    uid: int = isolation.NOBODY
    """The unprivileged uid/gid workers run as (when started as root)."""
    require_full_isolation: bool = False
    """Refuse to start unless every isolation layer is active."""
    preload: tuple[str, ...] = tuple(DEFAULT_PRELOAD)
    """Modules the zygote imports before forking (workers may not be able to import later)."""
    warm_workers: int = 4
    """Forked, isolated workers kept waiting for code, so a session starts without a fork."""


class SandboxError(Exception):
    """A call into an environment failed. `kind` says how; the worker may be dead afterwards.

    kinds (`ErrorKind`): "timeout", "crashed" (worker died), "exception" (the environment
    raised), "invalid" (a reply that breaks the contract), "protocol" (malformed or oversized
    frame, unsolicited reply), "closed" (the session was already closed).
    """

    def __init__(self, kind: ErrorKind, message: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.detail = detail


@dataclasses.dataclass(frozen=True)
class LoadInfo:
    class_name: str
    kind: EnvKind
    tools: tuple[dict[str, Any], ...]
    has_solution: bool
    max_turns: int = 0
    """The episode's turn cap: the game's own `max_turns`, at most the budget (0: the budget)."""


@dataclasses.dataclass(frozen=True)
class StepResult:
    observation: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]
