#!/usr/bin/env python3
"""Checks the user's guide in docs/ (an mdBook whose SUMMARY.md lists its pages).

- every page SUMMARY.md lists exists, and every .md page under docs/ is listed (no orphans);
- every relative link and image in a listed page resolves to a file inside docs/, and every
  `#anchor` names a heading of its target page (anchors made as mdBook makes them);
- every page with a ```rust block is included as doctests by crates/strata/src/lib.rs, so the
  book's Rust code compiles and runs in `cargo test`.

Exit status 1 with one line per problem. Python 3 standard library only.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
LIB = os.path.join(ROOT, "crates", "strata", "src", "lib.rs")

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def strip_code(text):
    """The page without fenced code blocks and inline code spans (links there are not links)."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
            continue
        out.append("" if fenced else re.sub(r"`[^`]*`", "``", line))
    return "\n".join(out)


def anchor(title):
    """mdBook's id for a heading: text only, lowercased, spaces to '-', other punctuation dropped."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)  # links keep their text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    out = []
    for ch in text.strip().lower():
        if ch.isalnum() or ch in "_-":
            out.append(ch)
        elif ch.isspace():
            out.append("-")
    return "".join(out)


def anchors(path):
    ids, seen = set(), {}
    fenced = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            m = None if fenced else HEADING.match(line.rstrip("\n"))
            if m:
                base = anchor(m.group(2))
                n = seen.get(base, 0)
                ids.add(base if n == 0 else f"{base}-{n}")
                seen[base] = n + 1
    # Explicit anchors: <a id="x"></a> or <a name="x">
    with open(path, encoding="utf-8") as f:
        for m in re.finditer(r"<a\s+(?:id|name)=\"([^\"]+)\"", f.read()):
            ids.add(m.group(1))
    return ids


def main():
    problems = []
    summary = os.path.join(DOCS, "SUMMARY.md")
    with open(summary, encoding="utf-8") as f:
        listed = [m.group(1) for m in LINK.finditer(strip_code(f.read()))]
    pages = []
    for target in listed:
        p = os.path.normpath(os.path.join(DOCS, target))
        if not os.path.isfile(p):
            problems.append(f"SUMMARY.md: lists {target}, which does not exist")
        else:
            pages.append(p)
    for dirpath, _, files in os.walk(DOCS):
        for name in files:
            p = os.path.join(dirpath, name)
            if name.endswith(".md") and name != "SUMMARY.md" and p not in pages:
                problems.append(f"{os.path.relpath(p, DOCS)}: not listed in SUMMARY.md")
    cache = {}
    with open(LIB, encoding="utf-8") as f:
        lib = f.read()
    for page in pages:
        rel = os.path.relpath(page, DOCS)
        with open(page, encoding="utf-8") as f:
            raw = f.read()
        if re.search(r"^\s*```rust(?![\w,]*ignore)", raw, re.M):
            if f'"../../../docs/{rel}"' not in lib:
                problems.append(f"{rel}: has Rust code but crates/strata/src/lib.rs does not include it as doctests")
        for lineno, line in enumerate(strip_code(raw).split("\n"), 1):
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # https:, mailto: ...
                path, _, frag = target.partition("#")
                dest = page if path == "" else os.path.normpath(os.path.join(os.path.dirname(page), path))
                where = f"{rel}:{lineno}: {target}"
                if not dest.startswith(DOCS + os.sep):
                    problems.append(f"{where}: leaves docs/ (name repository files in backticks instead)")
                    continue
                if not os.path.exists(dest):
                    problems.append(f"{where}: no such file")
                    continue
                if frag:
                    if not dest.endswith(".md"):
                        problems.append(f"{where}: an anchor into a file that is not a page")
                        continue
                    if dest not in cache:
                        cache[dest] = anchors(dest)
                    if frag not in cache[dest]:
                        problems.append(f"{where}: no heading makes the anchor #{frag}")
    for p in problems:
        print(p)
    if problems:
        print(f"check-book: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"check-book: {len(pages)} pages, links and anchors resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
