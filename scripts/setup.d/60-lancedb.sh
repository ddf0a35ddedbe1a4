# LanceDB for @dreamgym/server's shared-buffer tests (`serve --shared-buffer URI`: replicas on
# several machines sharing one replay buffer's write-backs through a LanceDB table). Not in
# the root lockfile: `@lancedb/lancedb` 0.39 asks for Node >= 22 (its N-API binary loads under
# the machine's Node 20; npm only warns) and lists heavy optional embedding providers
# (`@huggingface/transformers`, `openai`) that the tests never load. Its own folder,
#   packages/server/test/lancedb/   (package.json, package-lock.json)
# replaces both providers with an empty local stand-in (npm `overrides`); the native binary, an
# optional platform package (`@lancedb/lancedb-linux-x64-gnu`), stays.
#
# `npm install` with the lockfile, not `npm ci`: the registries this machine reaches carry
# only the Linux x64 builds of the platform packages, which npm ci counts as a lockfile out of
# sync; npm install installs what the lockfile pins and leaves it unchanged.

after_npm_lancedb() {
  local folder=packages/server/test/lancedb
  [ -f "$folder/package-lock.json" ] || return 0
  if [ -f "$folder/node_modules/.package-lock.json" ] &&
    [ ! "$folder/package-lock.json" -nt "$folder/node_modules/.package-lock.json" ] &&
    [ -d "$folder/node_modules/@lancedb/lancedb" ]; then
    return 0
  fi
  log "installing $folder's dependencies (@lancedb/lancedb, for the shared-buffer tests)"
  (cd "$folder" && npm install --no-audit --no-fund --loglevel=error) || return 1
}
