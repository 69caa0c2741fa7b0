#!/usr/bin/env python3
"""README's code tour against the tree: every Rust file of the crates named, nothing named that
is not there.

The tour is the first fenced block (```) under README.md's "## Code tour" heading: a tree of
entries, one per line.

    core/                  kqueen-core: the domain
      src/
        lib.rs             the modules
        {dto_apps,dto_adopt}.rs
                           a job that starts on the next line
        service/           the use cases, one type per area; a long job goes on
                           over lines indented further than two spaces
          guard.rs         the policy check

- An entry is a path part, then two or more spaces and its job (which may be left out, or
  start on the next line). The path part is one or more names separated by single spaces
  (`style/ public/`); `{a,b,c}.rs` names a.rs, b.rs and c.rs (one brace group per name).
  A name ending in `/` is a folder; it may have several segments (`tests/api/`).
- A line indented exactly two spaces more than the entry above it is inside that entry, which
  must be one folder; names there are relative to it. A line indented more than two spaces
  deeper continues the job of the entry above. Any other line is a new entry beside an entry
  above at the same indentation (the top level starts at column 0). Blank lines are skipped.

The rule: for every crate of the workspace (the members of Cargo.toml's [workspace]), the
tour names, each on an entry of its own,
- the crate's folder,
- every `.rs` file in it (src/, tests/, benches/, examples/, build.rs: wherever it is; target/
  and hidden folders aside), except `mod.rs`, which its folder's entry names,
- every folder on the way from the crate's folder to such a file (src/, every module folder,
  tests/support/, ...). A folder named only as a segment of a longer name does not count.
And every path the tour names, in the crates or not and of any kind, exists: a name ending in
`/` as a folder, any other as a file. Nothing is named twice.

Prints each problem as "<path>: in the tree, not in README's code tour" or "<path>: in
README's code tour, not in the tree" (with the README line), and exits with 1; prints
"code tour: N paths, all in README" otherwise.

Usage: python3 scripts/code_tour.py [repository-dir]
"""
import glob
import os
import re
import sys
import tomllib

HEADING = "## Code tour"
BRACES = re.compile(r"([^{}]*)\{([^{}]*)\}([^{}]*)")
SKIP_DIRS = {"target", "node_modules"}


class TourError(Exception):
    """The tour cannot be read (no section, no fenced block)."""


def tour_lines(readme):
    """(line number, text) of every line of the code tour's fenced block."""
    lines = open(readme, encoding="utf-8").read().splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if l.rstrip() == HEADING)
    except StopIteration:
        raise TourError(f'{readme}: no "{HEADING}" section') from None
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    fence = next((i for i in range(start + 1, end) if lines[i].startswith("```")), None)
    if fence is None:
        raise TourError(f'{readme}: no fenced block under "{HEADING}"')
    close = next((i for i in range(fence + 1, end) if lines[i].startswith("```")), None)
    if close is None:
        raise TourError(f'{readme}: the fenced block under "{HEADING}" is not closed')
    return [(i + 1, lines[i].rstrip()) for i in range(fence + 1, close)]


def expand(name):
    """`{a,b}.rs` -> [a.rs, b.rs]; a name without braces -> [name]; None when malformed."""
    if "{" not in name and "}" not in name:
        return [name]
    m = BRACES.fullmatch(name)
    if not m or not m.group(2):
        return None
    return [m.group(1) + part + m.group(3) for part in m.group(2).split(",")]


def well_formed(name):
    """A relative path without empty, `.` or `..` segments."""
    segments = name[:-1].split("/") if name.endswith("/") else name.split("/")
    return all(s not in ("", ".", "..") for s in segments)


def parse(lines):
    """The tour's entries -> ({path: [line numbers]}, [format problems])."""
    named, problems = {}, []
    stack = [(-2, [""], 0)]  # (indentation, full paths, line) of the entries open above
    reported = set()  # lines of entries already reported as not one folder
    last = None  # indentation of the last entry
    for number, text in lines:
        if not text.strip():
            continue
        if "\t" in text:
            problems.append(f"README.md line {number}: a tab (indent with spaces)")
            continue
        indent = len(text) - len(text.lstrip(" "))
        if last is not None and indent > last + 2:
            continue  # continues the job of the entry above
        depth = len(stack)
        while stack[depth - 1][0] >= indent:
            depth -= 1
        parent_indent, parent_paths, parent_line = stack[depth - 1]
        if parent_indent != indent - 2:
            problems.append(
                f"README.md line {number}: indented {indent} spaces, which is neither two more "
                f"than a folder above nor more than two deeper than the entry above (a job's "
                f"next lines go further right than its entry's children)"
            )
            continue
        del stack[depth:]
        if len(parent_paths) != 1 or (parent_paths[0] and not parent_paths[0].endswith("/")):
            if parent_line not in reported:
                reported.add(parent_line)
                problems.append(
                    f"README.md line {number}: nested under line {parent_line}, which is not "
                    f"one folder (a folder's name ends with /)"
                )
            if len(parent_paths) != 1:
                continue  # several names: no one folder to read the lines below in
        base = parent_paths[0]
        if base and not base.endswith("/"):
            base += "/"
        path_part = re.split(r" {2,}", text.strip(), maxsplit=1)[0]
        paths = []
        for name in path_part.split(" "):
            names = expand(name)
            if names is None or not all(well_formed(n) for n in names):
                problems.append(f"README.md line {number}: {name!r} is not a path")
                continue
            paths += [base + n for n in names]
        for path in paths:
            named.setdefault(path, []).append(number)
        stack.append((indent, paths, number))
        last = indent
    return named, problems


def crates(root):
    """The workspace members' folders, relative to root."""
    with open(os.path.join(root, "Cargo.toml"), "rb") as f:
        members = tomllib.load(f)["workspace"]["members"]
    found = []
    for member in members:
        for path in sorted(glob.glob(os.path.join(root, member))):
            if os.path.isfile(os.path.join(path, "Cargo.toml")):
                found.append(os.path.relpath(path, root).replace(os.sep, "/"))
    return found


def required(root):
    """Every path the tour must name (folders end with `/`)."""
    need = set()
    for crate in crates(root):
        need.add(crate + "/")
        for folder, dirs, files in os.walk(os.path.join(root, crate)):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
            rel = os.path.relpath(folder, root).replace(os.sep, "/")
            rust = [f for f in files if f.endswith(".rs")]
            if not rust:
                continue
            need.update(f"{rel}/{f}" for f in rust if f != "mod.rs")
            # The folder and every one above it, up to the crate's.
            parts = rel.split("/")
            for n in range(len(crate.split("/")), len(parts) + 1):
                need.add("/".join(parts[:n]) + "/")
    return need


def exists(root, path):
    full = os.path.join(root, path)
    return os.path.isdir(full) if path.endswith("/") else os.path.isfile(full)


def check(root):
    """Every problem, as lines to print."""
    named, problems = parse(tour_lines(os.path.join(root, "README.md")))
    need = required(root)
    for path in sorted(need - named.keys()):
        problems.append(f"{path}: in the tree, not in README's code tour")
    for path, numbers in sorted(named.items()):
        where = ", ".join(str(n) for n in numbers)
        if not exists(root, path):
            kind = ""
            if path.endswith("/") and os.path.isfile(os.path.join(root, path[:-1])):
                kind = "; a file, named as a folder"
            elif os.path.isdir(os.path.join(root, path)):
                kind = "; a folder, named without its /"
            problems.append(
                f"{path}: in README's code tour, not in the tree (README.md line {where}{kind})"
            )
        if len(numbers) > 1:
            problems.append(f"{path}: named {len(numbers)} times in README's code tour "
                            f"(README.md lines {where})")
    return problems, len(need)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    root = os.path.abspath(root)
    try:
        problems, count = check(root)
    except TourError as e:
        print(f"code tour: {e}")
        return 1
    if problems:
        for p in problems:
            print(p)
        print(f"code tour: {len(problems)} problem(s); the tour's format and rule are in "
              f"scripts/code_tour.py's docstring")
        return 1
    print(f"code tour: {count} paths, all in README")
    return 0


if __name__ == "__main__":
    sys.exit(main())
