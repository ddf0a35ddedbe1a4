/**
 * Trainer throughput of the embedded policy: rollout steps per second (policy + corridor
 * environment, concurrent episodes) and policy-update time per 1,000 steps for GRPO and PPO.
 * Prints the figures and writes benchmarks/results/trainers.json.
 *
 * Run: npm run trainers -w dreamgym-benchmarks
 */
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { LinearSoftmaxPolicy, SeededRandom, type Task } from '@dreamgym/core';
import { RolloutCollector } from '@dreamgym/core/rollout';
import { CorridorEnvironment, corridorTask } from '@dreamgym/core/testing';
import { GrpoTrainer, type PolicyGradientTrainer, PpoTrainer } from '@dreamgym/core/training';

const MAX_STEPS = 40;
const environmentFactory = () => new CorridorEnvironment({ maxSteps: MAX_STEPS });

function tasks(): Task[] {
  const list: Task[] = [];
  for (let keyRoom = 1; keyRoom <= 8; keyRoom += 1) {
    for (let doorRoom = 12; doorRoom <= 19; doorRoom += 1) {
      list.push(corridorTask({ length: 20, keyRoom, doorRoom }));
    }
  }
  return list;
}

async function rolloutThroughput(): Promise<{
  steps: number;
  seconds: number;
  stepsPerSecond: number;
}> {
  const policy = new LinearSoftmaxPolicy({ random: new SeededRandom(1), initScale: 0.01 });
  const collector = new RolloutCollector({
    environmentFactory,
    maxSteps: MAX_STEPS,
    concurrency: 8,
  });
  const random = new SeededRandom(2);
  await collector.collect({ policy, tasks: tasks().slice(0, 8), rolloutsPerTask: 2, random }); // warm-up
  let steps = 0;
  const started = performance.now();
  for (let round = 0; round < 3; round += 1) {
    const rollouts = await collector.collect({
      policy,
      tasks: tasks(),
      rolloutsPerTask: 4,
      random,
    });
    steps += rollouts.reduce((total, rollout) => total + rollout.steps.length, 0);
  }
  const seconds = (performance.now() - started) / 1000;
  await collector.close();
  return { steps, seconds, stepsPerSecond: steps / seconds };
}

async function updateCost(kind: 'grpo' | 'ppo') {
  const policy = new LinearSoftmaxPolicy({ random: new SeededRandom(1), initScale: 0.01 });
  const common = {
    policy,
    tasks: tasks(),
    environmentFactory,
    maxSteps: MAX_STEPS,
    random: new SeededRandom(3),
    concurrency: 8,
    tasksPerIteration: 16,
    epochs: 2,
    miniBatchSize: 256,
    loss: { klCoefficient: 0.01, entropyCoefficient: 0.001 },
  };
  const trainer: PolicyGradientTrainer =
    kind === 'grpo'
      ? new GrpoTrainer({ ...common, rolloutsPerTask: 8 })
      : new PpoTrainer({ ...common, rolloutsPerTask: 8 });
  await trainer.step(); // warm-up
  let steps = 0;
  let updateSeconds = 0;
  let rolloutSeconds = 0;
  let gradientSteps = 0;
  for (let iteration = 0; iteration < 4; iteration += 1) {
    const { metrics } = await trainer.step();
    steps += metrics.steps;
    updateSeconds += metrics.updateSeconds;
    rolloutSeconds += metrics.rolloutSeconds;
    gradientSteps += Math.ceil(metrics.steps / 256) * 2;
  }
  await trainer.close();
  return {
    steps,
    epochs: 2,
    miniBatchSize: 256,
    gradientSteps,
    updateSecondsPer1000Steps: (updateSeconds / steps) * 1000,
    rolloutStepsPerSecond: steps / rolloutSeconds,
  };
}

const rollout = await rolloutThroughput();
const grpo = await updateCost('grpo');
const ppo = await updateCost('ppo');
const result = {
  benchmark: 'trainers',
  date: new Date().toISOString(),
  node: process.version,
  cpu: cpus()[0]?.model ?? 'unknown',
  environment:
    'corridor (length 20, key in rooms 1-8, door in rooms 12-19, 40 steps max), 8 concurrent episodes',
  policy: 'LinearSoftmaxPolicy, 2^18 weights, history window 2',
  rollout: {
    steps: rollout.steps,
    seconds: Number(rollout.seconds.toFixed(3)),
    stepsPerSecond: Math.round(rollout.stepsPerSecond),
  },
  grpo: {
    ...grpo,
    updateSecondsPer1000Steps: Number(grpo.updateSecondsPer1000Steps.toFixed(4)),
    rolloutStepsPerSecond: Math.round(grpo.rolloutStepsPerSecond),
  },
  ppo: {
    ...ppo,
    updateSecondsPer1000Steps: Number(ppo.updateSecondsPer1000Steps.toFixed(4)),
    rolloutStepsPerSecond: Math.round(ppo.rolloutStepsPerSecond),
  },
};
console.log(`rollout: ${result.rollout.stepsPerSecond} steps/s (${rollout.steps} steps)`);
console.log(
  `GRPO update: ${result.grpo.updateSecondsPer1000Steps} s per 1,000 steps (2 epochs, mini-batches of 256)`,
);
console.log(
  `PPO update (incl. value fit): ${result.ppo.updateSecondsPer1000Steps} s per 1,000 steps`,
);
writeFileSync(
  // The script runs bundled from benchmarks/dist/ (see package.json), next to results/.
  join(import.meta.dirname, 'results', 'trainers.json'),
  `${JSON.stringify(result, null, 2)}\n`,
);
