# The MiniWoB++ task pages for the main job (`npm run train`): the PyPI package `miniwob` (its
# html/ folder; @dreamgym/browser serves it and Chromium plays it) in the project virtualenv,
# at the version packages/browser/python/requirements.txt pins, with `--no-deps` (nothing of
# it is imported). Seconds, where 30-python.sh installs every engine and torch (minutes): the
# main job names this step, not that one. A later full set-up finds the venv without its stamp
# and completes it.
DEBIAN_PACKAGES+=(python3.11 python3.11-venv)

after_npm_miniwob() {
  local venv=.venv
  local find_pages="import importlib.util, sys; sys.exit(importlib.util.find_spec('miniwob') is None)"
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$find_pages" 2>/dev/null; then
    return 0
  fi
  local pin
  pin=$(grep -E '^miniwob==' packages/browser/python/requirements.txt)
  local python=python3.11
  command -v "$python" >/dev/null 2>&1 || python=/usr/bin/python3.11
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
  log "installing the MiniWoB++ pages ($pin) into $venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --no-input "$pin"
}
