#!/usr/bin/env bash
# Versions (changeset version) and packs every public @dreamgym/* package in a scratch copy
# of the repository. Publishes nothing and leaves this working tree untouched.
# Usage: npm run release:dry [-- OUT_DIR]   (tarballs land in OUT_DIR, default .release-dry/)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$repo/.release-dry}
scratch=$(mktemp -d -t dreamgym-release-XXXXXX)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$out"
out=$(cd "$out" && pwd)

# What a clone would hold (tracked files, and new files git does not ignore), not the local run
# folders, scratch data and builds beside them (gigabytes on a machine that runs experiments);
# a tracked file deleted in the working tree is left out.
(cd "$repo" && git ls-files --cached --others --exclude-standard -z |
  tar --null --no-recursion --ignore-failed-read -T - -cf -) | tar -xf - -C "$scratch"
ln -s "$repo/node_modules" "$scratch/node_modules"
cd "$scratch"
# Every package built from these sources, before versioning (a package's build reads no version):
# turbo restores what the repository's cache holds for the same inputs (as after `npm test`'s
# build, ~20 s instead of ~150 s of tsup) and builds the rest; it only reads that cache.
TURBO_TELEMETRY_DISABLED=1 npx turbo run build --cache-dir="$repo/.turbo/cache" --cache=local:r \
  --output-logs=errors-only >/dev/null
npx changeset version
for manifest in packages/*/package.json adapters/*/package.json; do
  [ -f "$manifest" ] || continue
  dir=$(dirname "$manifest")
  node -e 'const m=require(process.argv[1]); process.exit(m.private ? 1 : 0)' "$scratch/$manifest" || continue
  (cd "$dir" && npm pack --pack-destination "$out" >/dev/null)
  node -e 'const m=require(process.argv[1]); console.log(`packed ${m.name}@${m.version}`)' "$scratch/$manifest"
done
echo "tarballs in $out (nothing was published)"
