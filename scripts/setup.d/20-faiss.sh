# faiss-node: the native addon behind the replay buffer's vector search.
#
# npm does not run faiss-node's install script (root package.json `allowScripts`): it
# fetches a prebuilt from GitHub and otherwise git-clones faiss, and neither works on
# machines without GitHub access. This step does its job instead, idempotently, after
# every `npm ci`:
#   1. skip when the addon is present and loads;
#   2. try faiss-node's own prebuilt route (`prebuild-install --runtime napi`), so machines
#      that can fetch the prebuilt still use it;
#   3. otherwise compile faiss-node's own src/faiss.cc with node-gyp against Debian's
#      libfaiss-dev (faiss 1.7.3) in node_modules/.cache/dreamgym-faiss-node/, and copy the
#      addon to node_modules/faiss-node/build/Release/ where `bindings` looks for it.
# A reinstall of faiss-node removes the addon; the next run of this step rebuilds it.

DEBIAN_PACKAGES+=(libfaiss-dev libblas-dev liblapack-dev libgomp1 g++ make python3)

faiss_log() { printf '[setup] faiss-node: %s\n' "$*"; }

faiss_addon_loads() {
  node -e "const f = require('faiss-node'); const i = new f.IndexFlatIP(2); i.add([1, 0]); if (i.search([1, 0], 1).labels[0] !== 0) process.exit(1);" \
    >/dev/null 2>&1
}

faiss_try_prebuilt() {
  local prebuild_install=node_modules/.bin/prebuild-install
  [ -x "$prebuild_install" ] || return 1
  # A bounded attempt: where GitHub cannot be reached this fails (or times out) quickly.
  (cd node_modules/faiss-node && timeout 120 ../.bin/prebuild-install --runtime napi) >/dev/null 2>&1
}

faiss_build_from_source() {
  local root package_dir build_dir napi_include
  root="$(pwd)"
  package_dir="$(pwd)/node_modules/faiss-node"
  build_dir="$(pwd)/node_modules/.cache/dreamgym-faiss-node"
  napi_include="$(node -p "require('node-addon-api').include_dir" 2>/dev/null)" || return 1
  case "$napi_include" in /*) ;; *) napi_include="$(pwd)/$napi_include" ;; esac
  if [ ! -f /usr/include/faiss/Index.h ]; then
    faiss_log 'libfaiss-dev is not installed (apt-get install libfaiss-dev)'
    return 1
  fi
  rm -rf "$build_dir"
  mkdir -p "$build_dir/src"
  cp "$package_dir/src/faiss.cc" "$build_dir/src/faiss.cc"
  # faiss >= 1.7.4 declares faiss::idx_t at namespace level; Debian's 1.7.3 only has
  # faiss::Index::idx_t. The alias is force-included before faiss.cc.
  cat >"$build_dir/src/faiss-idx-compat.h" <<'EOF'
#pragma once
#include <faiss/Index.h>
namespace faiss {
using idx_t = Index::idx_t;
}
EOF
  cat >"$build_dir/binding.gyp" <<EOF
{
  "targets": [
    {
      "target_name": "faiss-node",
      "sources": ["src/faiss.cc"],
      "include_dirs": ["$napi_include"],
      "defines": ["NAPI_VERSION=6", "NAPI_CPP_EXCEPTIONS"],
      "cflags_cc!": ["-fno-exceptions", "-fno-rtti", "-std=gnu++17"],
      "cflags_cc": ["-std=c++17", "-fexceptions", "-frtti", "-fopenmp", "-O2", "-include", "$build_dir/src/faiss-idx-compat.h"],
      "ldflags": ["-fopenmp"],
      "libraries": ["-lfaiss", "-llapack", "-lblas", "-lgomp"]
    }
  ]
}
EOF
  local nodedir_flag=()
  # Node's headers ship with Debian's nodejs package; nodejs.org cannot be reached here.
  if [ -f /usr/include/node/node.h ]; then nodedir_flag=(--nodedir=/usr); fi
  (cd "$build_dir" && "$root/node_modules/.bin/node-gyp" rebuild "${nodedir_flag[@]}" --jobs=2) \
    >"$build_dir/build.log" 2>&1 || {
    faiss_log "source build failed; see $build_dir/build.log"
    tail -n 20 "$build_dir/build.log" >&2
    return 1
  }
  mkdir -p "$package_dir/build/Release"
  # Copy, then rename: a running process may have the old addon mapped.
  cp "$build_dir/build/Release/faiss-node.node" "$package_dir/build/Release/faiss-node.node.tmp"
  mv -f "$package_dir/build/Release/faiss-node.node.tmp" "$package_dir/build/Release/faiss-node.node"
}

after_npm_faiss() {
  if [ ! -d node_modules/faiss-node ]; then
    faiss_log 'not installed (npm dependencies missing?)'
    return 1
  fi
  if faiss_addon_loads; then
    faiss_log 'addon present and loads'
    return 0
  fi
  faiss_log 'trying the prebuilt addon (prebuild-install --runtime napi)'
  if faiss_try_prebuilt && faiss_addon_loads; then
    faiss_log 'using the prebuilt addon'
    return 0
  fi
  rm -f node_modules/faiss-node/build/Release/faiss-node.node
  faiss_log 'no prebuilt available; building against Debian libfaiss-dev with node-gyp'
  faiss_build_from_source || return 1
  if ! faiss_addon_loads; then
    faiss_log 'the built addon does not load:'
    node -e "require('faiss-node')" >&2 || true
    return 1
  fi
  faiss_log 'built from source and loads'
}
