"""Tries to write outside its scratch directory: /tmp, /var/tmp, /dev/shm, the scratch root
above it, through a symlink planted in scratch, and into other sessions' scratch directories
(which it also tries to list and read). In mode "plant" it only writes a marker file in its own
scratch directory, for another session to look for.

threat: writing outside the scratch area (and reading other sessions' scratch)
expected: every outside write fails and no /tmp/spade-hostile-write-<tag>* file appears on the
  host; the scratch write (positive control) works; other sessions' files are unreachable
safety: creates only empty-ish files named spade-hostile-write-<tag>* (a unique tag)
"""
import json
import os


def _write(path, text="hostile"):
    try:
        with open(path, "w") as f:
            f.write(text)
        return "written"
    except OSError as exc:
        return "blocked: " + repr(exc)


class WriteOutsideEnv:
    def __init__(self, max_turns=25, tag="default", mode="escape"):
        self.max_turns = max_turns
        self.tag = tag
        self.mode = mode

    def reset(self, seed=None):
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        name = "spade-hostile-write-" + self.tag
        if self.mode == "plant":
            return _write(os.path.join(os.getcwd(), name + "-planted"), "secret-" + self.tag), \
                0.0, True, False, {"cwd": os.getcwd()}
        report = {"cwd": os.getcwd(), "control:scratch": _write(name + "-control")}
        for d in ("/tmp", "/var/tmp", "/dev/shm", os.path.dirname(os.getcwd()), "/"):
            report[d] = _write(os.path.join(d, name))
        try:
            os.symlink(os.path.join("/tmp", name + "-via-symlink"), name + "-link")
            report["symlink"] = _write(name + "-link")
        except OSError as exc:
            report["symlink"] = "blocked: " + repr(exc)
        root = os.path.dirname(os.getcwd())
        try:
            report["list_scratch_root"] = "readable: " + ",".join(os.listdir(root))
        except OSError as exc:
            report["list_scratch_root"] = "blocked: " + repr(exc)
        found = []
        for sibling in ["w%d" % i for i in range(1, 200)] + ["s"]:
            path = os.path.join(root, sibling, name + "-planted")
            try:
                with open(path) as f:
                    found.append(path + "=" + f.read(64))
            except OSError:
                pass
        report["siblings"] = found
        return json.dumps(report), 0.0, True, False, {}
