"""Run a web-shop order pipeline: search, fill the cart under constraints, pick the best coupon, check out.

skill: Multi-Step Workflows
hint: For each item, search, drop out-of-stock and non-matching results, then compare prices. Before applying a coupon, compute every coupon's actual discount on the current cart (minimums and category limits matter). For shipping, filter by delivery days first, then take the cheapest.
difficulty: 1-3
turns: multi
"""
import json
import random


def _call(name, /, **arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


# search term -> (category, name variants)
LINES = {"usb cable": ("accessories", ["USB cable 1m", "USB cable braided 2m", "USB cable right-angle", "USB cable 3-pack"]),
         "desk lamp": ("home", ["desk lamp LED", "desk lamp clamp", "desk lamp dimmable", "desk lamp mini"]),
         "headphones": ("audio", ["headphones over-ear", "headphones wireless", "headphones studio", "headphones kids"])}
BRANDS = ["Arlo", "Brisk", "Corvo", "Dunmore", "Elko", "Fenwick"]


def _usd(cents):
    return "%.2f" % (cents / 100)


class ShopCheckoutEnv(ToolUseBaseEnv):
    def __init__(self, max_turns=20, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.difficulty = difficulty
        super().__init__(max_turns=max_turns)

    def reset(self, seed=None):
        self._rng = rng = random.Random(seed)
        self.turn_count, self._call_history, self._current_msg = 0, [], 0
        d = self.difficulty
        products, ids = {}, iter(rng.sample(range(1000, 9999), 40))
        for term, (cat, names) in LINES.items():
            for price in rng.sample(range(899, 8999, 50), 6 + d):
                pid = "P-%d" % next(ids)
                products[pid] = {"product_id": pid, "name": rng.choice(names), "brand": rng.choice(BRANDS), "category": cat,
                                 "price": price, "stock": rng.choice((0, 0, 3, 8, 20)), "rating": rng.choice((3.8, 4.2, 4.5, 4.7, 4.9))}
        by_term = {t: sorted((p for p in products.values() if p["category"] == c), key=lambda p: p["price"]) for t, (c, _) in LINES.items()}
        terms = rng.sample(sorted(LINES), 3)
        steps, want = [], {}
        # 1) cheapest in stock
        cands = by_term[terms[0]]
        cands[-1]["stock"] = max(cands[-1]["stock"], 5)  # at least one in stock
        best1 = next(p for p in cands if p["stock"] > 0)
        q1 = rng.randint(1, 3)
        steps.append((f"Add {q1} unit(s) of the cheapest IN-STOCK '{terms[0]}' to the cart.", best1["product_id"], q1, terms[0]))
        if d >= 2:  # 2) a given brand: an out-of-stock variant of that brand exists as a trap
            cands = by_term[terms[1]]
            brand = cands[1]["brand"]
            for p in cands:
                if p["brand"] == brand:
                    p["stock"] = 0
            cands[0].update(brand=brand, stock=0)
            cands[2].update(brand=brand, stock=7)
            q2 = rng.randint(1, 2)
            steps.append((f"Add {q2} unit(s) of the in-stock {brand} '{terms[1]}'.", cands[2]["product_id"], q2, terms[1]))
        if d == 3:  # 3) cheapest in stock with a rating floor
            cands = by_term[terms[2]]
            cands[-1].update(stock=4, rating=4.9)
            best3 = next(p for p in cands if p["stock"] > 0 and p["rating"] >= 4.5)
            steps.append((f"Add 1 unit of the cheapest in-stock '{terms[2]}' rated at least 4.5.", best3["product_id"], 1, terms[2]))
        for _, pid, q, _ in steps:
            want[pid] = q
        self._state = {"products": products, "cart": {}, "coupon": None, "order": None, "want": want}
        coupons, tags = {}, iter(rng.sample(range(100, 999), 6))
        for cat in sorted({p["category"] for p in products.values()}):
            coupons["%s-%d" % (cat[:4].upper(), next(tags))] = {"percent": rng.randint(10, 30), "category": cat, "min": 0}
        coupons["WELCOME-%d" % next(tags)] = {"percent": rng.randint(5, 15), "category": None, "min": rng.randint(20, 60) * 100}
        coupons["FLAT-%d" % next(tags)] = {"fixed": rng.randint(10, 40) * 100, "category": None, "min": rng.randint(50, 150) * 100}
        coupons["BIGSPEND-%d" % next(tags)] = {"fixed": rng.randint(60, 90) * 100, "category": None, "min": 100000}
        self._state["coupons"] = coupons
        while True:  # keep the best coupon unique: a tied runner-up gets an unreachable minimum
            ranked = sorted(coupons, key=lambda c: (-self._discount(c, want), c))
            if self._discount(ranked[0], want) > self._discount(ranked[1], want):
                break
            coupons[ranked[1]]["min"] = 100000
        self._state["best_coupon"] = max(sorted(coupons), key=lambda c: self._discount(c, want))
        days = rng.randint(3, 5)
        ship = {"economy": (rng.randint(3, 6) * 100 - 1, rng.randint(6, 9)), "saver": (rng.randint(5, 9) * 100 - 1, days),
                "standard": (rng.randint(7, 12) * 100 - 1, rng.randint(3, 4)), "express": (rng.randint(13, 19) * 100 - 1, 2),
                "overnight": (rng.randint(20, 35) * 100 - 1, 1)}
        if ship["standard"][0] == ship["saver"][0]:  # no price ties among the eligible methods
            ship["standard"] = (ship["standard"][0] + 100, ship["standard"][1])
        ok = sorted((m for m in ship if ship[m][1] <= days), key=lambda m: ship[m][0])
        self._state.update(ship=ship, days=days, best_ship=ok[0])
        msgs = [m for m, _, _, _ in steps]
        crits = [lambda s, w={p: q for _, p, q, _ in steps[:i + 1]}: s["cart"] == w for i in range(len(steps))]
        msgs.append("Apply the single coupon that gives the biggest discount on the current cart.")
        crits.append(lambda s: s["cart"] == s["want"] and s["coupon"] == s["best_coupon"])
        msgs.append(f"Check out with the cheapest shipping method that delivers within {days} days.")
        crits.append(lambda s: s["order"] is not None and s["order"]["items"] == s["want"]
                     and s["order"]["coupon"] == s["best_coupon"] and s["order"]["shipping"] == s["best_ship"])
        self._user_messages, self._message_criteria, self._expected_answer = msgs, crits, "done"
        self._steps = steps
        s_, i_ = {"type": "string"}, {"type": "integer"}

        def spec(desc, req, **props):
            return {"description": desc, "parameters": {"type": "object", "properties": props, "required": req}}
        self._tools = {
            "search_products": spec("Products whose name contains the query.", ["query"], query=s_),
            "add_to_cart": spec("Add units of a product (limited by stock).", ["product_id", "quantity"], product_id=s_, quantity=i_),
            "remove_from_cart": spec("Remove a product from the cart entirely.", ["product_id"], product_id=s_),
            "view_cart": spec("Cart lines, subtotal and applied coupon.", []),
            "list_coupons": spec("Available coupons and their rules.", []),
            "apply_coupon": spec("Apply one coupon (replaces any previous one).", ["code"], code=s_),
            "shipping_options": spec("Shipping methods with price and delivery days.", []),
            "checkout": spec("Place the order with a shipping method.", ["shipping_method"], shipping_method=s_),
            "cancel_order": spec("Cancel the placed order; the cart is restored.", []),
        }
        obs = ("You are a shopping assistant operating a web shop's API. Tools: " + ", ".join(
               f"{n}({', '.join(t['parameters']['properties'])})" for n, t in self._tools.items()) + ".\n"
               'Call tools like <tool_call>{"name": "search_products", "arguments": {"query": "kettle"}}</tool_call> '
               "(several per reply allowed). Instructions come one at a time; the next appears in a tool result once the "
               f"current one is satisfied. When told all are complete, reply <answer>done</answer>. You have "
               f"{self.max_turns} replies.\n\n[Instruction 1] {msgs[0]}")
        return obs, {}

    def _discount(self, code, cart):
        c, prods = self._state["coupons"][code], self._state["products"]
        subtotal = sum(prods[p]["price"] * q for p, q in cart.items())
        base = sum(prods[p]["price"] * q for p, q in cart.items() if c["category"] in (None, prods[p]["category"]))
        if subtotal < c["min"] or base == 0:
            return 0
        return min(base, c["fixed"]) if "fixed" in c else round(base * c["percent"] / 100)

    def _cart_view(self):
        s = self._state
        lines = [{"product_id": p, "name": s["products"][p]["name"], "unit_price": _usd(s["products"][p]["price"]), "quantity": q}
                 for p, q in sorted(s["cart"].items())]
        sub = sum(s["products"][p]["price"] * q for p, q in s["cart"].items())
        disc = self._discount(s["coupon"], s["cart"]) if s["coupon"] else 0
        return {"lines": lines, "subtotal": _usd(sub), "coupon": s["coupon"], "discount": _usd(disc)}

    def tool_search_products(self, query):
        q = str(query).strip().lower()
        hits = [dict(p, price=_usd(p["price"]), in_stock=p["stock"] > 0) for p in self._state["products"].values()
                if q and q in p["name"].lower()]
        for h in hits:
            del h["stock"]
        return (json.dumps(sorted(hits, key=lambda h: h["product_id"])) if hits else "No products found.") + self._advance_if_done()

    def tool_add_to_cart(self, product_id, quantity):
        p, q = self._state["products"].get(product_id), int(quantity)
        if p is None or q < 1:
            return "Error: unknown product or quantity < 1." + self._advance_if_done()
        if self._state["cart"].get(product_id, 0) + q > p["stock"]:
            return f"Error: only {p['stock']} in stock." + self._advance_if_done()
        self._state["cart"][product_id] = self._state["cart"].get(product_id, 0) + q
        return "Added. Cart: " + json.dumps(self._cart_view()) + self._advance_if_done()

    def tool_remove_from_cart(self, product_id):
        if self._state["cart"].pop(product_id, None) is None:
            return "Error: product not in cart." + self._advance_if_done()
        return "Removed. Cart: " + json.dumps(self._cart_view()) + self._advance_if_done()

    def tool_view_cart(self):
        return json.dumps(self._cart_view()) + self._advance_if_done()

    def tool_list_coupons(self):
        rows = []
        for code, c in sorted(self._state["coupons"].items()):
            off = f"${_usd(c['fixed'])} off" if "fixed" in c else f"{c['percent']}% off"
            scope = f" {c['category']} items" if c["category"] else " the order"
            rows.append(f"{code}: {off}{scope}" + (f", minimum subtotal ${_usd(c['min'])}" if c["min"] else ""))
        return "\n".join(rows) + self._advance_if_done()

    def tool_apply_coupon(self, code):
        code = str(code).strip().upper()
        if code not in self._state["coupons"]:
            return f"Error: unknown coupon '{code}'." + self._advance_if_done()
        if self._discount(code, self._state["cart"]) == 0:
            return f"Error: {code} does not apply to this cart (minimum or category)." + self._advance_if_done()
        self._state["coupon"] = code
        return "Applied. Cart: " + json.dumps(self._cart_view()) + self._advance_if_done()

    def tool_shipping_options(self):
        return json.dumps([{"method": m, "price": _usd(p), "days": dd} for m, (p, dd) in sorted(self._state["ship"].items())]) \
            + self._advance_if_done()

    def tool_checkout(self, shipping_method):
        s, m = self._state, str(shipping_method).strip().lower()
        if m not in s["ship"] or not s["cart"]:
            return "Error: unknown shipping method or empty cart." + self._advance_if_done()
        if s["order"] is not None:
            return "Error: an order is already placed; cancel_order() first." + self._advance_if_done()
        view = self._cart_view()
        total = round(float(view["subtotal"]) * 100) - round(float(view["discount"]) * 100) + s["ship"][m][0]
        s["order"] = {"items": dict(s["cart"]), "coupon": s["coupon"], "shipping": m, "total": total}
        s["cart"], s["coupon"] = {}, None
        return f"Order placed: total ${_usd(total)} via {m}." + self._advance_if_done()

    def tool_cancel_order(self):
        s = self._state
        if s["order"] is None:
            return "Error: no order to cancel." + self._advance_if_done()
        s["cart"], s["coupon"], s["order"] = s["order"]["items"], s["order"]["coupon"], None
        return "Order cancelled; cart restored." + self._advance_if_done()

    def solution(self):
        s, replies = self._state, []
        for _, pid, q, term in self._steps:
            replies += [_call("search_products", query=term), _call("add_to_cart", product_id=pid, quantity=q)]
        replies += [_call("view_cart") + _call("list_coupons"), _call("apply_coupon", code=s["best_coupon"]),
                    _call("shipping_options"), _call("checkout", shipping_method=s["best_ship"]), "<answer>done</answer>"]
        return replies
