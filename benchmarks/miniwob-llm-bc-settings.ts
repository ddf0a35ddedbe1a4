/**
 * Behaviour-cloning settings of the MiniWoB++ LLM experiment's start (issue 52), chosen on
 * training instances only, before any held-out result: the LLM policy of
 * `miniwob-llm-policy.ts` cloned on the start's demonstrations (the exploration successes of
 * the first 5 training seeds of every task, what the linear start clones) at several learning
 * rates, each epoch followed by the negative log-likelihood of the demonstrated actions on the
 * exploration successes of the other training seeds (5..29: training instances the start never
 * sees). The measure is the policy's own: a softmax over the scored candidate actions.
 * The CLI's LLM default, 1e-4, moved held-out NLL only 1.218 -> 1.145 in six epochs (issue
 * 52), so far larger rates are tried; minutes per epoch and per validation pass are recorded.
 *
 * Usage (after `npm run build`; Chromium and the `miniwob` package as set-up installs them):
 *   OMP_NUM_THREADS=1 npx tsx benchmarks/miniwob-llm-bc-settings.ts [--rates 3e-3,1e-2,1e-3] \
 *     [--epochs 8] [--patience 3] [--batch 8] [--validation 120] [--scratch DIR]
 * Resumable: every finished rate is in the results file and is not run again. Writes
 * benchmarks/results/miniwob-llm/bc-settings.json; `miniwob-llm.ts` reads its choice.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { SeededRandom } from '@dreamgym/core';
import { demonstrationSamples } from '@dreamgym/core/training';
import { setUpDomain } from '@dreamgym/run';
import { log } from './alfworld-protocol.js';
import { ensureMiniwobExperimentDataset } from './miniwob-dataset.js';
import {
  createMiniwobLlmPolicy,
  MINIWOB_LLM_POLICY,
  startModelServer,
} from './miniwob-llm-policy.js';

const { values } = parseArgs({
  options: {
    rates: { type: 'string', default: '3e-3,1e-2,1e-3' },
    epochs: { type: 'string', default: '8' },
    patience: { type: 'string', default: '3' },
    batch: { type: 'string', default: '8' },
    validation: { type: 'string', default: '120' },
    scratch: { type: 'string' },
  },
});
const root = resolve(import.meta.dirname, '..');
const scratch = resolve(values.scratch ?? join(root, 'scratch', 'miniwob-llm'));
const data = join(scratch, 'dataset');
const resultsFile = join(root, 'benchmarks', 'results', 'miniwob-llm', 'bc-settings.json');
const rates = values.rates!.split(',').map(Number);
const maxEpochs = Number(values.epochs);
const patience = Number(values.patience);
const miniBatchSize = Number(values.batch);
const validationSize = Number(values.validation);
/** The start's demonstrations: training seeds below this (as `miniwob-budgets.ts`). */
const START_SEEDS = 5;
const SEED = 1;

interface EpochRecord {
  epoch: number;
  trainNegativeLogLikelihood: number;
  validationNegativeLogLikelihood: number;
  epochSeconds: number;
  validationSeconds: number;
}
interface RateRecord {
  learningRate: number;
  initialValidationNegativeLogLikelihood: number;
  epochs: EpochRecord[];
  bestEpoch: number;
  bestValidationNegativeLogLikelihood: number;
}

const previous = existsSync(resultsFile)
  ? (JSON.parse(await readFile(resultsFile, 'utf8')) as { rates?: RateRecord[] })
  : {};
const done: RateRecord[] = previous.rates ?? [];

await ensureMiniwobExperimentDataset({
  dir: data,
  trainSeeds: 30,
  evalSeeds: 25,
  maxSteps: 5,
  concurrency: 2,
  log,
});
const setup = await setUpDomain(
  { domain: 'miniwob', data, evalSplit: 'eval', outcomeJudge: false, worldMemory: false },
  log,
);
const seedOf = (trajectory: { task: { meta: Record<string, unknown> } }) =>
  Number(trajectory.task.meta.seed);
const candidates = (...args: Parameters<typeof setup.adapter.candidateActions>) =>
  setup.adapter.candidateActions(...args);
const train = demonstrationSamples(
  setup.offlineTrajectories.filter((trajectory) => seedOf(trajectory) < START_SEEDS),
  candidates,
);
const validation = new SeededRandom(SEED)
  .fork('bc-settings-validation')
  .shuffle(
    demonstrationSamples(
      setup.offlineTrajectories.filter((trajectory) => seedOf(trajectory) >= START_SEEDS),
      candidates,
    ),
  )
  .slice(0, validationSize);
log(
  `behaviour cloning on ${train.length} demonstrated steps (training seeds 0..${START_SEEDS - 1}); validation ${validation.length} steps of training seeds ${START_SEEDS}..29`,
);

async function write(extra: Record<string, unknown>): Promise<void> {
  const ranked = [...done].sort(
    (a, b) => a.bestValidationNegativeLogLikelihood - b.bestValidationNegativeLogLikelihood,
  );
  const best = ranked[0];
  const epochSeconds = done.flatMap((rate) => rate.epochs.map((epoch) => epoch.epochSeconds));
  const document = {
    benchmark: 'miniwob-llm-bc-settings',
    date: new Date().toISOString(),
    what: 'Behaviour-cloning learning rate and epochs of the MiniWoB++ LLM start, chosen on training instances only: cloned on the exploration successes of training seeds 0..4 of every task, validated on those of seeds 5..29 (never the held-out eval seeds)',
    policy: MINIWOB_LLM_POLICY,
    data: {
      trainSteps: train.length,
      validationSteps: validation.length,
      miniBatchSize,
      maxEpochs,
      patience,
    },
    machine: { cpus: cpus().length, loadAverage: loadavg(), threads: 1 },
    rates: done,
    minutesPerEpoch:
      epochSeconds.length === 0
        ? null
        : epochSeconds.reduce((a, b) => a + b, 0) / epochSeconds.length / 60,
    chosen: best
      ? {
          learningRate: best.learningRate,
          epochs: best.bestEpoch,
          validationNegativeLogLikelihood: best.bestValidationNegativeLogLikelihood,
          from: best.initialValidationNegativeLogLikelihood,
        }
      : null,
    ...extra,
  };
  await mkdir(join(resultsFile, '..'), { recursive: true });
  const temporary = `${resultsFile}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(document, null, 2)}\n`);
  await rename(temporary, resultsFile);
}

const server = await startModelServer({ log });
const policy = await createMiniwobLlmPolicy({
  server,
  adapter: setup.adapter,
  workDirectory: join(scratch, 'bc-settings', 'exports'),
  seed: SEED,
  learningRate: rates[0]!,
  log,
});
// Stopped from outside (the end of a session): the model server and the worker go too.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void Promise.allSettled([policy.close(), server.stop()]).then(() => process.exit(130));
  });
}
const base = join(scratch, 'bc-settings', 'base-state');
try {
  await policy.saveState(base);
  const validationNll = async () => {
    const started = performance.now();
    const logprobs = await policy.logprobs(validation);
    return {
      nll: -logprobs.reduce((a, b) => a + b, 0) / logprobs.length,
      seconds: (performance.now() - started) / 1000,
    };
  };
  for (const learningRate of rates) {
    if (done.some((record) => record.learningRate === learningRate)) {
      log(`rate ${learningRate}: measured earlier`);
      continue;
    }
    await policy.loadState(base);
    const initial = await validationNll();
    log(
      `rate ${learningRate}: validation NLL ${initial.nll.toFixed(3)} before (${initial.seconds.toFixed(0)} s a pass)`,
    );
    const record: RateRecord = {
      learningRate,
      initialValidationNegativeLogLikelihood: initial.nll,
      epochs: [],
      bestEpoch: 0,
      bestValidationNegativeLogLikelihood: initial.nll,
    };
    const random = new SeededRandom(SEED).fork('behaviour-cloning');
    for (let epoch = 1; epoch <= maxEpochs; epoch += 1) {
      const started = performance.now();
      const pass = await policy.imitate(train, { miniBatchSize, learningRate, random });
      const epochSeconds = (performance.now() - started) / 1000;
      const after = await validationNll();
      record.epochs.push({
        epoch,
        trainNegativeLogLikelihood: pass.negativeLogLikelihood,
        validationNegativeLogLikelihood: after.nll,
        epochSeconds,
        validationSeconds: after.seconds,
      });
      log(
        `rate ${learningRate} epoch ${epoch}: train NLL ${pass.negativeLogLikelihood.toFixed(3)}, validation NLL ${after.nll.toFixed(3)} (${epochSeconds.toFixed(0)} s epoch, ${after.seconds.toFixed(0)} s validation)`,
      );
      if (after.nll < record.bestValidationNegativeLogLikelihood) {
        record.bestValidationNegativeLogLikelihood = after.nll;
        record.bestEpoch = epoch;
      } else if (epoch - record.bestEpoch >= patience) {
        break;
      }
    }
    done.push(record);
    await write({});
  }
  await write({});
  log(`wrote ${resultsFile}`);
} finally {
  await policy.close();
  await server.stop();
}
