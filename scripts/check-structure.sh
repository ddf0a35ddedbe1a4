#!/usr/bin/env bash
# The structure CI checks beside lint: the import rules of .dependency-cruiser.cjs (no import
# circles, no import from a lower layer to a higher one, packages depending downwards only),
# and no source file over 600 lines unless its header says why ("longer than 600 lines
# because ..." in its first 20 lines).
set -uo pipefail
cd "$(dirname "$0")/.."
status=0

npx depcruise packages/*/src adapters/*/src --config .dependency-cruiser.cjs --output-type err \
  || status=1

limit=600
while IFS= read -r file; do
  [ -f "$file" ] || continue
  lines=$(wc -l <"$file")
  if [ "$lines" -gt "$limit" ] && ! head -n 20 "$file" | grep -qi "longer than $limit lines because"; then
    echo "$file: $lines lines (over $limit, and its header gives no reason: split it along its seams, or say \"longer than $limit lines because ...\" in its first 20 lines)"
    status=1
  fi
done < <(git ls-files --cached --others --exclude-standard \
  'packages/*/src/*.ts' 'packages/*/src/**/*.ts' 'adapters/*/src/*.ts' 'adapters/*/src/**/*.ts' \
  'adapters/*/python/*.py' 'adapters/*/python/**/*.py' 'trainers/python/*.py' 'trainers/python/**/*.py' \
  'benchmarks/*.ts' 'scripts/*.ts' 'scripts/*.mjs' \
  | grep -v -E '\.test\.ts$|\.test-support\.ts$|/test_[^/]*\.py$' | sort -u)

[ "$status" -eq 0 ] && echo "structure: import rules and file lengths hold"
exit $status
