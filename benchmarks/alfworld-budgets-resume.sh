#!/usr/bin/env bash
# Starts or resumes the premise of issue 53 on ALFWorld: the start and real-env GRPO at the
# paper's budgets (3K, 10K, 30K, 80K real transitions), both seeds, with the embedded policy's
# relational features (benchmarks/alfworld-budgets.ts --policy-features relational), committing
# its results and kept policies (benchmarks/results/alfworld-budgets-relational/) every 30
# minutes; started again five minutes after a crash (another engineer's rebuild under it), at
# most 30 times. Run it in the background, from anywhere:
#   setsid nohup bash benchmarks/alfworld-budgets-resume.sh </dev/null >>scratch/alfworld-budgets-relational.log 2>&1 &
# Stop it (the experiment and its engine servers with it):
#   kill -TERM "$(cat scratch/alfworld-budgets-relational/loop.pid)"
# Mid-run state (the loop's checkpoints) is in scratch/alfworld-budgets-relational: on this
# machine a resumed run continues where it stopped; on a fresh clone the measured points stay
# in the results file and a condition not measured in full trains again from the committed start.
# Extra arguments go to alfworld-budgets.ts (e.g. --seeds 1).
set -u
cd "$(dirname "$0")/.."
export DREAMGYM_DATA_DIR="${DREAMGYM_DATA_DIR:-../shared/data}"
mkdir -p scratch/alfworld-budgets-relational
echo $$ >scratch/alfworld-budgets-relational/loop.pid
child=
trap 'if [ -n "$child" ]; then kill -TERM "$child" 2>/dev/null; wait "$child"; fi; exit 143' TERM INT
for attempt in $(seq 1 30); do
  node_modules/.bin/tsx benchmarks/alfworld-budgets.ts --seeds 1,2 --conditions start,real-grpo \
    --policy-features relational --scratch scratch/alfworld-budgets-relational \
    --out benchmarks/results/alfworld-budgets-relational --commit 30 "$@" &
  child=$!
  status=0
  wait "$child" || status=$?
  [ "$status" -eq 0 ] && exit 0
  echo "$(date -u +%T) alfworld-budgets.ts exited with $status: attempt $attempt of 30, again in 5 minutes"
  child=
  sleep 300 &
  wait $!
done
exit 1
