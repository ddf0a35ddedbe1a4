#!/usr/bin/env bash
# faiss-node: the native addon behind the replay buffer's vector search.
#
# npm does not run faiss-node's install script (`allowScripts`): it fetches a prebuilt from
# GitHub and otherwise git-clones faiss, and neither works on machines without GitHub access.
# This script does its job instead, idempotently, in a project folder whose node_modules holds
# faiss-node (the DreamGym repository, or any project that installed @dreamgym/core):
#   bash node_modules/@dreamgym/cli/setup/faiss-node.sh [PROJECT_DIR]
# (`dreamgym doctor --fix` runs it; the repository's scripts/setup.sh sources it as its
# `faiss` step, after every `npm ci`.) As root it installs the Debian packages it compiles
# against; otherwise it says which to install. What it does:
#   1. skip when the addon is present, loads and has the DreamGym additions (below);
#   2. compile faiss-node's own src/faiss.cc, with the additions, with node-gyp against
#      Debian's libfaiss-dev (faiss 1.7.3) in node_modules/.cache/dreamgym-faiss-node/, and
#      copy the addon to node_modules/faiss-node/build/Release/ where `bindings` looks for it;
#   3. where that fails, try faiss-node's own prebuilt route (`prebuild-install --runtime
#      napi`): the replay buffer works with the stock binding too, only slower.
# Where the CPU has AVX2, FMA and F16C, step 2 also compiles faiss' vector distance kernels
# (faiss/utils/distances_simd.cpp of faiss 1.7.3, from Debian's source package, checked
# against the checksum of its .dsc) for them and links them ahead of libfaiss: Debian builds
# libfaiss for any x86-64 CPU, and HNSW inserts and searches spend their time in those loops
# (benchmarks/faiss-kernels.ts, 256 dimensions: inserts 2.9x, HNSW searches 1.8-2.8x, flat
# searches 4.8x faster).
# `dreamgymDistances` on the module says which kernels it has ("avx2" or "generic").
# The additions (methods of every index class, `dreamgymBinding` and `dreamgymDistances` on
# the module):
#   addFloat32 / trainFloat32 / searchFloat32  vectors as Float32Arrays, no per-element copies
#                                               (the stock add/search read a JS Array element
#                                               by element);
#   searchExactFloat32                          an exact scan of the vectors an HNSW index holds
#                                               (the reference its recall is measured against);
#   dispose                                     frees the index at once (a replaced index's
#                                               memory is outside V8's heap: finalization waits)
#                                               and gives free heap pages back to the system
#                                               (glibc's malloc_trim: after the first large
#                                               block is freed glibc serves blocks of its size
#                                               from the heap, and a capped buffer's index
#                                               rebuilt over and over grew RSS by ~60 MiB per
#                                               100k served steps without it);
#   setParameter / getParameter                 HNSW efSearch, efConstruction and M, IVF nlist
#                                               and nprobe, anything faiss' ParameterSpace sets;
#   Index.setThreads / Index.getThreads         the OpenMP team of later calls (omp_set_num_threads).
# A reinstall of faiss-node removes the addon; the next run of this step rebuilds it.

DEBIAN_PACKAGES+=(libfaiss-dev libblas-dev liblapack-dev libgomp1 g++ make python3)

faiss_log() { printf '[setup] faiss-node: %s\n' "$*"; }

# Version of the DreamGym additions; a built addon of an older version is rebuilt.
FAISS_DREAMGYM_BINDING=5

# Debian's source of the faiss that libfaiss-dev ships, for its distance kernels.
FAISS_SOURCE_URL=http://deb.debian.org/debian/pool/main/f/faiss/faiss_1.7.3.orig.tar.gz
FAISS_SOURCE_SHA256=3e4fac26d8c9e9008ecea4ae5fc414c658998fce4ba75835058b1a71d3516002
# Which distance kernels the addon being built has (set by faiss_build_from_source).
FAISS_DISTANCES=generic

faiss_cpu_has_avx2() {
  grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo && grep -qw f16c /proc/cpuinfo
}

# Writes faiss' distances_simd.cpp into directory $1, from Debian's source tarball (fetched
# once into directory $2 and checked); fails, saying why, where it cannot.
faiss_distance_kernels_source() {
  local tarball="$2/faiss_1.7.3.orig.tar.gz"
  mkdir -p "$2" || return 1
  if ! printf '%s  %s\n' "$FAISS_SOURCE_SHA256" "$tarball" | sha256sum -c --status 2>/dev/null; then
    node -e "fetch(process.argv[1]).then(async (response) => { if (!response.ok) throw new Error('HTTP ' + response.status); require('node:fs').writeFileSync(process.argv[2], Buffer.from(await response.arrayBuffer())); }).catch((error) => { console.error(error.message); process.exit(1); })" \
      "$FAISS_SOURCE_URL" "$tarball.tmp" || {
      faiss_log "could not fetch $FAISS_SOURCE_URL"
      return 1
    }
    if ! printf '%s  %s\n' "$FAISS_SOURCE_SHA256" "$tarball.tmp" | sha256sum -c --status; then
      faiss_log "$FAISS_SOURCE_URL does not have the expected sha256 $FAISS_SOURCE_SHA256"
      rm -f "$tarball.tmp"
      return 1
    fi
    mv -f "$tarball.tmp" "$tarball"
  fi
  tar -xzf "$tarball" -O faiss-1.7.3/faiss/utils/distances_simd.cpp >"$1/distances_simd.cpp"
}

faiss_addon_has_avx2_kernels() {
  node -e "if (require('faiss-node').dreamgymDistances !== 'avx2') process.exit(1);" >/dev/null 2>&1
}

faiss_addon_loads() {
  node -e "const f = require('faiss-node'); const i = new f.IndexFlatIP(2); i.add([1, 0]); if (i.search([1, 0], 1).labels[0] !== 0) process.exit(1);" \
    >/dev/null 2>&1
}

faiss_addon_extended() {
  node -e "const f = require('faiss-node'); if (f.dreamgymBinding !== $FAISS_DREAMGYM_BINDING) process.exit(1); const i = new f.IndexFlatIP(2); i.addFloat32(new Float32Array([1, 0, 0, 1])); const r = i.searchFloat32(new Float32Array([0, 1]), 1); if (r.labels[0] !== 1) process.exit(1);" \
    >/dev/null 2>&1
}

# Writes the sources of the DreamGym additions into $1 (see the header of this file).
faiss_write_extensions() {
  cat >"$1/dreamgym-extensions.h" <<'DREAMGYM_EOF'
#pragma once
#include <faiss/AutoTune.h>
#include <faiss/IndexFlat.h>
#include <faiss/IndexHNSW.h>
#include <faiss/IndexIVF.h>
#include <omp.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <algorithm>
#include <exception>
#include <vector>
#define DREAMGYM_INSTANCE_METHODS(Class)                        \
  InstanceMethod("addFloat32", &Class::addFloat32),             \
      InstanceMethod("trainFloat32", &Class::trainFloat32),     \
      InstanceMethod("searchFloat32", &Class::searchFloat32),   \
      InstanceMethod("searchExactFloat32", &Class::searchExactFloat32), \
      InstanceMethod("setParameter", &Class::setParameter),     \
      InstanceMethod("getParameter", &Class::getParameter),     \
      InstanceMethod("dispose", &Class::dispose),               \
      StaticMethod("setThreads", &Class::setThreads),           \
      StaticMethod("getThreads", &Class::getThreads),
DREAMGYM_EOF
  cat >"$1/dreamgym-index-methods.inc" <<'DREAMGYM_EOF'
  // DreamGym additions to faiss-node's IndexBase (compiled in by this script):
  // vectors cross as Float32Arrays without per-element copies, index parameters are read and
  // set in place, and the OpenMP team size is chosen per call site.

  static bool dreamgymFloat32(const Napi::CallbackInfo &info, size_t position, Napi::Float32Array &out)
  {
    if (info.Length() <= position || !info[position].IsTypedArray() ||
        info[position].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array)
    {
      Napi::TypeError::New(info.Env(), "Expected a Float32Array as argument " + std::to_string(position + 1) + ".")
          .ThrowAsJavaScriptException();
      return false;
    }
    out = info[position].As<Napi::Float32Array>();
    return true;
  }

  bool dreamgymRows(const Napi::Env &env, size_t length, size_t &rows)
  {
    if (index_->d <= 0 || length % static_cast<size_t>(index_->d) != 0)
    {
      Napi::Error::New(env, "The Float32Array length " + std::to_string(length) + " is not a multiple of the dimension " +
                                std::to_string(index_->d) + ".")
          .ThrowAsJavaScriptException();
      return false;
    }
    rows = length / static_cast<size_t>(index_->d);
    return true;
  }

  Napi::Value addFloat32(const Napi::CallbackInfo &info)
  {
    Napi::Env env = info.Env();
    Napi::Float32Array vectors;
    size_t rows = 0;
    if (!dreamgymFloat32(info, 0, vectors) || !dreamgymRows(env, vectors.ElementLength(), rows))
      return env.Undefined();
    if (!index_->is_trained)
    {
      // faiss asserts (aborting the process) on an add to an untrained index.
      Napi::Error::New(env, "The index must be trained before vectors are added.").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    try
    {
      index_->add(static_cast<idx_t>(rows), vectors.Data());
    }
    catch (const std::exception &ex)
    {
      Napi::Error::New(env, ex.what()).ThrowAsJavaScriptException();
    }
    return env.Undefined();
  }

  Napi::Value trainFloat32(const Napi::CallbackInfo &info)
  {
    Napi::Env env = info.Env();
    Napi::Float32Array vectors;
    size_t rows = 0;
    if (!dreamgymFloat32(info, 0, vectors) || !dreamgymRows(env, vectors.ElementLength(), rows))
      return env.Undefined();
    try
    {
      index_->train(static_cast<idx_t>(rows), vectors.Data());
    }
    catch (const std::exception &ex)
    {
      Napi::Error::New(env, ex.what()).ThrowAsJavaScriptException();
    }
    return env.Undefined();
  }

  // searchFloat32(queries, k): { distances: Float32Array(nq * k), labels: Float64Array(nq * k) },
  // padded with label -1 where fewer than k vectors exist.
  Napi::Value searchFloat32(const Napi::CallbackInfo &info)
  {
    Napi::Env env = info.Env();
    Napi::Float32Array queries;
    size_t nq = 0;
    if (!dreamgymFloat32(info, 0, queries) || !dreamgymRows(env, queries.ElementLength(), nq))
      return env.Undefined();
    if (info.Length() < 2 || !info[1].IsNumber())
    {
      Napi::TypeError::New(env, "Expected k (a Number) as argument 2.").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    const int64_t k = info[1].As<Napi::Number>().Int64Value();
    if (k <= 0 || k > 1000000)
    {
      Napi::Error::New(env, "k must be in [1, 1000000], got " + std::to_string(k) + ".").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    const size_t total = nq * static_cast<size_t>(k);
    Napi::Float32Array distances = Napi::Float32Array::New(env, total);
    Napi::Float64Array labels = Napi::Float64Array::New(env, total);
    std::vector<idx_t> found(total, -1);
    try
    {
      if (index_->ntotal > 0)
        index_->search(static_cast<idx_t>(nq), queries.Data(), static_cast<idx_t>(k), distances.Data(), found.data());
      else
        std::fill(distances.Data(), distances.Data() + total, 0.0f);
    }
    catch (const std::exception &ex)
    {
      Napi::Error::New(env, ex.what()).ThrowAsJavaScriptException();
      return env.Undefined();
    }
    double *out = labels.Data();
    for (size_t i = 0; i < total; i++)
      out[i] = static_cast<double>(found[i]);
    Napi::Object result = Napi::Object::New(env);
    result.Set("distances", distances);
    result.Set("labels", labels);
    return result;
  }

  // searchExactFloat32(queries, k): like searchFloat32, but an exact scan of the vectors an
  // HNSW index stores (or of a flat index), 16 queries per call so that faiss scans with its
  // SIMD kernels (from 20 queries up it multiplies matrices through BLAS, which Debian ships
  // unoptimised) and spreads the queries over the OpenMP team.
  Napi::Value searchExactFloat32(const Napi::CallbackInfo &info)
  {
    Napi::Env env = info.Env();
    Napi::Float32Array queries;
    size_t nq = 0;
    if (!dreamgymFloat32(info, 0, queries) || !dreamgymRows(env, queries.ElementLength(), nq))
      return env.Undefined();
    if (info.Length() < 2 || !info[1].IsNumber())
    {
      Napi::TypeError::New(env, "Expected k (a Number) as argument 2.").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    const int64_t k = info[1].As<Napi::Number>().Int64Value();
    if (k <= 0 || k > 1000000)
    {
      Napi::Error::New(env, "k must be in [1, 1000000], got " + std::to_string(k) + ".").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    faiss::Index *target = index_.get();
    if (auto *hnsw = dynamic_cast<faiss::IndexHNSW *>(target))
      target = hnsw->storage;
    if (dynamic_cast<faiss::IndexFlat *>(target) == nullptr)
    {
      Napi::Error::New(env, "searchExactFloat32 needs a flat or HNSW-over-flat index.").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    const size_t total = nq * static_cast<size_t>(k);
    Napi::Float32Array distances = Napi::Float32Array::New(env, total);
    Napi::Float64Array labels = Napi::Float64Array::New(env, total);
    std::vector<idx_t> found(total, -1);
    const size_t d = static_cast<size_t>(index_->d);
    try
    {
      for (size_t start = 0; start < nq && target->ntotal > 0; start += 16)
      {
        const size_t count = std::min<size_t>(16, nq - start);
        target->search(static_cast<idx_t>(count), queries.Data() + start * d, static_cast<idx_t>(k),
                       distances.Data() + start * k, found.data() + start * k);
      }
    }
    catch (const std::exception &ex)
    {
      Napi::Error::New(env, ex.what()).ThrowAsJavaScriptException();
      return env.Undefined();
    }
    double *out = labels.Data();
    for (size_t i = 0; i < total; i++)
      out[i] = static_cast<double>(found[i]);
    Napi::Object result = Napi::Object::New(env);
    result.Set("distances", distances);
    result.Set("labels", labels);
    return result;
  }

  // setParameter(name, value): efSearch and efConstruction of an HNSW index (also one under an
  // IVF quantizer as quantizer_efSearch), and whatever faiss' ParameterSpace sets (nprobe, ...).
  Napi::Value setParameter(const Napi::CallbackInfo &info)
  {
    Napi::Env env = info.Env();
    if (info.Length() != 2 || !info[0].IsString() || !info[1].IsNumber())
    {
      Napi::TypeError::New(env, "Expected a parameter name (String) and a value (Number).").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    const std::string name = info[0].As<Napi::String>().Utf8Value();
    const double value = info[1].As<Napi::Number>().DoubleValue();
    try
    {
      auto *hnsw = dynamic_cast<faiss::IndexHNSW *>(index_.get());
      if (hnsw && name == "efConstruction")
        hnsw->hnsw.efConstruction = static_cast<int>(value);
      else if (hnsw && name == "efSearch")
        hnsw->hnsw.efSearch = static_cast<int>(value);
      else
        faiss::ParameterSpace().set_index_parameter(index_.get(), name, value);
    }
    catch (const std::exception &ex)
    {
      Napi::Error::New(env, ex.what()).ThrowAsJavaScriptException();
    }
    return env.Undefined();
  }

  // getParameter(name): M, efSearch, efConstruction of an HNSW index; nlist and nprobe of an IVF
  // index; undefined when the index has no such parameter.
  // dispose(): frees the faiss index now instead of when V8 finalizes this object (V8 does not
  // see the index's native memory, so it is in no hurry). Nothing may use the object after.
  // The freed pages go back to the system: glibc keeps them in its heap otherwise.
  Napi::Value dispose(const Napi::CallbackInfo &info)
  {
    index_.reset();
#ifdef __GLIBC__
    malloc_trim(0);
#endif
    return info.Env().Undefined();
  }

  Napi::Value getParameter(const Napi::CallbackInfo &info)
  {
    Napi::Env env = info.Env();
    if (info.Length() != 1 || !info[0].IsString())
    {
      Napi::TypeError::New(env, "Expected a parameter name (String).").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    const std::string name = info[0].As<Napi::String>().Utf8Value();
    if (auto *hnsw = dynamic_cast<faiss::IndexHNSW *>(index_.get()))
    {
      if (name == "M")
        return Napi::Number::New(env, hnsw->hnsw.nb_neighbors(1));
      if (name == "efSearch")
        return Napi::Number::New(env, hnsw->hnsw.efSearch);
      if (name == "efConstruction")
        return Napi::Number::New(env, hnsw->hnsw.efConstruction);
    }
    if (auto *ivf = dynamic_cast<faiss::IndexIVF *>(index_.get()))
    {
      if (name == "nlist")
        return Napi::Number::New(env, static_cast<double>(ivf->nlist));
      if (name == "nprobe")
        return Napi::Number::New(env, static_cast<double>(ivf->nprobe));
    }
    return env.Undefined();
  }

  // setThreads(n): OpenMP threads for the calling (JavaScript) thread's later faiss calls.
  static Napi::Value setThreads(const Napi::CallbackInfo &info)
  {
    Napi::Env env = info.Env();
    if (info.Length() != 1 || !info[0].IsNumber() || info[0].As<Napi::Number>().Int32Value() < 1)
    {
      Napi::TypeError::New(env, "Expected a thread count (a positive Number).").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    omp_set_num_threads(info[0].As<Napi::Number>().Int32Value());
    return env.Undefined();
  }

  static Napi::Value getThreads(const Napi::CallbackInfo &info)
  {
    return Napi::Number::New(info.Env(), omp_get_max_threads());
  }

DREAMGYM_EOF
}

# Splices the additions into faiss.cc ($1): the methods into the IndexBase template, their
# registration into each class, the version marker into the module. Fails, changing nothing
# that is used, when faiss-node's source no longer has the expected shape.
faiss_patch_source() {
  local source="$1" patched="$1.patched"
  [ "$(grep -c '^protected:$' "$source")" = 1 ] || return 1
  [ "$(grep -c 'InstanceMethod("toBuffer", &[A-Za-z0-9]*::toBuffer),' "$source")" = 3 ] || return 1
  [ "$(grep -c '^  IndexFlatIP::Init(env, exports);$' "$source")" = 1 ] || return 1
  sed -e 's|^protected:$|#include "dreamgym-index-methods.inc"\nprotected:|' \
    -e 's|InstanceMethod("toBuffer", &\([A-Za-z0-9]*\)::toBuffer),|&\n      DREAMGYM_INSTANCE_METHODS(\1)|' \
    -e "s|^  IndexFlatIP::Init(env, exports);\$|&\\n  exports.Set(\"dreamgymBinding\", Napi::Number::New(env, $FAISS_DREAMGYM_BINDING));\\n  exports.Set(\"dreamgymDistances\", Napi::String::New(env, \"$FAISS_DISTANCES\"));|" \
    "$source" >"$patched" || return 1
  mv "$patched" "$source"
}

faiss_try_prebuilt() {
  local prebuild_install=node_modules/.bin/prebuild-install
  [ -x "$prebuild_install" ] || return 1
  # A bounded attempt: where GitHub cannot be reached this fails (or times out) quickly.
  (cd node_modules/faiss-node && timeout 120 ../.bin/prebuild-install --runtime napi) >/dev/null 2>&1
}

# node-gyp: the project's own (the repository's devDependency), else the one npm ships with.
faiss_node_gyp() {
  local root="$1" npm_cli
  if [ -f "$root/node_modules/node-gyp/bin/node-gyp.js" ]; then
    printf '%s\n' "$root/node_modules/node-gyp/bin/node-gyp.js"
    return
  fi
  npm_cli="$(readlink -f "$(command -v npm)")"
  printf '%s\n' "$(dirname "$(dirname "$npm_cli")")/node_modules/node-gyp/bin/node-gyp.js"
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
  local sources='"src/faiss.cc"' simd_flags=''
  FAISS_DISTANCES=generic
  if faiss_cpu_has_avx2; then
    if faiss_distance_kernels_source "$build_dir/src" "$root/node_modules/.cache/dreamgym-faiss-source"; then
      sources='"src/faiss.cc", "src/distances_simd.cpp"'
      simd_flags='"-mavx2", "-mfma", "-mf16c",'
      FAISS_DISTANCES=avx2
      faiss_log "with faiss' distance kernels compiled for this CPU's AVX2"
    else
      faiss_log "with Debian's generic distance kernels (slower)"
    fi
  fi
  cp "$package_dir/src/faiss.cc" "$build_dir/src/faiss.cc"
  faiss_write_extensions "$build_dir/src"
  if ! faiss_patch_source "$build_dir/src/faiss.cc"; then
    faiss_log "faiss-node's src/faiss.cc has an unexpected shape; the DreamGym additions cannot be spliced in"
    return 1
  fi
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
      "sources": [$sources],
      "include_dirs": ["$napi_include"],
      "defines": ["NAPI_VERSION=6", "NAPI_CPP_EXCEPTIONS"],
      "cflags_cc!": ["-fno-exceptions", "-fno-rtti", "-std=gnu++17"],
      "cflags_cc": ["-std=c++17", "-fexceptions", "-frtti", "-fopenmp", "-O3", $simd_flags "-include", "$build_dir/src/faiss-idx-compat.h", "-include", "$build_dir/src/dreamgym-extensions.h"],
      "ldflags": ["-fopenmp"],
      "libraries": ["-lfaiss", "-llapack", "-lblas", "-lgomp"]
    }
  ]
}
EOF
  local nodedir_flag=()
  # Node's headers ship with Debian's nodejs package; nodejs.org cannot be reached here.
  if [ -f /usr/include/node/node.h ]; then nodedir_flag=(--nodedir=/usr); fi
  (cd "$build_dir" && node "$(faiss_node_gyp "$root")" rebuild "${nodedir_flag[@]}" --jobs=2) \
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
  if faiss_addon_extended && { ! faiss_cpu_has_avx2 || faiss_addon_has_avx2_kernels; }; then
    faiss_log 'addon present, loads and has the DreamGym additions'
    return 0
  fi
  faiss_log 'building against Debian libfaiss-dev with node-gyp, with the DreamGym additions'
  if faiss_build_from_source && faiss_addon_extended; then
    faiss_log 'built from source and loads'
    return 0
  fi
  if faiss_addon_loads; then
    faiss_log 'keeping the addon already present (without the DreamGym additions: slower inserts and searches)'
    return 0
  fi
  faiss_log 'trying the prebuilt addon (prebuild-install --runtime napi)'
  if faiss_try_prebuilt && faiss_addon_loads; then
    faiss_log 'using the prebuilt addon (without the DreamGym additions: slower inserts and searches)'
    return 0
  fi
  faiss_log 'no faiss-node addon could be built or fetched:'
  node -e "require('faiss-node')" >&2 || true
  return 1
}

# Run as a script (not sourced by the repository's set-up): the Debian packages, then the build.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  # shellcheck source=debian-packages.sh
  source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/debian-packages.sh"
  cd "${1:-.}"
  install_debian_packages faiss_log "${DEBIAN_PACKAGES[@]}"
  after_npm_faiss
fi
