#!/usr/bin/env bash
# Starts or resumes the MiniWoB++ LLM experiment (benchmarks/miniwob-llm.ts: both seeds, every
# condition, committing its kept state every 30 minutes) and starts it again five minutes after
# a crash (another engineer's npm ci or rebuild under it), at most 30 times. Run it in the
# background, from anywhere:
#   setsid nohup bash benchmarks/miniwob-llm-resume.sh </dev/null >>scratch/miniwob-llm/run.log 2>&1 &
# Stop it (the experiment, its model server, worker and browser with it):
#   kill -TERM "$(cat scratch/miniwob-llm/loop.pid)"
# Extra arguments go to miniwob-llm.ts.
set -u
cd "$(dirname "$0")/.."
mkdir -p scratch/miniwob-llm
echo $$ >scratch/miniwob-llm/loop.pid
child=
trap 'if [ -n "$child" ]; then kill -TERM "$child" 2>/dev/null; wait "$child"; fi; exit 143' TERM INT
for attempt in $(seq 1 30); do
  OMP_NUM_THREADS=1 node_modules/.bin/tsx benchmarks/miniwob-llm.ts --seeds 1,2 --commit 30 "$@" &
  child=$!
  status=0
  wait "$child" || status=$?
  [ "$status" -eq 0 ] && exit 0
  echo "$(date -u +%T) miniwob-llm.ts exited with $status: attempt $attempt of 30, again in 5 minutes"
  child=
  sleep 300 &
  wait $!
done
exit 1
