# The project virtualenv (.venv at the repository root): every pinned requirements file of
# the workspace, installed together with `pip install --no-deps`, so each file is the whole
# closure of what its component imports and nothing unpinned slips in:
#   adapters/*/python/requirements.txt   environment engines and servers (ALFWorld ...)
#   packages/*/python/requirements.txt   interop clients and page sources (OpenEnv, MiniWoB++ ...)
#   trainers/python/requirements.txt     the torch trainer backend
# Two files that pin the same package must pin the same version (a repository test checks).
# jericho and fast-downward-textworld compile at install time: C/C++ compilers and make.
DEBIAN_PACKAGES+=(python3.11 python3.11-venv build-essential)

python_requirement_files() {
  local file
  for file in adapters/*/python/requirements.txt packages/*/python/requirements.txt trainers/python/requirements.txt; do
    [ -f "$file" ] && printf '%s\n' "$file"
  done
}

after_npm_python() {
  local venv=.venv
  local stamp="$venv/.dreamgym-requirements.sha256"
  local files want
  mapfile -t files < <(python_requirement_files)
  [ ${#files[@]} -gt 0 ] || return 0
  want=$(cat "${files[@]}" | sha256sum | cut -d' ' -f1)
  if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return 0
  fi
  local python=python3.11
  command -v "$python" >/dev/null 2>&1 || python=/usr/bin/python3.11
  if [ ! -x "$venv/bin/python" ]; then
    log "creating the Python virtualenv $venv ($("$python" --version 2>&1))"
    "$python" -m venv "$venv"
  fi
  local requirement_flags=()
  for file in "${files[@]}"; do requirement_flags+=(-r "$file"); done
  log "installing Python packages from ${files[*]} (compiles jericho and fast-downward; torch is a large download: minutes)"
  # The venv's bin comes first on PATH because fast-downward's build calls a bare `python`.
  PATH="$PWD/$venv/bin:$PATH" "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    --no-deps --no-input --use-pep517 "${requirement_flags[@]}"
  # The engine must import and load before the stamp says the venv is ready.
  "$venv/bin/python" -c 'import textworld, fast_downward, alfworld.agents.environment.alfred_tw_env, pytest'
  printf '%s\n' "$want" >"$stamp"
  log "Python virtualenv ready"
}

# llama.cpp's Hugging Face -> GGUF converter, which the experience-model SFT script
# (trainers/python/experience_sft.py) runs to write its model: copied once from the
# llama-cpp-python sdist into the tools cache (trainers/python/gguf_converter.py; minutes, as pip
# prepares the sdist's metadata), so neither the first SFT run nor the suite's SFT test fetches it.
after_npm_python_converter() {
  [ -x .venv/bin/python ] || return 0
  .venv/bin/python - <<'PYTHON'
import sys
sys.path.insert(0, 'trainers/python')
from gguf_converter import converter_script, ensure_converter
if not converter_script().is_file():
    ensure_converter(log=lambda line: print(f'[setup] {line}', flush=True))
PYTHON
}
