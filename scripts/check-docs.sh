#!/usr/bin/env bash
# The docs check: the README and the pages of docs/ say only what exists.
#
#   scripts/check-docs.sh
#
# 1. Every relative link of README.md and docs/**/*.md leads to an existing file or folder, and a
#    link's `#anchor` to a heading of the page it names (GitHub's heading ids).
# 2. Every `--flag` the pages give `saams` or `replay` is in that binary's `--help`:
#    - in ```sh blocks (and blocks without a language), the flags of each command that runs
#      `saams`/`replay` (any path to them), `cargo run … --bin saams|replay -- …`, or
#      `scripts/local-cluster.sh … -- …` (whose flags after `--` go to `saams`);
#    - in inline code of the prose, a span that starts with a flag (`--window 60s`) is a flag of
#      `saams` or `replay`, and must be in one of their `--help`s; a span that starts with a
#      command (`saams --window`, `experiment --only ingest`, `cargo test --release`) is
#      checked as that command is above, so other tools' flags are written with their command.
#
# The binaries are built first (`cargo build --release -p saams-jobs --bin saams --bin replay`,
# quick when they are fresh); SAAMS_DOCS_BIN_DIR (default target/release) says where they are, and
# SAAMS_DOCS_NO_BUILD=1 skips the build. Exits 1 with one line per problem, 0 when all is true.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN_DIR=${SAAMS_DOCS_BIN_DIR:-target/release}
if [ "${SAAMS_DOCS_NO_BUILD:-0}" != 1 ]; then
  cargo build --release --quiet -p saams-jobs --bin saams --bin replay
fi
for bin in saams replay; do
  if [ ! -x "$BIN_DIR/$bin" ]; then
    echo "check-docs: $BIN_DIR/$bin is missing (build it, or set SAAMS_DOCS_BIN_DIR)" >&2
    exit 1
  fi
done
command -v python3 >/dev/null || { echo "check-docs: needs python3" >&2; exit 1; }

SAAMS_HELP=$("$BIN_DIR/saams" --help) REPLAY_HELP=$("$BIN_DIR/replay" --help) python3 - <<'PY'
import os, re, shlex, sys, glob

pages = ["README.md"] + sorted(glob.glob("docs/**/*.md", recursive=True))
flag_re = re.compile(r"(?<![\w-])--[a-zA-Z][a-zA-Z0-9-]*")
helps = {
    "saams": set(flag_re.findall(os.environ["SAAMS_HELP"])),
    "replay": set(flag_re.findall(os.environ["REPLAY_HELP"])),
}
problems = []


def slug(heading):
    """GitHub's id of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def read_page(path):
    """The page's lines, each with whether it lies in a fenced block and that block's language."""
    out, fence, lang = [], None, ""
    with open(path, encoding="utf-8") as f:
        for line in f.read().splitlines():
            m = re.match(r"^\s*(```+|~~~+)\s*([\w+-]*)", line)
            if m and (fence is None or m.group(1).startswith(fence)):
                if fence is None:
                    fence, lang = m.group(1), m.group(2).lower()
                else:
                    fence, lang = None, ""
                out.append((line, None))
                continue
            out.append((line, lang if fence is not None else False))
    return out


def anchors(path):
    ids, seen = set(), {}
    for line, block in read_page(path):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if block is False and m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            ids.add(base if n == 0 else f"{base}-{n}")
    return ids


def check_link(page, lineno, target):
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
        return  # http:, https:, mailto: …
    path, _, anchor = target.partition("#")
    where = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
    if not os.path.exists(where):
        problems.append(f"{page}:{lineno}: link {target!r}: {where} does not exist")
        return
    if anchor and where.endswith(".md") and anchor not in anchors(where):
        problems.append(f"{page}:{lineno}: link {target!r}: {where} has no heading #{anchor}")


def tokens(text):
    lex = shlex.shlex(text, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    try:
        return list(lex)
    except ValueError:
        return text.split()


SEPARATORS = {"|", "||", "&", "&&", ";", ";;", "(", ")", "<(", "$(", ">", "<", ">>", "<<"}
WRAPPERS = {"nice", "time", "exec", "sudo", "env", "/usr/bin/time"}


def commands(text):
    """The simple commands of a shell line: lists of words."""
    out, cur = [], []
    for t in tokens(text):
        if t in SEPARATORS or set(t) <= set("|&;()<>$"):
            if cur:
                out.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur:
        out.append(cur)
    return out


def flags_of(words):
    """(binary, flags) when the command runs saams or replay, else None."""
    while words and (re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]) or words[0] in WRAPPERS):
        words = words[1:]
    if not words:
        return None
    prog = os.path.basename(words[0])
    if prog in helps:
        return prog, words[1:]
    if prog == "cargo" and "--bin" in words and "--" in words:
        i = words.index("--bin")
        if i + 1 < len(words) and words[i + 1] in helps:
            return words[i + 1], words[words.index("--") + 1:]
    if prog == "local-cluster.sh" and "--" in words:
        return "saams", words[words.index("--") + 1:]
    return None


def check_command(page, lineno, words):
    found = flags_of(words)
    if found is None:
        return
    binary, args = found
    for arg in args:
        for flag in flag_re.findall(arg.split("=", 1)[0]) if arg.startswith("--") else []:
            if flag not in helps[binary]:
                problems.append(f"{page}:{lineno}: {binary} has no flag {flag} (not in `{binary} --help`)")


for page in pages:
    lines = read_page(page)
    pending, start = "", 0
    for i, (line, block) in enumerate(lines, 1):
        if block is None:
            continue
        if block is False:
            for m in re.finditer(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", re.sub(r"`[^`]*`", "", line)):
                check_link(page, i, m.group(1))
            for span in re.findall(r"`([^`]+)`", line):
                if span.startswith("--"):
                    for flag in flag_re.findall(span.split()[0].split("=", 1)[0]):
                        if not any(flag in h for h in helps.values()):
                            problems.append(f"{page}:{i}: flag {flag} is in neither `saams --help` nor `replay --help`")
                else:
                    for words in commands(span):
                        check_command(page, i, words)
        elif block in ("sh", "bash", "shell", "console", ""):
            if not pending:
                start = i
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            text, pending = pending + line, ""
            for words in commands(text):
                check_command(page, start, words)

for p in problems:
    print(p)
if problems:
    print(f"check-docs: {len(problems)} problem(s) in README.md and docs/", file=sys.stderr)
    sys.exit(1)
print(f"check-docs: {len(pages)} pages: links and saams/replay flags are true")
PY
