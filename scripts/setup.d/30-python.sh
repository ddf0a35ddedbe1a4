# The project virtualenv (.venv at the repository root) with the ALFWorld engine
# (alfworld + textworld) and pytest, from adapters/alfworld/python/requirements.txt.
# jericho and fast-downward-textworld compile at install time: C/C++ compilers and make.
DEBIAN_PACKAGES+=(python3.11 python3.11-venv build-essential)

after_npm_python() {
  local venv=.venv
  local requirements=adapters/alfworld/python/requirements.txt
  local stamp="$venv/.dreamgym-requirements.sha256"
  local want
  want=$(sha256sum "$requirements" | cut -d' ' -f1)
  if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return 0
  fi
  local python=python3.11
  command -v "$python" >/dev/null 2>&1 || python=/usr/bin/python3.11
  if [ ! -x "$venv/bin/python" ]; then
    log "creating the Python virtualenv $venv ($("$python" --version 2>&1))"
    "$python" -m venv "$venv"
  fi
  log "installing Python packages from $requirements (compiles jericho and fast-downward: a few minutes)"
  # --no-deps: the requirements file is the whole pinned closure (see its header). The
  # venv's bin comes first on PATH because fast-downward's build calls a bare `python`.
  PATH="$PWD/$venv/bin:$PATH" "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    --no-deps --no-input --use-pep517 -r "$requirements"
  # The engine must import and load before the stamp says the venv is ready.
  "$venv/bin/python" -c 'import textworld, fast_downward, alfworld.agents.environment.alfred_tw_env, pytest'
  printf '%s\n' "$want" >"$stamp"
  log "Python virtualenv ready"
}
