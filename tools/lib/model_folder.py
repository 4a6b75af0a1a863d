#!/usr/bin/env python3
"""A model folder holding some variants of models/: links to their files and their manifest entries
(order kept), for benchmarks that serve only those variants.

    python3 tools/lib/model_folder.py OUT NAME...   # prints the variants' family

As a module: `link_variants(out, names)` returns the family (all the variants must share one).
"""
import json, os, sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def link_variants(out, names):
    root = json.load(open(os.path.join(ROOT, "models", "models.json")))
    entries = {n: root["models"][n] for n in names}
    families = {e["family"] for e in entries.values()}
    assert len(families) == 1, f"the variants belong to several families: {families}"
    os.makedirs(out, exist_ok=True)
    for e in entries.values():
        for f in (e["file"], e.get("labels")):
            if f and not os.path.exists(os.path.join(out, f)):
                os.symlink(os.path.join(ROOT, "models", f), os.path.join(out, f))
    json.dump({"models": entries}, open(os.path.join(out, "models.json"), "w"), indent=2)
    return families.pop()


if __name__ == "__main__":
    print(link_variants(sys.argv[1], sys.argv[2:]))
