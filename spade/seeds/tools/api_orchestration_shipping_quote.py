"""Quote an order's shipping cost by chaining order, customer, product, zone and rate APIs.

skill: API Orchestration
hint: Feed each API's output into the next: order -> shipping (not billing) postal code and SKUs -> product weights and warehouses -> one zone per warehouse -> one rate per parcel. Add up line weights (unit weight x quantity) per parcel before rating.
difficulty: 1-3
turns: single
"""
import json
import math
import random


def _call(name, /, **arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


PRODUCT_NAMES = ["desk lamp", "yoga mat", "kettle", "tool box", "blender", "monitor arm", "rice cooker",
                 "office chair", "backpack", "tent", "air purifier", "speaker", "bookshelf", "drill"]
WAREHOUSES = ["WH-NORTH", "WH-EAST", "WH-SOUTH", "WH-WEST"]


class ShippingQuoteEnv(ToolUseBaseEnv):
    LINES = {1: (2, 2), 2: (3, 4), 3: (4, 6)}  # order lines per difficulty (min, max)

    def __init__(self, max_turns=20, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.difficulty = difficulty
        super().__init__(max_turns=max_turns)

    def reset(self, seed=None):
        self._rng = rng = random.Random(seed)
        self.turn_count, self._call_history, self._current_msg = 0, [], 0
        d = self.difficulty
        origins = rng.sample(WAREHOUSES, 2 if d == 3 else 1)  # d3 ships from two warehouses
        products = {}
        for name in rng.sample(PRODUCT_NAMES, 9):  # the catalog also holds products not in the order
            sku = "SKU-%04d" % rng.randint(1000, 9999)
            products[sku] = {"name": name, "unit_weight_kg": round(rng.uniform(0.3, 6.0), 2),
                             "warehouse": rng.choice(WAREHOUSES)}
        skus = sorted(products)
        rng.shuffle(skus)
        lines = [{"sku": sku, "qty": rng.randint(1, 4)} for sku in skus[:rng.randint(*self.LINES[d])]]
        for i, line in enumerate(lines):  # ordered items come from the origins; at d3 both ship something
            products[line["sku"]]["warehouse"] = origins[i] if i < len(origins) else rng.choice(origins)
        billing, shipping = ("%05d" % rng.randint(10000, 99999) for _ in range(2))
        customer = {"customer_id": "CUS-%05d" % rng.randint(10000, 99999), "name": "Customer %s" % rng.choice("KLMNPR"),
                    "billing_postal": billing, "shipping_postal": shipping}
        order = {"order_id": "ORD-%05d" % rng.randint(10000, 99999), "lines": lines}
        if d == 1:
            order["ship_to_postal"] = shipping
        else:
            order["customer_id"] = customer["customer_id"]
        self._state = {
            "order": order, "customer": customer, "products": products,
            "zone_mult": rng.randint(3, 97), "zone_off": {wh: rng.randint(0, 7) for wh in WAREHOUSES},
            "rates": {z: (round(4.4 + 1.1 * z + rng.uniform(0, 1), 2), round(0.55 + 0.2 * z + rng.uniform(0, 0.2), 2))
                      for z in range(1, 9)},
        }
        self._tools = {
            "get_order": {"description": "Fetch an order: its lines (sku, qty) and who/where it ships to.",
                          "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                                         "required": ["order_id"]}},
            "get_customer": {"description": "Fetch a customer record with billing and shipping postal codes.",
                             "parameters": {"type": "object", "properties": {"customer_id": {"type": "string"}},
                                            "required": ["customer_id"]}},
            "get_product": {"description": "Fetch a product: unit weight in kg and the warehouse that stocks it.",
                            "parameters": {"type": "object", "properties": {"sku": {"type": "string"}},
                                           "required": ["sku"]}},
            "get_zone": {"description": "Shipping zone (1-8) from a warehouse to a destination postal code.",
                         "parameters": {"type": "object", "properties": {"postal_code": {"type": "string"},
                                                                         "warehouse": {"type": "string"}},
                                        "required": ["postal_code", "warehouse"]}},
            "get_rate": {"description": "Price in USD of ONE parcel of the given total weight to a zone.",
                         "parameters": {"type": "object", "properties": {"zone": {"type": "integer"},
                                                                         "weight_kg": {"type": "number"}},
                                        "required": ["zone", "weight_kg"]}},
        }
        self._expected_answer = "%.2f" % sum(self._rate(self._zone(shipping, wh), w)
                                             for wh, w in self._parcels().items())
        obs = (f"You are a logistics assistant. Quote the total shipping cost in USD for order {order['order_id']}.\n"
               "Rules: items ship to the customer's SHIPPING address. All items stocked in the same warehouse travel "
               "together as one parcel (rate the parcel's total weight once); each warehouse sends its own parcel. "
               "The quote is the sum of the parcel rates.\n"
               "Tools: get_order(order_id), get_customer(customer_id), get_product(sku), "
               "get_zone(postal_code, warehouse), get_rate(zone, weight_kg).\n"
               'Call tools like <tool_call>{"name": "get_product", "arguments": {"sku": "SKU-1234"}}</tool_call> '
               "(several calls per reply are allowed). Finish with the total, e.g. <answer>37.85</answer>.\n"
               f"You have {self.max_turns} replies. Success: the exact total to the cent.")
        return obs, {}

    # ---- hidden pricing model ---------------------------------------------------------------
    def _parcels(self):
        weights = {}
        for line in self._state["order"]["lines"]:
            p = self._state["products"][line["sku"]]
            weights[p["warehouse"]] = round(weights.get(p["warehouse"], 0) + p["unit_weight_kg"] * line["qty"], 2)
        return weights

    def _zone(self, postal, warehouse):
        return 1 + (int(postal) // 100 * self._state["zone_mult"] + self._state["zone_off"][warehouse]) % 8

    def _rate(self, zone, weight):
        base, per_half_kg = self._state["rates"][zone]
        return round(base + per_half_kg * math.ceil(round(weight * 2, 4)), 2)  # billed per started 0.5 kg

    # ---- tools ---------------------------------------------------------------------------------
    def tool_get_order(self, order_id):
        order = self._state["order"]
        if str(order_id).strip().upper() != order["order_id"]:
            return f"404: no order '{order_id}'."
        return json.dumps(order)

    def tool_get_customer(self, customer_id):
        c = self._state["customer"]
        if str(customer_id).strip().upper() != c["customer_id"]:
            return f"404: no customer '{customer_id}'."
        return json.dumps(c)

    def tool_get_product(self, sku):
        p = self._state["products"].get(str(sku).strip().upper())
        return f"404: no product '{sku}'." if p is None else json.dumps(dict(sku=str(sku).strip().upper(), **p))

    def tool_get_zone(self, postal_code, warehouse):
        postal, wh = str(postal_code).strip(), str(warehouse).strip().upper()
        if not (len(postal) == 5 and postal.isdigit()):
            return "400: postal_code must be 5 digits."
        if wh not in WAREHOUSES:
            return f"400: unknown warehouse '{warehouse}'. Known: {', '.join(WAREHOUSES)}."
        return json.dumps({"warehouse": wh, "postal_code": postal, "zone": self._zone(postal, wh)})

    def tool_get_rate(self, zone, weight_kg):
        zone, weight = int(zone), float(weight_kg)
        if zone not in self._state["rates"]:
            return "400: zone must be an integer 1-8."
        if not 0 < weight <= 150:
            return "400: weight_kg must be in (0, 150]."
        billable = math.ceil(round(weight * 2, 4)) / 2
        return json.dumps({"zone": zone, "weight_kg": weight, "billable_kg": billable,
                           "price_usd": self._rate(zone, weight)})

    def solution(self):
        s = self._state
        order = s["order"]
        postal = s["customer"]["shipping_postal"]
        replies = [_call("get_order", order_id=order["order_id"])]
        if self.difficulty >= 2:
            replies.append(_call("get_customer", customer_id=s["customer"]["customer_id"]))
        replies.append("".join(_call("get_product", sku=line["sku"]) for line in order["lines"]))
        parcels = self._parcels()
        replies.append("".join(_call("get_zone", postal_code=postal, warehouse=wh) for wh in sorted(parcels)))
        replies.append("".join(_call("get_rate", zone=self._zone(postal, wh), weight_kg=parcels[wh])
                               for wh in sorted(parcels)))
        return replies + [f"<answer>{self._expected_answer}</answer>"]
