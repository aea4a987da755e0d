#!/usr/bin/env python3
"""Writes attnc-fuzz-regions' seeds (FuzzRegions.cpp) into OUT-DIR: the
score_mod and mask_mod blocks of every .mlir file given (files or folders:
the examples, the lit inputs, attnc-fuzz's seeds with their generated
variants) and the region strings of Python files (`^bb0` in a triple-quoted
string), each with the memref types its block header captures. Each seed
starts with the empty line of the plain spec; one region in three gets a
second seed under a spec line of other choices, so the regions meet GQA,
ragged and paged layouts and a causal mask from the start.

    usage: make-region-seeds.py OUT-DIR FILE-OR-DIR...
"""
import hashlib
import pathlib
import re
import shutil
import sys

MEMREF = re.compile(r"memref<[^<>]*(?:<[^<>]*>[^<>]*)*>")
REGION = re.compile(r"\b(score_mod|mask_mod)\s*\{\s*$")
PY_BLOCK = re.compile(r'"""(\s*\^bb0.*?)"""', re.S)
# Choice lines (FuzzRegions.cpp reads one byte a choice, counted from '0'):
# name, heads, kv heads, head dim, dtype, query layout, queries per
# request, kv layout, page size, page order, causal.
SPEC_LINES = ["", "0120001", "0120011020001", "01310100"]


def blocks_of_mlir(text):
    """(kind, block text) of each region whose `{` ends a line."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        match = REGION.search(lines[i])
        if not match:
            i += 1
            continue
        depth, body = 1, []
        i += 1
        while i < len(lines):
            line = lines[i]
            depth += line.count("{") - line.count("}")
            if depth <= 0:
                break
            body.append(line)
            i += 1
        if body:
            yield match.group(1), "\n".join(body)


def blocks_of_python(text):
    for block in PY_BLOCK.findall(text):
        kind = "score_mod" if "%s: f32" in block or "f32," in block.split(
            ")")[0] else "mask_mod"
        yield kind, block


def captures_of(block):
    header = block.split("):", 1)[0]
    return MEMREF.findall(header)


def main():
    out = pathlib.Path(sys.argv[1])
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    seen = set()
    for arg in sys.argv[2:]:
        path = pathlib.Path(arg)
        files = sorted(path.rglob("*")) if path.is_dir() else [path]
        for f in files:
            if f.suffix not in (".mlir", ".py") or not f.is_file():
                continue
            text = f.read_text(errors="replace")
            found = (blocks_of_python(text) if f.suffix == ".py" else
                     blocks_of_mlir(text))
            for kind, block in found:
                # Full-line comments (lit's CHECK lines) waste mutations.
                block = "\n".join(line for line in block.splitlines()
                                  if not line.strip().startswith("//"))
                fields = ([block, ""] if kind == "score_mod" else
                          ["", block]) + captures_of(block)
                body = "\0".join(fields)
                digest = hashlib.sha1(body.encode()).hexdigest()[:16]
                if digest in seen:
                    continue
                seen.add(digest)
                specs = SPEC_LINES if int(digest, 16) % 3 == 0 else [""]
                for n, spec in enumerate(specs):
                    (out / f"{kind}-{digest}-{n}").write_bytes(
                        (spec + "\n" + body).encode())
    count = len(list(out.iterdir()))
    print(f"region seeds: {count} files in {out}")
    return 0 if count else 1


if __name__ == "__main__":
    sys.exit(main())
