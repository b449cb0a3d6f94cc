"""Onboard a new hire end to end: record, manager, policy-driven accounts and equipment, orientation seat.

skill: Multi-Step Workflows
hint: Create the record first and reuse the returned employee ID in every later call. Read the department policy fully, including title-specific additions, and provision exactly what it lists. For orientation, skip sessions before the start date and full ones.
difficulty: 1-3
turns: multi
"""
import datetime
import json
import random


def _call(name, /, **arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


DEPTS = ["Engineering", "Finance", "Marketing", "Support"]
TITLES = {"Engineering": ["Backend Engineer", "Data Engineer"], "Finance": ["Analyst", "Controller"],
          "Marketing": ["Designer", "Copywriter"], "Support": ["Agent", "Team Lead"]}
SYSTEMS = ["email", "chat", "hr-portal", "github", "aws", "erp", "crm", "figma", "zendesk", "bi-tool", "vpn"]
EQUIPMENT = ["laptop-14", "laptop-16", "monitor", "headset", "dock", "tablet", "keyboard"]
NAMES = ["Amara Cole", "Bastian Roy", "Chloe Nguyen", "Diego Lund", "Esme Patel", "Felix Ward", "Greta Sato"]


class HrOnboardingEnv(ToolUseBaseEnv):
    STEPS = {1: 3, 2: 4, 3: 5}

    def __init__(self, max_turns=20, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.difficulty = difficulty
        super().__init__(max_turns=max_turns)

    def reset(self, seed=None):
        self._rng = rng = random.Random(seed)
        self.turn_count, self._call_history, self._current_msg = 0, [], 0
        d = self.difficulty
        ids = iter("E%04d" % n for n in rng.sample(range(1000, 9999), 20))
        people = rng.sample(["%s %s" % (f, l) for f in ["Ola", "Per", "Rui", "Sia", "Tao", "Uma", "Vik"]
                             for l in ["Ahn", "Bell", "Costa", "Dahl"]], len(DEPTS) * 2)
        employees, depts = {}, {}
        for i, dept in enumerate(DEPTS):
            head, deputy = next(ids), next(ids)  # a deputy is a plausible wrong manager
            employees[head] = {"employee_id": head, "name": people[2 * i], "department": dept, "title": "Head of " + dept}
            employees[deputy] = {"employee_id": deputy, "name": people[2 * i + 1], "department": dept, "title": "Deputy Head"}
            base = ["email", "chat", "hr-portal"] + rng.sample(SYSTEMS[3:], 2)
            extra = {t: rng.sample([x for x in SYSTEMS[3:] if x not in base], 1 + (d == 3)) for t in TITLES[dept]}
            depts[dept] = {"head": head, "deputy": deputy, "systems": base, "by_title": extra if d == 3 else {},
                           "kit": [rng.choice(EQUIPMENT[:2])] + rng.sample(EQUIPMENT[2:], 1 + d)}  # one laptop + extras
        dept = rng.choice(DEPTS)
        title, name = rng.choice(TITLES[dept]), rng.choice(NAMES)
        start = datetime.date(2025, 2, 3) + datetime.timedelta(weeks=rng.randint(0, 40), days=rng.randint(0, 4))
        sessions = {}
        for k in range(6):  # weekly sessions around the start date; some full
            day = start + datetime.timedelta(days=7 * (k - 2) + rng.randint(0, 4))
            sessions["OR-%d" % (100 + 7 * k + rng.randint(0, 6))] = {"date": day.isoformat(), "seats_left": rng.choice((0, 0, 2, 5))}
        eligible = sorted((v["date"], k) for k, v in sessions.items() if v["date"] >= start.isoformat() and v["seats_left"] > 0)
        if not eligible:
            last = max(sessions, key=lambda k: sessions[k]["date"])
            sessions[last]["seats_left"] = 3
            eligible = [(sessions[last]["date"], last)]
        required = sorted(set(depts[dept]["systems"]) | set(depts[dept]["by_title"].get(title, [])))
        self._state = {"employees": employees, "depts": depts, "sessions": sessions, "accounts": [], "equipment": [],
                       "bookings": {}, "new_ids": [next(ids) for _ in range(5)], "hire_name": name, "hire_dept": dept,
                       "hire_title": title, "start": start.isoformat(), "required": required, "session": eligible[0][1]}
        msgs = [f"Create the employee record for {name}: {title} in {dept}, starting {start.isoformat()}.",
                f"Set {name}'s manager to the head of the {dept} department.",
                f"Create an account for {name} on every system that the {dept} access policy requires for a {title}.",
                f"Order the {dept} standard equipment kit for {name} (every item in the policy).",
                f"Book {name} into the earliest orientation session on or after their start date that still has seats."]
        kit = sorted(depts[dept]["kit"])
        crits = [
            lambda s: (self._hire(s)["department"], self._hire(s)["title"], self._hire(s)["start_date"])
            == (dept, title, start.isoformat()),
            lambda s: self._hire(s)["manager"] == depts[dept]["head"],
            lambda s: sorted(x for e, x in s["accounts"] if e == self._hire(s)["employee_id"]) == required,
            lambda s: sorted(x for e, x in s["equipment"] if e == self._hire(s)["employee_id"]) == kit,
            lambda s: s["bookings"].get(self._hire(s)["employee_id"]) == s["session"],
        ]
        n = self.STEPS[d]
        self._user_messages, self._message_criteria, self._expected_answer = msgs[:n], crits[:n], "done"
        s_ = {"type": "string"}

        def spec(desc, req, **props):
            return {"description": desc, "parameters": {"type": "object", "properties": props, "required": req}}
        self._tools = {
            "create_employee": spec("Create an employee record; returns the new employee_id.",
                                    ["name", "department", "title", "start_date"], name=s_, department=s_, title=s_, start_date=s_),
            "update_employee": spec("Correct fields of an employee record.", ["employee_id"], employee_id=s_, department=s_,
                                    title=s_, start_date=s_),
            "list_departments": spec("Departments with their head and deputy (ids and names).", []),
            "assign_manager": spec("Set an employee's manager.", ["employee_id", "manager_id"], employee_id=s_, manager_id=s_),
            "get_policy": spec("A department's onboarding policy: required systems (base and per title) and equipment kit.",
                               ["department"], department=s_),
            "create_account": spec("Create an account on one system.", ["employee_id", "system"], employee_id=s_, system=s_),
            "order_equipment": spec("Order one equipment item.", ["employee_id", "item"], employee_id=s_, item=s_),
            "list_sessions": spec("Orientation sessions with dates and seats left.", []),
            "book_orientation": spec("Book an employee into a session (replaces an earlier booking).", ["employee_id", "session_id"],
                                     employee_id=s_, session_id=s_),
        }
        obs = ("You are an HR operations assistant onboarding a new hire.\nTools: " + ", ".join(
               f"{k}({', '.join(v['parameters']['properties'])})" for k, v in self._tools.items()) + ".\n"
               'Call tools like <tool_call>{"name": "list_departments", "arguments": {}}</tool_call> (several per reply '
               "allowed). Steps come one at a time; the next appears in a tool result once the current one is done. When "
               f"told all are complete, reply <answer>done</answer>. You have {self.max_turns} replies.\n\n[Step 1] {msgs[0]}")
        return obs, {}

    def _hire(self, s):
        """The new hire's record (a blank one before it exists)."""
        blank = {"employee_id": None, "department": None, "title": None, "start_date": None, "manager": None}
        return next((e for e in s["employees"].values() if e["name"].lower() == s["hire_name"].lower()), blank)

    def _emp(self, employee_id):
        if employee_id not in self._state["employees"]:
            raise ValueError(f"unknown employee_id '{employee_id}'")
        return self._state["employees"][employee_id]

    def _dept(self, department):
        match = [d for d in DEPTS if d.lower() == str(department).strip().lower()]
        if not match:
            raise ValueError(f"unknown department '{department}'; departments: {', '.join(DEPTS)}")
        return match[0]

    def tool_create_employee(self, name, department, title, start_date):
        s = self._state
        datetime.date.fromisoformat(str(start_date))
        created = [e for e in s["employees"] if e in s["new_ids"]]
        if len(created) >= len(s["new_ids"]):
            return "Error: too many new records; use update_employee." + self._advance_if_done()
        eid = s["new_ids"][len(created)]
        s["employees"][eid] = {"employee_id": eid, "name": str(name), "department": self._dept(department),
                               "title": str(title), "start_date": str(start_date), "manager": None}
        return f"Created employee {eid}." + self._advance_if_done()

    def tool_update_employee(self, employee_id, department=None, title=None, start_date=None):
        e = self._emp(employee_id)
        if department:
            e["department"] = self._dept(department)
        if title:
            e["title"] = str(title)
        if start_date:
            datetime.date.fromisoformat(str(start_date))
            e["start_date"] = str(start_date)
        return "Updated " + json.dumps(e) + self._advance_if_done()

    def tool_list_departments(self):
        s = self._state
        rows = [{"department": d, "head": {"id": v["head"], "name": s["employees"][v["head"]]["name"]},
                 "deputy": {"id": v["deputy"], "name": s["employees"][v["deputy"]]["name"]}} for d, v in s["depts"].items()]
        return json.dumps(rows) + self._advance_if_done()

    def tool_assign_manager(self, employee_id, manager_id):
        e, m = self._emp(employee_id), self._emp(manager_id)
        e["manager"] = m["employee_id"]
        return f"{employee_id} now reports to {m['name']} ({manager_id})." + self._advance_if_done()

    def tool_get_policy(self, department):
        p = self._state["depts"][self._dept(department)]
        return json.dumps({"systems_for_everyone": p["systems"], "additional_systems_by_title": p["by_title"],
                           "equipment_kit": p["kit"]}) + self._advance_if_done()

    def tool_create_account(self, employee_id, system):
        self._emp(employee_id)
        if system not in SYSTEMS:
            return f"Error: unknown system '{system}'." + self._advance_if_done()
        if (employee_id, system) in self._state["accounts"]:
            return f"{employee_id} already has a {system} account." + self._advance_if_done()
        self._state["accounts"].append((employee_id, system))
        return f"Account created on {system} for {employee_id}." + self._advance_if_done()

    def tool_order_equipment(self, employee_id, item):
        self._emp(employee_id)
        if item not in EQUIPMENT:
            return f"Error: unknown item '{item}'. Catalog: {', '.join(EQUIPMENT)}." + self._advance_if_done()
        if (employee_id, item) in self._state["equipment"]:
            return f"{item} already ordered for {employee_id}." + self._advance_if_done()
        self._state["equipment"].append((employee_id, item))
        return f"Ordered {item} for {employee_id}." + self._advance_if_done()

    def tool_list_sessions(self):
        rows = [dict(v, session_id=k) for k, v in sorted(self._state["sessions"].items(), key=lambda kv: kv[1]["date"])]
        return json.dumps(rows) + self._advance_if_done()

    def tool_book_orientation(self, employee_id, session_id):
        self._emp(employee_id)
        sess = self._state["sessions"].get(session_id)
        if sess is None or sess["seats_left"] <= 0:
            return "Error: unknown or full session." + self._advance_if_done()
        sess["seats_left"] -= 1
        self._state["bookings"][employee_id] = session_id
        return f"Booked {employee_id} into {session_id} on {sess['date']}." + self._advance_if_done()

    def solution(self):
        s, d = self._state, self.difficulty
        eid, dept = s["new_ids"][0], s["hire_dept"]
        replies = [_call("create_employee", name=s["hire_name"], department=dept, title=s["hire_title"], start_date=s["start"]),
                   _call("list_departments"),
                   _call("assign_manager", employee_id=eid, manager_id=s["depts"][dept]["head"]),
                   _call("get_policy", department=dept),
                   "".join(_call("create_account", employee_id=eid, system=x) for x in s["required"])]
        if d >= 2:
            replies.append("".join(_call("order_equipment", employee_id=eid, item=x) for x in s["depts"][dept]["kit"]))
        if d == 3:
            replies += [_call("list_sessions"), _call("book_orientation", employee_id=eid, session_id=s["session"])]
        return replies + ["<answer>done</answer>"]
