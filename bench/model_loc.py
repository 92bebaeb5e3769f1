#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Lines of code of GUPS under each networking model, host and GPU, as seed
001's table 2: the code a programmer writes for that model, counted without
blank lines and comments.  The runtime is not counted; the app's shared code
(options, verification, the update stream) counts for every model, and each
model adds the functions it alone needs (named below, found by brace
matching in graphapps/).

  bench/model_loc.py [--csv FILE]"""
import csv
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "graphapps")
SHARED_HOST = [("gups/gups.c", "*", ["coprocessor_chunks"])]
SHARED_GPU = [("gups/gups_stream.h", "*", []), ("gups/gups.cl", ["gups_updates"], [])]
MODELS = {
    "grain / msg-per-lane": {"gpu": [("gups/gups.cl", ["gups"], [])], "host": []},
    "coalesced": {"gpu": [("gups/gups.cl", ["gups_coalesced"], []),
                          ("common/model_send.h", ["APP_COALESCED_DECL", "app_coalesced_add64"], [])],
                  "host": []},
    "coprocessor": {"gpu": [("gups/gups.cl", ["gups_coprocessor"], []),
                            ("common/model_send.h", ["APP_PERNODE_DECL", "app_pernode_add64", "app_pernode_apply"], [])],
                    "host": [("gups/gups.c", ["coprocessor_chunks"], []),
                             ("common/model.c", ["app_coprocessor_init", "app_coprocessor_args",
                                                 "app_coprocessor_exchange", "app_coprocessor_free"], [])]},
}


def code_lines(text):
    """The lines that hold code: comments and blank lines removed."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return [l for l in text.splitlines() if l.strip()]


def definition(text, name):
    """The definition of function or macro `name`: from its line to its closing brace (or macro end)."""
    m = re.search(r"^#define " + re.escape(name) + r"\b.*?(?<!\\)\n", text, flags=re.M | re.S)
    if m:
        return m.group(0)
    m = re.search(r"^[^\n;]*\b" + re.escape(name) + r"\(", text, flags=re.M)
    if not m:
        sys.exit(f"model_loc: no definition of {name}")
    depth, i = 0, text.index("{", m.start())
    while True:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
        if depth == 0:
            return text[m.start():i]


def count(parts):
    n = 0
    for path, names, minus in parts:
        text = open(os.path.join(ROOT, path)).read()
        if names == "*":
            n += len(code_lines(text)) - sum(len(code_lines(definition(text, x))) for x in minus)
        else:
            n += sum(len(code_lines(definition(text, x))) for x in names)
    return n


def main():
    rows = []
    for model, parts in MODELS.items():
        host, gpu = count(SHARED_HOST + parts["host"]), count(SHARED_GPU + parts["gpu"])
        rows.append({"model": model, "host": host, "gpu": gpu, "total": host + gpu})
    print(f"{'GUPS':22} {'host':>6} {'GPU':>6} {'total':>6}")
    for r in rows:
        print(f"{r['model']:22} {r['host']:6} {r['gpu']:6} {r['total']:6}")
    print("Gravel, table 2: coprocessor 296 + 46 = 342, msg-per-lane & Gravel 174 + 19 = 193, "
          "coalesced APIs 187 + 131 = 318")
    if "--csv" in sys.argv:
        with open(sys.argv[sys.argv.index("--csv") + 1], "w", newline="") as f:
            w = csv.DictWriter(f, ["model", "host", "gpu", "total"])
            w.writeheader()
            w.writerows(rows)


main()
