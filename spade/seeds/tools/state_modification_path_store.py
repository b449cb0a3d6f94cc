"""Maintain a file-system-like key-value store: rename, edit, purge, back up and index files by path.

skill: State Modification
hint: ls shows one level only, so walk subdirectories to see everything before bulk edits. To edit a file, read it, change only the requested line and write the whole content back. A copy is read + write; a purge must not touch files that do not match.
difficulty: 1-3
turns: multi
"""
import copy
import json
import random


def _call(name, /, **arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


SERVICES = ["api", "worker", "billing", "auth", "search"]
CONFIGS = ["database", "cache", "server", "queue", "mailer"]
SOURCES = ["main.py", "util.py", "models.py", "routes.py", "cli.py"]


def _parse_config(text):
    pairs = {}
    for line in str(text).splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            pairs[k.strip()] = v.strip()
    return pairs


class PathStoreEnv(ToolUseBaseEnv):
    N_INSTR = {1: 3, 2: 4, 3: 5}

    def __init__(self, max_turns=20, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.difficulty = difficulty
        super().__init__(max_turns=max_turns)

    def reset(self, seed=None):
        self._rng = rng = random.Random(seed)
        self.turn_count, self._call_history, self._current_msg = 0, [], 0
        d = self.difficulty
        files = {"/docs/readme.md": "# internal tools\n"}
        for name in rng.sample(CONFIGS, 3 + (d > 1)):
            files[f"/app/config/{name}.yaml"] = "\n".join(
                ["port: %d" % rng.randint(1024, 9999), "workers: %d" % rng.randint(1, 16),
                 "log_level: " + rng.choice(["info", "warn", "debug"]), "timeout_s: %d" % rng.randint(5, 120)])
        for src in rng.sample(SOURCES, 2 + d):
            sub = "handlers/" if d == 3 and rng.random() < 0.5 else ""  # d3 nests deeper
            files[f"/app/src/{sub}{src}"] = f"# {src}\nprint('{src}')\n"
        for svc in rng.sample(SERVICES, 1 + d):
            for k in range(2):
                files[f"/logs/{svc}/{svc}-{k}.log"] = f"{svc} log {k}: {rng.randint(100, 999)} lines\n"
            files[f"/logs/{svc}/{svc}.tmp"] = "scratch\n"
            if d >= 2:
                files[f"/logs/{svc}/rotated/{svc}-old.log"] = "rotated\n"
                if rng.random() < 0.6:
                    files[f"/logs/{svc}/rotated/{svc}-%d.tmp" % rng.randint(1, 9)] = "scratch\n"
        for key in rng.sample(["deploy", "signing", "tls", "backup"], 2):
            files[f"/secrets/{key}.key"] = "KEY-%08x" % rng.getrandbits(32)
        self._state = {"files": files}
        sim, msgs, crits, self._plan = copy.deepcopy(files), [], [], []
        for kind in rng.sample(["rename", "setkey", "purge", "backup", "manifest"], self.N_INSTR[d]):
            msg, crit, plan = self._make(kind, sim, rng)
            msgs.append(msg), crits.append(crit), self._plan.append(plan)
        self._user_messages, self._message_criteria, self._expected_answer = msgs, crits, "done"
        path = {"type": "string", "description": "absolute path, e.g. /app/config/server.yaml"}
        self._tools = {
            "ls": {"description": "List the direct children of a directory (subdirectories end with '/').",
                   "parameters": {"type": "object", "properties": {"path": path}, "required": ["path"]}},
            "read": {"description": "Read a file's content.",
                     "parameters": {"type": "object", "properties": {"path": path}, "required": ["path"]}},
            "write": {"description": "Create or overwrite a file with the given content (directories are implicit).",
                      "parameters": {"type": "object", "properties": {"path": path, "content": {"type": "string"}},
                                     "required": ["path", "content"]}},
            "move": {"description": "Move/rename a file; the destination must not exist.",
                     "parameters": {"type": "object", "properties": {"src": path, "dst": path}, "required": ["src", "dst"]}},
            "delete": {"description": "Delete one file.",
                       "parameters": {"type": "object", "properties": {"path": path}, "required": ["path"]}},
        }
        obs = ("You administer a hierarchical key-value store that behaves like a file system: keys are absolute paths, "
               "directories exist implicitly while they contain files.\nTools: ls(path), read(path), write(path, content), "
               "move(src, dst), delete(path).\n"
               'Call tools like <tool_call>{"name": "ls", "arguments": {"path": "/"}}</tool_call> (several per reply '
               "allowed). Instructions come one at a time; the next appears in a tool result once the current one "
               f"holds. When told all are complete, reply <answer>done</answer>. You have {self.max_turns} replies.\n\n"
               f"[Instruction 1] {msgs[0]}")
        return obs, {}

    def _make(self, kind, sim, rng):
        """Instruction text, predicate over the real state, and the solution's calls; applied to `sim`."""
        configs = sorted(p for p in sim if p.startswith("/app/config/"))
        if kind == "rename":
            old = configs[0]
            new = "/app/config/%s-v2.yaml" % old.rsplit("/", 1)[1][:-5]
            sim[new] = sim.pop(old)
            return (f"Rename {old} to {new}.", lambda s, o=old, n=new, c=sim[new]: o not in s["files"] and s["files"].get(n) == c,
                    [[("move", {"src": old, "dst": new})]])
        if kind == "setkey":
            target, key = configs[-1], rng.choice(["port", "workers", "timeout_s"])
            want = _parse_config(sim[target])
            want[key] = str(int(want[key]) + rng.randint(1, 9))
            sim[target] = "\n".join(f"{k}: {v}" for k, v in want.items())
            return (f"In {target}, set {key} to {want[key]}. Leave every other setting unchanged.",
                    lambda s, t=target, w=dict(want): t in s["files"] and _parse_config(s["files"][t]) == w,
                    [[("read", {"path": target})], [("write", {"path": target, "content": sim[target]})]])
        if kind == "purge":
            tmp = sorted(p for p in sim if p.startswith("/logs/") and p.endswith(".tmp"))
            keep = {p: sim[p] for p in sorted(sim) if p.startswith("/logs/") and not p.endswith(".tmp")}
            for p in tmp:
                del sim[p]
            return ("Delete every .tmp file anywhere under /logs (including subdirectories); keep all other files.",
                    lambda s, k=keep: all(s["files"].get(p) == c for p, c in k.items()) and not any(
                        p.startswith("/logs/") and p.endswith(".tmp") for p in s["files"]),
                    [[("delete", {"path": p}) for p in tmp]])
        if kind == "backup":
            secret = rng.choice(sorted(p for p in sim if p.startswith("/secrets/")))
            dst = "/backup/" + secret.rsplit("/", 1)[1]
            sim[dst] = sim[secret]
            return (f"Back up {secret}: copy it to {dst} with identical content, keeping the original.",
                    lambda s, a=secret, b=dst, c=sim[secret]: s["files"].get(a) == c and s["files"].get(b) == c,
                    [[("read", {"path": secret})], [("write", {"path": dst, "content": sim[secret]})]])
        listing = sorted(p for p in sim if p.startswith("/app/src/"))
        sim["/app/MANIFEST.txt"] = "\n".join(listing)
        return ("Write /app/MANIFEST.txt containing the full path of every file under /app/src (all depths), "
                "sorted alphabetically, one per line.",
                lambda s, w=listing: [x.strip() for x in s["files"].get("/app/MANIFEST.txt", "").strip().splitlines()] == w,
                [[("write", {"path": "/app/MANIFEST.txt", "content": "\n".join(listing)})]])

    # ---- tools ---------------------------------------------------------------------------------
    @staticmethod
    def _check(path):
        path = str(path).strip()
        if not path.startswith("/") or ".." in path or "//" in path:
            raise ValueError("paths must be absolute, without '..' or '//'")
        return path.rstrip("/") or "/"

    def tool_ls(self, path):
        base = self._check(path)
        prefix = "/" if base == "/" else base + "/"
        kids = sorted({p[len(prefix):].split("/")[0] + ("/" if "/" in p[len(prefix):] else "")
                       for p in self._state["files"] if p.startswith(prefix)})
        if not kids:
            return f"ls: {base}: no such directory." + self._advance_if_done()
        return f"{base}: " + json.dumps(kids) + self._advance_if_done()

    def tool_read(self, path):
        p = self._check(path)
        if p not in self._state["files"]:
            return f"read: {p}: no such file." + self._advance_if_done()
        return self._state["files"][p] + self._advance_if_done()

    def tool_write(self, path, content):
        p = self._check(path)
        if any(q.startswith(p + "/") for q in self._state["files"]):
            return f"write: {p} is a directory." + self._advance_if_done()
        self._state["files"][p] = str(content)
        return f"wrote {len(str(content))} bytes to {p}." + self._advance_if_done()

    def tool_move(self, src, dst):
        a, b = self._check(src), self._check(dst)
        if a not in self._state["files"]:
            return f"move: {a}: no such file." + self._advance_if_done()
        if b in self._state["files"]:
            return f"move: {b} already exists." + self._advance_if_done()
        self._state["files"][b] = self._state["files"].pop(a)
        return f"moved {a} -> {b}." + self._advance_if_done()

    def tool_delete(self, path):
        p = self._check(path)
        if p not in self._state["files"]:
            hint = " (it is a directory; delete its files)" if any(q.startswith(p + "/") for q in self._state["files"]) else ""
            return f"delete: {p}: no such file{hint}." + self._advance_if_done()
        del self._state["files"][p]
        return f"deleted {p}." + self._advance_if_done()

    def solution(self):
        # explore breadth-first, one directory level per reply, as an agent would
        dirs, replies = ["/"], []
        while dirs:
            replies.append("".join(_call("ls", path=d) for d in dirs))
            prefixes = [("/" if d == "/" else d + "/") for d in dirs]
            dirs = sorted({pre + p[len(pre):].split("/")[0] for pre in prefixes for p in self._state["files"]
                           if p.startswith(pre) and "/" in p[len(pre):]})
        for steps in self._plan:
            for calls in steps:
                replies.append("".join(_call(name, **args) for name, args in calls))
        return replies + ["<answer>done</answer>"]
