#!/usr/bin/env bash
# Writes the fuzzer's seed corpus into OUT-DIR: every example, every lit
# input with its `// -----` cases split into separate files, and the
# regression reproducers that no longer crash. Full-line comments (RUN and
# CHECK lines) go: the parser skips them and the fuzzer would waste
# mutations on them. Each example appears again with an option line so the
# planner's knobs start varied (test/fuzz/FuzzOptions.h).
#   usage: make-seeds.sh SOURCE-ROOT OUT-DIR
set -euo pipefail
root="$1" out="$2"
rm -rf "$out"
mkdir -p "$out"
split() { # split FILE PREFIX [OPTION-LINE]
  awk -v out="$out" -v prefix="$2" -v options="${3:-}" '
    function next_file() {
      file = sprintf("%s/%s-%02d.mlir", out, prefix, n++)
      if (options != "") print options > file
    }
    BEGIN { n = 0; next_file() }
    /^\/\/ -----/ { close(file); next_file(); next }
    /^[ \t]*\/\// && !/^\/\/ fuzz:/ { next }
    { print > file }
  ' "$1"
}
for f in "$root"/examples/*.mlir; do
  name="example-$(basename "$f" .mlir)"
  split "$f" "$name"
  split "$f" "$name-sm80" "// fuzz: arch=sm_80 warps=4 stages=2"
  split "$f" "$name-sm86" "// fuzz: arch=sm_86 warps=2 stages=5 sms=1"
  split "$f" "$name-sm120" "// fuzz: arch=sm_120 warps=8 stages=8 sms=188"
  split "$f" "$name-sm90a-q" "// fuzz: arch=sm_90a consumers=3 q_buffers=2"
  split "$f" "$name-sm90a-cluster" "// fuzz: arch=sm_90a cluster=2"
done
while IFS= read -r f; do
  rel="${f#"$root"/test/}"
  split "$f" "lit-$(echo "${rel%.mlir}" | tr '/' '-')"
done < <(find "$root/test" -name '*.mlir' -not -path '*/fuzz/regressions/*' | sort)
pending="$root/test/fuzz/regressions/PENDING"
for f in "$root"/test/fuzz/regressions/*.mlir; do
  [ -e "$f" ] || continue
  [ -f "$pending" ] && grep -q "^$(basename "$f")" "$pending" && continue
  cp "$f" "$out/regression-$(basename "$f")"
done
# Files that held only comments say nothing.
find "$out" -type f -empty -delete
echo "seeds: $(find "$out" -type f | wc -l) files in $out"
