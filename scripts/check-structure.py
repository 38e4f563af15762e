#!/usr/bin/env python3
"""The structure check of issue 30 ("One house"): facts anyone can check from the code.

    scripts/check-structure.py [--root DIR] [--report] [--rooms] [--verbose]
                               [--max-file-lines 700] [--max-fn-lines 80]
    scripts/check-structure.py --self-test

It reads the Rust sources of every crate of the Cargo workspace (the `[workspace] members` of the
root `Cargo.toml`) and reports three kinds of finding, one line each:

  cycle      a module cycle: modules that reach each other through `use` lines and `crate::`,
             `self::`, `super::` paths in code (a strongly connected component of more than one
             module). Each edge is named with the file:line of every reference that makes it.
  long-file  a production source file over --max-file-lines lines.
  long-fn    a function over --max-fn-lines lines (from its `fn` line to its closing brace) in the
             production code of the crates named by --fn-crates (saams-jobs, saams-operators).

With --rooms it also reports each `room-cycle`: folders that use each other through different
files (`source::kafka -> sink::file` and `sink::kafka -> source` make `source` <-> `sink`), found
by counting every reference as an edge between the two sibling modules under the lowest common
ancestor of its ends. A plain module cycle is always a room cycle as well and is named once.

It ends with a summary line and exits 1 if there is any finding, 0 if none; with --report it prints
the same and exits 0 (for the time before the refactor is done).

How the module graph is built. Each crate root (`src/lib.rs`, `src/main.rs`, `src/bin/*.rs`,
`src/bin/*/main.rs`, or the paths `[lib]`/`[[bin]]` name) is a crate of its own; from it the
module tree follows `mod x;` declarations (files `x.rs` or `x/mod.rs`, nested, `#[path]` honoured)
and inline `mod x { ... }` blocks. A module's references are the paths of its `use` items (grouped
`use crate::{a::x, b::{y, z}};`, `pub use`, over several lines) and the `crate::`/`$crate::`/
`self::`/`super::` paths in its code; each names the module of its longest prefix that is a
module. An edge a -> b exists when a's own code (not its child modules', not its test code) names
b. Declaring `mod child` is not an edge, and neither is naming one's own ancestor or descendant:
the house rule is about sibling rooms. A path that starts with the name a `use` brought in for a
module (`use crate::sink; ... sink::file::X`) names the module it spells (`sink::file`); names
brought in by globs are not followed.

What is test code, and so not looked at (for cycles, file lengths and function lengths):
`#[cfg(test)]` items (modules, functions, impls, uses, ...), modules named `tests`, files named
`tests.rs` and everything under a `tests` module, and each crate's `tests/`, `benches/`,
`examples/` folders (they are not under `src/`, so never read).

Comments, strings (also raw `r#"..."#`, byte and C strings) and char literals are blanked before
anything is read, so braces and paths inside them count for nothing; `'a` lifetimes are not chars.

The one cycle the issue allows: "the small `codec` <-> `sketch` pair inside one synopsis folder may
stay". ALLOWED_SIBLING_CYCLES below holds it: a cycle is allowed when its modules are siblings
(one parent) whose last names are exactly one of the listed sets. --allow NAME,NAME adds a set;
allowed cycles are counted in the summary and listed with --verbose.
"""

from __future__ import annotations

import argparse
import bisect
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11: the few keys needed are read by regular expressions.
    tomllib = None

# Sibling modules that may form a cycle: each entry is the set of their last names (see --allow).
ALLOWED_SIBLING_CYCLES = [frozenset({"codec", "sketch"})]

# Crates whose production functions must stay within --max-fn-lines.
FN_LENGTH_CRATES = ("saams-jobs", "saams-operators")

IDENT_START = re.compile(r"[A-Za-z_]")
IDENT_CHAR = re.compile(r"[A-Za-z0-9_]")


# ----------------------------------------------------------------------------------------------
# Lexing: comments and literals blanked, so that every later step can read the text with regular
# expressions and brace counting. The blanked text keeps every offset and every newline.


def blank(text: str) -> str:
    """Return `text` with comments, string, byte-string and char literals replaced by spaces.

    Newlines are kept (so line numbers stay), lifetimes and labels (`'a`) are kept.
    """
    out = list(text)
    n = len(text)
    i = 0

    def wipe(a: int, b: int) -> None:
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    def string_end(start: int) -> int:
        """Offset after the closing quote of the escaped string whose opening quote is at start."""
        k = start + 1
        while k < n:
            if text[k] == "\\":
                k += 2
                continue
            if text[k] == '"':
                return k + 1
            k += 1
        return n

    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            wipe(i, end)
            i = end
        elif c == "/" and text.startswith("/*", i):
            depth, k = 1, i + 2
            while k < n and depth:
                if text.startswith("/*", k):
                    depth, k = depth + 1, k + 2
                elif text.startswith("*/", k):
                    depth, k = depth - 1, k + 2
                else:
                    k += 1
            wipe(i, k)
            i = k
        elif c == '"':
            end = string_end(i)
            wipe(i, end)
            i = end
        elif c == "'":
            if i + 1 < n and text[i + 1] == "\\":
                end = text.find("'", i + 3)
                end = n if end < 0 else end + 1
                wipe(i, end)
                i = end
            elif i + 2 < n and text[i + 2] == "'" and text[i + 1] != "\n":
                wipe(i, i + 3)
                i += 3
            else:
                i += 1  # a lifetime or a loop label
        elif IDENT_START.match(c):
            k = i
            while k < n and IDENT_CHAR.match(text[k]):
                k += 1
            word = text[i:k]
            if word in ("r", "br", "cr") and k < n and text[k] in '#"':
                hashes = k
                while hashes < n and text[hashes] == "#":
                    hashes += 1
                if hashes < n and text[hashes] == '"':
                    closing = '"' + "#" * (hashes - k)
                    end = text.find(closing, hashes + 1)
                    end = n if end < 0 else end + len(closing)
                    wipe(i, end)
                    i = end
                    continue
            if word in ("b", "c") and k < n and text[k] == '"':
                end = string_end(k)
                wipe(i, end)
                i = end
                continue
            i = k
        else:
            i += 1
    return "".join(out)


def line_of(starts: list[int], offset: int) -> int:
    """The 1-based line number of an offset, given the offsets where lines start."""
    return bisect.bisect_right(starts, offset)


def line_starts(text: str) -> list[int]:
    """The offsets where the lines of text start."""
    return [0] + [m.end() for m in re.finditer(r"\n", text)]


def count_lines(text: str) -> int:
    """Lines as `wc -l` counts them, plus a last line without a newline."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


OPEN = "([{"
CLOSE = ")]}"


def matching_close(masked: str, open_at: int) -> int:
    """Offset of the bracket closing the one at open_at (len(masked) if it never closes)."""
    depth = 0
    for k in range(open_at, len(masked)):
        ch = masked[k]
        if ch in OPEN:
            depth += 1
        elif ch in CLOSE:
            depth -= 1
            if depth == 0:
                return k
    return len(masked)


# ----------------------------------------------------------------------------------------------
# Items: `#[cfg(test)]` spans, inline modules, `mod x;` declarations, `use` items, functions.

ATTR_START = re.compile(r"#\s*(!?)\s*\[")
BLOCK_ITEM = re.compile(r"\b(fn|mod|impl|trait|struct|enum|union|macro_rules)\b")
MACRO_ITEM = re.compile(r"\s*[A-Za-z_]\w*\s*!")
NEXT_ATTR = re.compile(r"\s*#\s*\[")


def is_test_cfg(attr_body: str) -> bool:
    """Whether an attribute's text (between `[` and `]`) gates on `test`, not on `not(test)`."""
    body = attr_body.strip()
    if not re.match(r"cfg\s*\(", body):
        return False
    words = re.findall(r"[A-Za-z_]\w*", body)
    return "test" in words and "not" not in words


def item_end(masked: str, start: int) -> int:
    """Offset just after the item (or statement, field, arm) that starts at `start`."""
    head_end = len(masked)
    for ch in "{;=":
        k = masked.find(ch, start)
        if 0 <= k < head_end:
            head_end = k
    block_like = bool(BLOCK_ITEM.search(masked, start, head_end)) or bool(
        MACRO_ITEM.match(masked, start)
    )
    depth = 0
    for k in range(start, len(masked)):
        ch = masked[k]
        if ch in OPEN:
            depth += 1
        elif ch in CLOSE:
            depth -= 1
            if depth < 0:
                return k
            if depth == 0 and ch == "}" and block_like:
                return k + 1
        elif depth == 0 and (ch == ";" or (ch == "," and not block_like)):
            return k + 1
    return len(masked)


def attributes(masked: str):
    """Yield (start, end, inner, body) for each `#[...]` / `#![...]` attribute."""
    for m in ATTR_START.finditer(masked):
        close = matching_close(masked, m.end() - 1)
        yield m.start(), close + 1, m.group(1) == "!", masked[m.end() : close]


def test_spans(masked: str) -> list[tuple[int, int]]:
    """The spans of `#[cfg(test)]`-gated items (a `#![cfg(test)]` file is one span)."""
    spans = []
    for start, end, inner, body in attributes(masked):
        if not is_test_cfg(body):
            continue
        if inner:
            return [(0, len(masked))]
        item = end
        while True:  # further attributes belong to the same item
            m = NEXT_ATTR.match(masked, item)
            if not m:
                break
            item = matching_close(masked, m.end() - 1) + 1
        spans.append((start, item_end(masked, item)))
    return spans


def inside(spans, offset: int) -> bool:
    return any(a <= offset < b for a, b in spans)


INLINE_MOD = re.compile(r"\bmod\s+(?:r#)?([A-Za-z_]\w*)\s*\{")
MOD_DECL = re.compile(r"\bmod\s+(?:r#)?([A-Za-z_]\w*)\s*;")
USE_ITEM = re.compile(r"(?<![\w$])use\b")
CODE_PATH = re.compile(r"(?<![\w$])(\$crate|crate|self|super)((?:\s*::\s*(?:r#)?[A-Za-z_]\w*)+)")
FN_ITEM = re.compile(r"(?<![\w$])fn\s+(?:r#)?([A-Za-z_]\w*)")


def preceding_attributes(masked: str, original: str, at: int):
    """The bodies of the attributes right before offset `at` (original text, for `#[path]`)."""
    bodies = []
    k = at
    while True:
        j = k
        while j > 0 and masked[j - 1].isspace():
            j -= 1
        if j == 0 or masked[j - 1] != "]":
            break
        depth, s = 0, j - 1
        while s >= 0:
            if masked[s] == "]":
                depth += 1
            elif masked[s] == "[":
                depth -= 1
                if depth == 0:
                    break
            s -= 1
        h = s - 1
        while h >= 0 and masked[h].isspace():
            h -= 1
        if h < 0 or masked[h] != "#":
            break
        bodies.append(original[s + 1 : j - 1])
        k = h
    return bodies


def use_paths(masked: str, start: int, end: int):
    """Yield (segments, offset, name) for each leaf of the `use` item in masked[start:end].

    `start` is just after the `use` keyword; `end` is its `;`. A `self` leaf names its prefix, a
    glob names its prefix (and brings no name), `x as y` names x and brings the name y.
    """
    tokens = [
        (m.group(0), m.start())
        for m in re.finditer(r"::|[{},*]|(?:r#)?[A-Za-z_$][\w$]*", masked[start:end])
    ]
    tokens = [(t[2:] if t.startswith("r#") else t, start + off) for t, off in tokens]
    pos = 0

    def tree(prefix):
        nonlocal pos
        segs = list(prefix)
        last = tokens[pos][1] if pos < len(tokens) else start
        while pos < len(tokens):
            tok, off = tokens[pos]
            if tok == "::":
                pos += 1
            elif tok == "{":
                pos += 1
                while pos < len(tokens) and tokens[pos][0] != "}":
                    if tokens[pos][0] == ",":
                        pos += 1
                        continue
                    yield from tree(segs)
                pos += 1
                return
            elif tok == "*":
                pos += 1
                yield segs, off, None
                return
            elif tok in (",", "}"):
                break
            elif tok == "as":
                alias = tokens[pos + 1][0] if pos + 1 < len(tokens) else None
                pos += 2
                yield segs, last, alias
                return
            elif tok == "self" and segs and len(segs) == len(prefix):
                pos += 1
                last = off
            else:
                segs.append(tok)
                last = off
                pos += 1
        yield segs, last, segs[-1] if segs else None

    while pos < len(tokens):
        if tokens[pos][0] in (",", "}"):
            pos += 1
            continue
        yield from tree([])


# ----------------------------------------------------------------------------------------------
# The workspace: crates, their module trees, the references between modules.


@dataclass
class Module:
    crate: str
    path: tuple  # names from the crate root; () is the root
    file: Path
    span: tuple | None  # (start, end) offsets of an inline module's braces, None for a whole file
    test: bool
    children: list = field(default_factory=list)


@dataclass
class SourceFile:
    path: Path
    text: str
    masked: str
    starts: list
    tests: list  # cfg(test) spans


@dataclass
class Reference:
    source: Module
    target: tuple
    file: Path
    line: int


class Crate:
    """One crate root (a library or a binary) and the modules reached from it."""

    def __init__(self, package: str, label: str, root: Path, files: dict):
        self.package = package
        self.label = label
        self.files = files  # shared cache: Path -> SourceFile
        self.modules: dict[tuple, Module] = {}
        self.problems: list[str] = []
        self._walk(root, (), test=False, crate_root=True)

    def source(self, path: Path) -> SourceFile:
        if path not in self.files:
            text = path.read_text(encoding="utf-8")
            masked = blank(text)
            self.files[path] = SourceFile(path, text, masked, line_starts(text), test_spans(masked))
        return self.files[path]

    def _walk(self, file: Path, mpath: tuple, test: bool, crate_root: bool = False) -> None:
        src = self.source(file)
        test = test or file.name == "tests.rs" or bool(mpath and mpath[-1] == "tests")
        if src.tests and src.tests[0] == (0, len(src.masked)):
            test = True
        self.modules[mpath] = Module(self.package, mpath, file, None, test)
        mod_rs = crate_root or file.name in ("mod.rs", "lib.rs", "main.rs")
        child_dir = file.parent if mod_rs else file.parent / file.stem

        inline = []  # (start, end, path)
        for m in INLINE_MOD.finditer(src.masked):
            open_at = m.end() - 1
            inline.append((m.start(), matching_close(src.masked, open_at), m.group(1), open_at))
        inline.sort()

        def enclosing(offset: int) -> tuple:
            names = []
            for a, b, name, _ in inline:
                if a < offset < b:
                    names.append(name)
            return tuple(names)

        for a, b, name, open_at in inline:
            inner = enclosing(a) + (name,)
            ipath = mpath + inner
            itest = (
                test
                or inside(src.tests, a)
                or any(self.modules.get(ipath[:k], None) and self.modules[ipath[:k]].test
                       for k in range(len(mpath) + 1, len(ipath)))
                or name == "tests"
            )
            self.modules[ipath] = Module(self.package, ipath, file, (open_at, b), itest)

        for m in MOD_DECL.finditer(src.masked):
            name = m.group(1)
            inner = enclosing(m.start())
            cpath = mpath + inner + (name,)
            ctest = test or inside(src.tests, m.start()) or name == "tests" or any(
                self.modules[mpath + inner[:k]].test for k in range(1, len(inner) + 1)
            )
            target = None
            for body in preceding_attributes(src.masked, src.text, m.start()):
                pm = re.match(r'\s*path\s*=\s*"(.*)"\s*$', body, re.S)
                if pm:
                    base = child_dir.joinpath(*inner) if inner else file.parent
                    target = base / pm.group(1)
            if target is None:
                base = child_dir.joinpath(*inner)
                for cand in (base / f"{name}.rs", base / name / "mod.rs"):
                    if cand.is_file():
                        target = cand
                        break
            if target is None or not target.is_file():
                self.problems.append(
                    f"{file}:{line_of(src.starts, m.start())}: no file for `mod {name};`"
                )
                continue
            self._walk(target, cpath, ctest)

    def production_modules(self):
        return [m for m in self.modules.values() if not m.test]

    def own_spans(self, module: Module):
        """The spans of a module's own code: its file or block, minus child blocks and tests."""
        src = self.files[module.file]
        lo, hi = module.span if module.span else (0, len(src.masked))
        holes = list(src.tests)
        for other in self.modules.values():
            if (
                other.file == module.file
                and other.span
                and other is not module
                and other.path[: len(module.path)] == module.path
                and len(other.path) == len(module.path) + 1
            ):
                holes.append((other.span[0], other.span[1] + 1))
        return lo, hi, holes

    def full_path(self, module: Module, segs: list) -> tuple | None:
        """The path from the crate root that a `crate::`/`self::`/`super::` path spells, or None."""
        if not segs:
            return None
        head = segs[0]
        if head in ("crate", "$crate"):
            base, rest = (), segs[1:]
        elif head == "self":
            base, rest = module.path, segs[1:]
        elif head == "super":
            base, rest = module.path, segs
            while rest and rest[0] == "super":
                base, rest = base[:-1], rest[1:]
        else:
            return None
        return tuple(base) + tuple(rest)

    def module_of(self, full: tuple) -> tuple:
        """The longest prefix of a path from the crate root that is a module."""
        for k in range(len(full), -1, -1):
            if full[:k] in self.modules:
                return full[:k]
        return ()

    def has_children(self, path: tuple) -> bool:
        return any(p[:-1] == path for p in self.modules if p)

    def references(self) -> list[Reference]:
        """Every reference from a production module's own code to a module it is not part of."""
        refs = []
        for module in self.production_modules():
            src = self.files[module.file]
            lo, hi, holes = self.own_spans(module)
            uses = []
            aliases = {}  # names a `use` brings for modules with children: name -> module path
            for m in USE_ITEM.finditer(src.masked, lo, hi):
                if inside(holes, m.start()):
                    continue
                semi = src.masked.find(";", m.end())
                semi = hi if semi < 0 else semi
                uses.append((m.start(), semi))
                for segs, off, name in use_paths(src.masked, m.end(), semi):
                    full = self.full_path(module, segs)
                    if full is None:
                        continue
                    target = self.module_of(full)
                    refs.append(Reference(module, target, src.path, line_of(src.starts, off)))
                    if name and name != "_" and full == target and self.has_children(target):
                        aliases[name] = target
            for m in CODE_PATH.finditer(src.masked, lo, hi):
                if inside(holes, m.start()) or inside(uses, m.start()):
                    continue
                segs = [m.group(1)] + re.findall(r"[A-Za-z_]\w*", m.group(2))
                full = self.full_path(module, segs)
                if full is not None:
                    refs.append(Reference(module, self.module_of(full), src.path,
                                          line_of(src.starts, m.start())))
            if aliases:
                names = "|".join(sorted(map(re.escape, aliases)))
                alias_path = re.compile(
                    rf"(?<![\w$:])({names})((?:\s*::\s*(?:r#)?[A-Za-z_]\w*)+)"
                )
                for m in alias_path.finditer(src.masked, lo, hi):
                    if inside(holes, m.start()) or inside(uses, m.start()):
                        continue
                    full = aliases[m.group(1)] + tuple(re.findall(r"[A-Za-z_]\w*", m.group(2)))
                    refs.append(Reference(module, self.module_of(full), src.path,
                                          line_of(src.starts, m.start())))
        return [
            r
            for r in refs
            if r.target[: len(r.source.path)] != r.source.path
            and r.source.path[: len(r.target)] != r.target
        ]


def read_toml(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    if tomllib is not None:
        return tomllib.loads(text)
    data: dict = {}
    pkg = re.search(r'^\[package\][^\[]*?^name\s*=\s*"([^"]+)"', text, re.M | re.S)
    if pkg:
        data["package"] = {"name": pkg.group(1)}
    ws = re.search(r"^\[workspace\][^\[]*?^members\s*=\s*\[([^\]]*)\]", text, re.M | re.S)
    if ws:
        data["workspace"] = {"members": re.findall(r'"([^"]+)"', ws.group(1))}
    lib = re.search(r'^\[lib\][^\[]*?^path\s*=\s*"([^"]+)"', text, re.M | re.S)
    if lib:
        data["lib"] = {"path": lib.group(1)}
    bins = re.findall(r'^\[\[bin\]\][^\[]*?^path\s*=\s*"([^"]+)"', text, re.M | re.S)
    data["bin"] = [{"path": b} for b in bins]
    return data


@dataclass
class Package:
    name: str
    dir: Path
    crates: list


def load_workspace(root: Path) -> list[Package]:
    manifest = read_toml(root / "Cargo.toml")
    members = manifest.get("workspace", {}).get("members", ["."])
    files: dict = {}
    packages = []
    for member in members:
        pdir = (root / member).resolve() if member != "." else root.resolve()
        pman = read_toml(pdir / "Cargo.toml")
        name = pman.get("package", {}).get("name", member)
        roots = []
        lib = pdir / pman.get("lib", {}).get("path", "src/lib.rs")
        if lib.is_file():
            roots.append(("lib", lib))
        main = pdir / "src/main.rs"
        if main.is_file():
            roots.append(("main", main))
        bins = {pdir / b["path"] for b in pman.get("bin", []) if "path" in b}
        bin_dir = pdir / "src/bin"
        if bin_dir.is_dir():
            bins |= set(bin_dir.glob("*.rs")) | set(bin_dir.glob("*/main.rs"))
        for b in sorted(bins):
            if b.is_file() and b != main:
                in_folder = b.name == "main.rs" and b.parent != pdir / "src"
                label = b.parent.name if in_folder else b.stem
                roots.append((f"bin/{label}", b))
        crates = [Crate(name, f"{name}" if lab == "lib" else f"{name}/{lab}", path, files)
                  for lab, path in roots]
        packages.append(Package(name, pdir, crates))
    return packages


# ----------------------------------------------------------------------------------------------
# The three checks.


def module_name(path: tuple) -> str:
    return "::".join(path) if path else "crate"


def strongly_connected(nodes, edges):
    """Tarjan's algorithm: the strongly connected components of a directed graph."""
    index, low, on_stack, stack, comps = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        work = [(v, iter(sorted(edges.get(v, ()))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                comps.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return comps


def allowed_cycle(comp, allowed) -> bool:
    parents = {p[:-1] for p in comp}
    return len(parents) == 1 and frozenset(p[-1] for p in comp) in allowed


def relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def sibling_rooms(a: tuple, b: tuple) -> tuple:
    """The sibling modules that hold a and b: the children of their lowest common ancestor."""
    k = 0
    while k < min(len(a), len(b)) and a[k] == b[k]:
        k += 1
    return a[: k + 1], b[: k + 1]


def seen_from_rooms(cycle, rooms) -> bool:
    """Whether the modules of `cycle` lie in the `rooms`, at least one in each."""
    def holds(room, path):
        return path[: len(room)] == room

    return all(any(holds(r, m) for r in rooms) for m in cycle) and all(
        any(holds(r, m) for m in cycle) for r in rooms
    )


def find_cycles(packages, root: Path, allowed, rooms: bool = False):
    """(findings, allowed) lines for the module cycles of every crate.

    With `rooms`, each reference a -> b counts as an edge between the sibling modules holding a and
    b (`source::file -> sink::kafka` is `source -> sink`), so folders that use each other through
    different files are a cycle too. Such findings are named `room-cycle`; a room cycle that is
    only a plain cycle seen from its folders is left out, as that cycle says it already.
    """
    found = {False: ([], []), True: ([], [])}
    plain: dict = {}  # crate label -> the plain cycles' modules
    for lifted in (False, True) if rooms else (False,):
        findings, tolerated = found[lifted]
        kind = "room-cycle" if lifted else "cycle"
        for package in packages:
            for crate in package.crates:
                edges: dict = {}
                where: dict = {}
                for ref in crate.references():
                    a, b = ref.source.path, ref.target
                    if lifted:
                        a, b = sibling_rooms(a, b)
                    edges.setdefault(a, set()).add(b)
                    loc = f"{relative(ref.file, root)}:{ref.line}"
                    where.setdefault((a, b), [])
                    if loc not in where[(a, b)]:
                        where[(a, b)].append(loc)
                nodes = set(edges) | {b for targets in edges.values() for b in targets}
                for comp in strongly_connected(nodes, edges):
                    if len(comp) < 2:
                        continue
                    if lifted and any(
                        seen_from_rooms(cycle, comp) for cycle in plain.get(crate.label, ())
                    ):
                        continue
                    if not lifted:
                        plain.setdefault(crate.label, []).append(comp)
                    names = ", ".join(module_name(p) for p in comp)
                    head = f"{crate.label}: {{{names}}}"
                    members = set(comp)
                    parts = []
                    for a in comp:
                        for b in sorted(edges.get(a, ())):
                            if b in members:
                                locs = ", ".join(where[(a, b)])
                                parts.append(
                                    f"{module_name(a)} -> {module_name(b)} ({locs})"
                                )
                    line = f"{kind} {head}: " + "; ".join(parts)
                    (tolerated if allowed_cycle(comp, allowed) else findings).append(line)
    return found[False][0] + found[True][0], found[False][1] + found[True][1]


def production_files(package: Package) -> list[Path]:
    """Every .rs file under the package's src/ that is not test code."""
    src = package.dir / "src"
    test_files = {
        m.file for c in package.crates for m in c.modules.values() if m.test and m.span is None
    }
    out = []
    for path in sorted(src.rglob("*.rs")):
        rel = path.relative_to(src)
        if path.name == "tests.rs" or "tests" in rel.parts[:-1] or path in test_files:
            continue
        out.append(path)
    return out


def find_long_files(packages, root: Path, limit: int):
    findings = []
    for package in packages:
        for path in production_files(package):
            n = count_lines(path.read_text(encoding="utf-8"))
            if n > limit:
                findings.append(f"long-file {relative(path, root)}: {n} lines (max {limit})")
    return findings


def long_functions(masked: str, starts: list, holes, limit: int):
    """Yield (line, name, lines) for each function of the text longer than `limit` lines."""
    for m in FN_ITEM.finditer(masked):
        if inside(holes, m.start()):
            continue
        depth = 0
        body = None
        for k in range(m.end(), len(masked)):
            ch = masked[k]
            if ch in "([":
                depth += 1
            elif ch in ")]":
                depth -= 1
            elif depth == 0 and ch == ";":
                break
            elif depth == 0 and ch == "{":
                body = k
                break
        if body is None:
            continue
        first = line_of(starts, m.start())
        last = line_of(starts, matching_close(masked, body))
        if last - first + 1 > limit:
            yield first, m.group(1), last - first + 1


def find_long_functions(packages, root: Path, limit: int, crates):
    findings = []
    for package in packages:
        if package.name not in crates:
            continue
        seen = set()
        for crate in package.crates:
            for module in crate.modules.values():
                if module.test or module.span is not None or module.file in seen:
                    continue
                seen.add(module.file)
                src = crate.files[module.file]
                holes = list(src.tests) + [
                    (m.span[0], m.span[1] + 1)
                    for m in crate.modules.values()
                    if m.file == module.file and m.span and m.test
                ]
                for line, name, n in long_functions(src.masked, src.starts, holes, limit):
                    findings.append(
                        f"long-fn {relative(module.file, root)}:{line} fn {name}: "
                        f"{n} lines (max {limit})"
                    )
    return findings


def check(root: Path, max_file: int, max_fn: int, fn_crates, allowed, rooms: bool = False):
    """All findings for the workspace at root: (cycles, tolerated, files, fns, problems)."""
    root = root.resolve()
    packages = load_workspace(root)
    problems = [p for pk in packages for c in pk.crates for p in c.problems]
    cycles, tolerated = find_cycles(packages, root, allowed, rooms)
    files = find_long_files(packages, root, max_file)
    fns = find_long_functions(packages, root, max_fn, fn_crates)
    return cycles, tolerated, files, fns, problems


# ----------------------------------------------------------------------------------------------
# Self-test on fixture trees written into a temporary directory.


def write_tree(base: Path, files: dict) -> None:
    for rel, text in files.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def long_body(lines: int, tricky: list[str]) -> str:
    """A function body of exactly `lines` lines from `fn` to `}`, with tricky lines inside."""
    inner = list(tricky)
    while len(inner) < lines - 2:
        inner.append("    let _x = 1;")
    return "\n".join(inner[: lines - 2])


FIXTURE = {
    "Cargo.toml": '[package]\nname = "fixture"\n\n[workspace]\nmembers = [".", "ops", "alias"]\n',
    "src/lib.rs": (
        "//! Fixture root: `mod ghost;` in a comment is not a module.\n"
        "pub mod a;\npub mod b;\npub mod c;\npub mod d;\npub mod p;\npub mod cm;\n"
        "pub(crate) mod multi;\npub mod r;\npub mod s;\n"
        "#[cfg(test)]\nmod only_tests;\n"
    ),
    # a <-> b: a cycle, through a plain `use` and a grouped `pub use` over several lines.
    "src/a.rs": "use crate::b::Bee;\npub struct Ay;\npub fn g(_: crate::d::Dee) {}\n",
    "src/b.rs": "pub use crate::{\n    a::Ay,\n    p::{Parent, self},\n};\npub struct Bee;\n",
    # c -> a one way: not a cycle.
    "src/c.rs": "pub struct Cee;\npub fn f() -> crate::a::Ay { crate::a::Ay }\n",
    # a -> d, and d names a only in comments, strings and test code: not a cycle.
    "src/d.rs": (
        "pub struct Dee;\n// use crate::a::Ay;\n/* crate::a::Ay */\n"
        'pub const S: &str = "crate::a::Ay";\npub const R: &str = r#"use crate::c::Cee;"#;\n'
        "#[cfg(test)]\nuse crate::a::Ay;\n"
        "#[cfg(test)]\nfn uses_a() -> crate::a::Ay { crate::a::Ay }\n"
        "#[cfg(test)]\nmod cfg_tests {\n    use crate::a::Ay;\n}\n"
        "mod tests {\n    fn f() -> crate::a::Ay { crate::a::Ay }\n}\n"
    ),
    # p and its child name each other: not an edge (ancestor / descendant).
    "src/p/mod.rs": "mod child;\npub use self::child::Kid;\npub struct Parent;\n",
    "src/p/child.rs": "use super::Parent;\npub struct Kid(crate::p::Parent);\n",
    # r::f -> s::g and s::h -> r: no module cycle, but the folders r and s use each other.
    "src/r/mod.rs": "mod f;\npub struct Are;\n",
    "src/r/f.rs": "use crate::s::g::Gee;\n",
    "src/s/mod.rs": "pub mod g;\nmod h;\n",
    "src/s/g.rs": "pub struct Gee;\n",
    "src/s/h.rs": "pub fn h(_: crate::r::Are) {}\n",
    # the allowed codec <-> sketch pair.
    "src/cm/mod.rs": "mod codec;\nmod sketch;\n",
    "src/cm/codec.rs": "use super::sketch::Sketch;\npub fn encode(_: &Sketch) {}\n",
    "src/cm/sketch.rs": "pub struct Sketch;\nfn f(s: &Sketch) { super::codec::encode(s) }\n",
    # a test-only module file that names a and a cycle with it would follow: not looked at.
    "src/only_tests.rs": "use crate::a::Ay;\n",
    # multi: a file over the file limit (701 lines); its tests.rs (800 lines) is not production.
    "src/multi.rs": "#[cfg(test)]\nmod tests;\n" + "// filler\n" * 699,
    "src/multi/tests.rs": "use crate::a::Ay;\n" + "// filler\n" * 799,
    # alias: e names s::h through the name `folder` a `use` brought in; s::h names e.
    "alias/Cargo.toml": '[package]\nname = "alias"\n',
    "alias/src/lib.rs": 'mod e;\nmod s;\n#[path = "elsewhere/placed.rs"]\nmod placed;\n',
    "alias/src/elsewhere/placed.rs": "pub struct Placed;\n",
    "alias/src/e.rs": "use crate::s as folder;\npub struct Ee;\npub fn f() { folder::h::h2(); }\n",
    "alias/src/s/mod.rs": "pub mod h;\n",
    "alias/src/s/h.rs": "pub fn h2() -> crate::e::Ee { crate::e::Ee }\n",
    "ops/Cargo.toml": '[package]\nname = "saams-operators"\n',
    "ops/src/lib.rs": (
        "mod long;\nmod short;\nmod edge;\n"
    ),
    # long: one 81-line fn whose braces in strings, chars, comments would end it early if counted.
    "ops/src/long.rs": (
        "pub fn long_one() {\n"
        + long_body(81, ["    let _a = '}';", '    let _b = "}";', "    // }", "    /* } */",
                         '    let _c = r#"}"#;', "    let _d = b'}';", '    let _e = "\\"}";'])
        + "\n}\n"
    ),
    # short: a 10-line fn with opening braces in literals (which would swallow the long fn after
    # it into it if counted), lifetimes, and an 80-line fn (at the limit, not over it).
    "ops/src/short.rs": (
        "pub fn tricky<'a>(x: &'a str) -> &'a str {\n"
        + long_body(10, ["    let _a = '{';", '    let _b = "{";', "    // {", "    /* { */",
                         '    let _c = r#"{"#;', "    let _l: &'static str = \"'{\";",
                         "    'outer: loop { break 'outer; }", "    let _q = '\\'';"])
        + "\n    x\n}\n"
        + "pub fn at_limit() {\n" + long_body(80, []) + "\n}\n"
    ),
    # edge: an 81-line fn under #[cfg(test)] and one in a tests module: not production.
    "ops/src/edge.rs": (
        "#[cfg(test)]\nfn test_helper() {\n" + long_body(81, []) + "\n}\n"
        + "#[cfg(test)]\nmod tests {\n    fn in_tests() {\n" + long_body(81, []) + "\n    }\n}\n"
    ),
}


ALIAS_CYCLE = "cycle alias: {e, s::h}: e -> s::h (alias/src/e.rs:3); s::h -> e (alias/src/s/h.rs:1)"


def self_test() -> int:
    failures = []
    checks = 0

    def expect(what, got, want):
        nonlocal checks
        checks += 1
        if got != want:
            failures.append(f"{what}:\n  got  {got!r}\n  want {want!r}")

    tricky = [
        ("let c = '{';", "let c =    ;"),
        ('let s = "}";', "let s =    ;"),
        ('let r = r#"{"#;', "let r =       ;"),
        ("x // }", "x     "),
        ("fn f<'a>(x: &'a str) {", "fn f<'a>(x: &'a str) {"),
        ("'l: loop { break 'l; }", "'l: loop { break 'l; }"),
        ("let q = '\\'';", "let q =     ;"),
        ("let b = b'{';", "let b = b   ;"),
        ('let e = "a\\"{";', "let e =       ;"),
        ("/* a /* nested } */ { */ z", "                         z"),
        ("let u = '\\u{7b}';", "let u =         ;"),
        ("r#type", "r#type"),
    ]
    for source, want in tricky:
        expect(f"blank({source!r})", blank(source), want)

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        write_tree(base, FIXTURE)
        cycles, tolerated, files, fns, problems = check(
            base, 700, 80, FN_LENGTH_CRATES, ALLOWED_SIBLING_CYCLES
        )
        expect("problems", problems, [])
        expect(
            "cycles",
            cycles,
            ["cycle fixture: {a, b}: a -> b (src/a.rs:1); b -> a (src/b.rs:2)",
             ALIAS_CYCLE],
        )
        expect(
            "allowed cycles",
            tolerated,
            ["cycle fixture: {cm::codec, cm::sketch}: cm::codec -> cm::sketch (src/cm/codec.rs:1); "
             "cm::sketch -> cm::codec (src/cm/sketch.rs:2)"],
        )
        expect("long files", files, ["long-file src/multi.rs: 701 lines (max 700)"])
        expect("long functions", fns, ["long-fn ops/src/long.rs:1 fn long_one: 81 lines (max 80)"])
        cycles, tolerated, _, _, _ = check(base, 700, 80, FN_LENGTH_CRATES, [])
        expect("cycles without the allow-list", len(cycles), 3)
        cycles, tolerated, _, _, _ = check(
            base, 700, 80, FN_LENGTH_CRATES, ALLOWED_SIBLING_CYCLES, rooms=True
        )
        expect(
            "cycles with --rooms",
            cycles,
            ["cycle fixture: {a, b}: a -> b (src/a.rs:1); b -> a (src/b.rs:2)",
             ALIAS_CYCLE,
             "room-cycle fixture: {r, s}: r -> s (src/r/f.rs:1); s -> r (src/s/h.rs:1)"],
        )
        expect("allowed cycles with --rooms", len(tolerated), 1)

        # A fn with braces in literals is measured to its real closing brace.
        short = (base / "ops/src/short.rs").read_text()
        masked = blank(short)
        got = list(long_functions(masked, line_starts(short), [], 5))
        expect("fn lengths over 5", got, [(1, "tricky", 11), (12, "at_limit", 80)])

    if failures:
        for f in failures:
            print(f"self-test FAILED {f}")
        print(f"self-test: {len(failures)} of {checks} checks failed")
        return 1
    print(f"self-test: ok ({checks} checks)")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description="Module cycles, long files and long functions of the Cargo workspace.",
    )
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the workspace root (default: this repository)")
    parser.add_argument("--report", action="store_true",
                        help="print the findings but exit 0")
    parser.add_argument("--max-file-lines", type=int, default=700, metavar="N",
                        help="longest production file allowed (default: %(default)s)")
    parser.add_argument("--max-fn-lines", type=int, default=80, metavar="N",
                        help="longest function allowed (default: %(default)s)")
    parser.add_argument("--fn-crates", default=",".join(FN_LENGTH_CRATES), metavar="PKG,PKG",
                        help="packages whose functions are measured (default: %(default)s)")
    parser.add_argument("--allow", action="append", default=[], metavar="NAME,NAME",
                        help="sibling module names that may form a cycle (codec,sketch always)")
    parser.add_argument("--rooms", action="store_true",
                        help="also report cycles between sibling folders (room-cycle)")
    parser.add_argument("--verbose", action="store_true", help="also list the allowed cycles")
    parser.add_argument("--self-test", action="store_true",
                        help="check this script on fixture trees and exit")
    args = parser.parse_args(argv)
    if args.self_test:
        return self_test()

    allowed = list(ALLOWED_SIBLING_CYCLES) + [
        frozenset(a.split(",")) for a in args.allow
    ]
    cycles, tolerated, files, fns, problems = check(
        args.root, args.max_file_lines, args.max_fn_lines, args.fn_crates.split(","), allowed,
        args.rooms,
    )
    for line in problems:
        print(f"warning: {line}", file=sys.stderr)
    for line in cycles + files + fns:
        print(line)
    if args.verbose:
        for line in tolerated:
            print(f"allowed {line}")
    total = len(cycles) + len(files) + len(fns)
    print(
        f"check-structure: {len(cycles)} module cycles ({len(tolerated)} allowed, not counted), "
        f"{len(files)} files over {args.max_file_lines} lines, "
        f"{len(fns)} functions over {args.max_fn_lines} lines"
    )
    return 0 if args.report or total == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
