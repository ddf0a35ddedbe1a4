#!/usr/bin/env bash
# The LLM policy's behaviour cloning on every ALFWorld expert step, on an air-gapped GPU
# machine (../shared/docs/gpu-target.md: no Node, no registry, at most 64 MiB per transfer,
# 10 minutes per command). Three steps; the GGUF (98 MB) travels in two halves.
#
#   bash benchmarks/gpu/llm-bc.sh prepare   here: writes .gpu/ (the set as .xz, the GGUF's two
#                                           halves and its sha256, the gguf wheel)
#   bash benchmarks/gpu/llm-bc.sh stage     there, carrying .gpu/part-a and .gpu/whl: keeps the
#                                           first half in $STAGE and runs the CUDA smoke check
#   bash benchmarks/gpu/llm-bc.sh train     there, carrying .gpu/part-b and .gpu/data: joins and
#                                           checks the GGUF, runs a small then the full
#                                           behaviour cloning, writes $OUT/bc/
# Extra arguments of `train` go to `python -m dreamgym_trainer.behaviour_cloning`. The adapter
# comes back as $OUT/bc/adapter/ (PEFT, with adapter.gguf for llama.cpp beside it) with
# $OUT/bc/metrics.json; `alfworld-llm.ts --bc-adapter DIR` evaluates it on the real engine.
set -euo pipefail
cd "$(dirname "$0")/../.."
STAGE=${STAGE:-/root/dreamgym-stage}
MODEL=${DREAMGYM_MODEL:-$HOME/.cache/dreamgym/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf}
PYTHON=${PYTHON:-python3}

case "${1:-}" in
  prepare)
    [ -f "$MODEL" ] || { echo "no model at $MODEL: run bash scripts/setup.sh" >&2; exit 1; }
    mkdir -p .gpu/part-a .gpu/part-b .gpu/data .gpu/whl
    DREAMGYM_DATA_DIR=${DREAMGYM_DATA_DIR:-../shared/data} npx tsx benchmarks/llm-bc-set.ts --out .gpu/data/alfworld-bc.jsonl
    xz -T2 -6 -f .gpu/data/alfworld-bc.jsonl
    half=$(( ($(stat -c %s "$MODEL") + 1) / 2 ))
    head -c "$half" "$MODEL" > .gpu/part-a/model.part
    tail -c +"$((half + 1))" "$MODEL" > .gpu/part-b/model.part
    sha256sum "$MODEL" | cut -d' ' -f1 > .gpu/part-b/model.sha256
    .venv/bin/python -m pip download --no-deps -q -d .gpu/whl gguf==0.19.0
    du -sh .gpu/*
    ;;
  stage)
    mkdir -p "$STAGE"
    cp .gpu/part-a/model.part "$STAGE/model.part-a"
    cp .gpu/whl/*.whl "$STAGE/"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
    $PYTHON -m pip install -q --no-index --no-deps --no-compile --target "$STAGE/site" "$STAGE"/*.whl
    PYTHONPATH="$STAGE/site:trainers/python" $PYTHON benchmarks/gpu/cuda_smoke.py 2>&1 | grep --line-buffered -v -i warn
    ;;
  train)
    shift
    cat "$STAGE/model.part-a" .gpu/part-b/model.part > "$STAGE/model.gguf"
    echo "$(cat .gpu/part-b/model.sha256)  $STAGE/model.gguf" | sha256sum -c -
    export PYTHONPATH="$STAGE/site:trainers/python" PYTHONUNBUFFERED=1
    out=${OUT:-runs/llm-bc}
    mkdir -p "$out/bc"
    $PYTHON -m dreamgym_trainer.behaviour_cloning --data .gpu/data/alfworld-bc.jsonl.xz \
      --model "$STAGE/model.gguf" --device "${DEVICE:-cuda}" --out "$STAGE/smoke" --max-train 256 \
      --eval-decisions 16 --eval-nll 64 --evaluations 1 --batch-size 32 --max-batch-tokens 8192 2>&1 | grep --line-buffered -v -i warn
    $PYTHON -m dreamgym_trainer.behaviour_cloning --data .gpu/data/alfworld-bc.jsonl.xz \
      --model "$STAGE/model.gguf" --device "${DEVICE:-cuda}" --out "$out/bc" "$@" 2>&1 | grep --line-buffered -v -i warn | tee "$out/bc/log.txt"
    ;;
  *)
    echo "usage: bash benchmarks/gpu/llm-bc.sh prepare|stage|train [behaviour_cloning arguments]" >&2
    exit 2
    ;;
esac
