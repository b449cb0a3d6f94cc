"""Isolation layers applied inside a sandbox worker before it runs environment code.

Standard library only (ctypes for prctl, Landlock, seccomp and unshare): this module runs in the
worker, which starts without site-packages. Every function either applies its layer or returns the
reason it could not, so `spade doctor` and the run log can say which layers are active; the
supervisor decides whether a missing layer is fatal (`SandboxConfig.require_full_isolation`).

Layers (SANDBOX.md, "Design that follows"):
- namespaces: network, IPC, UTS and mount, unshared once by the zygote (children inherit them);
  a size-capped tmpfs over the scratch root, so files written there vanish with the namespace;
- per-child: new session, parent-death signal, cgroup (v1 or v2 pids + memory: cgroups.py), rlimits,
  no_new_privs, Landlock (read-only interpreter paths, read-write scratch, no TCP, scoped
  signals and abstract sockets), unprivileged uid/gid, seccomp (no exec, no fork, no sockets but
  AF_UNIX, no signals to other processes, no ptrace / mount / namespaces / io_uring / bpf ...).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import resource
import signal

NOBODY = 65534

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long

PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWNET = 0x40000000
CLONE_THREAD = 0x00010000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8


def _errmsg(what: str) -> str:
    err = ctypes.get_errno()
    return f"{what}: {os.strerror(err)} (errno {err})"


def prctl(option: int, arg: int) -> None:
    if _libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), _errmsg(f"prctl({option})"))


def set_parent_death_signal() -> None:
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


# --- namespaces (zygote, once) --------------------------------------------------------------


def unshare_namespaces(scratch_root: str, tmpfs_bytes: int) -> dict[str, str | None]:
    """Unshare net/ipc/uts/mount namespaces and mount a capped tmpfs on scratch_root.

    Returns {layer: None if active else the reason}.
    """
    report: dict[str, str | None] = {}
    if _libc.unshare(CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) == 0:
        report["network_namespace"] = None
    else:
        report["network_namespace"] = _errmsg("unshare(NEWNET|NEWIPC|NEWUTS)")
    if _libc.unshare(CLONE_NEWNS) != 0:
        report["private_tmpfs"] = _errmsg("unshare(NEWNS)")
        return report
    # Make every mount private first, or the tmpfs would propagate back to the host.
    if _libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        report["private_tmpfs"] = _errmsg("mount --make-rprivate /")
        return report
    opts = f"size={tmpfs_bytes},nr_inodes=4096,mode=0711".encode()
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    if _libc.mount(b"spade-scratch", scratch_root.encode(), b"tmpfs", flags, opts) != 0:
        report["private_tmpfs"] = _errmsg(f"mount tmpfs on {scratch_root}")
    else:
        report["private_tmpfs"] = None
    return report


def private_scratch(path: str, size_bytes: int, uid: int) -> str | None:
    """Mount a tmpfs of `size_bytes` on this worker's scratch dir, in its own mount namespace.

    One worker filling its scratch space then cannot starve the others; the mount vanishes
    with the worker. Returns None on success, else the reason.
    """
    if _libc.unshare(CLONE_NEWNS) != 0:
        return _errmsg("unshare(NEWNS)")
    opts = f"size={size_bytes},nr_inodes=1024,mode=0700,uid={uid},gid={uid}".encode()
    if (
        _libc.mount(
            b"spade-worker", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts
        )
        != 0
    ):
        return _errmsg(f"mount tmpfs on {path}")
    return None


# --- rlimits --------------------------------------------------------------------------------


def set_rlimits(memory_bytes: int, cpu_seconds: int, file_bytes: int, nofile: int) -> None:
    limits = {
        resource.RLIMIT_AS: memory_bytes,
        resource.RLIMIT_CPU: cpu_seconds,
        resource.RLIMIT_FSIZE: file_bytes,
        resource.RLIMIT_NOFILE: nofile,
        resource.RLIMIT_CORE: 0,
    }
    for which, value in limits.items():
        # CPU: soft limit sends SIGXCPU (ignorable), the hard limit one second later SIGKILLs.
        hard = value + 1 if which == resource.RLIMIT_CPU else value
        resource.setrlimit(which, (value, hard))
    # Writing past RLIMIT_FSIZE then fails with EFBIG instead of killing the worker.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def set_nproc_limit(nproc: int) -> None:
    """RLIMIT_NPROC is ignored for root: call after the uid drop (it counts per uid)."""
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))


# --- Landlock -------------------------------------------------------------------------------

SYS_landlock_create_ruleset = 444
SYS_landlock_add_rule = 445
SYS_landlock_restrict_self = 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1, 2, 4, 8
# rights that apply to a single file: execute, write, read, truncate (ABI 3), ioctl_dev (ABI 5)
_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | (1 << 14) | (1 << 15)
_FS_RIGHTS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}


def landlock_abi() -> int:
    abi = _libc.syscall(SYS_landlock_create_ruleset, None, 0, LANDLOCK_CREATE_RULESET_VERSION)
    return max(int(abi), 0)


def apply_landlock(read_paths: list[str], write_paths: list[str]) -> str | None:
    """Restrict the filesystem to read-only `read_paths` and read-write `write_paths`.

    With ABI >= 4 TCP bind/connect are denied; with ABI >= 6 signals and abstract unix sockets
    are scoped to the sandbox. Returns None when applied, else the reason.
    """
    abi = landlock_abi()
    if abi < 1:
        return _errmsg("Landlock unavailable")
    fs_all = _FS_RIGHTS_BY_ABI[max(k for k in _FS_RIGHTS_BY_ABI if k <= abi)]
    attr = _RulesetAttr(fs_all, 3 if abi >= 4 else 0, 3 if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    fd = _libc.syscall(SYS_landlock_create_ruleset, ctypes.byref(attr), size, 0)
    if fd < 0:
        return _errmsg("landlock_create_ruleset")
    try:
        read_rights = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
        rules = [(p, read_rights) for p in read_paths] + [(p, fs_all) for p in write_paths]
        for path, rights in rules:
            try:
                pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a missing optional path is not an error
            try:
                if not os.path.isdir(path):  # directory-only rights are invalid on files
                    rights &= _FILE_RIGHTS
                rule = _PathBeneathAttr(rights, pfd)
                if (
                    _libc.syscall(
                        SYS_landlock_add_rule, fd, LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(rule), 0
                    )
                    != 0
                ):
                    return _errmsg(f"landlock_add_rule({path})")
            finally:
                os.close(pfd)
        if _libc.syscall(SYS_landlock_restrict_self, fd, 0) != 0:
            return _errmsg("landlock_restrict_self")
    finally:
        os.close(fd)
    return None


# --- seccomp (libseccomp through ctypes) ----------------------------------------------------

SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_NE, SCMP_CMP_EQ, SCMP_CMP_MASKED_EQ = 1, 4, 7


def _scmp_errno(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


_DENIED_SYSCALLS = """
    execve execveat fork vfork ptrace process_vm_readv process_vm_writev pidfd_open
    pidfd_send_signal pidfd_getfd mount umount2 pivot_root chroot unshare setns bpf
    perf_event_open keyctl add_key request_key init_module finit_module delete_module
    kexec_load kexec_file_load reboot swapon swapoff settimeofday clock_settime adjtimex
    clock_adjtime iopl ioperm personality userfaultfd io_uring_setup io_uring_enter
    io_uring_register open_by_handle_at name_to_handle_at fanotify_init acct quotactl syslog
    vhangup move_mount open_tree fsopen fsconfig fsmount fspick mount_setattr tkill
    socket shmget shmat shmctl shmdt msgget msgsnd msgrcv msgctl semget semop semtimedop semctl
    mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify mq_getsetattr
""".split()
# socket() is denied for every family: AF_UNIX would reach host sockets by path (/dev/log,
# D-Bus, X11), which neither Landlock nor the network namespace covers; socketpair() stays.
# SysV/POSIX IPC is denied: objects would outlive the session and connect sessions.


def load_libseccomp() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError:
        return None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    ]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    return lib


def apply_seccomp(lib: ctypes.CDLL | None) -> str | None:
    """Install the syscall filter (call last: it forbids exec and fork). None or the reason."""
    if lib is None:
        return "libseccomp.so.2 not found"
    ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
    if not ctx:
        return "seccomp_init failed"
    me = os.getpid()
    eperm = _scmp_errno(errno.EPERM)

    def rule(name: str, action: int, *cmps: tuple[int, int, int, int]) -> str | None:
        nr = lib.seccomp_syscall_resolve_name(name.encode())
        if nr < 0:
            return None  # not a syscall on this architecture (fork on aarch64...)
        arr = (_ArgCmp * max(len(cmps), 1))(*[_ArgCmp(*c) for c in cmps])
        rc = lib.seccomp_rule_add_array(ctx, action, nr, len(cmps), arr)
        return None if rc == 0 else f"seccomp rule {name}: {os.strerror(-rc)}"

    try:
        problems = [rule(name, eperm) for name in _DENIED_SYSCALLS]
        problems += [
            # threads (CLONE_THREAD) are allowed, new processes are not
            rule("clone", eperm, (0, SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0)),
            # glibc falls back from clone3 to clone on ENOSYS; clone3's flags are not inspectable
            rule("clone3", _scmp_errno(errno.ENOSYS)),
            rule("kill", eperm, (0, SCMP_CMP_NE, me, 0)),
            rule("tgkill", eperm, (0, SCMP_CMP_NE, me, 0)),
            rule("rt_sigqueueinfo", eperm, (0, SCMP_CMP_NE, me, 0)),
            rule("rt_tgsigqueueinfo", eperm, (0, SCMP_CMP_NE, me, 0)),
            rule("prctl", eperm, (0, SCMP_CMP_EQ, PR_SET_PDEATHSIG, 0)),
        ]
        failed = [p for p in problems if p]
        if failed:
            return "; ".join(failed)
        rc = lib.seccomp_load(ctx)
        return None if rc == 0 else f"seccomp_load: {os.strerror(-rc)}"
    finally:
        lib.seccomp_release(ctx)


# --- uid drop -------------------------------------------------------------------------------


def drop_privileges(uid: int = NOBODY, gid: int = NOBODY) -> str | None:
    if os.geteuid() != 0:
        return "not started as root: keeping the current unprivileged uid"
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    return None
