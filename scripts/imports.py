#!/usr/bin/env python3
"""The import graph of each crate's modules, and its cycles.

A module is a file (`foo.rs` or `foo/mod.rs`); an arrow runs from a file to every module of
the same crate it names through a `crate::…`, `super::…` or `self::…` path. A parent file's
`mod child;` declarations are not arrows (declaring is not depending), and an arrow into a
child of one's own folder is the parent using its own part. Test modules (`#[cfg(test)]`
blocks and `tests/`) are left out: they may use anything.

Prints every cycle (strongly connected component of more than one file) per crate, and exits
with 1 when there is one. Usage: python3 scripts/imports.py [crate-dir ...]
"""
import os
import re
import sys

CRATES = ["core", "dto", "charts", "testkit", "app", "server", "frontend"]
PATH = re.compile(r"\b(crate|super|self)((?:::\w+)+)")
USE_GROUP = re.compile(r"\buse\s+(crate|super|self)::((?:\w+::)*)\{([^;]*)\};", re.S)


def strip_tests(text):
    """Drops `#[cfg(test)] mod … { … }` blocks and comments."""
    text = re.sub(r"//[^\n]*", "", text)
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def modules(src):
    """File path -> module path (tuple), for every .rs file under src/."""
    mods = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(root, f), src)[:-3].split(os.sep)
            if rel[-1] in ("mod", "lib", "main"):
                rel = rel[:-1]
            if rel and rel[0] in ("bin",):
                continue
            mods[os.path.join(root, f)] = tuple(rel)
    return mods


def resolve(base, kind, parts, known):
    if kind == "crate":
        path = []
    elif kind == "super":
        path = list(base[:-1])
    else:
        path = list(base)
    parts = list(parts)
    while parts and parts[0] == "super":
        path = path[:-1]
        parts.pop(0)
    path += parts
    # The longest prefix that is a module.
    while path and tuple(path) not in known:
        path.pop()
    return tuple(path)


def root_exports(src, known):
    """Names the crate root re-exports (`pub use a::b::{X, Y}`) -> the module they come from."""
    names = {}
    for f in ("lib.rs", "main.rs"):
        path = os.path.join(src, f)
        if not os.path.exists(path):
            continue
        text = open(path, encoding="utf-8").read()
        for m in re.finditer(r"pub use ((?:\w+::)+)\{?([^;]*?)\}?;", text):
            mod = resolve((), "crate", [p for p in m.group(1).split("::") if p], known)
            for item in m.group(2).split(","):
                item = item.strip().split(" as ")[-1].split("::")[-1]
                if item:
                    names[item] = mod
    return names


def edges(src):
    mods = modules(src)
    known = set(mods.values())
    exports = root_exports(src, known)
    graph = {m: set() for m in known}
    for file, mod in mods.items():
        text = strip_tests(open(file, encoding="utf-8").read())
        refs = []
        for m in USE_GROUP.finditer(text):
            prefix = [p for p in m.group(2).split("::") if p]
            for item in re.split(r",", m.group(3)):
                item = item.strip().split(" as ")[0].split("::{")[0]
                if item:
                    refs.append((m.group(1), prefix + [p for p in item.split("::") if p and p != "{"]))
        for m in PATH.finditer(text):
            refs.append((m.group(1), [p for p in m.group(2).split("::") if p]))
        for kind, parts in refs:
            target = resolve(mod, kind, parts, known)
            if target == () and kind == "crate" and parts and parts[0] in exports:
                target = exports[parts[0]]
            # Not an arrow: itself, its ancestors' own module tree upward when only the
            # crate root is named, or one of its own children.
            if target == mod or target == () or target[: len(mod)] == mod:
                continue
            graph[mod].add(target)
    return graph


def areas(graph):
    """The same graph between a crate's top-level modules (a folder is one area)."""
    out = {}
    for a, targets in graph.items():
        if not a:
            continue
        out.setdefault(a[:1], set())
        for b in targets:
            if b and b[:1] != a[:1]:
                out[a[:1]].add(b[:1])
    return out


def cycles(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def self_test():
    """The checker finds a cycle through a `crate::` path, a root re-export and `super::`,
    and none when the arrows run one way."""
    import tempfile

    def crate(files):
        d = tempfile.mkdtemp()
        for name, text in files.items():
            path = os.path.join(d, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "w", encoding="utf-8").write(text)
        return d

    cyclic = crate({
        "lib.rs": "mod a;\nmod b;\npub use b::Thing;\n",
        "a.rs": "use crate::Thing;\n",
        "b.rs": "mod c;\npub struct Thing;\n",
        "b/c.rs": "use super::super::a::X;\n",
    })
    acyclic = crate({
        "lib.rs": "mod a;\nmod b;\n",
        "a.rs": "use crate::b::Thing;\n#[cfg(test)]\nmod tests { use crate::a::*; }\n",
        "b.rs": "pub struct Thing; // crate::a::X in a comment\n",
    })
    assert cycles(areas(edges(cyclic))) == [[("a",), ("b",)]], "a cycle was missed"
    assert cycles(edges(acyclic)) == [] and cycles(areas(edges(acyclic))) == [], "false cycle"


def main():
    self_test()
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    crates = sys.argv[1:] or CRATES
    found = 0
    for crate in crates:
        src = os.path.join(root, crate, "src")
        if not os.path.isdir(src):
            continue
        graph = edges(src)
        arrows = sum(len(v) for v in graph.values())
        area_graph = areas(graph)
        comps = [("file", c, graph) for c in cycles(graph)]
        comps += [("area", c, area_graph) for c in cycles(area_graph)]
        print(f"{crate}: {len(graph)} modules, {arrows} arrows, {len(comps)} cycle(s)")
        for level, comp, graph in comps:
            found += 1
            names = ["::".join(m) or "<root>" for m in comp]
            print(f"  {level} cycle: " + " <-> ".join(names))
            for a in comp:
                for b in sorted(graph[a]):
                    if b in comp:
                        print(f"    {'::'.join(a)} -> {'::'.join(b)}")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
