/**
 * The MiniWoB++ start with another feature set of the embedded policy (issue 53): the
 * `start` condition of `miniwob-budgets.ts` (the same dataset, cloning, held-out instances and
 * evaluation), its policy built with `policy.features` = `--features`, so that a feature set
 * chosen on ALFWorld's training games is checked not to lower the MiniWoB++ start.
 *
 * Usage (after `npm run build`; Chromium and the `miniwob` package as `bash scripts/setup.sh`
 * installs them):
 *   npx tsx benchmarks/miniwob-policy-features.ts --features relational --data DIR \
 *     [--seeds 1] [--scratch DIR] [--out DIR]
 * Only the start is run: greedy on the held-out instances first (written as it finishes),
 * then sampled and the same-task synthetic-vs-real gap as the budgets experiment does.
 * `--data` is a dataset `miniwob-budgets.ts` built (built there if missing); writes
 * miniwob-policy-features-<features>.json (the budgets results format) into `--out DIR`
 * (default benchmarks/results).
 */
import { join, resolve } from 'node:path';
import type { PolicyFeatureSet } from '@dreamgym/core/policy';
import { budgetCommandLine, wholeNumbers } from './budgets-command-line.js';
import { runBudgets } from './budgets-driver.js';
import { miniwobBudgetDomain } from './miniwob-budget-domain.js';

const FEATURE_SETS: readonly PolicyFeatureSet[] = ['lexical', 'relational', 'lexical+relational'];
const { run, values } = budgetCommandLine('miniwob-policy-features', {
  features: { type: 'string', default: 'relational' },
  data: { type: 'string' },
  'train-seeds': { type: 'string', default: '30' },
  'eval-seeds': { type: 'string', default: '25' },
  'start-seeds': { type: 'string', default: '5' },
  concurrency: { type: 'string', default: '2' },
});
const features = values.features as PolicyFeatureSet;
if (!FEATURE_SETS.includes(features)) {
  throw new Error(`--features: one of ${FEATURE_SETS.join(', ')}; got ${features}.`);
}
const benchmark = `miniwob-policy-features-${features}`;
// Points are keyed by condition and seed: each feature set has its own scratch folder.
const defaultScratch = resolve(import.meta.dirname, '..', 'scratch', 'miniwob-policy-features');
const scratch =
  run.scratch === defaultScratch ? resolve(defaultScratch, '..', benchmark) : run.scratch;
const [trainSeeds, evalSeeds, startSeeds, concurrency] = (
  ['train-seeds', 'eval-seeds', 'start-seeds', 'concurrency'] as const
).map((flag) => wholeNumbers(flag, values[flag]!)[0]!) as [number, number, number, number];

const domain = miniwobBudgetDomain({
  data: resolve(values.data ?? join(scratch, 'dataset')),
  trainSeeds,
  evalSeeds,
  startSeeds,
  concurrency,
});
await runBudgets(
  {
    ...domain,
    benchmark,
    baseConfig: (seed) => {
      const config = domain.baseConfig(seed);
      return { ...config, policy: { ...config.policy, features } };
    },
    protocol: { ...domain.protocol, policyFeatures: features },
  },
  { ...run, scratch, conditions: ['start'] },
);
