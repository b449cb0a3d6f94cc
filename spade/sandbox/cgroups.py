"""cgroups of sandbox processes: the per-zygote (or per strict worker) parent groups, each
child's own group with its pids and memory limits (joined in the child, before the uid drop),
their removal, and the sweep of groups that killed sandboxes left. cgroup v1 (`pids`, `memory`)
where writable, else v2; every function degrades to a reason or a no-op where neither is.

Standard library only: like isolation.py it runs in the worker, which starts without
site-packages (imported there as `cgroups`, in trusted code as `spade.sandbox.cgroups`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re

CGROUP_V1 = "/sys/fs/cgroup"


def _cgroup_v2_root() -> str | None:
    """Our own cgroup directory on a pure v2 host, if it is writable."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("0::"):
            path = "/sys/fs/cgroup" + line[3:]
            if os.path.exists(os.path.join(path, "cgroup.subtree_control")):
                return path
    return None


def cgroup_parents(tag: str) -> dict[str, str]:
    """Create the per-zygote parent groups; returns {controller: dir} for those available."""
    made: dict[str, str] = {}
    for ctl in ("pids", "memory"):
        base = os.path.join(CGROUP_V1, ctl)
        if os.path.exists(os.path.join(base, "cgroup.procs")) and os.access(base, os.W_OK):
            path = os.path.join(base, "spade", tag)
            try:
                os.makedirs(path, exist_ok=True)
                made[ctl] = path
            except OSError:
                pass
    if not made:
        root = _cgroup_v2_root()
        if root is not None:
            try:
                with open(os.path.join(root, "cgroup.controllers")) as f:
                    controllers = f.read().split()
                if "pids" in controllers or "memory" in controllers:
                    path = os.path.join(root, f"spade-{tag}")
                    os.makedirs(path, exist_ok=True)
                    enable = " ".join(f"+{c}" for c in ("pids", "memory") if c in controllers)
                    with open(os.path.join(path, "cgroup.subtree_control"), "w") as f:
                        f.write(enable)
                    made["v2"] = path
            except OSError:
                pass
    return made


def group_tag(kind: str, pid: int, namespace: int) -> str:
    """The name of a sandbox process's parent groups (`cgroup_parents`): `kind` ("z" a zygote,
    "s" a strict-mode worker), the inode of its pid namespace and its pid, as scratch roots are
    named (`lifecycle.scratch_prefix`). Containers may share one cgroup hierarchy while each sees
    its own pids: with the namespace in the name, no sandbox takes another container's live group
    for a dead one."""
    return f"{kind}{namespace}-{pid}"


def sweep_stale_groups(namespace: int) -> int:
    """Remove the groups of this pid namespace's sandbox processes that are gone (`spade/<tag>`
    and its children, or `spade-<tag>` on v2; `group_tag`), such as a zygote killed with SIGKILL
    leaves; the number of top-level groups removed. Only empty groups can be removed, a pid that
    is in use (even reused) keeps its group, and another namespace's groups are left alone (a
    name without a namespace, from before `group_tag` held one, counts as this namespace's)."""
    name = r"[sz](?:(\d+)-)?(\d+)"
    tops = [(os.path.join(CGROUP_V1, ctl, "spade"), name) for ctl in ("pids", "memory")]
    root = _cgroup_v2_root()
    if root is not None:
        tops.append((root, "spade-" + name))
    removed = 0
    for top, pattern in tops:
        try:
            entries = os.listdir(top)
        except OSError:
            continue
        for entry in entries:
            match = re.fullmatch(pattern, entry)
            if match is None:
                continue
            theirs, pid = match.groups()
            if (theirs is not None and theirs != str(namespace)) or os.path.exists(f"/proc/{pid}"):
                continue
            group = os.path.join(top, entry)
            with contextlib.suppress(OSError):
                for child in os.scandir(group):
                    if child.is_dir():
                        os.rmdir(child.path)
                os.rmdir(group)
                removed += 1
    return removed


def join_cgroup(parents: dict[str, str], name: str, pids_max: int, memory_bytes: int) -> str | None:
    """Put the calling process in fresh child groups with limits; None on success, else reason."""
    if not parents:
        return "no writable cgroup hierarchy with pids or memory controllers"
    pid = str(os.getpid())
    try:
        for ctl, parent in parents.items():
            path = os.path.join(parent, name)
            os.mkdir(path)
            limits = {
                "pids": {"pids.max": str(pids_max)},
                "memory": {"memory.limit_in_bytes": str(memory_bytes)},
                "v2": {"pids.max": str(pids_max), "memory.max": str(memory_bytes)},
            }[ctl]
            for fname, value in limits.items():
                if os.path.exists(os.path.join(path, fname)):
                    with open(os.path.join(path, fname), "w") as f:
                        f.write(value)
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write(pid)
    except OSError as exc:
        return f"cgroup setup failed: {exc}"
    return None


def remove_cgroup(parents: dict[str, str], name: str) -> bool:
    """Remove a worker's groups; False while the kernel still counts an exiting task in one
    (rmdir fails with EBUSY for a moment after the reap under load): call again later."""
    done = True
    for parent in parents.values():
        try:
            os.rmdir(os.path.join(parent, name))
        except FileNotFoundError:
            pass
        except OSError as exc:
            if exc.errno == errno.EBUSY:
                done = False
    return done


def remove_cgroup_tree(tag: str, name: str) -> bool:
    """Remove a strict-mode worker's groups (`cgroup_parents(tag)` + `join_cgroup(.., name)`);
    False while the kernel still holds one (EBUSY for a moment after the exit): call again."""
    parents = [os.path.join(CGROUP_V1, ctl, "spade", tag) for ctl in ("pids", "memory")]
    root = _cgroup_v2_root()
    if root is not None:
        parents.append(os.path.join(root, f"spade-{tag}"))
    gone = True
    for parent in parents:
        for path in (os.path.join(parent, name), parent):
            try:
                os.rmdir(path)
            except OSError as exc:
                gone = gone and exc.errno != errno.EBUSY
    return gone
