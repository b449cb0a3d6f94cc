"""Search a paginated library catalog and find the barcode of a borrowable copy at one branch.

skill: Data Retrieval
hint: Search results mix other authors, formats and editions and span several pages. Keep only print records of the right title and author, order them newest first, and open their holdings one by one until one has an available copy at the requested branch.
difficulty: 1-3
turns: single
"""
import json
import random


def _call(name, /, **arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


TITLES = ["The Salt Road", "Quiet Engines", "A Map of Tides", "Glass Orchard", "The Ninth Lantern", "Winter Arithmetic"]
AUTHORS = ["R. Okonkwo", "L. Haddad", "M. Castell", "J. Wren", "S. Ivers", "T. Nakamura"]
BRANCHES = ["Central", "Eastside", "Harbor", "Hillcrest", "Riverside"]


class LibraryCatalogEnv(ToolUseBaseEnv):
    RECORDS = {1: 5, 2: 10, 3: 16}  # catalog records matching the title words
    PAGE = {1: 10, 2: 4, 3: 4}

    def __init__(self, max_turns=20, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.difficulty = difficulty
        super().__init__(max_turns=max_turns)

    def reset(self, seed=None):
        self._rng = rng = random.Random(seed)
        self.turn_count, self._call_history, self._current_msg = 0, [], 0
        d = self.difficulty
        title, author = rng.choice(TITLES), rng.choice(AUTHORS)
        branch = rng.choice(BRANCHES)
        years = rng.sample(range(1990, 2025), self.RECORDS[d])
        barcodes = iter(rng.sample(range(10 ** 7, 10 ** 8), 200))
        records = {}
        for i, year in enumerate(years):
            rid = "REC-%05d" % rng.randint(10000, 99999)
            while rid in records:
                rid = "REC-%05d" % rng.randint(10000, 99999)
            right = i < 3 + d  # records of the right title and author; the rest are look-alikes
            records[rid] = {"record_id": rid, "title": title if right or rng.random() < 0.5 else title + ": A Companion",
                            "author": author if right else rng.choice([a for a in AUTHORS if a != author]),
                            "year": year, "format": "print" if right and i < 2 + d else rng.choice(["print", "ebook", "audiobook"]),
                            "copies": []}
            if records[rid]["format"] == "print":
                for _ in range(rng.randint(1, 4)):
                    records[rid]["copies"].append({"barcode": "3%d" % next(barcodes), "branch": rng.choice(BRANCHES),
                                                   "status": rng.choice(["available", "on loan", "on loan", "in repair"])})
        good = sorted((r for r in records.values() if r["title"] == title and r["author"] == author and r["format"] == "print"),
                      key=lambda r: -r["year"])
        # the newest good edition(s) may have no available copy at the branch (d3: the first two never do)
        for r in good[:d - 1]:
            for c in r["copies"]:
                if c["branch"] == branch and c["status"] == "available":
                    c["status"] = "on loan"
        target = good[d - 1]
        for c in target["copies"]:
            if c["branch"] == branch and c["status"] == "available":
                c["status"] = "in repair"
        target["copies"].append({"barcode": "3%d" % next(barcodes), "branch": branch, "status": "available"})
        rng.shuffle(target["copies"])
        self._state = {"title": title, "author": author, "branch": branch, "records": records,
                       "order": sorted(records, key=lambda k: (records[k]["title"], k))}
        self._good = [r["record_id"] for r in good[:d]]
        self._expected_answer = next(c["barcode"] for c in target["copies"] if c["branch"] == branch and c["status"] == "available")
        self._tools = {
            "search_catalog": {"description": "Catalog records whose title contains the query, paginated.",
                               "parameters": {"type": "object", "properties": {"query": {"type": "string"},
                                                                               "page": {"type": "integer"}}, "required": ["query"]}},
            "get_holdings": {"description": "Copies of a record: barcode, branch, status.",
                             "parameters": {"type": "object", "properties": {"record_id": {"type": "string"}},
                                            "required": ["record_id"]}},
        }
        obs = (f"A patron wants to borrow '{title}' by {author} in PRINT, picking it up today at the {branch} branch. "
               "Find the newest edition (latest year) that has an AVAILABLE copy at that branch and answer with that "
               "copy's barcode.\nTools: search_catalog(query, page=1), get_holdings(record_id).\n"
               'Call tools like <tool_call>{"name": "search_catalog", "arguments": {"query": "Moby Dick", "page": 1}}'
               "</tool_call> (several per reply allowed). Finish with e.g. <answer>3123456789</answer>.\n"
               f"You have {self.max_turns} replies. Success: the exact barcode.")
        return obs, {}

    def _matches(self, query):
        q = str(query).strip().lower()
        return [self._state["records"][k] for k in self._state["order"] if q and q in self._state["records"][k]["title"].lower()]

    def tool_search_catalog(self, query, page=1):
        hits, size, page = self._matches(query), self.PAGE[self.difficulty], int(page)
        pages = max(1, -(-len(hits) // size))
        if not hits:
            return f"No records match '{query}'."
        if not 1 <= page <= pages:
            return f"Error: page must be between 1 and {pages}."
        rows = [{k: r[k] for k in ("record_id", "title", "author", "year", "format")} for r in hits[(page - 1) * size:page * size]]
        return json.dumps({"page": page, "pages": pages, "records": rows})

    def tool_get_holdings(self, record_id):
        r = self._state["records"].get(str(record_id).strip().upper())
        if r is None:
            return f"Error: no record '{record_id}'."
        if r["format"] != "print":
            return f"{r['record_id']} is an {r['format']}: no physical copies."
        return json.dumps({"record_id": r["record_id"], "copies": r["copies"]})

    def solution(self):
        t = self._state["title"]
        pages = max(1, -(-len(self._matches(t)) // self.PAGE[self.difficulty]))
        replies = [_call("search_catalog", query=t, page=1)]
        if pages > 1:
            replies.append("".join(_call("search_catalog", query=t, page=p) for p in range(2, pages + 1)))
        # open holdings newest-first, one record per reply, until the branch has an available copy
        replies += [_call("get_holdings", record_id=rid) for rid in self._good]
        return replies + [f"<answer>{self._expected_answer}</answer>"]
