#!/usr/bin/env bash
# The whole test suite: set-up (idempotent), build, typecheck, lint, every test runner,
# then one summary line `N passed, N failed` totalled over all runners.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1

# The shared benchmark data beside the checkout, unless the caller points elsewhere.
DREAMGYM_DATA_DIR=$(realpath -m "${DREAMGYM_DATA_DIR:-../shared/data}")
export DREAMGYM_DATA_DIR
export TURBO_TELEMETRY_DISABLED=1 DO_NOT_TRACK=1

reports=.test-reports
rm -rf "$reports" && mkdir -p "$reports"
status=0
failed_steps=()

npx turbo run build --output-logs=errors-only || exit 1

# Python-side tests (environment servers, interop, the torch trainer) run in the project
# virtualenv as soon as the build is there (they run the built CLI), beside the type checks and
# lint, then beside vitest; their output follows vitest's. The type checks keep about one core
# busy for two minutes (one package's tsc at a time, mostly): pytest takes the other.
pytest_pid=
if [ -x .venv/bin/python ] && [ -n "$(find . -path ./node_modules -prune -o -path ./.venv -prune -o -name 'test_*.py' -print -quit)" ]; then
  .venv/bin/python -m pytest -q --junitxml="$reports/pytest.xml" >"$reports/pytest.log" 2>&1 &
  pytest_pid=$!
fi

stop_pytest() {
  [ -n "$pytest_pid" ] && kill "$pytest_pid" 2>/dev/null && wait "$pytest_pid" 2>/dev/null
  exit 1
}
npx turbo run typecheck --output-logs=errors-only || stop_pytest
npx tsc -p tsconfig.json || stop_pytest
npx biome ci . || { status=1; failed_steps+=("lint and format (biome ci)"); }
bash scripts/check-structure.sh || { status=1; failed_steps+=("structure (import rules, file lengths)"); }

npx vitest run --reporter=default --reporter=json --outputFile.json="$reports/vitest.json" \
  || { status=1; failed_steps+=("vitest"); }

if [ -n "$pytest_pid" ]; then
  pytest_status=0
  wait "$pytest_pid" || pytest_status=$?
  echo "--- pytest ---"
  cat "$reports/pytest.log"
  [ "$pytest_status" -eq 0 ] || { status=1; failed_steps+=("pytest"); }
fi

# Name failing steps just above the summary line so a red run says why even when every test passed.
for step in "${failed_steps[@]}"; do echo "FAILED: $step"; done
node scripts/summarize-test-reports.mjs "$reports" || status=1
exit $status
