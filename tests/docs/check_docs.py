#!/usr/bin/env python3
"""Checks the user docs (README.md, docs/*.md) against the code.

  check_docs.py --root SRC --build BUILD [--only CHECK] [FILE...]

1. flags: every `--flag` given to one of the project's programs (in a command in a code block or
   a code span) is listed by that program's --help; a code span holding only a flag must be listed
   by one of the programs the document runs.
2. options: every `XxxOptions::member`, `XxxOptions.member` and `options.member` named, and
   every name in the first column of a table headed "| option |", is a
   member of that struct (or of some *Options struct for `options.`) in include/arenarpc/ (or,
   for the press's own structs, tools/press/).
3. links: every relative link's file exists, and its #anchor is a heading of that file; no link
   leaves the repository.
4. programs: every ```cpp block whose info string says `program` compiles (-fsyntax-only, with
   the public headers and the build's generated headers).
5. shown files: a block whose info string names a file of the repository (```cpp program
   examples/x.cc, ```proto examples/x.proto) is that file, byte for byte.

Prints one line per failure (file:line: what) and exits 1 if there is any.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

# Program name (as docs write it, the basename) -> path under the build directory or the root.
PROGRAMS = {
    "echo_server": ("build", "examples/echo_server"),
    "arenarpc_press": ("build", "tools/press/arenarpc_press"),
    "grpc_echo_server": ("build", "examples/grpc_echo/grpc_echo_server"),
    "memory_micro_bench": ("build", "bench/micro/memory_micro_bench"),
    "call_stats_bench": ("build", "bench/micro/call_stats_bench"),
    "brpc_port_server": ("build", "examples/brpc_port/brpc_port_server"),
    "brpc_port_client": ("build", "examples/brpc_port/brpc_port_client"),
    "quickstart_server": ("build", "examples/quickstart/quickstart_server"),
    "quickstart_client": ("build", "examples/quickstart/quickstart_client"),
    "callgrind_server": ("root", "bench/callgrind_server"),
    "compare_modes": ("root", "bench/compare_modes"),
    "memlab": ("root", "bench/memlab"),
    "catalog_server": ("build", "examples/catalog/catalog_server"),
    "overload": ("root", "bench/overload"),
    "scaling": ("root", "bench/scaling"),
    "protocol_bench": ("build", "bench/protocol/protocol_bench"),
}

FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*(.*)$")
SPAN = re.compile(r"(`+)(.+?)\1")
FLAG = re.compile(r"^--([A-Za-z][A-Za-z0-9_-]*)")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")
OPTION = re.compile(r"\b([A-Z][A-Za-z]*Options)(?:::|\.)([a-z][a-z0-9_]*)\b|"
                    r"(?<![\w.>])options(?:\.|->)([a-z][a-z0-9_]*)\b")


class Doc:
    def __init__(self, path, rel):
        self.path, self.rel = path, rel
        with open(path, encoding="utf-8") as f:
            self.lines = f.read().split("\n")
        self.blocks = []  # (first line number, info string, [lines])
        self.prose = []   # (line number, text) outside code blocks
        block = None
        for number, line in enumerate(self.lines, 1):
            m = FENCE.match(line)
            if block is None and m:
                block = (number + 1, m.group(3).strip(), [], m.group(2))
            elif block is not None and m and m.group(2).startswith(block[3]) and not m.group(3):
                self.blocks.append(block[:3])
                block = None
            elif block is not None:
                block[2].append(line)
            else:
                self.prose.append((number, line))

    def spans(self):
        for number, line in self.prose:
            for m in SPAN.finditer(line):
                yield number, m.group(2).strip()


class Checker:
    def __init__(self, root, build):
        self.root, self.build = root, build
        self.failures = []
        self.checked = {"flags": 0, "options": 0, "links": 0, "shown files": 0, "programs": 0}
        self._help = {}
        self._options = None

    def fail(self, doc, line, what):
        self.failures.append(f"{doc.rel}:{line}: {what}")

    # ---- flags
    def help_text(self, program):
        if program not in self._help:
            where, rel = PROGRAMS[program]
            path = os.path.join(self.build if where == "build" else self.root, rel)
            text = None
            if os.path.isfile(path) and os.access(path, os.X_OK):
                run = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=60,
                                     stdin=subprocess.DEVNULL)
                text = run.stdout + run.stderr
            self._help[program] = text
        return self._help[program]

    @staticmethod
    def lists(help_text, flag):
        # gflags prints "-flag (...)", argparse "--flag": either, as a word of its own.
        return re.search(r"(?<![\w-])--?" + re.escape(flag) + r"(?![A-Za-z0-9_-])", help_text)

    def check_flag(self, doc, line, program, flag):
        self.checked["flags"] += 1
        text = self.help_text(program)
        if text is None:
            self.fail(doc, line, f"{program} (named with --{flag}) is not built: cannot check it")
        elif not self.lists(text, flag):
            self.fail(doc, line, f"{program} --help does not list --{flag}")

    @staticmethod
    def commands(text):
        """Splits shell text into commands (lists of words); tolerant of placeholders."""
        text = text.replace("\\\n", " ")
        for raw in re.split(r"\n|&&|\|\||;|\|", text):
            raw = raw.strip()
            if not raw or raw.startswith("#"):
                continue
            try:
                words = shlex.split(raw, comments=True)
            except ValueError:
                words = raw.split()
            yield words

    def program_flags(self, words):
        """(program, [flags]) for each project program the words run."""
        runs = []
        previous = ""
        for word in words:
            base = os.path.basename(word.rstrip(")"))
            # A program given as a flag's value (--server_bin PATH) is not the one running.
            value = previous.startswith("-") and "=" not in previous and runs
            previous = word
            if base in PROGRAMS and not value:
                runs.append((base, []))
                continue
            m = FLAG.match(word.strip("[]"))
            if m and runs:
                runs[-1][1].append(m.group(1))
        return runs

    def check_flags(self, doc):
        named = set()
        # Code blocks: each logical line (continuations joined) from its first physical line.
        for start, info, body in doc.blocks:
            if info.split()[:1] and info.split()[0] in ("cpp", "c++", "proto", "json", "yaml"):
                continue
            logical, first = "", None
            for i, line in enumerate(body + [""]):
                if first is None:
                    first = start + i
                if line.rstrip().endswith("\\"):
                    logical += line.rstrip()[:-1] + " "
                    continue
                logical += line
                for words in self.commands(logical):
                    for program, flags in self.program_flags(words):
                        named.add(program)
                        for flag in flags:
                            self.check_flag(doc, first, program, flag)
                logical, first = "", None
        lone = []
        for number, span in doc.spans():
            if FLAG.match(span) and " " not in span:
                # The project's flags are snake_case; a dashed one (--cache-sim) is another tool's.
                if "-" not in FLAG.match(span).group(1):
                    lone.append((number, FLAG.match(span).group(1)))
                continue
            for words in self.commands(span):
                for program, flags in self.program_flags(words):
                    named.add(program)
                    for flag in flags:
                        self.check_flag(doc, number, program, flag)
        for number, line in doc.prose:
            for word in re.findall(r"[A-Za-z0-9_./-]+", line):
                if os.path.basename(word) in PROGRAMS:
                    named.add(os.path.basename(word))
        for number, flag in lone:
            if not named:
                continue
            self.checked["flags"] += 1
            texts = [self.help_text(p) for p in sorted(named)]
            if not any(t and self.lists(t, flag)
                       for t in texts):
                self.fail(doc, number, f"--{flag} is listed by none of the programs this "
                                       f"document runs ({', '.join(sorted(named))})")

    # ---- options
    def options(self):
        if self._options is None:
            self._options = {}
            for dirpath, _, files in [w for top in ("include/arenarpc", "tools/press")
                                      for w in os.walk(os.path.join(self.root, top))]:
                for name in files:
                    if not name.endswith(".h"):
                        continue
                    with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                        text = f.read()
                    for m in re.finditer(r"\b(?:struct|class)\s+([A-Z]\w*Options)\b[^;{]*\{", text):
                        depth, i = 1, m.end()
                        while depth and i < len(text):
                            depth += {"{": 1, "}": -1}.get(text[i], 0)
                            i += 1
                        body = re.sub(r"//[^\n]*|/\*.*?\*/", "", text[m.end():i - 1], flags=re.S)
                        members = set(re.findall(
                            r"^\s*(?:[\w:<>,\s*&]+?)\s+\**([a-z_][a-z0-9_]*)\s*(?:=[^;]*|\{[^;]*\})?;",
                            body, re.M))
                        members |= set(re.findall(r"\b([a-z_][a-z0-9_]*)\s*\(", body))  # methods
                        self._options.setdefault(m.group(1), set()).update(members)
        return self._options

    def check_options(self, doc):
        structs = self.options()
        def check(number, text):
            for m in OPTION.finditer(text):
                struct, member, loose = m.group(1), m.group(2), m.group(3)
                self.checked["options"] += 1
                if struct:
                    if struct not in structs:
                        self.fail(doc, number, f"{struct} is not a struct in include/arenarpc/ or tools/press/")
                    elif member not in structs[struct]:
                        self.fail(doc, number, f"{struct} has no member {member}")
                elif not any(loose in members for members in structs.values()):
                    self.fail(doc, number, f"options.{loose}: no *Options struct in "
                                           f"include/arenarpc/ has a member {loose}")
        for number, span in doc.spans():
            check(number, span)
        # Tables headed "| option |": the first column names members of the *Options structs.
        in_table = False
        for number, line in doc.prose:
            cells = [c.strip() for c in line.strip().strip("|").split("|")] \
                if line.lstrip().startswith("|") else None
            if cells is None:
                in_table = False
            elif cells[0].lower() == "option":
                in_table = True
            elif in_table and not set(cells[0]) <= set("-: "):
                for name in re.findall(r"`([a-z_][a-z0-9_]*)(?:[.`=\[ ])", cells[0]):
                    self.checked["options"] += 1
                    if not any(name in members for members in structs.values()):
                        self.fail(doc, number, f"option {name}: no *Options struct in "
                                               f"include/arenarpc/ has a member {name}")
        for start, info, body in doc.blocks:
            if info.split()[:1] == ["cpp"]:
                for i, line in enumerate(body):
                    check(start + i, line)

    # ---- links
    @staticmethod
    def slug(heading):
        text = re.sub(r"[`*]", "", heading.strip().lower())
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
        text = re.sub(r"[^\w\- ]", "", text)
        return text.replace(" ", "-")

    def anchors(self, doc):
        seen, out = {}, set()
        for number, line in doc.prose:
            m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if m:
                slug = self.slug(m.group(2))
                n = seen.get(slug, 0)
                out.add(slug if n == 0 else f"{slug}-{n}")
                seen[slug] = n + 1
        return out

    def check_links(self, doc, docs_by_path):
        for number, line in doc.prose:
            for m in LINK.finditer(line):
                target = m.group(1) or m.group(2)
                self.checked["links"] += 1
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    self.fail(doc, number, f"link outside the repository: {target}")
                    continue
                path, _, anchor = target.partition("#")
                full = os.path.normpath(os.path.join(os.path.dirname(doc.path), path)) \
                    if path else doc.path
                if not os.path.exists(full):
                    self.fail(doc, number, f"link to a missing file: {target}")
                    continue
                if anchor:
                    if not full.endswith(".md"):
                        self.fail(doc, number, f"anchor on a file that is not markdown: {target}")
                        continue
                    other = docs_by_path.get(full) or Doc(full, os.path.relpath(full, self.root))
                    if anchor not in self.anchors(other):
                        self.fail(doc, number, f"no heading #{anchor} in {os.path.relpath(full, self.root)}")

    # ---- shown files
    def check_shown(self, doc):
        for start, info, body in doc.blocks:
            for word in info.split()[1:]:
                if "/" not in word and "." not in word:
                    continue
                self.checked["shown files"] += 1
                path = os.path.join(self.root, word)
                if not os.path.isfile(path):
                    self.fail(doc, start, f"block names {word}, which does not exist")
                    continue
                with open(path, encoding="utf-8") as f:
                    if f.read().rstrip("\n") != "\n".join(body).rstrip("\n"):
                        self.fail(doc, start, f"block differs from {word}")

    # ---- programs
    def check_programs(self, doc):
        for start, info, body in doc.blocks:
            words = info.split()
            if not words or words[0] not in ("cpp", "c++") or "program" not in words[1:]:
                continue
            self.checked["programs"] += 1
            with tempfile.TemporaryDirectory() as tmp:
                source = os.path.join(tmp, "program.cc")
                with open(source, "w", encoding="utf-8") as f:
                    f.write("\n".join(body) + "\n")
                includes = [os.path.join(self.root, "include")]
                for dirpath, dirs, _ in os.walk(self.build):
                    if os.path.basename(dirpath) == "gen":
                        includes.append(dirpath)
                        dirs[:] = []
                command = ["c++", "-std=c++20", "-fsyntax-only", source] + \
                          [f"-I{i}" for i in includes]
                run = subprocess.run(command, capture_output=True, text=True)
                if run.returncode != 0:
                    first = next((l for l in run.stderr.splitlines() if "error" in l), run.stderr[:200])
                    self.fail(doc, start, "program block does not compile: " +
                              first.replace(source, "block"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--root", required=True)
    parser.add_argument("--build", required=True)
    parser.add_argument("--only", choices=["flags", "options", "links", "shown", "programs"])
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    files = args.files or [os.path.join(root, "README.md")] + sorted(
        os.path.join(root, "docs", f) for f in os.listdir(os.path.join(root, "docs"))
        if f.endswith(".md"))
    docs = [Doc(os.path.abspath(f), os.path.relpath(os.path.abspath(f), root)) for f in files]
    by_path = {d.path: d for d in docs}
    checker = Checker(root, os.path.abspath(args.build))
    for doc in docs:
        if args.only in (None, "flags"):
            checker.check_flags(doc)
        if args.only in (None, "options"):
            checker.check_options(doc)
        if args.only in (None, "links"):
            checker.check_links(doc, by_path)
        if args.only in (None, "shown"):
            checker.check_shown(doc)
        if args.only in (None, "programs"):
            checker.check_programs(doc)
    for failure in checker.failures:
        print(failure)
    counts = ", ".join(f"{n} {what}" for what, n in checker.checked.items())
    print(f"check_docs: {len(docs)} documents; checked {counts}; {len(checker.failures)} failures")
    return 1 if checker.failures else 0


if __name__ == "__main__":
    sys.exit(main())
