"""Edit a work calendar one instruction at a time: cancel, move, extend, add and clear events without overlaps.

skill: State Modification
hint: List the affected days before changing anything and keep your own picture of the calendar up to date after each edit. Earliest free slot: scan from 09:00 in 15-minute steps and take the first start where the whole duration fits before 17:00 without touching another event.
difficulty: 1-3
turns: multi
"""
import copy
import datetime
import json
import random


def _call(name, /, **arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


TOPICS = ["Budget", "Design", "Hiring", "Roadmap", "Vendor", "Security", "Launch", "Sprint", "Pricing"]
KINDS = ["review", "sync", "workshop", "planning", "call", "retro"]
DAY_START, DAY_END = 9 * 60, 17 * 60


def _hm(minutes):
    return "%02d:%02d" % divmod(minutes, 60)


def _parse(text):
    h, m = str(text).strip().split(":")
    value = int(h) * 60 + int(m)
    if not 0 <= value <= 24 * 60 or value % 15:
        raise ValueError("times must be HH:MM on a 15-minute grid")
    return value


class CalendarEditEnv(ToolUseBaseEnv):
    N_INSTR = {1: 3, 2: 4, 3: 5}
    PER_DAY = {1: (2, 3), 2: (3, 4), 3: (4, 5)}

    def __init__(self, max_turns=20, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.difficulty = difficulty
        super().__init__(max_turns=max_turns)

    def reset(self, seed=None):
        self._rng = rng = random.Random(seed)
        self.turn_count, self._call_history, self._current_msg = 0, [], 0
        monday = datetime.date(2025, 1, 6) + datetime.timedelta(weeks=rng.randint(0, 45))
        dates = [(monday + datetime.timedelta(days=i)).isoformat() for i in range(5)]
        titles = iter(rng.sample(["%s %s" % (t, k) for t in TOPICS for k in KINDS], 40))
        ids = iter(rng.sample(range(100, 999), 40))
        events = {}
        for date in dates:
            for _ in range(rng.randint(*self.PER_DAY[self.difficulty])):
                for _try in range(40):  # random non-overlapping placement on the 15-minute grid
                    dur = rng.choice((30, 45, 60, 90))
                    start = rng.randrange(DAY_START, DAY_END - dur + 1, 15)
                    if not self._clash(events, date, start, start + dur, None):
                        eid = "EV-%d" % next(ids)
                        events[eid] = {"id": eid, "title": next(titles), "date": date, "start": start, "end": start + dur}
                        break
        self._state = {"dates": dates, "events": events, "next_id": 1000}
        self._plan = []  # (kind, data) per instruction, used by solution()
        sim = copy.deepcopy(events)
        msgs, crits = [], []
        for kind in rng.sample(["cancel", "move", "follow", "extend", "clear"], self.N_INSTR[self.difficulty]):
            msg, crit, data = self._make(kind, sim, rng, next(titles))
            msgs.append(msg), crits.append(crit), self._plan.append(data)
        self._user_messages, self._message_criteria, self._expected_answer = msgs, crits, "done"
        time_p = {"type": "string", "description": "HH:MM"}
        self._tools = {
            "list_events": {"description": "Events on a date (YYYY-MM-DD), sorted by start.",
                            "parameters": {"type": "object", "properties": {"date": {"type": "string"}}, "required": ["date"]}},
            "create_event": {"description": "Create an event; fails if it overlaps another event that day.",
                             "parameters": {"type": "object", "properties": {"title": {"type": "string"}, "date": {"type": "string"},
                                                                             "start": time_p, "end": time_p},
                                            "required": ["title", "date", "start", "end"]}},
            "update_event": {"description": "Change date/start/end/title of an event. Giving a new start without an end keeps "
                                            "the duration. Fails on overlap.",
                             "parameters": {"type": "object", "properties": {"event_id": {"type": "string"}, "date": {"type": "string"},
                                                                             "start": time_p, "end": time_p, "title": {"type": "string"}},
                                            "required": ["event_id"]}},
            "delete_event": {"description": "Delete an event by id.",
                             "parameters": {"type": "object", "properties": {"event_id": {"type": "string"}}, "required": ["event_id"]}},
        }
        obs = (f"You manage a calendar for the week {dates[0]} (Mon) to {dates[-1]} (Fri). Working hours 09:00-17:00, "
               "times on a 15-minute grid; events on the same day may not overlap (back-to-back is fine).\n"
               "Tools: list_events(date), create_event(title, date, start, end), update_event(event_id, date?, start?, "
               "end?, title?), delete_event(event_id).\n"
               'Call tools like <tool_call>{"name": "list_events", "arguments": {"date": "' + dates[0] + '"}}</tool_call> '
               "(several per reply allowed). Instructions come one at a time; the next appears in a tool result once "
               "the current one holds. When told all are complete, reply <answer>done</answer>. "
               f"You have {self.max_turns} replies.\n\n[Instruction 1] {msgs[0]}")
        return obs, {}

    @staticmethod
    def _clash(events, date, start, end, skip):
        return any(e["date"] == date and e["start"] < end and start < e["end"] and e["id"] != skip for e in events.values())

    def _make(self, kind, sim, rng, new_title):
        """One instruction of `kind`, applied to the simulated calendar `sim`; a rename if `kind` is impossible."""
        originals = sorted(eid for eid in sim if eid in self._state["events"])
        for _try in range(12):
            made = self._try_make(kind, sim, rng, new_title, sim[rng.choice(originals)])
            if made:
                return made
        e = sim[rng.choice(originals)]
        when = f"'{e['title']}' on {e['date']}"
        e["title"] = new_title
        return (f"Rename {when} to '{new_title}'.", lambda s, i=e["id"], t=new_title: i in s["events"] and
                s["events"][i]["title"].lower() == t.lower(), ("update", {"event_id": e["id"], "title": new_title}))

    def _try_make(self, kind, sim, rng, new_title, e):
        when = f"'{e['title']}' on {e['date']}"
        if kind == "cancel":
            del sim[e["id"]]
            return f"Cancel {when}.", (lambda s, i=e["id"]: i not in s["events"]), ("delete", [e["id"]])
        if kind == "clear":
            date = e["date"]
            late = sorted(x["id"] for x in sim.values() if x["date"] == date and x["start"] >= 15 * 60)
            if late:
                keep = sorted(x["id"] for x in sim.values() if x["date"] == date and x["start"] < 15 * 60
                              and x["id"] in self._state["events"])  # ids of created events may vary
                for eid in late:
                    del sim[eid]
                return (f"Clear the afternoon of {date}: delete every event that starts at 15:00 or later that day.",
                        lambda s, d=date, k=keep: all(i in s["events"] for i in k) and not any(
                            x["date"] == d and x["start"] >= 15 * 60 for x in s["events"].values()), ("delete", late))
        if kind == "move":
            dur, date = e["end"] - e["start"], rng.choice([d for d in self._state["dates"] if d != e["date"]])
            for start in range(DAY_START, DAY_END - dur + 1, 15):
                if not self._clash(sim, date, start, start + dur, e["id"]):
                    e.update(date=date, start=start, end=start + dur)
                    return (f"Move {when} to the earliest free slot on {date} (within 09:00-17:00), same duration.",
                            lambda s, i=e["id"], d=date, a=start: i in s["events"] and (s["events"][i]["date"], s["events"][i]["start"],
                                                                                       s["events"][i]["end"]) == (d, a, a + dur),
                            ("update", {"event_id": e["id"], "date": date, "start": _hm(start)}))
        if kind == "extend":
            extra = rng.choice((15, 30, 45))
            if e["end"] + extra <= DAY_END and not self._clash(sim, e["date"], e["end"], e["end"] + extra, e["id"]):
                e["end"] += extra
                return (f"Extend {when} so that it ends {extra} minutes later than now.",
                        lambda s, i=e["id"], t=e["end"]: i in s["events"] and s["events"][i]["end"] == t,
                        ("update", {"event_id": e["id"], "end": _hm(e["end"])}))
        if kind == "follow" and e["end"] + 30 <= DAY_END and not self._clash(sim, e["date"], e["end"], e["end"] + 30, None):
            eid = "EV-%d" % self._state["next_id"]  # the id create_event will assign (one creation per episode)
            sim[eid] = {"id": eid, "title": new_title, "date": e["date"], "start": e["end"], "end": e["end"] + 30}
            return (f"Create a 30-minute event titled '{new_title}' on {e['date']} that starts exactly when '{e['title']}' ends.",
                    lambda s, t=new_title, d=e["date"], a=e["end"]: any(
                        x["title"].lower() == t.lower() and (x["date"], x["start"], x["end"]) == (d, a, a + 30)
                        for x in s["events"].values()),
                    ("create", {"title": new_title, "date": e["date"], "start": _hm(e["end"]), "end": _hm(e["end"] + 30)}))
        return None

    # ---- tools ---------------------------------------------------------------------------------
    def _show(self, e):
        return {"id": e["id"], "title": e["title"], "date": e["date"], "start": _hm(e["start"]), "end": _hm(e["end"])}

    def _date(self, date):
        if str(date) not in self._state["dates"]:
            raise ValueError(f"date must be one of {', '.join(self._state['dates'])}")
        return str(date)

    def tool_list_events(self, date):
        date = self._date(date)
        rows = sorted((e for e in self._state["events"].values() if e["date"] == date), key=lambda e: e["start"])
        return json.dumps([self._show(e) for e in rows]) + self._advance_if_done()

    def tool_create_event(self, title, date, start, end):
        date, start, end = self._date(date), _parse(start), _parse(end)
        if end <= start or self._clash(self._state["events"], date, start, end, None):
            return "Error: end must be after start and the slot must be free." + self._advance_if_done()
        eid = "EV-%d" % self._state["next_id"]
        self._state["next_id"] += 1
        self._state["events"][eid] = {"id": eid, "title": str(title), "date": date, "start": start, "end": end}
        return "Created " + json.dumps(self._show(self._state["events"][eid])) + self._advance_if_done()

    def tool_update_event(self, event_id, date=None, start=None, end=None, title=None):
        e = self._state["events"].get(event_id)
        if e is None:
            return f"Error: no event '{event_id}'." + self._advance_if_done()
        new_date = self._date(date) if date else e["date"]
        new_start = _parse(start) if start else e["start"]
        new_end = _parse(end) if end else new_start + (e["end"] - e["start"])
        if new_end <= new_start:
            return "Error: end must be after start." + self._advance_if_done()
        clash = [x["title"] for x in self._state["events"].values() if x["date"] == new_date and x["id"] != e["id"]
                 and x["start"] < new_end and new_start < x["end"]]
        if clash:
            return f"Error: overlaps {', '.join(sorted(clash))}." + self._advance_if_done()
        e.update(date=new_date, start=new_start, end=new_end, title=str(title) if title else e["title"])
        return "Updated " + json.dumps(self._show(e)) + self._advance_if_done()

    def tool_delete_event(self, event_id):
        if self._state["events"].pop(event_id, None) is None:
            return f"Error: no event '{event_id}'." + self._advance_if_done()
        return f"Deleted {event_id}." + self._advance_if_done()

    def solution(self):
        replies = ["".join(_call("list_events", date=d) for d in self._state["dates"])]
        for op, data in self._plan:
            if op == "delete":
                replies.append("".join(_call("delete_event", event_id=eid) for eid in data))
            elif op == "update":
                replies.append(_call("update_event", **data))
            else:
                replies.append(_call("create_event", **data))
        return replies + ["<answer>done</answer>"]
