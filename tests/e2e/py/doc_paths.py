#!/usr/bin/python3
"""Every repository path that README.md, CHANGELOG.md and docs/*.md name must exist.

A candidate is a word with a slash in it that either starts with one of the repository's top folders
(engine/, app/, ui/, cuda/, tests/, docs/, installer/, resources/, ...) or ends in a source or
documentation extension (.cpp, .hpp, .cu, .md, .sh, .py, ...), and every relative target of a Markdown
link or image. It resolves if it is, from the repository root or from the doc's own folder, an existing
file or folder; a shortened path such as `io/series.hpp` resolves if a file of the tree ends with it at a
folder boundary; `*` and `?` are globs that must match at least one file. Build outputs (build/...),
absolute paths, URLs, placeholders ($VAR, <...>, ~, an all-capitals part such as DIR/ or X.cpp) and
alternatives written `name.hpp/.cu` are not repository paths: only `name.hpp` is looked at there.

Usage: doc_paths.py [REPO_ROOT]   (default: three folders above this script)
Exit 0 when every path resolves; 1 with one line per missing path: DOC:LINE: PATH does not exist.
"""
import fnmatch
import os
import re
import sys

TOP = ("engine", "app", "ui", "cuda", "bench", "tests", "docs", "installer", "resources", "cmake")
# Data and output files (.json, .png, .cfl ...) are named in examples too: only source and documentation count.
EXTENSIONS = (".cpp", ".hpp", ".h", ".cu", ".cuh", ".c", ".md", ".sh", ".py", ".cmake", ".qrc", ".supp")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_-]*$")
# A word of path characters with at least one slash; it may not start inside another word, a URL or a variable.
CANDIDATE = re.compile(r"(?<![\w/.$~:@<>*-])((?:\.{1,2}/)?(?:[\w*?+-][\w.*?+-]*/)+[\w.*?+-]*)")
SKIPPED_DIRS = {".git", "build", "node_modules", ".gl", "shared"}


def tree_paths(root):
    """Every file and folder under root (relative, with '/'), build outputs and .git left out."""
    files, dirs = set(), set()
    for here, subdirs, names in os.walk(root):
        rel = os.path.relpath(here, root)
        subdirs[:] = [d for d in subdirs if not (rel == "." and d in SKIPPED_DIRS) and d != ".git"]
        prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        for d in subdirs:
            dirs.add(prefix + d)
        for n in names:
            files.add(prefix + n)
    return files, dirs


def is_placeholder(path):
    return any(PLACEHOLDER.match(part.split(".", 1)[0]) for part in path.split("/") if part)


def is_candidate(path):
    first = path.split("/", 1)[0]
    if first in ("build", "shared", "..") or path.startswith("../shared"):
        return False
    if first in TOP:
        return True
    return path.lower().endswith(EXTENSIONS)


def resolves(path, doc_dir, files, dirs):
    stripped = path.rstrip("/")
    bases = ["", doc_dir + "/" if doc_dir else ""]
    if any(ch in stripped for ch in "*?"):
        for base in bases:
            pattern = os.path.normpath(base + stripped).replace(os.sep, "/")
            if any(fnmatch.fnmatchcase(f, pattern) for f in files | dirs):
                return True
        return any(fnmatch.fnmatchcase(f, "*/" + stripped) for f in files | dirs)
    for base in bases:
        p = os.path.normpath(base + stripped).replace(os.sep, "/")
        if p in files or p in dirs:
            return True
    if stripped.split("/", 1)[0] in TOP:
        return False  # a path from the root must be exact
    suffix = "/" + stripped
    return any(f.endswith(suffix) for f in files) or any(d.endswith(suffix) for d in dirs)


def candidates(line):
    for m in LINK.finditer(line):
        target = m.group(1)
        if "://" not in target and not target.startswith(("mailto:", "/")):
            yield target
    if "://" in line:
        line = re.sub(r"\w+://\S+", " ", line)
    for m in CANDIDATE.finditer(line):
        path = m.group(1).rstrip(".,;:")
        if "/." in path:
            path = path[:path.index("/.")]  # name.hpp/.cu: the alternatives of one name
        if is_placeholder(path):
            continue
        if path.endswith("/") and "/" not in path[:-1] and path.rstrip("/") not in TOP:
            continue  # a lone word with a slash ("and/", "read/") is prose
        if "/" in path and is_candidate(path):
            yield path


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    files, dirs = tree_paths(root)
    docs = ["README.md", "CHANGELOG.md"] + sorted("docs/" + n for n in os.listdir(os.path.join(root, "docs"))
                                                  if n.endswith(".md"))
    missing = []
    for doc in docs:
        full = os.path.join(root, doc)
        if not os.path.exists(full):
            continue
        doc_dir = os.path.dirname(doc)
        with open(full, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                for path in dict.fromkeys(candidates(line)):  # each path once a line
                    if not resolves(path, doc_dir, files, dirs):
                        missing.append(f"{doc}:{number}: {path} does not exist")
    for m in missing:
        print(m)
    checked = len(docs)
    print(f"doc_paths: {checked} docs, {len(missing)} missing path(s)")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
