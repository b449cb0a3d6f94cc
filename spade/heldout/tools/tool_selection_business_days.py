"""Compute a delivery date by choosing the right date tools (and the right holiday calendar) from a toolbox.

skill: Tool Selection
hint: Match each step to the tool whose description fits it exactly: business-day arithmetic differs from calendar-day arithmetic, and every site has its own holiday calendar. Pass the output date of one step into the next; ignore tools about time zones or week numbers.
difficulty: 1-3
turns: single
"""
import datetime
import json
import random


def _call(name, /, **arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


_DATETIME, _TIMEDELTA = datetime.datetime, datetime.timedelta  # the tool parameter `datetime` shadows the module
CALENDARS = ["PLANT-OSLO", "PLANT-LYON", "PLANT-PUNE", "DC-DALLAS", "DC-LEEDS", "DC-OSAKA"]


def _date(text):
    return datetime.date.fromisoformat(str(text).strip())


class BusinessDaysEnv(ToolUseBaseEnv):
    def __init__(self, max_turns=20, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.difficulty = difficulty
        super().__init__(max_turns=max_turns)

    def reset(self, seed=None):
        self._rng = rng = random.Random(seed)
        self.turn_count, self._call_history, self._current_msg = 0, [], 0
        d = self.difficulty
        plant, dc = rng.choice(CALENDARS[:3]), rng.choice(CALENDARS[3:])
        year_start = datetime.date(2025, 1, 1)
        holidays = {c: set() for c in CALENDARS}
        for c in CALENDARS:  # ten random weekday holidays per site
            while len(holidays[c]) < 10:
                day = year_start + datetime.timedelta(days=rng.randint(0, 364))
                if day.weekday() < 5:
                    holidays[c].add(day)
        order = year_start + datetime.timedelta(days=rng.randint(10, 320))
        n, m = rng.randint(4, 12), rng.randint(2, 9)
        window = self._weekdays_after(order, n)  # the naive window, ignoring holidays
        holidays[plant].add(rng.choice(window))  # a plant holiday always matters
        holidays[dc].add(rng.choice(window))     # a decoy: the wrong calendar gives another date
        self._state = {"plant": plant, "dc": dc, "order": order.isoformat(), "n": n, "m": m,
                       "holidays": {c: sorted(h.isoformat() for h in hs) for c, hs in holidays.items()}}
        ready = self._add_business(order, n, plant)
        arrive = ready + datetime.timedelta(days=m)
        if d == 3 and arrive.weekday() < 5:  # make the arrival day a DC holiday so the roll-forward matters
            self._state["holidays"][dc] = sorted(set(self._state["holidays"][dc]) | {arrive.isoformat()})
        final = self._next_business(arrive, dc)
        self._plan = [ready.isoformat(), arrive.isoformat(), final.isoformat()]
        self._expected_answer = self._plan[d - 1]
        s_, i_ = {"type": "string"}, {"type": "integer"}

        def spec(desc, **props):
            return {"description": desc, "parameters": {"type": "object", "properties": props, "required": list(props)}}
        self._tools = {
            "add_business_days": spec("Date that is `days` business days after start_date (start not counted), skipping "
                                      "weekends and the holidays of the given site calendar.", start_date=s_, days=i_, calendar=s_),
            "add_calendar_days": spec("Date that is `days` calendar days after start_date.", start_date=s_, days=i_),
            "next_business_day": spec("The date itself if it is a business day of the calendar, else the next one.",
                                      date=s_, calendar=s_),
            "days_between": spec("Number of calendar days from start_date to end_date.", start_date=s_, end_date=s_),
            "list_holidays": spec("Holidays of a site calendar in a year.", calendar=s_, year=i_),
            "convert_timezone": spec("Convert 'YYYY-MM-DD HH:MM' between UTC offsets like '+05:30'.",
                                     datetime=s_, from_offset=s_, to_offset=s_),
            "week_number": spec("ISO week number of a date.", date=s_),
        }
        q = (f"An order was placed on {order.isoformat()}. Production at {plant} takes {n} business days of {plant} "
             "(weekends and that site's holidays excluded; the order date itself does not count). ")
        if d == 1:
            q += "On which date is the order ready?"
        else:
            q += f"The truck then takes {m} calendar days to reach {dc}. "
            q += ("On which date does it arrive?" if d == 2 else
                  f"{dc} accepts deliveries only on its own business days; a truck arriving on any other day is unloaded "
                  f"on the next {dc} business day. On which date is it unloaded?")
        tools = "\n".join(f"- {k}({', '.join(v['parameters']['properties'])}): {v['description']}" for k, v in self._tools.items())
        obs = (q + f"\nSite calendars: {', '.join(CALENDARS)}. Holidays are only known to the tools.\nTools:\n{tools}\n"
               'Call tools like <tool_call>{"name": "week_number", "arguments": {"date": "2025-03-14"}}</tool_call> '
               f"(several per reply allowed). Finish with the date, e.g. <answer>2025-06-30</answer>. You have "
               f"{self.max_turns} replies. Success: the exact date.")
        return obs, {}

    @staticmethod
    def _weekdays_after(start, n):
        days, day = [], start
        while len(days) < n:
            day += datetime.timedelta(days=1)
            if day.weekday() < 5:
                days.append(day)
        return days

    def _is_business(self, day, cal):
        return day.weekday() < 5 and day.isoformat() not in self._state["holidays"][cal]

    def _add_business(self, start, n, cal):
        day, left = start, n
        while left:
            day += datetime.timedelta(days=1)
            left -= self._is_business(day, cal)
        return day

    def _next_business(self, day, cal):
        while not self._is_business(day, cal):
            day += datetime.timedelta(days=1)
        return day

    def _cal(self, calendar):
        c = str(calendar).strip().upper()
        if c not in CALENDARS:
            raise ValueError(f"unknown calendar '{calendar}'; known: {', '.join(CALENDARS)}")
        return c

    def tool_add_business_days(self, start_date, days, calendar):
        if not 0 <= int(days) <= 250:
            raise ValueError("days must be between 0 and 250")
        return json.dumps({"result": self._add_business(_date(start_date), int(days), self._cal(calendar)).isoformat()})

    def tool_add_calendar_days(self, start_date, days):
        return json.dumps({"result": (_date(start_date) + datetime.timedelta(days=int(days))).isoformat()})

    def tool_next_business_day(self, date, calendar):
        return json.dumps({"result": self._next_business(_date(date), self._cal(calendar)).isoformat()})

    def tool_days_between(self, start_date, end_date):
        return json.dumps({"days": (_date(end_date) - _date(start_date)).days})

    def tool_list_holidays(self, calendar, year):
        c = self._cal(calendar)
        return json.dumps({"calendar": c, "holidays": [h for h in self._state["holidays"][c] if h.startswith(str(int(year)))]})

    def tool_convert_timezone(self, datetime, from_offset, to_offset):
        def minutes(off):
            sign = -1 if str(off).strip().startswith("-") else 1
            h, m = str(off).strip().lstrip("+-").split(":")
            return sign * (int(h) * 60 + int(m))
        moment = _DATETIME.fromisoformat(str(datetime).strip())
        shifted = moment + _TIMEDELTA(minutes=minutes(to_offset) - minutes(from_offset))
        return json.dumps({"result": shifted.isoformat(sep=" ", timespec="minutes")})

    def tool_week_number(self, date):
        return json.dumps({"week": _date(date).isocalendar()[1]})

    def solution(self):
        s, d = self._state, self.difficulty
        ready, arrive, _ = self._plan
        replies = [_call("add_business_days", start_date=s["order"], days=s["n"], calendar=s["plant"])]
        if d >= 2:
            replies.append(_call("add_calendar_days", start_date=ready, days=s["m"]))
        if d == 3:
            replies.append(_call("next_business_day", date=arrive, calendar=s["dc"]))
        return replies + [f"<answer>{self._expected_answer}</answer>"]
