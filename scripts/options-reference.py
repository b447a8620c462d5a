#!/usr/bin/env python3
"""Generates docs/operating/configuration.md from the Rust sources.

It reads the public option structs of the `strata` crate (their fields, types and `///` doc
comments), their defaults (from the doc text "Default X.", else from `impl Default` or a
constructor when the expression is simple), and the `strata serve` TOML keys that set them (by
parsing `crates/strata-server/src/config.rs` and `engine_config.rs`, the only place server settings become engine
`Options`), and writes one table per struct.

    python3 scripts/options-reference.py           # (re)write the page
    python3 scripts/options-reference.py --check   # exit 1 if the page is stale or a public
                                                   # field has no doc comment

Python 3 standard library only. The parser is a small Rust lexer (comments, strings, raw strings,
char literals and lifetimes) plus brace matching: enough for struct definitions with attributes,
nested generics and multi-line types, `impl Default` blocks, constructors and struct literals.
"""

import bisect
import difflib
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENGINE_SRC = "crates/strata/src"
# The server's configuration: ServerConfig, and its [engine] table (parsed as one source).
SERVER_CONFIG = ("crates/strata-server/src/config.rs", "crates/strata-server/src/engine_config.rs")
SERVE_ARGS = "crates/strata-cli/src/serve.rs"
OUTPUT = "docs/operating/configuration.md"

# The structs documented, in page order, with the file that defines each. Structs reachable
# from these through field types (public, every field public) are added after their parent.
ROOTS = [
    ("Options", "options.rs"),
    ("WriteOptions", "options.rs"),
    ("ReadOptions", "options.rs"),
    ("CapacityOptions", "storage/object/mod.rs"),
    ("PersistentCacheOptions", "cache/persistent/mod.rs"),
    ("HotRapOptions", "tier/hot/mod.rs"),
    ("RaltOptions", "tier/hot/ralt/options.rs"),
    ("LogStoreOptions", "tier/temperature/mod.rs"),
    ("ForestOptions", "compaction/forest/mod.rs"),
    ("RemoteOptions", "compaction/remote/runner.rs"),
]

# ---------------------------------------------------------------------------------------------
# Lexer


class Tok:
    __slots__ = ("kind", "text", "start", "end")

    def __init__(self, kind, text, start, end):
        self.kind, self.text, self.start, self.end = kind, text, start, end

    def __repr__(self):
        return "Tok(%s,%r)" % (self.kind, self.text)


IDENT_RE = re.compile(r"(?:r#)?[A-Za-z_][A-Za-z0-9_]*")
NUM_RE = re.compile(r"[0-9][0-9A-Za-z_]*(?:\.[0-9][0-9_]*)?(?:[eE][+-]?[0-9_]+)?(?:_?[fiu][0-9]+)?")
CHAR_RE = re.compile(r"b?'(?:\\(?:u\{[0-9A-Fa-f]+\}|x[0-9A-Fa-f]{2}|.)|[^'\\\n])'")
RAW_STR_RE = re.compile(r'b?r(#*)"')
PUNCT3 = ("..=", "...", "<<=", ">>=")
PUNCT2 = ("::", "->", "=>", "==", "!=", "&&", "||", "..", "+=", "-=", "*=", "/=", "|=", "&=")


def lex(src):
    """Tokens of Rust source: ident, num, str, char, lifetime, punct, doc (`///`), idoc (`//!`)."""
    toks = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c.isspace():
            i += 1
            continue
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            text = src[i:j]
            if text.startswith("///") and not text.startswith("////"):
                toks.append(Tok("doc", text[3:], i, j))
            elif text.startswith("//!"):
                toks.append(Tok("idoc", text[3:], i, j))
            i = j
            continue
        if src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            i = j
            continue
        m = RAW_STR_RE.match(src, i)
        if m:
            close = '"' + m.group(1)
            j = src.find(close, m.end())
            j = n if j < 0 else j + len(close)
            toks.append(Tok("str", src[i:j], i, j))
            i = j
            continue
        if c == '"' or src.startswith('b"', i):
            j = i + (2 if c == "b" else 1)
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            j += 1
            toks.append(Tok("str", src[i:j], i, j))
            i = j
            continue
        if c == "'" or src.startswith("b'", i):
            m = CHAR_RE.match(src, i)
            if m:
                toks.append(Tok("char", m.group(0), i, m.end()))
                i = m.end()
                continue
            m = IDENT_RE.match(src, i + 1)
            if c == "'" and m:
                toks.append(Tok("lifetime", src[i:m.end()], i, m.end()))
                i = m.end()
                continue
        m = IDENT_RE.match(src, i)
        if m:
            toks.append(Tok("ident", m.group(0), i, m.end()))
            i = m.end()
            continue
        m = NUM_RE.match(src, i)
        if m:
            toks.append(Tok("num", m.group(0), i, m.end()))
            i = m.end()
            continue
        for p in PUNCT3 + PUNCT2:
            if src.startswith(p, i):
                toks.append(Tok("punct", p, i, i + len(p)))
                i += len(p)
                break
        else:
            toks.append(Tok("punct", c, i, i + 1))
            i += 1
    return toks


OPEN = {"(": ")", "[": "]", "{": "}"}
CLOSE = {")", "]", "}"}


def match_close(toks, i):
    """Index of the token closing the bracket at toks[i]."""
    depth = 0
    for j in range(i, len(toks)):
        t = toks[j]
        if t.kind != "punct":
            continue
        if t.text in OPEN:
            depth += 1
        elif t.text in CLOSE:
            depth -= 1
            if depth == 0:
                return j
    raise ValueError("unbalanced bracket")


def statement_end(toks, i, hi):
    """The index of the `;` that ends the statement starting at `i` (or `hi`), skipping brackets."""
    depth = 0
    while i < hi:
        t = toks[i].text
        if t in OPEN:
            depth += 1
        elif t in CLOSE:
            depth -= 1
        elif t == ";" and depth == 0:
            break
        i += 1
    return i


def split_top(toks, lo, hi, sep=",", angles=False):
    """Splits toks[lo:hi] at `sep` tokens outside brackets: a list of (start, end) ranges."""
    parts, depth, start = [], 0, lo
    for j in range(lo, hi):
        t = toks[j]
        if t.kind != "punct":
            continue
        if t.text in OPEN or (angles and t.text == "<"):
            depth += 1
        elif t.text in CLOSE or (angles and t.text == ">"):
            depth -= 1
        elif t.text == sep and depth == 0:
            parts.append((start, j))
            start = j + 1
    if start < hi:
        parts.append((start, hi))
    return parts


class Source:
    def __init__(self, rel):
        # A tuple of files is read as one text (line numbers then count through all of them).
        rels = rel if isinstance(rel, tuple) else (rel,)
        self.rel = " + ".join(rels)
        texts = []
        for r in rels:
            with open(os.path.join(ROOT, r), encoding="utf-8") as f:
                texts.append(f.read())
        self.text = "\n".join(texts)
        self.toks = lex(self.text)
        self.lines = [m.start() for m in re.finditer("\n", self.text)]

    def line_of(self, pos):
        return bisect.bisect_left(self.lines, pos) + 1

    def slice(self, a, b):
        """Source text of toks[a:b], whitespace collapsed."""
        if a >= b:
            return ""
        return " ".join(self.text[self.toks[a].start:self.toks[b - 1].end].split())


# ---------------------------------------------------------------------------------------------
# Items: structs, enums, impls


class Field:
    def __init__(self, name, ty, doc, public, line):
        self.name, self.ty, self.doc, self.public, self.line = name, ty, doc, public, line


class Item:
    def __init__(self, kind, name, src, doc, attrs, body, line):
        self.kind, self.name, self.src, self.doc = kind, name, src, doc
        self.attrs, self.body, self.line = attrs, body, line
        self.fields, self.variants = [], []


def leading(src, i):
    """Doc lines and attribute texts just before toks[i] (a `pub` or the item keyword)."""
    toks, docs, attrs = src.toks, [], []
    j = i - 1
    while j >= 0:
        t = toks[j]
        if t.kind == "doc":
            docs.append(t.text)
            j -= 1
        elif t.kind == "punct" and t.text == "]":
            depth, k = 0, j
            while k >= 0:
                if toks[k].text == "]":
                    depth += 1
                elif toks[k].text == "[":
                    depth -= 1
                    if depth == 0:
                        break
                k -= 1
            if k > 0 and toks[k - 1].text == "#":
                attrs.append(src.slice(k - 1, j + 1))
                j = k - 2
            else:
                break
        else:
            break
    return list(reversed(docs)), list(reversed(attrs))


def is_pub(toks, i):
    """Whether toks[i] starts a plain `pub` visibility (not `pub(crate)`)."""
    return toks[i].text == "pub" and not (i + 1 < len(toks) and toks[i + 1].text == "(")


def parse_members(src, lo, hi):
    """Fields or variants in toks[lo:hi]: (name, type text, docs, attrs, public, line)."""
    toks, out = src.toks, []
    docs, attrs, j = [], [], lo
    while j < hi:
        t = toks[j]
        if t.kind == "doc":
            docs.append(t.text)
            j += 1
            continue
        if t.kind == "idoc":
            j += 1
            continue
        if t.text == "#" and j + 1 < hi and toks[j + 1].text == "[":
            k = match_close(toks, j + 1)
            attrs.append(src.slice(j, k + 1))
            j = k + 1
            continue
        # One member: up to a comma outside brackets and angle brackets.
        depth, k = 0, j
        while k < hi:
            x = toks[k]
            if x.kind == "punct":
                if x.text in OPEN or x.text == "<":
                    depth += 1
                elif x.text in CLOSE or x.text == ">":
                    depth -= 1
                elif x.text == "," and depth == 0:
                    break
            k += 1
        public = is_pub(toks, j)
        a = j
        if toks[a].text == "pub":
            a += 1
            if a < k and toks[a].text == "(":
                a = match_close(toks, a) + 1
        name = toks[a].text
        ty = ""
        if a + 1 < k and toks[a + 1].text == ":":
            ty = tidy_type(src.slice(a + 2, k))
        elif a + 1 < k:  # a variant's payload or discriminant
            ty = src.slice(a + 1, k)
        out.append((name, ty, docs, attrs, public, src.line_of(t.start)))
        docs, attrs, j = [], [], k + 1
    return out


def find_items(src):
    items = []
    toks = src.toks
    for i, t in enumerate(toks):
        if t.kind != "ident" or t.text not in ("struct", "enum") or i == 0:
            continue
        if not is_pub(toks, i - 1):
            continue
        name = toks[i + 1].text
        j = i + 2
        while j < len(toks) and toks[j].text not in ("{", ";", "("):
            j += 1
        if j >= len(toks) or toks[j].text != "{":
            continue  # unit or tuple struct
        end = match_close(toks, j)
        docs, attrs = leading(src, i - 1)
        it = Item(t.text, name, src, docs, attrs, (j + 1, end), src.line_of(t.start))
        for (fname, ty, fdocs, fattrs, public, line) in parse_members(src, j + 1, end):
            if t.text == "struct":
                f = Field(fname, ty, fdocs, public, line)
                f.attrs = fattrs
                it.fields.append(f)
            else:
                it.variants.append((fname, ty, fdocs, fattrs))
        items.append(it)
    return items


def find_impls(src, name):
    """(trait or None, (lo, hi) token range of the body) of every `impl ... name {`."""
    toks, out = src.toks, []
    for i, t in enumerate(toks):
        if t.text != "impl" or t.kind != "ident":
            continue
        j = i + 1
        if j < len(toks) and toks[j].text == "<":
            depth = 0
            while j < len(toks):
                depth += {"<": 1, ">": -1}.get(toks[j].text, 0)
                j += 1
                if depth == 0:
                    break
        k = j
        while k < len(toks) and toks[k].text not in ("{", ";"):
            k += 1
        if k >= len(toks) or toks[k].text != "{":
            continue
        head = [x.text for x in toks[j:k]]
        trait = None
        if "for" in head:
            f = head.index("for")
            trait, target = head[:f], head[f + 1:]
        else:
            target = head
        target = [x for x in target if x not in ("<", ">")]
        if target and target[-1] == name or (target and name in target and target[0] == name):
            out.append(((trait[-1] if trait else None), (k + 1, match_close(toks, k))))
    return out


def find_fns(src, lo, hi):
    """Functions in toks[lo:hi]: dict with name, params [(name, type)], ret, body, docs, pub."""
    toks, out, j = src.toks, [], lo
    while j < hi:
        if toks[j].text == "fn" and toks[j].kind == "ident":
            name = toks[j + 1].text
            p = j + 2
            if toks[p].text == "<":
                depth = 0
                while True:
                    depth += {"<": 1, ">": -1}.get(toks[p].text, 0)
                    p += 1
                    if depth == 0:
                        break
            pclose = match_close(toks, p)
            params = []
            for (a, b) in split_top(toks, p + 1, pclose, angles=True):
                names = [x for x in range(a, b) if toks[x].text == ":"]
                if names:
                    c = names[0]
                    params.append((src.slice(a, c).replace("mut ", ""), tidy_type(src.slice(c + 1, b))))
                else:
                    params.append((src.slice(a, b), ""))
            k = pclose + 1
            ret = ""
            if toks[k].text == "->":
                r = k + 1
                while toks[r].text not in ("{", ";", "where"):
                    r += 1
                ret = tidy_type(src.slice(k + 1, r))
                k = r
            while toks[k].text not in ("{", ";"):
                k += 1
            if toks[k].text == ";":
                j = k + 1
                continue
            end = match_close(toks, k)
            fn_pos = j - 1 if j > 0 and toks[j - 1].text == "pub" else j
            docs, _ = leading(src, fn_pos)
            out.append(dict(name=name, params=params, ret=ret, body=(k + 1, end), docs=docs,
                            pub=toks[fn_pos].text == "pub"))
            j = end + 1
        else:
            j += 1
    return out


def struct_literals(src, lo, hi, names):
    """Struct literals `Name { .. }` (Name in names, or Self) in toks[lo:hi]:
    (name, {field: (a, b) expr token range}, index of `{`)."""
    toks, out = src.toks, []
    for j in range(lo, hi - 1):
        t = toks[j]
        if t.kind != "ident" or toks[j + 1].text != "{":
            continue
        if t.text not in names and t.text != "Self":
            continue
        if j > 0 and toks[j - 1].text in ("struct", "enum", "impl", "for", "->", "trait"):
            continue
        end = match_close(toks, j + 1)
        fields = {}
        for (a, b) in split_top(toks, j + 2, end):
            while a < b and toks[a].text == "#":  # #[cfg(..)] on a field
                a = match_close(toks, a + 1) + 1
            if a >= b or toks[a].text == "..":
                continue
            if b - a >= 2 and toks[a + 1].text == ":":
                fields[toks[a].text] = (a + 2, b)
            elif b - a == 1:
                fields[toks[a].text] = (a, b)  # shorthand
        out.append((t.text, fields, j + 1))
    return out


# ---------------------------------------------------------------------------------------------
# Text helpers


def tidy_type(t):
    t = " ".join(t.split())
    t = re.sub(r"\b(?:[a-z_][a-z0-9_]*::)+", "", t)  # module paths
    t = re.sub(r"<\s+", "<", t)
    t = re.sub(r"\s+>", ">", t)
    t = re.sub(r",\s*>", ">", t)
    t = re.sub(r"\s+,", ",", t)
    return t


def join_doc(lines):
    return " ".join(" ".join(l.strip() for l in lines).split())


def code_paths(text):
    """Intra-doc link brackets dropped, `crate::`/`super::` prefixes dropped in code spans."""
    text = re.sub(r"\[(`[^`]+`)\](?!\()", r"\1", text)
    return re.sub(r"`(?:crate|super|self)::(?:[a-z_][a-z0-9_]*::)*", "`", text)


def md_inline(text):
    """Doc text made safe for a table cell: intra-doc link brackets dropped, `|` escaped and
    `<`/`>` outside code spans escaped."""
    text = code_paths(text)
    parts = text.split("`")
    for k in range(0, len(parts), 2):
        parts[k] = parts[k].replace("<", "&lt;").replace(">", "&gt;")
    text = "`".join(parts)
    return text.replace("|", "\\|")


def md_block(lines):
    """A doc comment as Markdown paragraphs (keeping its lists)."""
    text = "\n".join(l[1:] if l.startswith(" ") else l for l in lines).strip()
    return code_paths(text)


DEFAULT_RE = re.compile(
    r"(?:^|[.;]\s+|\(\s*)[Dd]efault(?::\s*|\s+)(?![(:]|is\b|to\b|of\b|value\b)"
    r"(.+?)(?=\.\s|\.$|;|\s\(|:\s|$)")


def doc_default(doc):
    m = DEFAULT_RE.search(doc)
    if not m:
        return None
    v = m.group(1).strip()
    if not v:
        return None
    if re.fullmatch(r"true|false|None|none", v):
        v = "`%s`" % ("None" if v == "none" else v)
    return v


UNITS = {"10": "KiB", "20": "MiB", "30": "GiB", "40": "TiB"}


def pretty_expr(e):
    """A default expression for the page, or None when it is not simple."""
    e = " ".join(e.split())
    e = re.sub(r"\b(?:crate|self|super|std|strata)::(?:[a-z_][a-z0-9_]*::)*", "", e)
    e = re.sub(r"\b(?:[a-z_][a-z0-9_]*::)+(?=[A-Z])", "", e)
    m = re.fullmatch(r"Some\((.*)\)", e)
    if m:
        inner = pretty_expr(m.group(1))
        return None if inner is None else "`Some`(%s)" % inner
    m = re.fullmatch(r"\(?([0-9_]+) << (10|20|30|40)\)?(?: as \w+)?", e)
    if m:
        return "%s %s" % (m.group(1).replace("_", ""), UNITS[m.group(2)])
    m = re.fullmatch(r"Duration::from_(secs|millis|micros)\(([0-9_.]+)\)", e)
    if m:
        unit = {"secs": "s", "millis": "ms", "micros": "µs"}[m.group(1)]
        return "%s %s" % (m.group(2).replace("_", ""), unit)
    if e in ("String::new()", "Vec::new()", "vec![]"):
        return "`%s`" % ('""' if e.startswith("String") else "[]")
    m = re.fullmatch(r'("[^"]*")\.(?:into|to_string|to_owned)\(\)', e)
    if m:
        return "`%s`" % m.group(1)
    if re.fullmatch(r"-?[0-9][0-9_]*(\.[0-9_]+)?(e-?[0-9]+)?", e):
        return e.replace("_", "")
    if re.fullmatch(r"true|false|None|[A-Z][A-Za-z0-9_]*(::[A-Z][A-Za-z0-9_]*)*|\"[^\"]*\"", e):
        return "`%s`" % e
    if re.fullmatch(r"vec!\[[A-Za-z0-9_:, ()]*\]", e) and len(e) < 80:
        return "`%s`" % e
    return None


QUANTITY_UNITS = {"": 1, "bytes": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30,
                  "tib": 1 << 40, "s": 1, "ms": 1e-3, "µs": 1e-6, "minutes": 60, "min": 60}


def quantity(text):
    """A default as a number in base units (bytes, seconds), or None."""
    t = re.sub(r"`|Some|[()]", "", text).strip().lower()
    m = re.fullmatch(r"(-?[0-9][0-9_]*(?:\.[0-9]+)?(?:e-?[0-9]+)?)\s*([a-zµ]*)", t)
    if not m or m.group(2) not in QUANTITY_UNITS:
        return None
    return float(m.group(1).replace("_", "")) * QUANTITY_UNITS[m.group(2)]


def anchor(heading):
    """mdBook's id for a heading."""
    text = re.sub(r"[`*_\[\]]", lambda m: "_" if m.group(0) == "_" else "", heading)
    out = []
    for ch in text.lower():
        if ch.isalnum() or ch in "-_":
            out.append(ch)
        elif ch.isspace():
            out.append("-")
    return "".join(out)


def type_idents(ty):
    return re.findall(r"[A-Za-z_][A-Za-z0-9_]*", ty)


# ---------------------------------------------------------------------------------------------
# The engine's option structs


class Engine:
    def __init__(self):
        self.sources = {}
        self.structs = {}  # name -> [Item]
        self.enums = {}
        base = os.path.join(ROOT, ENGINE_SRC)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d not in ("tests", "benches"))
            for fn in sorted(filenames):
                if not fn.endswith(".rs"):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, fn), ROOT)
                src = Source(rel)
                self.sources[rel] = src
                for it in find_items(src):
                    table = self.structs if it.kind == "struct" else self.enums
                    table.setdefault(it.name, []).append(it)

    def struct(self, name, rel=None):
        cands = self.structs.get(name, [])
        if rel is not None:
            cands = [c for c in cands if c.src.rel == os.path.join(ENGINE_SRC, rel)]
        return cands[0] if len(cands) == 1 else None

    def rust_path(self, item):
        """The shortest public path naming item: its module path when every module on it is
        public, or an ancestor module that re-exports it with `pub use`."""
        rel = os.path.relpath(item.src.rel, ENGINE_SRC)
        parts = rel[:-3].split(os.sep)
        if parts[-1] in ("mod", "lib"):
            parts = parts[:-1]
        cands = []
        # Ancestors: crate root, then each module file down the path.
        mods = [("lib.rs", [])]
        for k in range(1, len(parts) + 1):
            sub = os.path.join(*parts[:k])
            f = sub + ".rs" if os.path.exists(os.path.join(ROOT, ENGINE_SRC, sub + ".rs")) \
                else os.path.join(sub, "mod.rs")
            mods.append((f, parts[:k]))
        all_pub = True
        for k, (f, path) in enumerate(mods):
            src = self.sources.get(os.path.join(ENGINE_SRC, f))
            if src is None:
                all_pub = False
                break
            if k < len(mods) - 1 and all_pub:
                nxt = parts[k]
                if not re.search(r"(?m)^\s*pub mod %s\b" % re.escape(nxt), src.text):
                    all_pub = False
            if k < len(mods) - 1:
                for m in re.finditer(r"(?ms)^\s*pub use [^;]*;", src.text):
                    if re.search(r"\b%s\b" % re.escape(item.name), m.group(0)):
                        cands.append(path)
                        break
        if all_pub:
            cands.append(parts)
        best = min(cands, key=len) if cands else parts
        return "::".join(["strata"] + best + [item.name])

    def defaults(self, item):
        """({field: expr text}, how): from `impl Default`, else from a constructor."""
        src = item.src
        for trait, (lo, hi) in find_impls(src, item.name):
            if trait == "Default":
                for fn in find_fns(src, lo, hi):
                    if fn["name"] == "default":
                        lo2, hi2 = fn["body"]
                        lits = struct_literals(src, lo2, hi2, {item.name})
                        if not lits and hi2 - lo2 == 1 and src.toks[lo2].kind == "ident":
                            # `fn default() -> Self { PRIOR }`: a constant of the type.
                            const = src.toks[lo2].text
                            for x in range(len(src.toks) - 3):
                                if src.toks[x].text == "const" and src.toks[x + 1].text == const:
                                    y = x
                                    while src.toks[y].text != "=":
                                        y += 1
                                    z = y
                                    while src.toks[z].text != ";":
                                        z += 1
                                    lits = struct_literals(src, y + 1, z, {item.name})
                                    break
                        if lits:
                            return ({k: src.slice(a, b) for k, (a, b) in lits[0][1].items()},
                                    "default", None)
        if any("Default" in a and "derive" in a for a in item.attrs):
            return ({}, "derive", None)
        for trait, (lo, hi) in find_impls(src, item.name):
            if trait is not None:
                continue
            for fn in find_fns(src, lo, hi):
                if not fn["pub"] or fn["ret"] not in ("Self", item.name):
                    continue
                lits = struct_literals(src, fn["body"][0], fn["body"][1], {item.name})
                if lits:
                    vals = {k: src.slice(a, b) for k, (a, b) in lits[0][1].items()}
                    return (vals, "constructor", fn)
        return ({}, None, None)

    def enum_default(self, name):
        for it in self.enums.get(name, []):
            for (v, _, _, attrs) in it.variants:
                if any(a == "#[default]" for a in attrs):
                    return "`%s::%s`" % (name, v)
        return None


def derived_default(engine, ty):
    head = type_idents(ty)[0] if type_idents(ty) else ""
    if head == "bool":
        return "`false`"
    if head == "Option":
        return "`None`"
    if re.fullmatch(r"[ui](8|16|32|64|128|size)|f32|f64", head):
        return "0"
    if head == "Duration":
        return "0 s"
    if head in ("Vec", "String", "PathBuf"):
        return "empty"
    return engine.enum_default(head)


def collect(engine):
    """The structs of the page: the roots in order, each struct reachable from them through
    field types (public, every field public) placed after the last struct referring to it.
    Returns (order, {name: [`Parent::field` that has it as its type]})."""
    roots = []
    for name, rel in ROOTS:
        it = engine.struct(name, rel)
        if it is None:
            sys.exit("options-reference: struct %s not found in %s" % (name, rel))
        roots.append(it)

    def children(item):
        for f in item.fields:
            if not f.public:
                continue
            for ident in type_idents(f.ty):
                cand = engine.struct(ident)
                if cand is None or cand.name == item.name:
                    continue
                if cand.fields and all(x.public for x in cand.fields):
                    yield f, cand

    included = {it.name: it for it in roots}
    frontier = list(roots)
    while frontier:
        nxt = []
        for it in frontier:
            for _, c in children(it):
                if c.name not in included:
                    included[c.name] = c
                    nxt.append(c)
        frontier = nxt
    reached = {}
    for it in included.values():
        for f, c in children(it):
            reached.setdefault(c.name, []).append("`%s::%s`" % (it.name, f.name))
    # Place each extra after the last struct (in page order) that refers to it.
    order = list(roots)
    pending = [n for n in included if n not in {r.name for r in roots}]
    while pending:
        progress = False
        for n in list(pending):
            parents = [p for p in included.values() if any(c.name == n for _, c in children(p))]
            if all(p.name in {o.name for o in order} or p.name == n for p in parents):
                pos = max(i for i, o in enumerate(order) if o in parents)
                order.insert(pos + 1, included[n])
                pending.remove(n)
                progress = True
        if not progress:
            order.extend(included[n] for n in pending)
            break
    return order, reached


# ---------------------------------------------------------------------------------------------
# The server's mapping: which [engine] (or top-level) TOML keys set which option field


def server_mapping(engine):
    src = Source(SERVER_CONFIG)
    toks = src.toks
    items = {it.name: it for it in find_items(src)}
    # A field with `#[serde(skip)]` is no TOML key (ServerConfig::storage, set by embedders).
    def toml_keys(item):
        return {f.name for f in item.fields
                if not any("serde" in a and "skip" in a for a in (f.attrs or []))}

    keys = {
        "EngineConfig": toml_keys(items["EngineConfig"]),
        "ServerConfig": toml_keys(items["ServerConfig"]),
    }
    struct_names = set(engine.structs)
    # Field types of engine structs, to follow `o.logstore.defer_fast_bytes = ..`.
    field_type = {}
    for name, its in engine.structs.items():
        if len(its) == 1:
            for f in its[0].fields:
                ids = [x for x in type_idents(f.ty) if x in struct_names]
                if ids:
                    field_type[(name, f.name)] = ids[-1]
    # Constructors: (Struct, fn) -> {param: [fields it sets]}.
    ctor_params = {}
    for name, its in engine.structs.items():
        if len(its) != 1:
            continue
        it = its[0]
        for trait, (lo, hi) in find_impls(it.src, name):
            if trait is not None:
                continue
            for fn in find_fns(it.src, lo, hi):
                lits = struct_literals(it.src, fn["body"][0], fn["body"][1], {name})
                if not lits:
                    continue
                pnames = [p for p, _ in fn["params"]]
                m = {}
                for field, (a, b) in lits[0][1].items():
                    for x in range(a, b):
                        if it.src.toks[x].text in pnames:
                            m.setdefault(it.src.toks[x].text, []).append(field)
                ctor_params[(name, fn["name"])] = (pnames, m)

    mapping = {}  # (Struct, field) -> set of keys ("engine"|"top", name)
    server_fns = {}
    for impl_name in ("EngineConfig", "ServerConfig"):
        for trait, (lo, hi) in find_impls(src, impl_name):
            if trait is None:
                for fn in find_fns(src, lo, hi):
                    server_fns[fn["name"]] = (impl_name, fn)

    def ret_struct(ret):
        ids = [x for x in type_idents(ret) if x in struct_names]
        return ids[0] if ids else None

    for fname, (impl_name, fn) in server_fns.items():
        lo, hi = fn["body"]
        locals_refs, local_type, aliases = {}, {}, {}
        for pname, pty in fn["params"]:
            st = ret_struct(pty)
            if st:
                local_type[pname] = st

        def refs(a, b):
            out = set()
            x = a
            while x < b:
                t = toks[x]
                prev = toks[x - 1].text if x > 0 else ""
                nxt = toks[x + 1].text if x + 1 < len(toks) else ""
                if t.text == "self" and nxt == "." and x + 2 < b:
                    f = toks[x + 2].text
                    if impl_name == "ServerConfig" and f == "engine" and x + 4 < b \
                            and toks[x + 3].text == ".":
                        g = toks[x + 4].text
                        if g in keys["EngineConfig"]:
                            out.add(("engine", g))
                        x += 5
                        continue
                    if impl_name == "EngineConfig" and f in keys["EngineConfig"]:
                        out.add(("engine", f))
                    elif impl_name == "ServerConfig" and f in keys["ServerConfig"]:
                        out.add(("top", f))
                    x += 3
                    continue
                if t.kind == "ident" and prev != "." and not (nxt == ":" ):
                    if t.text in aliases and nxt == "." and x + 2 < b:
                        f = toks[x + 2].text
                        if f in keys["EngineConfig"]:
                            out.add(("engine", f))
                        x += 3
                        continue
                    if t.text in locals_refs:
                        out |= locals_refs[t.text]
                x += 1
            return out

        x = lo
        while x < hi:
            t = toks[x]
            # let [mut] NAME [: T] = expr ;
            if t.text == "let" and t.kind == "ident":
                y = x + 1
                if toks[y].text == "mut":
                    y += 1
                name = toks[y].text
                eq = y + 1
                while toks[eq].text != "=":
                    eq += 1
                end = statement_end(toks, eq + 1, hi)
                expr = [toks[z].text for z in range(eq + 1, end)]
                if expr == ["&", "self", ".", "engine"]:
                    aliases[name] = True
                else:
                    r = refs(eq + 1, end)
                    # A constructor call: its arguments set the fields they are passed to.
                    if len(expr) >= 4 and expr[1] == "::" and expr[0] in struct_names:
                        local_type[name] = expr[0]
                        key = (expr[0], expr[2])
                        if key in ctor_params and toks[eq + 4].text == "(":
                            pnames, pm = ctor_params[key]
                            close = match_close(toks, eq + 4)
                            for k, (a, b) in enumerate(split_top(toks, eq + 5, close)):
                                if k < len(pnames):
                                    for field in pm.get(pnames[k], []):
                                        mapping.setdefault((expr[0], field), set()).update(refs(a, b))
                    elif expr and expr[0] in struct_names and len(expr) > 1 and expr[1] == "{":
                        local_type[name] = expr[0]
                    else:
                        m = re.match(r"self \. (?:engine \. )?(\w+) \(", " ".join(expr))
                        if m and m.group(1) in server_fns:
                            st = ret_struct(server_fns[m.group(1)][1]["ret"])
                            if st:
                                local_type[name] = st
                    locals_refs[name] = r
                x = eq + 1
                continue
            # NAME(.field)+ = expr ;
            if t.kind == "ident" and (x == lo or toks[x - 1].text in (";", "{", "}")) \
                    and t.text in local_type:
                y, chain = x + 1, []
                while toks[y].text == "." and toks[y + 1].kind == "ident":
                    chain.append(toks[y + 1].text)
                    y += 2
                if chain and toks[y].text == "=":
                    end = statement_end(toks, y + 1, hi)
                    st = local_type[t.text]
                    for f in chain[:-1]:
                        st = field_type.get((st, f))
                        if st is None:
                            break
                    if st is not None:
                        mapping.setdefault((st, chain[-1]), set()).update(refs(y + 1, end))
                    x = y + 1
                    continue
            x += 1
        for (name, fields, _) in struct_literals(src, lo, hi, struct_names):
            for field, (a, b) in fields.items():
                mapping.setdefault((name, field), set()).update(refs(a, b))
    # EngineConfig's own defaults, for the key table.
    eng_defaults = {}
    for trait, (lo, hi) in find_impls(src, "EngineConfig"):
        if trait == "Default":
            for fn in find_fns(src, lo, hi):
                for (name, fields, _) in struct_literals(src, fn["body"][0], fn["body"][1],
                                                         {"EngineConfig"}):
                    eng_defaults = {k: src.slice(a, b) for k, (a, b) in fields.items()}
    eng_docs = {f.name: join_doc(f.doc) for f in items["EngineConfig"].fields}
    eng_order = [f.name for f in items["EngineConfig"].fields]
    return {k: v for k, v in mapping.items() if v}, eng_defaults, eng_docs, eng_order


def serve_flags():
    """{engine key: flag} of `strata serve`'s dedicated flags, and the top-level ones."""
    src = Source(SERVE_ARGS)
    flags = {}
    for m in re.finditer(r'set\(\s*"(engine\.)?([\w-]+)",\s*args\.(\w+)', src.text):
        flags[m.group(2)] = m.group(3).replace("_", "-")
    return flags


def key_name(k):
    scope, name = k
    kebab = name.replace("_", "-")
    return "`%s`" % kebab if scope == "engine" else "`%s` (top level)" % kebab


# ---------------------------------------------------------------------------------------------
# The page

INTRO = """\
# Configuration

<!-- Generated by scripts/options-reference.py from the Rust sources. Do not edit by hand:
     change the doc comments in crates/strata/src and run `python3 scripts/options-reference.py`. -->

Every tunable of the engine is a public field of a plain Rust struct. This page lists them all,
with their types, defaults and the doc comments from the source; it is generated from the code,
so it is the reference when another page and the code disagree. For which options to change
for a given workload, see [Tuning recipes](tuning.md).

## Setting options

**In Rust**, start from the defaults and change the fields you need; nested option structs
take the same shape. `Db::open` checks the whole set first (`Options::validate`) and rejects an
inconsistent one with `ErrorKind::InvalidArgument` before touching the disk.

```rust
use strata::{Db, Options, ReadOptions, WriteBatch, WriteOptions};

# fn main() -> strata::Result<()> {
# let dir = tempfile::tempdir().unwrap();
let opts = Options {
    write_buffer_size: 16 << 20,                   // 16 MiB memtables
    block_cache_capacity: 128 << 20,               // 128 MiB block cache
    forest: strata::compaction::ForestOptions {    // a nested struct: same pattern
        search_threads: 4,
        ..Default::default()
    },
    ..Options::default()
};
let db = Db::open(dir.path(), opts)?;
let mut batch = WriteBatch::new();
batch.put(b"k", b"v");
db.write_opt(batch, &WriteOptions { sync: true, ..Default::default() })?;
assert!(db.get_opt(&ReadOptions::default(), b"k")?.is_some());
db.close()?;
# Ok(())
# }
```

`WriteOptions` and `ReadOptions` are passed per call (`write_opt`, `get_opt`, `iter`,
`multi_get`). `compaction_style` takes effect only when the database is created (the
manifest records it); every other option can change from one open to the next.

**`strata serve`** reads a TOML file (`strata serve --config FILE`) whose `[engine]` table
holds engine options under kebab-case names; the tables below give the key next to each field
it sets, and [`strata serve` keys](#strata-serve-keys) lists them all with the server's
defaults (which differ from the engine's for the capacity tier and the persistent cache).
Sizes take Redis-style units (`64mb`, `1gb`). Settings without a key keep the engine's default.

```toml
sync = "everysec"            # top level: when the WAL is fsynced

[engine]
write-buffer-size = "64mb"
block-cache-size = "256mb"
capacity = "s3://bucket/prefix"
persistent-cache = "lap"
persistent-cache-size = "1gb"
compression = ["none", "none", "lz4"]
```

**`strata bench`** sets a subset through db_bench-style flags (`--write-buffer-size`,
`--cache-size`, `--capacity`, `--hotrap`, ...); [the bench page](bench.md#engine-options) lists
which flag sets which option.
"""


def render(engine):
    order, reached = collect(engine)
    smap, eng_defaults, eng_docs, eng_order = server_mapping(engine)
    sections = {it.name for it in order}
    enums_used = []
    missing = []
    notes = []
    computed, field_struct = {}, {}
    out = [INTRO]

    def link(name):
        return "[`%s`](#%s)" % (name, anchor(name))

    for it in order:
        out.append("## %s\n" % it.name)
        where = "`%s`, defined in `%s`" % (engine.rust_path(it), it.src.rel)
        if reached.get(it.name):
            where += "; the type of %s" % ", ".join(reached[it.name])
        out.append(where + ".\n")
        if it.doc:
            out.append(md_block(it.doc) + "\n")
        vals, how, ctor = engine.defaults(it)
        if how == "constructor":
            params = ", ".join(p for p, _ in ctor["params"] if p not in ("self", "&self"))
            text = "No `Default`: build it with `%s::%s(%s)`" % (it.name, ctor["name"], params)
            if ctor["docs"]:
                out.append(text + ", which sets:\n")
                out.append(md_block(ctor["docs"]) + "\n")
            else:
                out.append(text + ".\n")
        if it.name == "RemoteOptions":
            out.append("The engine builds it from `Options` when `compaction_service` is set "
                       "(`Options::compaction_mode`, `compaction_instance`, "
                       "`max_background_compactions` and `remote_verify` feed it); set it "
                       "directly only when driving a `ServiceRunner` yourself.\n")
        fields = [f for f in it.fields if f.public]
        has_key = any((it.name, f.name) in smap for f in fields)
        head = "| field | type | default | description |"
        rule = "|---|---|---|---|"
        if has_key:
            head += " `strata serve` key |"
            rule += "---|"
        out.append(head)
        out.append(rule)
        for f in fields:
            doc = join_doc(f.doc)
            if not doc:
                missing.append("%s:%d: %s::%s has no doc comment" % (it.src.rel, f.line, it.name,
                                                                      f.name))
            default = doc_default(doc)
            expr = vals.get(f.name)
            pretty = pretty_expr(expr) if expr is not None else None
            if default is not None and pretty is not None:
                a, b = quantity(default), quantity(pretty)
                if a is not None and b is not None and abs(a - b) > 1e-9 * max(abs(a), abs(b), 1):
                    notes.append("%s::%s: doc says default %s, code has %s" % (
                        it.name, f.name, default, expr))
            if default is None:
                if expr is not None and ctor is not None and \
                        any(re.search(r"\b%s\b" % re.escape(p), expr) for p, _ in ctor["params"]):
                    default = "(argument of `%s`)" % ctor["name"]
                elif expr is not None and re.fullmatch(r"(?:\w+::)*(?:Default::default|default)\(\)",
                                                       expr.replace(" ", "")):
                    refd = [x for x in type_idents(f.ty) if x in sections and x != it.name]
                    default = ("see " + link(refd[0])) if refd else \
                        (engine.enum_default(type_idents(f.ty)[0]) or "`Default`")
                elif pretty is not None:
                    default = pretty
                elif how == "derive":
                    default = derived_default(engine, f.ty) or "`Default::default()`"
                else:
                    default = "see description"
            ty = "`%s`" % f.ty
            desc = md_inline(doc) if doc else ""
            extra = [x for x in type_idents(f.ty) if x in sections and x != it.name]
            for x in type_idents(f.ty):
                if x in engine.enums and x not in enums_used:
                    enums_used.append(x)
                if x in engine.enums:
                    extra.append(x)
            extra = [x for i, x in enumerate(extra) if x not in extra[:i]]
            if extra and "see [" not in default:
                desc = (desc + " (See %s.)" % ", ".join(link(x) for x in extra)).strip()
            computed[(it.name, f.name)] = default
            for x in type_idents(f.ty):
                if x in sections:
                    field_struct[(it.name, f.name)] = x
            row = "| `%s` | %s | %s | %s |" % (f.name, ty, default, desc)
            if has_key:
                ks = sorted(smap.get((it.name, f.name), ()), key=lambda k: (k[0] != "engine", k[1]))
                row += " %s |" % (", ".join(key_name(k) for k in ks) if ks else "")
            out.append(row)
        out.append("")

    # Enums used by the fields above.
    if enums_used:
        out.append("## Value types\n")
        out.append("The enums the fields above take.\n")
        for name in enums_used:
            its = engine.enums[name]
            if len(its) != 1:
                continue
            it = its[0]
            out.append("### %s\n" % name)
            line = "`%s`, defined in `%s`." % (engine.rust_path(it), it.src.rel)
            if it.doc:
                line += " " + md_inline(join_doc(it.doc))
            out.append(line + "\n")
            for (v, payload, docs, attrs) in it.variants:
                marks = []
                if "#[default]" in attrs:
                    marks.append("the default")
                for a in attrs:
                    m = re.search(r'feature\s*=\s*"([^"]+)"', a)
                    if m and a.startswith("#[cfg"):
                        marks.append("needs the cargo feature `%s`" % m.group(1))
                text = "- `%s%s`" % (v, payload)
                if marks:
                    text += " (%s)" % ", ".join(marks)
                if docs:
                    text += ": " + md_inline(join_doc(docs))
                out.append(text)
            out.append("")

    # The server's keys.
    flags = serve_flags()
    out.append("## `strata serve` keys\n")
    out.append("Every key of the `[engine]` table of `strata serve`'s configuration file, parsed "
               "from `%s`. Any key can also be given as `strata serve --set engine.KEY=VALUE`; "
               "the flag column names the dedicated flag where there is one (`%s`). Defaults "
               "marked \"engine\" are the engine's default for the field the key sets.\n"
               % ("` and `".join(SERVER_CONFIG), SERVE_ARGS))
    by_key = {}
    for (st, field), ks in smap.items():
        for k in ks:
            by_key.setdefault(k, []).append((st, field))
    page_order = [x.name for x in order]
    out.append("| key | flag | default | sets | description |")
    out.append("|---|---|---|---|---|")
    for name in eng_order:
        expr = eng_defaults.get(name, "")
        m = re.search(r"\bo\s*\.\s*(\w+)(?:\s*\.\s*(\w+))?", expr)
        if m:
            st, field = "Options", m.group(1)
            sub = field_struct.get((st, field))
            if m.group(2) and sub and (sub, m.group(2)) in computed:
                st, field = sub, m.group(2)
            d = "engine: %s" % computed.get((st, field), "see the field")
        else:
            m = re.fullmatch(r"ByteSize\((.*)\)", expr)
            d = pretty_expr(m.group(1) if m else expr) or "`%s`" % expr
        sets = sorted(by_key.get(("engine", name), []),
                      key=lambda sf: (page_order.index(sf[0]) if sf[0] in page_order else 99,
                                      sf[1]))
        cells = ["[`%s::%s`](#%s)" % (st, field, anchor(st)) for st, field in sets]
        kebab = name.replace("_", "-")
        flag = "`--%s`" % flags[kebab] if kebab in flags else ""
        out.append("| `%s` | %s | %s | %s | %s |" % (kebab, flag, d, ", ".join(cells),
                                                     md_inline(eng_docs.get(name, ""))))
    tops = sorted({k for ks in smap.values() for k in ks if k[0] == "top"})
    if tops:
        out.append("")
        parts = []
        for k in tops:
            sets = sorted(sf for sf, ks in smap.items() if k in ks)
            parts.append("`%s` (`--%s`) sets %s" % (
                k[1].replace("_", "-"), flags.get(k[1].replace("_", "-"), k[1].replace("_", "-")),
                ", ".join("`%s::%s`" % sf for sf in sets)))
        out.append("Top-level keys that set engine options: %s." % "; ".join(parts))
    out.append("")
    return "\n".join(out).rstrip("\n") + "\n", missing, notes


def main(argv):
    check = "--check" in argv[1:]
    unknown = [a for a in argv[1:] if a != "--check"]
    if unknown:
        sys.exit("usage: options-reference.py [--check]")
    engine = Engine()
    page, missing, notes = render(engine)
    path = os.path.join(ROOT, OUTPUT)
    for n in notes:
        print("note: " + n, file=sys.stderr)
    if check:
        failed = False
        try:
            with open(path, encoding="utf-8") as f:
                old = f.read()
        except FileNotFoundError:
            old = ""
        if old != page:
            failed = True
            print("%s is stale; run python3 scripts/options-reference.py. Diff:" % OUTPUT)
            diff = list(difflib.unified_diff(old.splitlines(), page.splitlines(),
                                             "%s (on disk)" % OUTPUT, "%s (generated)" % OUTPUT,
                                             lineterm="", n=1))
            for line in diff[:200]:
                print(line)
            if len(diff) > 200:
                print("... (%d more diff lines)" % (len(diff) - 200))
        if missing:
            failed = True
            print("public option fields without a doc comment:")
            for m in missing:
                print("  " + m)
        if not failed:
            print("%s is up to date" % OUTPUT)
        return 1 if failed else 0
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
    print("wrote %s" % OUTPUT)
    for m in missing:
        print("warning: " + m, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
