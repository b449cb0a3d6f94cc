"""Query a paginated inventory database and total the cost of restocking low items in one warehouse.

skill: Data Retrieval
hint: Page through the filtered listing until the last page, note each item's on-hand quantity there, then fetch each candidate's details for its reorder level and unit cost. Only items strictly below their reorder level count; restock amount = target level minus on-hand.
difficulty: 1-3
turns: single
"""
import json
import random


def _call(name, /, **arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


CATEGORIES = ["fasteners", "adhesives", "cables", "filters", "lubricants"]
WAREHOUSES = ["DAL", "RNO", "BUF"]
NOUNS = {"fasteners": ["hex bolt", "wing nut", "rivet", "anchor", "lag screw", "washer", "cotter pin"],
         "adhesives": ["epoxy", "wood glue", "tape", "sealant", "contact cement", "hot-melt stick", "primer"],
         "cables": ["patch cord", "coax", "power lead", "HDMI", "USB-C", "fiber jumper", "ribbon cable"],
         "filters": ["air filter", "oil filter", "HEPA pad", "water cartridge", "fuel filter", "mesh screen"],
         "lubricants": ["grease", "gear oil", "chain lube", "silicone spray", "cutting fluid", "graphite"]}


class InventoryAuditEnv(ToolUseBaseEnv):
    TARGET_ITEMS = {1: 5, 2: 9, 3: 14}  # items of the audited category in the audited warehouse
    PAGE_SIZE = {1: 20, 2: 6, 3: 5}

    def __init__(self, max_turns=20, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.difficulty = difficulty
        super().__init__(max_turns=max_turns)

    def reset(self, seed=None):
        self._rng = rng = random.Random(seed)
        self.turn_count, self._call_history, self._current_msg = 0, [], 0
        d = self.difficulty
        wh, cat = rng.choice(WAREHOUSES), rng.choice(CATEGORIES)
        n_target = self.TARGET_ITEMS[d]
        catalog, stock = {}, {w: {} for w in WAREHOUSES}
        numbers = rng.sample(range(10000, 99999), n_target + 12)
        for i, num in enumerate(numbers):
            c = cat if i < n_target else rng.choice(CATEGORIES)
            sku = "%s-%d" % (c[:3].upper(), num)
            reorder = rng.randint(5, 60)
            catalog[sku] = {"sku": sku, "name": "%s %s" % (rng.choice(NOUNS[c]), rng.choice("ABCDEFGH") + str(rng.randint(1, 99))),
                            "category": c, "unit_cost": round(rng.uniform(0.8, 45.0), 2), "reorder_level": reorder,
                            "supplier": rng.choice(["Acme", "Borealis", "Cobalt", "Dynamo"]),
                            "discontinued": d == 3 and rng.random() < 0.25}
            # the first two audited items are surely low; others are low about a third of the time
            stock[wh if i < n_target else rng.choice(WAREHOUSES)][sku] = (
                rng.randint(0, reorder - 1) if i < 2 else rng.randint(0, 3 * reorder))
            for other in WAREHOUSES:  # decoy quantities of the same SKU elsewhere
                if other != wh and rng.random() < 0.4:
                    stock[other][sku] = rng.randint(0, 3 * reorder)
            if i == 0:
                catalog[sku]["discontinued"] = False  # at least one item always needs restocking
        self._state = {"wh": wh, "cat": cat, "catalog": catalog, "stock": stock}
        total = 0.0
        for sku in self._audited():
            item = catalog[sku]
            total += (2 * item["reorder_level"] - stock[wh][sku]) * item["unit_cost"]
        self._expected_answer = "%.2f" % total
        self._tools = {
            "query_items": {"description": "List items stocked in a warehouse (optionally one category), paginated, "
                                           "with the quantity on hand in THAT warehouse.",
                            "parameters": {"type": "object", "properties": {
                                "warehouse": {"type": "string"}, "category": {"type": "string"},
                                "page": {"type": "integer"}}, "required": ["warehouse"]}},
            "get_item": {"description": "Catalog details of a SKU: unit cost, reorder level, supplier, discontinued.",
                         "parameters": {"type": "object", "properties": {"sku": {"type": "string"}},
                                        "required": ["sku"]}},
        }
        rule = " Skip discontinued items." if d == 3 else ""
        obs = (f"You are auditing warehouse {wh}. For every '{cat}' item stocked in {wh} whose quantity on hand there "
               "is strictly below its reorder level, we will order enough units to bring it up to exactly TWICE its "
               f"reorder level.{rule} What is the total cost (units ordered x unit cost, summed) in USD?\n"
               f"Warehouses: {', '.join(WAREHOUSES)}. Categories: {', '.join(CATEGORIES)}.\n"
               "Tools: query_items(warehouse, category='', page=1), get_item(sku).\n"
               'Call tools like <tool_call>{"name": "query_items", "arguments": {"warehouse": "DAL", "page": 2}}'
               "</tool_call> (several per reply allowed). Finish with e.g. <answer>1234.56</answer>.\n"
               f"You have {self.max_turns} replies. Success: the exact total to the cent.")
        return obs, {}

    def _audited(self):
        s = self._state
        return [sku for sku, qty in sorted(s["stock"][s["wh"]].items())
                if s["catalog"][sku]["category"] == s["cat"] and qty < s["catalog"][sku]["reorder_level"]
                and not s["catalog"][sku]["discontinued"]]

    def _listing(self, warehouse, category):
        stock = self._state["stock"][warehouse]
        return [sku for sku in sorted(stock) if not category or self._state["catalog"][sku]["category"] == category]

    def tool_query_items(self, warehouse, category="", page=1):
        warehouse, category, page = str(warehouse).strip().upper(), str(category or "").strip().lower(), int(page)
        if warehouse not in WAREHOUSES:
            return f"Error: unknown warehouse '{warehouse}'. Known: {', '.join(WAREHOUSES)}."
        if category and category not in CATEGORIES:
            return f"Error: unknown category '{category}'. Known: {', '.join(CATEGORIES)}."
        skus, size = self._listing(warehouse, category), self.PAGE_SIZE[self.difficulty]
        pages = max(1, -(-len(skus) // size))
        if not 1 <= page <= pages:
            return f"Error: page must be between 1 and {pages}."
        rows = [{"sku": sku, "name": self._state["catalog"][sku]["name"], "category": self._state["catalog"][sku]["category"],
                 "qty_on_hand": self._state["stock"][warehouse][sku]} for sku in skus[(page - 1) * size:page * size]]
        return json.dumps({"warehouse": warehouse, "page": page, "pages": pages, "items": rows})

    def tool_get_item(self, sku):
        item = self._state["catalog"].get(str(sku).strip().upper())
        return f"Error: no SKU '{sku}'." if item is None else json.dumps(item)

    def solution(self):
        s = self._state
        skus, size = self._listing(s["wh"], s["cat"]), self.PAGE_SIZE[self.difficulty]
        pages = max(1, -(-len(skus) // size))
        # page 1 reveals the page count; then the remaining pages; then details (reorder levels live there)
        replies = [_call("query_items", warehouse=s["wh"], category=s["cat"], page=1)]
        if pages > 1:
            replies.append("".join(_call("query_items", warehouse=s["wh"], category=s["cat"], page=p)
                                   for p in range(2, pages + 1)))
        replies.append("".join(_call("get_item", sku=sku) for sku in skus))
        return replies + [f"<answer>{self._expected_answer}</answer>"]
