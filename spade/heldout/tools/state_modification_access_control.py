"""Apply access-control changes to a directory of users and groups, one request at a time.

skill: State Modification
hint: Inspect users' full records (type, activity, groups, manager) before editing, and change only what each request names. Apply the exceptions literally, and remember that earlier changes (deactivations, removals) affect who matches later requests.
difficulty: 1-3
turns: multi
"""
import copy
import json
import random


def _call(name, /, **arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


FIRST = ["Ana", "Ben", "Cleo", "Dev", "Eli", "Fay", "Gus", "Hal", "Ivy", "Jon", "Kai", "Lea", "Mo", "Nia", "Oli", "Pia", "Raj", "Sol"]
LAST = ["Berg", "Cruz", "Diaz", "Ek", "Fox", "Gill", "Holt", "Ito", "Jha", "Kerr"]
DEPTS = ["eng", "finance", "sales", "ops"]
GROUPS = ["prod-admins", "vpn", "break-glass", "on-call"] + [d + "-team" for d in DEPTS]


class AccessControlEnv(ToolUseBaseEnv):
    USERS = {1: 8, 2: 12, 3: 16}
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
        names = rng.sample(["%s %s" % (f, l) for f in FIRST for l in LAST], self.USERS[d])
        users, groups = {}, {g: [] for g in GROUPS}
        for i, name in enumerate(names):
            uid = "u%03d" % rng.randint(100, 999)
            while uid in users:
                uid = "u%03d" % rng.randint(100, 999)
            dept = DEPTS[i % len(DEPTS)] if i < 4 else rng.choice(DEPTS)
            users[uid] = {"user_id": uid, "name": name, "department": dept,
                          "type": "contractor" if i % 3 == 1 else "employee", "active": True,
                          "last_login_days": rng.choice([rng.randint(0, 60), rng.randint(91, 300)]), "manager": None}
            groups[dept + "-team"].append(uid)
            for g in ("prod-admins", "vpn", "break-glass", "on-call"):
                if rng.random() < 0.35:
                    groups[g].append(uid)
        ids = sorted(users)
        for uid in ids:
            users[uid]["manager"] = rng.choice([m for m in ids if m != uid])
        self._state = {"users": users, "groups": {g: sorted(m) for g, m in groups.items()}}
        sim = copy.deepcopy(self._state)
        msgs, crits, self._plan = [], [], []
        for kind in rng.sample(["contractors", "vpn", "stale", "transfer", "manager"], self.N_INSTR[d]):
            msg, crit, calls = self._make(kind, sim, rng)
            msgs.append(msg), crits.append(crit), self._plan.append(calls)
        self._user_messages, self._message_criteria, self._expected_answer = msgs, crits, "done"
        s_ = {"type": "string"}

        def spec(desc, req, **props):
            return {"description": desc, "parameters": {"type": "object", "properties": props, "required": req}}
        self._tools = {
            "list_users": spec("All users (id, name, department, type, active); optional department filter.", [], department=s_),
            "get_user": spec("Full record: type, active, last_login_days, manager, groups.", ["user_id"], user_id=s_),
            "list_group": spec("Members of a group.", ["group"], group=s_),
            "add_to_group": spec("Add a user to a group.", ["user_id", "group"], user_id=s_, group=s_),
            "remove_from_group": spec("Remove a user from a group.", ["user_id", "group"], user_id=s_, group=s_),
            "set_active": spec("Activate or deactivate an account.", ["user_id", "active"], user_id=s_, active={"type": "boolean"}),
        }
        obs = ("You are an identity administrator. Groups: " + ", ".join(GROUPS) + ".\nTools: " + ", ".join(
               f"{n}({', '.join(t['parameters']['properties'])})" for n, t in self._tools.items()) + ".\n"
               'Call tools like <tool_call>{"name": "get_user", "arguments": {"user_id": "u123"}}</tool_call> (several '
               "per reply allowed). Requests come one at a time; the next appears in a tool result once the current one "
               f"is fully applied. When told all are complete, reply <answer>done</answer>. You have {self.max_turns} "
               f"replies.\n\n[Request 1] {msgs[0]}")
        return obs, {}

    def _make(self, kind, sim, rng):
        """Request text, predicate on the real state, and the solution's calls; the change is applied to `sim`."""
        U, G = sim["users"], sim["groups"]
        if kind == "contractors":
            drop = [u for u in G["prod-admins"] if U[u]["type"] == "contractor"]
            G["prod-admins"] = [u for u in G["prod-admins"] if u not in drop]
            return ("Remove every contractor from the group 'prod-admins' (employees stay).",
                    lambda s, w=list(G["prod-admins"]): sorted(s["groups"]["prod-admins"]) == w,
                    [("remove_from_group", {"user_id": u, "group": "prod-admins"}) for u in drop])
        if kind == "vpn":
            dept = rng.choice(DEPTS)
            add = [u for u in sorted(U) if U[u]["department"] == dept and U[u]["active"] and u not in G["vpn"]]
            G["vpn"] = sorted(G["vpn"] + add)
            return (f"Give VPN access to every ACTIVE member of the {dept} department: add them to 'vpn'.",
                    lambda s, w=list(G["vpn"]): sorted(s["groups"]["vpn"]) == w,
                    [("add_to_group", {"user_id": u, "group": "vpn"}) for u in add])
        if kind == "stale":
            off = [u for u in sorted(U) if U[u]["active"] and U[u]["last_login_days"] > 90 and u not in G["break-glass"]]
            for u in off:
                U[u]["active"] = False
            return ("Deactivate every active account that has not logged in for more than 90 days, except members of "
                    "'break-glass'.", lambda s, w={u: U[u]["active"] for u in U}: {u: s["users"][u]["active"] for u in
                                                                                 s["users"]} == w,
                    [("set_active", {"user_id": u, "active": False}) for u in off])
        if kind == "transfer":
            uid = rng.choice(sorted(U))
            new = rng.choice([dd for dd in DEPTS if dd != U[uid]["department"]]) + "-team"
            held = [g for g in GROUPS if uid in G[g]]
            for g in held:
                G[g].remove(uid)
            G[new] = sorted(G[new] + [uid])
            return (f"{U[uid]['name']} is changing teams: remove them from every group they belong to, then add them "
                    f"to '{new}'.", lambda s, u=uid, n=new: [g for g in GROUPS if u in s["groups"][g]] == [n],
                    [("remove_from_group", {"user_id": uid, "group": g}) for g in held] +
                    [("add_to_group", {"user_id": uid, "group": new})])
        uid = rng.choice(sorted(U))
        boss = U[uid]["manager"]
        calls = [] if boss in G["on-call"] else [("add_to_group", {"user_id": boss, "group": "on-call"})]
        G["on-call"] = sorted(set(G["on-call"]) | {boss})
        return (f"Add the manager of {U[uid]['name']} to the 'on-call' group.",
                lambda s, w=list(G["on-call"]): sorted(s["groups"]["on-call"]) == w, calls)

    # ---- tools ---------------------------------------------------------------------------------
    def _user(self, user_id):
        if user_id not in self._state["users"]:
            raise ValueError(f"unknown user_id '{user_id}'")
        return self._state["users"][user_id]

    def _group(self, group):
        if group not in self._state["groups"]:
            raise ValueError(f"unknown group '{group}'; groups: {', '.join(GROUPS)}")
        return self._state["groups"][group]

    def tool_list_users(self, department=""):
        rows = [{k: u[k] for k in ("user_id", "name", "department", "type", "active")}
                for _, u in sorted(self._state["users"].items()) if not department or u["department"] == department]
        return json.dumps(rows) + self._advance_if_done()

    def tool_get_user(self, user_id):
        u = dict(self._user(user_id))
        u["groups"] = [g for g in GROUPS if user_id in self._state["groups"][g]]
        return json.dumps(u) + self._advance_if_done()

    def tool_list_group(self, group):
        return json.dumps({"group": group, "members": self._group(group)}) + self._advance_if_done()

    def tool_add_to_group(self, user_id, group):
        self._user(user_id)
        members = self._group(group)
        if user_id in members:
            return f"{user_id} is already in {group}." + self._advance_if_done()
        members.append(user_id)
        members.sort()
        return f"Added {user_id} to {group}." + self._advance_if_done()

    def tool_remove_from_group(self, user_id, group):
        members = self._group(group)
        if user_id not in members:
            return f"Error: {user_id} is not in {group}." + self._advance_if_done()
        members.remove(user_id)
        return f"Removed {user_id} from {group}." + self._advance_if_done()

    def tool_set_active(self, user_id, active):
        flag = active if isinstance(active, bool) else str(active).strip().lower() in ("true", "1", "yes")
        self._user(user_id)["active"] = flag
        return f"{user_id} is now {'active' if flag else 'inactive'}." + self._advance_if_done()

    def solution(self):
        replies = [_call("list_users"), "".join(_call("get_user", user_id=u) for u in sorted(self._state["users"]))]
        for calls in self._plan:
            replies.append("".join(_call(n, **a) for n, a in calls) or _call("list_group", group="on-call"))
        return replies + ["<answer>done</answer>"]
