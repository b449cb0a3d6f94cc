"""Find one specific order in a CRM: disambiguate the customer, page through orders, filter, compare amounts.

skill: Data Retrieval
hint: Several customers can share a name: pick the one in the stated city. Read every page of their orders, keep only those matching the status and the inclusive date window, and when the question is about net amounts fetch the details, since refunds appear only there.
difficulty: 1-3
turns: single
"""
import datetime
import json
import random


def _call(name, /, **arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


FIRST = ["Maria", "Tom", "Aiko", "Luis", "Nadia", "Owen", "Priya", "Sven"]
LAST = ["Keller", "Okoro", "Santos", "Lindqvist", "Moreau", "Tanaka", "Brandt"]
CITIES = ["Leeds", "Porto", "Austin", "Dunedin", "Graz", "Busan", "Tucson", "Lyon"]
STATUSES = ["delivered", "cancelled", "returned", "shipped"]


class CustomerOrdersEnv(ToolUseBaseEnv):
    NAMESAKES = {1: 1, 2: 2, 3: 3}  # customers sharing the target's name
    ORDERS = {1: 8, 2: 14, 3: 20}
    PAGE_SIZE = {1: 10, 2: 5, 3: 5}

    def __init__(self, max_turns=20, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.difficulty = difficulty
        super().__init__(max_turns=max_turns)

    def reset(self, seed=None):
        self._rng = rng = random.Random(seed)
        self.turn_count, self._call_history, self._current_msg = 0, [], 0
        d = self.difficulty
        name = "%s %s" % (rng.choice(FIRST), rng.choice(LAST))
        cities = rng.sample(CITIES, self.NAMESAKES[d])
        start = datetime.date(2024, 1, 1) + datetime.timedelta(days=rng.randint(30, 150))
        end = start + datetime.timedelta(days=rng.randint(60, 120))
        ids = iter(rng.sample(range(100000, 999999), 80))
        customers, orders = {}, {}
        for k, city in enumerate(cities):
            cid = "C-%d" % next(ids)
            customers[cid] = {"customer_id": cid, "name": name, "city": city,
                              "email": "%s.%s%d@example.com" % (name.split()[0].lower(), city.lower(), k)}
            grosses = rng.sample(range(2000, 90000), self.ORDERS[d])
            for i, cents in enumerate(grosses):
                in_window = i < 3 or rng.random() < 0.5  # the first three orders are sure candidates
                day = (start + datetime.timedelta(days=rng.randint(0, (end - start).days)) if in_window
                       else start - datetime.timedelta(days=rng.randint(1, 100)) if rng.random() < 0.5
                       else end + datetime.timedelta(days=rng.randint(1, 100)))
                oid = "SO-%d" % next(ids)
                orders[oid] = {"order_id": oid, "customer_id": cid, "date": day.isoformat(),
                               "status": "delivered" if i < 3 else rng.choice(STATUSES), "gross_usd": cents / 100,
                               "refunds_usd": [round(rng.uniform(5, cents / 200), 2)] if rng.random() < 0.3 else []}
        target = next(iter(customers))
        self._state = {"name": name, "target": target, "start": start.isoformat(), "end": end.isoformat(),
                       "customers": customers, "orders": orders}
        if d == 3:  # a big refund on the largest gross candidate, so gross and net rankings differ
            top, second = sorted(self._candidates(), key=lambda o: -o["gross_usd"])[:2]
            top["refunds_usd"] = [round(top["gross_usd"] - second["gross_usd"] + rng.uniform(5, 20), 2)]
            second["refunds_usd"] = []
        key = self._net if d == 3 else (lambda o: o["gross_usd"])
        self._expected_answer = max(self._candidates(), key=key)["order_id"]
        self._tools = {
            "find_customers": {"description": "Customers whose name contains the query (id, city, email).",
                               "parameters": {"type": "object", "properties": {"name": {"type": "string"}},
                                              "required": ["name"]}},
            "list_orders": {"description": "A customer's orders, newest first, paginated: id, date, status, gross.",
                            "parameters": {"type": "object", "properties": {"customer_id": {"type": "string"},
                                                                            "page": {"type": "integer"}},
                                           "required": ["customer_id"]}},
            "get_order": {"description": "Full order record including refunds and net amount.",
                          "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                                         "required": ["order_id"]}},
        }
        measure = "NET amount (gross minus refunds)" if d == 3 else "gross amount"
        obs = (f"You are a CRM analyst. Question: among the DELIVERED orders placed by {name} from "
               f"{customers[target]['city']} dated between {start.isoformat()} and {end.isoformat()} (inclusive), "
               f"which one has the largest {measure}? Answer with its order ID.\n"
               "Tools: find_customers(name), list_orders(customer_id, page=1), get_order(order_id).\n"
               'Call tools like <tool_call>{"name": "find_customers", "arguments": {"name": "Jane Roe"}}</tool_call> '
               "(several per reply allowed). Finish with e.g. <answer>SO-123456</answer>.\n"
               f"You have {self.max_turns} replies. Success: the exact order ID.")
        return obs, {}

    def _net(self, order):
        return round(order["gross_usd"] - sum(order["refunds_usd"]), 2)

    def _candidates(self):
        s = self._state
        return [o for o in s["orders"].values() if o["customer_id"] == s["target"] and o["status"] == "delivered"
                and s["start"] <= o["date"] <= s["end"]]

    def _orders_of(self, cid):
        return sorted((o for o in self._state["orders"].values() if o["customer_id"] == cid),
                      key=lambda o: (o["date"], o["order_id"]), reverse=True)

    def tool_find_customers(self, name):
        q = str(name).strip().lower()
        if len(q) < 2:
            return "Error: query must have at least 2 characters."
        hits = sorted((c for c in self._state["customers"].values() if q in c["name"].lower()),
                      key=lambda c: c["customer_id"])
        return json.dumps(hits) if hits else f"No customers match '{name}'."

    def tool_list_orders(self, customer_id, page=1):
        if customer_id not in self._state["customers"]:
            return f"Error: unknown customer_id '{customer_id}'."
        rows, size, page = self._orders_of(customer_id), self.PAGE_SIZE[self.difficulty], int(page)
        pages = max(1, -(-len(rows) // size))
        if not 1 <= page <= pages:
            return f"Error: page must be between 1 and {pages}."
        short = [{k: o[k] for k in ("order_id", "date", "status", "gross_usd")} for o in rows[(page - 1) * size:page * size]]
        return json.dumps({"customer_id": customer_id, "page": page, "pages": pages, "orders": short})

    def tool_get_order(self, order_id):
        o = self._state["orders"].get(str(order_id).strip().upper())
        return f"Error: no order '{order_id}'." if o is None else json.dumps(dict(o, net_usd=self._net(o)))

    def solution(self):
        s = self._state
        cid, size = s["target"], self.PAGE_SIZE[self.difficulty]
        pages = max(1, -(-len(self._orders_of(cid)) // size))
        replies = [_call("find_customers", name=s["name"]), _call("list_orders", customer_id=cid, page=1)]
        if pages > 1:
            replies.append("".join(_call("list_orders", customer_id=cid, page=p) for p in range(2, pages + 1)))
        if self.difficulty == 3:  # refunds are only visible in the details of each candidate
            replies.append("".join(_call("get_order", order_id=o["order_id"]) for o in self._candidates()))
        return replies + [f"<answer>{self._expected_answer}</answer>"]
