"""Calls fork() with hand-written machine code, bypassing glibc and the native syscall table:
through the 32-bit `int 0x80` ABI ("i386", the default), the x32 ABI ("x32"), and the native
x86-64 `syscall` instruction ("native"). A seccomp filter written only for the native table
would let the first two through.

threat: seccomp bypass through alternative syscall ABIs (process creation)
expected: the worker is killed by SIGSYS for a foreign ABI (SandboxError kind "crashed") or the
  call fails (native: -1, EPERM); no process is ever created; validator check "resource"
safety: x86-64 only (elsewhere it reports "unsupported"); a child that is created exits at once
  and is reaped
"""
import ctypes
import json
import mmap
import os
import platform

CODE = {
    # mov eax, 2 (i386 fork); int 0x80; movsxd rax, eax; ret
    "i386": b"\xb8\x02\x00\x00\x00\xcd\x80\x48\x63\xc0\xc3",
    # mov eax, 0x40000039 (x32 fork); syscall; ret
    "x32": b"\xb8\x39\x00\x00\x40\x0f\x05\xc3",
    # mov eax, 57 (x86-64 fork); syscall; ret
    "native": b"\xb8\x39\x00\x00\x00\x0f\x05\xc3",
}


def _call_machine_code(code):
    buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    buf.write(code)
    address = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    return ctypes.CFUNCTYPE(ctypes.c_long)(address)()


class SyscallAbiEnv:
    def __init__(self, max_turns=25, abi="i386"):
        self.max_turns = max_turns
        self.abi = abi

    def reset(self, seed=None):
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        if platform.machine() != "x86_64":
            return json.dumps({"ret": "unsupported"}), 0.0, True, False, {}
        ret = _call_machine_code(CODE[self.abi])
        if ret == 0:  # the child of a fork that got through
            os._exit(0)
        if ret > 0:
            os.waitpid(ret, 0)
        return json.dumps({"ret": ret}), 0.0, True, False, {}
