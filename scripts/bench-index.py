#!/usr/bin/env python3
"""Generates bench/results/INDEX.md: one row per run directory kept under bench/results/.

    python3 scripts/bench-index.py           # (re)write bench/results/INDEX.md
    python3 scripts/bench-index.py --check   # exit 1 if INDEX.md is out of date, or if a run
                                             # directory is not cited by docs/benchmarks.md

A run directory is a directory directly under bench/results/, except a *series*: a directory
with no files of its own whose subdirectories are all numbered (`writepath/10-...`); then each
numbered subdirectory is a run. For each run the index gives

- what it measured: from the run's own README.md (first heading), setup.txt (the script's
  parameters), run.md or runs.txt (first comment line), a script kept beside the runs (its
  first comment line), or the summary the bench scripts write (compare.md, forest.md,
  summary.md, summary.txt); failing all of those, the line of docs/benchmarks.md that cites it;
- the date and the commit(s) the reports record (strata-bench's JSON `started_unix` and
  `commit`, report headers, setup.txt, redis-compare.sh tables), `-dirty` dropped;
- the sections of docs/benchmarks.md that cite it: by its path under bench/results/ or its name
  standing alone (`caas-3` does not count as a citation of `caas-3-ycsba`).

Python 3 standard library only; reads files only (no git), so the output depends on the tree.
"""
import collections
import datetime
import importlib.util
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")
PAGE = os.path.join(ROOT, "docs", "benchmarks.md")
INDEX = os.path.join(RESULTS, "INDEX.md")

NAME_CHARS = r"A-Za-z0-9_.\-"
HEX = re.compile(r"^[0-9a-f]{7,40}$")


def run_dirs():
    """Run directories, as paths relative to bench/results (sorted, series children included)."""
    runs = []
    for name in sorted(os.listdir(RESULTS)):
        path = os.path.join(RESULTS, name)
        if not os.path.isdir(path) or name.startswith("."):
            continue
        entries = sorted(os.listdir(path))
        files = [e for e in entries if os.path.isfile(os.path.join(path, e))]
        subdirs = [e for e in entries if os.path.isdir(os.path.join(path, e))]
        if not files and subdirs and all(re.match(r"^\d+-", d) for d in subdirs):
            runs.extend(f"{name}/{d}" for d in subdirs)
        else:
            runs.append(name)
    return sorted(runs, key=natural_key)


def natural_key(s):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def _check_book():
    """scripts/check-book.py as a module (its file name has a dash)."""
    spec = importlib.util.spec_from_file_location(
        "check_book", os.path.join(os.path.dirname(os.path.abspath(__file__)), "check-book.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


anchor = _check_book().anchor  # mdBook's id for a heading, made as the link checker makes it


def page_sections():
    """docs/benchmarks.md as [(title, anchor, [lines])], the text before the first ## first."""
    sections = [("(introduction)", "", [])]
    fenced = False
    with open(PAGE, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.lstrip().startswith("```"):
                fenced = not fenced
            m = None if fenced else re.match(r"^##\s+(.*?)\s*$", line)
            if m:
                sections.append((m.group(1), anchor(m.group(1)), []))
            else:
                sections[-1][2].append(line)
    return sections


def citation(run):
    """A regex that finds a citation of the run: its path or its name, standing alone."""
    base = run.rsplit("/", 1)[-1]
    names = [re.escape(run)] + ([re.escape(base)] if base != run else [])
    return re.compile(rf"(?<![{NAME_CHARS}])(?:{'|'.join(names)})(?![A-Za-z0-9_\-]|\.[A-Za-z0-9])")


def blocks(lines):
    """A section's paragraphs and table rows (a table row is a block of its own)."""
    out, para = [], []
    for line in lines + [""]:
        if line.startswith("|") or not line.strip() or line.lstrip().startswith("```"):
            if para:
                out.append(" ".join(para))
                para = []
            if line.startswith("|"):
                out.append(line)
        else:
            para.append(line.strip())
    return out


def citing(run, sections):
    """The sections citing a run, and the first block (paragraph or table row) that does."""
    rx = citation(run)
    found, first = [], None
    for title, anc, lines in sections:
        for block in blocks(lines):
            if rx.search(block):
                if (title, anc) not in found:
                    found.append((title, anc))
                if first is None:
                    first = (block, rx)
    return found, first


def read(path, limit=200_000):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(limit)
    except OSError:
        return ""


def first_comment(text, skip_shebang=True):
    """The first comment line of a file (with the indented comment lines continuing it)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        s = line.strip()
        if skip_shebang and s.startswith("#!"):
            continue
        if s.startswith("#"):
            s = s.lstrip("#").strip()
            if not s:
                continue
            for more in lines[i + 1:]:
                if re.match(r"^#\s{2,}\S", more):
                    s += " " + more.lstrip("#").strip()
                else:
                    break
            return s
        elif s:
            return None
    return None


def command_line(text):
    """The strata command a script runs (`strata bench ...`, `strata recover ...`), if any."""
    for line in text.splitlines():
        m = re.search(r"\b(bench|recover|compaction-service)\s+--.*", line)
        if m and not line.lstrip().startswith("#"):
            cmd = re.sub(r"\s*2>&1.*$|\s*\|.*$|\s*>.*$", "", m.group(0))
            cmd = re.sub(r"\s--(db|dir|wal-location|capacity)[ =]\S+", "", cmd)
            return "strata " + cmd.strip()
    return None


def table_col(text, col=0):
    """Distinct values of one column of the Markdown tables in text (header rows skipped)."""
    values, header = [], True
    for line in text.splitlines():
        if not line.startswith("|"):
            header = True
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header:
            header = False
            continue
        if set(cells[0]) <= set("-: "):
            continue
        v = cells[col] if col < len(cells) else ""
        if v and v not in values:
            values.append(v)
    return values


def describe(path, run):
    """What the run measured, from its own files; None when nothing there says."""
    files = sorted(os.listdir(path))
    p = lambda n: os.path.join(path, n)  # noqa: E731
    if "README.md" in files:
        for line in read(p("README.md")).splitlines():
            if line.startswith("#"):
                return line.lstrip("#").strip()
    if "setup.txt" in files:
        for line in read(p("setup.txt")).splitlines():
            if line.startswith("workloads="):
                return "bench/caas.sh: " + line.strip()
    for name in ("run.md", "runs.md", "runs.txt"):
        if name in files:
            c = first_comment(read(p(name)), skip_shebang=False)
            if c:
                return c
    for name in files:
        if name.endswith(".sh"):
            c = first_comment(read(p(name))) or command_line(read(p(name)))
            if c:
                return f"{c} ({name})"
    depth_runs = [f for f in files if re.match(r".+-P\d+-r\d+\.md$", f)]
    if depth_runs:
        cmds = []
        for f in depth_runs:
            for line in read(p(f), 4000).splitlines():
                m = re.match(r"^redis-benchmark -t (\S+) -n (\d+) .*-P (\d+)", line)
                if m:
                    c = f"-t {m.group(1)} -P {m.group(3)} -n {m.group(2)}"
                    if c not in cmds:
                        cmds.append(c)
                    break
        rounds = len({re.sub(r"-P\d+", "", f) for f in depth_runs})
        return (f"bench/redis-compare.sh, strata serve vs redis-server: redis-benchmark "
                f"{'; '.join(cmds)}; {rounds} rounds")
    for name in files:
        if name.endswith(".json"):
            try:
                with open(p(name), encoding="utf-8") as fh:
                    doc = json.load(fh)
            except (OSError, ValueError):
                continue
            if isinstance(doc, dict) and "jobs_per_sec" in doc:
                conc = sorted({json.load(open(p(f), encoding="utf-8")).get("concurrency")
                               for f in files if f.endswith(".json")})
                return (f"strata compaction-service bench: {doc.get('jobs')} no-op jobs through the "
                        f"control plane, {', '.join(map(str, conc))} in flight")
            break
    if "compare.md" in files:
        text = read(p("compare.md"))
        header = next((line for line in text.splitlines() if line.startswith("| benchmark")), "")
        cols = [c.strip() for c in header.strip().strip("|").split("|")]
        rows = table_col(text, 0)
        what = f"bench/compare.sh: {', '.join(rows)}"
        if "threads" in cols:
            what += f"; threads {', '.join(table_col(text, cols.index('threads')))}"
        if "peer" in cols:
            peers = table_col(text, cols.index("peer"))
        else:
            peers = [c.split()[0] for c in cols[1:] if c.endswith("ops/s") and not c.startswith("strata")]
        m = re.search(r"(\d+) records of ([0-9+]+ B)(?:, (\d+) threads)?", text)
        if m:
            what += f"; {m.group(1)} records of {m.group(2)}" + (f", {m.group(3)} threads" if m.group(3) else "")
        return what + f"; Strata vs {', '.join(peers)}"
    if "forest.md" in files:
        text = read(p("forest.md"))
        rows = []
        for line in text.splitlines():
            m = re.match(r"^\|\s*([a-z0-9-]+)\s*\|\s*strata\s*\|\s*([a-z]+)\s*\|", line)
            if m and f"{m.group(1)} {m.group(2)}" not in rows:
                rows.append(f"{m.group(1)} {m.group(2)}")
        tiered = [v for v in table_col(text, 0) if v.startswith("readrandom") or v.startswith("readmissing")]
        what = "bench/forest.sh: split forest vs leveled"
        if rows:
            what += ", " + ", ".join(rows)
        if tiered or "tiered" in text:
            head = re.search(r"^\|\s*(tiered[^|]*)\|", text, re.M)
            what += "; parallel vs sequential search, " + (head.group(1).strip() if head else "tiered")
        return what
    summaries = [os.path.join(d, f) for d, _, fs in sorted(os.walk(path)) for f in sorted(fs)
                 if f in ("summary.md", "summary.txt")]
    if summaries:
        text = read(summaries[0])
        script = script_of(path, files)
        if summaries[0].endswith("summary.txt") and "replay/parallel" in text:
            return f"{script}: node-loss recovery, parallel vs replay"
        heads = re.findall(r"^## (\S+)", text, re.M)
        if heads:
            modes = table_col(text, 0)
            return f"{script}: {', '.join(heads)}; modes {', '.join(modes)}"
        items = []
        for s in summaries:
            t = read(s)
            first = t.splitlines()[0] if t else ""
            cols = [c.strip() for c in first.strip().strip("|").split("|")]
            if cols[:3] == ["key", "order", "benchmark"]:
                for line in t.splitlines()[2:]:
                    if not line.startswith("|"):
                        break
                    c = [x.strip() for x in line.strip().strip("|").split("|")]
                    v = f"{c[2]}"
                    if v not in items:
                        items.append(v)
            else:
                for v in table_col(t.split("\n\n")[0], 0):
                    if v not in items:
                        items.append(v)
        return f"{script}: {', '.join(items)}"
    return None


def script_of(path, files):
    names = " ".join(files)
    text = " ".join(read(os.path.join(path, f), 4000) for f in files if f.endswith(".txt"))
    if "hotrap" in path or any(f.startswith(("ro-", "dynamic", "mixed")) for f in files):
        return "bench/hotrap.sh"
    if "logstore" in path or re.search(r"\b(hotrange|zipf|burst|shift)-", names):
        return "bench/logstore.sh"
    if "mashmeta" in path or "readmissing-" in names:
        return "bench/mashmeta.sh"
    if "load.txt" in files and "parallel-1.json" in files:
        return "bench/recovery.sh"
    if "caas" in path or "compaction" in text:
        return "bench/caas.sh"
    return "bench script"


COMMIT_PATTERNS = [
    re.compile(r"commit:\s*`?([0-9a-f]{7,40})(?:-dirty)?`?"),
    re.compile(r"commit\s+`([0-9a-f]{7,40})(?:-dirty)?`"),
    re.compile(r"\bstrata ([0-9a-f]{7,40})\b"),
]


def hex_words(text):
    """Commit-like words (7+ hex digits with a letter and a digit) in a line of prose."""
    return [w[:7] for w in re.findall(r"\b([0-9a-f]{7,40})\b", text)
            if re.search(r"[a-f]", w) and re.search(r"\d", w)]


def provenance(path):
    """(dates, commits): the dates of the runs (UTC) and the commits they record, most used first."""
    commits = collections.Counter()
    stamps = []
    text_dates = []
    for d, _, fs in sorted(os.walk(path)):
        for f in sorted(fs):
            full = os.path.join(d, f)
            if f.endswith(".json"):
                try:
                    with open(full, encoding="utf-8") as fh:
                        doc = json.load(fh)
                except (OSError, ValueError):
                    continue
                if isinstance(doc, dict):
                    if isinstance(doc.get("started_unix"), (int, float)):
                        stamps.append(doc["started_unix"])
                    c = str(doc.get("commit", "")).replace("-dirty", "")
                    if HEX.match(c):
                        commits[c[:7]] += 1
            elif f.endswith((".txt", ".log", ".md")):
                text = read(full, 20_000)
                for rx in COMMIT_PATTERNS:
                    for m in rx.finditer(text):
                        if re.search(r"\d", m.group(1)):
                            commits[m.group(1)[:7]] += 1
                if f in ("setup.txt", "README.md", "runs.txt", "run.md", "runs.md"):
                    head = "\n".join(text.splitlines()[:3])
                    text_dates += re.findall(r"\b(20\d\d-\d\d-\d\d)", head)
                    if f == "README.md":
                        heading = next((x for x in text.splitlines() if x.startswith("#")), "")
                        for w in hex_words(heading):
                            commits[w] += 1
                    elif f == "runs.txt":
                        for w in hex_words("\n".join(x for x in text.splitlines() if x.startswith("#"))):
                            commits[w] += 1
            elif f.endswith(".sh"):
                for w in hex_words(first_comment(read(full, 4000)) or ""):
                    commits[w] += 1
    if stamps:
        days = sorted({datetime.datetime.fromtimestamp(s, datetime.timezone.utc).strftime("%Y-%m-%d")
                       for s in stamps})
    else:
        days = sorted(set(text_dates))
    if len(days) > 1:
        days = [days[0], days[-1]]
    ordered = sorted(commits.items(), key=lambda kv: (-kv[1], kv[0]))
    return days, [c for c, _ in ordered][:3]


def clean(text, limit=200):
    text = re.sub(r"\s+", " ", text).strip()
    text = text.replace("|", "/")
    if len(text) > limit:
        text = text[: limit - 1].rsplit(" ", 1)[0] + " …"
    return text


def mention(first):
    """The page's own words for a run: a table row's first cells, or the sentence citing it."""
    block, rx = first
    if block.startswith("|"):
        cells = [c.strip() for c in block.strip().strip("|").split("|")]
        cells = [c for c in cells if c]
        return " — ".join(cells[:2])
    sentences = re.split(r"(?<=\.)\s+(?=\S)", block)
    hit = next((x for x in sentences if rx.search(x)), block)
    return re.sub(r"\*\*", "", hit)


def generate():
    sections = page_sections()
    rows, uncited = [], []
    for run in run_dirs():
        path = os.path.join(RESULTS, run)
        found, first = citing(run, sections)
        what = describe(path, run)
        if what is None:
            what = mention(first) if first else "(nothing recorded)"
        days, commits = provenance(path)
        if found:
            cited = ", ".join(f"[{t}](../../docs/benchmarks.md#{a})" if a else t for t, a in found)
        else:
            cited = "**not cited**"
            uncited.append(run)
        rows.append(f"| `{run}` | {clean(what)} | {' – '.join(days) or '—'} | "
                    f"{', '.join(commits) or '—'} | {cited} |")
    out = [
        "# bench/results: index of kept runs",
        "",
        "Generated by `python3 scripts/bench-index.py` from the run directories and",
        "`docs/benchmarks.md`; do not edit by hand. The figures themselves, with their commands and",
        "settings, are on the benchmarks page (`docs/benchmarks.md`, in the book: *Benchmarks*).",
        "`python3 scripts/bench-index.py --check` fails when this file is out of date or when a",
        "directory here is not cited by `docs/benchmarks.md`.",
        "",
        f"{len(rows)} run directories.",
        "",
        "| run directory | what it measured | date (UTC) | commit | cited in docs/benchmarks.md |",
        "|---|---|---|---|---|",
        *rows,
        "",
    ]
    return "\n".join(out), uncited


def main(argv):
    check = "--check" in argv[1:]
    unknown = [a for a in argv[1:] if a != "--check"]
    if unknown:
        print(__doc__.strip().split("\n\n")[0], file=sys.stderr)
        return 2
    text, uncited = generate()
    if check:
        problems = []
        if read(INDEX) != text:
            problems.append("bench/results/INDEX.md is out of date: run python3 scripts/bench-index.py")
        for run in uncited:
            problems.append(f"bench/results/{run}: not cited by docs/benchmarks.md (cite it or remove it)")
        for p in problems:
            print(p)
        if problems:
            return 1
        print(f"bench-index: {text.count(chr(10) + '| `')} run directories, all cited, INDEX.md up to date")
        return 0
    with open(INDEX, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {os.path.relpath(INDEX, ROOT)}")
    for run in uncited:
        print(f"warning: bench/results/{run} is not cited by docs/benchmarks.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
