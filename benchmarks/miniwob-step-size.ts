/**
 * The RL settings of the MiniWoB++ budgets experiment side by side, from DreamGym runs of
 * `miniwob-budgets.ts` (seed 1, `--conditions dreamgym`, each setting with its own `--scratch`
 * and `--out`): how many iterations updated nothing (every advantage 0: the policy's rollouts
 * of every task alike), the policy's entropy, the synthetic training success of the last 100
 * iterations, the 48 training instances greedy in both environments, and the held-out success
 * (reported, never used to choose).
 *
 * The rule, written down before any of these runs finished: the RL learning rate with the
 * highest real greedy success on the 48 training instances, a tie going to the larger rate;
 * the entropy-bonus runs (at the recorded rate 0.05) are reported beside them.
 *
 * Usage: npx tsx benchmarks/miniwob-step-size.ts --runs LABEL=SCRATCH:OUT[,...] [--out FILE]
 * (default benchmarks/results/miniwob-step-size.json). LABEL names the setting
 * (`lr0.005`, `ent0.01`); SCRATCH holds `run-dreamgym-1/metrics.jsonl`, OUT the run's
 * `miniwob-budgets.json`.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { IterationMetrics } from '@dreamgym/core';
import { type CurvePoint, greedyOn } from './budgets-report.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string' },
    out: {
      type: 'string',
      default: resolve(import.meta.dirname, 'results/miniwob-step-size.json'),
    },
  },
});
if (!values.runs) throw new Error('--runs LABEL=SCRATCH:OUT[,...] is required.');

const median = (numbers: number[]) => {
  const sorted = [...numbers].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
const mean = (numbers: number[]) => numbers.reduce((sum, value) => sum + value, 0) / numbers.length;

const runs = [];
for (const spec of values.runs.split(',')) {
  const match = /^([^=]+)=([^:]+):(.+)$/.exec(spec);
  if (!match) throw new Error(`--runs: "${spec}" is not LABEL=SCRATCH:OUT.`);
  const [, label, scratch, out] = match as unknown as [string, string, string, string];
  const metricsFile = join(scratch, 'run-dreamgym-1', 'metrics.jsonl');
  const records = (await readFile(metricsFile, 'utf8'))
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as IterationMetrics);
  const results = JSON.parse(await readFile(join(out, 'miniwob-budgets.json'), 'utf8')) as {
    protocol: {
      config: { trainer?: { learningRate?: number; loss?: { entropyCoefficient?: number } } };
    };
    curves: CurvePoint[];
  };
  const point = results.curves.find((curve) => curve.condition === 'dreamgym' && curve.seed === 1);
  if (!point?.syntheticToRealGap?.real)
    throw new Error(`${out}: DreamGym seed 1 is not measured in full.`);
  const entropies = records.map((record) => record.update.entropy ?? 0);
  const firstCollapsed = entropies.findIndex((entropy) => entropy < 0.05);
  const trainer = results.protocol.config.trainer;
  runs.push({
    label,
    learningRate: trainer?.learningRate ?? 0.05,
    entropyCoefficient: trainer?.loss?.entropyCoefficient ?? 0,
    iterations: records.length,
    stalledIterations: records.filter((record) => record.update.meanAbsAdvantage === 0).length,
    firstIterationWithEntropyBelow005: firstCollapsed < 0 ? null : firstCollapsed,
    medianEntropySecondHalf: median(entropies.slice(records.length >> 1)),
    syntheticSuccessLast100: mean(records.slice(-100).map((record) => record.successRate)),
    trainingInstances: point.syntheticToRealGap,
    heldOut: {
      greedy: greedyOn(point, 'eval'),
      sampled: point.sampled?.eval,
    },
  });
}

const rates = runs.filter((run) => run.entropyCoefficient === 0);
const chosen = rates.reduce((best, run) => {
  const [a, b] = [run.trainingInstances.real!, best.trainingInstances.real!];
  return a > b || (a === b && run.learningRate > best.learningRate) ? run : best;
});
const document = {
  benchmark: 'miniwob-step-size',
  date: new Date().toISOString(),
  what: 'DreamGym on MiniWoB++ (seed 1, 1,230 updates: as many as real-env GRPO made to 80K real transitions at learning rate 0.05) from the budgets experiment’s starting policy, at several RL settings',
  rule: 'the RL learning rate with the highest real greedy success on the 48 training instances (a tie going to the larger rate); held-out success reported, never used to choose; entropy-bonus runs reported beside',
  chosenLearningRate: chosen.learningRate,
  runs,
};
await writeFile(values.out!, `${JSON.stringify(document, null, 2)}\n`);
for (const run of runs) {
  console.log(
    `${run.label.padEnd(10)} stalled ${run.stalledIterations}/${run.iterations}, entropy < 0.05 from iteration ${run.firstIterationWithEntropyBelow005}, synthetic success (last 100) ${(100 * run.syntheticSuccessLast100).toFixed(1)}%, training instances ${(100 * run.trainingInstances.synthetic!).toFixed(1)}% synthetic vs ${(100 * run.trainingInstances.real!).toFixed(1)}% real, held-out ${(100 * run.heldOut.greedy!.successRate).toFixed(1)}% greedy`,
  );
}
console.log(`chosen learning rate: ${chosen.learningRate}; wrote ${values.out}`);
