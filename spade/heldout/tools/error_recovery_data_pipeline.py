"""Get failing data-pipeline jobs to succeed by diagnosing each error and applying the matching fix.

skill: Error Recovery
hint: A job reports only its first blocking problem, so expect several fail-fix-retry rounds. Match each error code to its remedy (upstream job, purge, stepwise migration, stale lock, smaller batch, credential rotation) and keep any parameter that fixed a problem on later retries.
difficulty: 1-3
turns: multi
"""
import json
import random


def _call(name, /, **arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


MAIN_JOBS = ["load_orders", "transform_sales", "publish_report", "refresh_dashboard", "export_finance", "score_churn"]
KINDS = ["dependency", "disk", "schema", "lock", "memory", "auth"]
SYSTEMS = ["warehouse", "s3", "crm", "billing-db", "ldap", "kafka"]


class DataPipelineEnv(ToolUseBaseEnv):
    N_JOBS = {1: 3, 2: 3, 3: 4}
    BLOCKERS = {1: (1, 1), 2: (1, 2), 3: (2, 2)}

    def __init__(self, max_turns=20, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.difficulty = difficulty
        super().__init__(max_turns=max_turns)

    def reset(self, seed=None):
        self._rng = rng = random.Random(seed)
        self.turn_count, self._call_history, self._current_msg = 0, [], 0
        d = self.difficulty
        st = {"jobs": {}, "volumes": {}, "schema": {}, "locks": {}, "creds": {}}
        systems = iter(rng.sample(SYSTEMS, len(SYSTEMS)))
        mains = rng.sample(MAIN_JOBS, self.N_JOBS[d])
        for k, job in enumerate(mains):
            n = rng.randint(*self.BLOCKERS[d]) if k else self.BLOCKERS[d][1]  # the first job gets the maximum
            blockers = []
            for kind in rng.sample(KINDS, n):
                if kind == "auth":
                    system = next(systems, None)
                    kind = "disk" if system is None else kind
                b = {"kind": kind}
                if kind == "dependency":
                    b["job"] = "extract_" + job.split("_")[1]
                    st["jobs"][b["job"]] = {"status": "never run", "blockers": []}
                elif kind == "disk":
                    b["volume"] = "vol-%d" % rng.randint(10, 99)
                    st["volumes"][b["volume"]] = "100% full"
                elif kind == "schema":
                    b["table"], cur = "stg_" + job.split("_")[1], rng.randint(2, 6)
                    b["version"] = cur + (2 if d == 3 else 1)  # d3: two stepwise migrations
                    st["schema"][b["table"]] = cur
                elif kind == "lock":
                    b["lock"] = "LK-%04d" % rng.randint(1000, 9999)
                    st["locks"][b["lock"]] = "stale: owner crashed"
                elif kind == "memory":
                    b["limit"] = rng.randint(8, 30) * 100
                else:
                    b["system"] = system
                    st["creds"][system] = "expired"
                blockers.append(b)
            st["jobs"][job] = {"status": "never run", "blockers": blockers}
        self._state, self._mains = st, mains
        self._user_messages = [f"Run the job '{job}' and make sure it ends in SUCCESS." for job in mains]
        self._message_criteria = [lambda s, j=job: s["jobs"][j]["status"] == "succeeded" for job in mains]
        self._expected_answer = "done"
        s_, i_ = {"type": "string"}, {"type": "integer"}

        def spec(desc, req, **props):
            return {"description": desc, "parameters": {"type": "object", "properties": props, "required": req}}
        self._tools = {
            "run_job": spec("Run a job (batch_size defaults to 5000 rows). Reports SUCCESS or the first error.",
                            ["job"], job=s_, batch_size=i_),
            "list_jobs": spec("All jobs and their last status.", []),
            "purge_spool": spec("Free a full spool volume.", ["volume"], volume=s_),
            "migrate_schema": spec("Migrate a table ONE version up: target_version must be current + 1.",
                                   ["table", "target_version"], table=s_, target_version=i_),
            "release_lock": spec("Release a stale lock by id.", ["lock_id"], lock_id=s_),
            "rotate_credentials": spec("Issue fresh credentials for a system.", ["system"], system=s_),
        }
        obs = ("You are the on-call data engineer. Jobs fail with an error code and message describing the FIRST "
               "problem found; fix it with the maintenance tools and run the job again.\nTools: " + ", ".join(
                   f"{n}({', '.join(t['parameters']['properties'])})" for n, t in self._tools.items()) + ".\n"
               'Call tools like <tool_call>{"name": "run_job", "arguments": {"job": "load_orders"}}</tool_call> '
               "(several per reply allowed, executed in order). Tasks come one at a time; the next appears in a tool "
               "result once the current job has succeeded. When told all are complete, reply <answer>done</answer>. "
               f"You have {self.max_turns} replies.\n\n[Task 1] {self._user_messages[0]}")
        return obs, {}

    def _blocked(self, b, batch):
        """Error text if blocker `b` is still unresolved, else None."""
        st = self._state
        if b["kind"] == "dependency" and st["jobs"][b["job"]]["status"] != "succeeded":
            return f"E_DEPENDENCY: upstream job '{b['job']}' has not succeeded yet."
        if b["kind"] == "disk" and st["volumes"][b["volume"]] != "ok":
            return f"E_DISK_FULL: spool volume {b['volume']} is at 100%."
        if b["kind"] == "schema" and st["schema"][b["table"]] < b["version"]:
            return f"E_SCHEMA: table {b['table']} is at v{st['schema'][b['table']]}, this job needs v{b['version']}."
        if b["kind"] == "lock" and b["lock"] in st["locks"]:
            return f"E_LOCKED: output table locked by {b['lock']} ({st['locks'][b['lock']]})."
        if b["kind"] == "memory" and batch > b["limit"]:
            return f"E_OOM: batch_size {batch} exceeds this job's memory limit of {b['limit']} rows."
        if b["kind"] == "auth" and st["creds"][b["system"]] != "fresh":
            return f"E_AUTH: credentials for '{b['system']}' have expired."
        return None

    def tool_run_job(self, job, batch_size=5000):
        j = self._state["jobs"].get(job)
        if j is None:
            return f"Error: unknown job '{job}'. Use list_jobs()." + self._advance_if_done()
        if j["status"] == "succeeded":
            return f"{job} already succeeded." + self._advance_if_done()
        for b in j["blockers"]:
            err = self._blocked(b, int(batch_size))
            if err:
                j["status"] = "failed"
                return f"FAILED {job}: {err}" + self._advance_if_done()
        j["status"] = "succeeded"
        return f"SUCCESS: {job} finished." + self._advance_if_done()

    def tool_list_jobs(self):
        return json.dumps({k: v["status"] for k, v in sorted(self._state["jobs"].items())}) + self._advance_if_done()

    def tool_purge_spool(self, volume):
        if volume not in self._state["volumes"]:
            return f"Error: unknown volume '{volume}'." + self._advance_if_done()
        self._state["volumes"][volume] = "ok"
        return f"{volume} purged: 12% used." + self._advance_if_done()

    def tool_migrate_schema(self, table, target_version):
        cur = self._state["schema"].get(table)
        if cur is None:
            return f"Error: unknown table '{table}'." + self._advance_if_done()
        if int(target_version) != cur + 1:
            return f"Error: {table} is at v{cur}; migrations go one version at a time (next: v{cur + 1})." + self._advance_if_done()
        self._state["schema"][table] = cur + 1
        return f"{table} migrated to v{cur + 1}." + self._advance_if_done()

    def tool_release_lock(self, lock_id):
        if self._state["locks"].pop(lock_id, None) is None:
            return f"Error: no lock '{lock_id}'." + self._advance_if_done()
        return f"Lock {lock_id} released." + self._advance_if_done()

    def tool_rotate_credentials(self, system):
        if system not in self._state["creds"]:
            return f"Error: no credentials managed for '{system}'." + self._advance_if_done()
        self._state["creds"][system] = "fresh"
        return f"New credentials issued for {system}." + self._advance_if_done()

    def solution(self):
        st, replies = self._state, []
        for job in self._mains:
            batch = {}
            replies.append(_call("run_job", job=job))  # observe the first error
            for b in st["jobs"][job]["blockers"]:
                if b["kind"] == "dependency":
                    fix = [_call("run_job", job=b["job"])]
                elif b["kind"] == "disk":
                    fix = [_call("purge_spool", volume=b["volume"])]
                elif b["kind"] == "schema":
                    cur = st["schema"][b["table"]]
                    fix = [_call("migrate_schema", table=b["table"], target_version=v) for v in range(cur + 1, b["version"] + 1)]
                elif b["kind"] == "lock":
                    fix = [_call("release_lock", lock_id=b["lock"])]
                elif b["kind"] == "memory":
                    fix, batch = [], {"batch_size": b["limit"]}
                else:
                    fix = [_call("rotate_credentials", system=b["system"])]
                replies.append("".join(fix) + _call("run_job", job=job, **batch))
        return replies + ["<answer>done</answer>"]
