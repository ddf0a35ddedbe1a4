#!/usr/bin/env bash
# The ALFWorld job (`npm run train:alfworld`), the second command beside the main job
# (scripts/train.sh, MiniWoB++): DreamGym training on ALFWorld with the embedded defaults
# (hashing embedder, retrieval experience model over a faiss replay buffer of the expert
# trajectories, with its world memory and learned outcome judge; linear softmax policy cloned
# from 500 expert demonstrations; mutation task generator); no LLM server, no API key. Greedy
# success on the real ALFWorld engine (all 140 valid_seen games) is printed before and after
# training. It is not the main job while no RL moves the embedded policy on ALFWorld (10.0% ->
# 10.0% greedy, benchmarks/results/main-job-alfworld.json).
#
# Set-up is idempotent (Debian packages, npm, faiss, the Python virtualenv with the engine).
# Flags are passed on to `dreamgym train`, e.g.
# `npm run train:alfworld -- --offline exploration.jsonl` to add episodes recorded with
# `dreamgym data explore`.
set -euo pipefail
cd "$(dirname "$0")/.."
export DREAMGYM_DATA_DIR="${DREAMGYM_DATA_DIR:-../shared/data}"
if [ ! -f "$DREAMGYM_DATA_DIR/alfworld/expert_trajectories.jsonl" ]; then
  echo "ALFWorld data not found in $DREAMGYM_DATA_DIR/alfworld: set DREAMGYM_DATA_DIR to the folder holding alfworld/." >&2
  exit 1
fi
bash scripts/setup.sh
npx turbo run build --output-logs=errors-only
node packages/cli/dist/bin.js train --domain alfworld --config configs/alfworld-main.json \
  --run-dir "runs/alfworld-$(date +%Y%m%d-%H%M%S)" "$@"
