#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian machine (root, registries only): Debian packages,
# npm dependencies, and every step in scripts/setup.d/ (native builds, the Python
# virtualenv). Each step skips what is already present. Safe to run again at any time.
#
#   bash scripts/setup.sh                every step
#   bash scripts/setup.sh faiss python   only the named steps (20-faiss.sh, 30-python.sh):
#                                        their Debian packages and hooks, npm dependencies
#                                        when stale; `dreamgym doctor --fix` runs this
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[setup] %s\n' "$*"; }

# The name of a step file: scripts/setup.d/20-faiss.sh is "faiss".
step_name() {
  local name
  name=$(basename "$1" .sh)
  printf '%s\n' "${name#*-}"
}

known=()
for step in scripts/setup.d/*.sh; do
  [ -f "$step" ] && known+=("$(step_name "$step")")
done
for wanted in "$@"; do
  if ! printf '%s\n' "${known[@]}" | grep -qx -- "$wanted"; then
    log "unknown step \"$wanted\"; the steps are: ${known[*]}"
    exit 2
  fi
done

# Debian packages: each step in setup.d may append to DEBIAN_PACKAGES before it runs.
DEBIAN_PACKAGES=()
for step in scripts/setup.d/*.sh; do
  [ -f "$step" ] || continue
  if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx -- "$(step_name "$step")"; then
    continue
  fi
  # shellcheck disable=SC1090
  source "$step"
done

# shellcheck source=../packages/cli/setup/debian-packages.sh
source packages/cli/setup/debian-packages.sh
install_debian_packages log "${DEBIAN_PACKAGES[@]}" || exit 1

# npm dependencies: install when node_modules is missing or older than the lockfile.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log 'installing npm dependencies (npm ci)'
  npm ci --no-audit --no-fund
fi

# Steps that need node_modules (native addons, virtualenv): functions named after_npm_*.
for hook in $(declare -F | awk '{print $3}' | grep '^after_npm_' | sort); do
  "$hook"
done
log 'ready'
