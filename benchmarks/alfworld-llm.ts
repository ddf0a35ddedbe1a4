/**
 * ALFWorld with an LLM policy (issue 12): SmolLM2-135M-Instruct acting through llama.cpp and
 * trained by the torch worker, measured on the real engine on valid_seen and valid_unseen
 * with 95% Wilson intervals:
 *   base           the instruction-tuned model as it comes
 *   bc             behaviour cloning (SFT on the expert action given the agent prompt)
 *   dreamgym       bc, then DreamGym on synthetic experience only (0 real transitions)
 *   dreamgym-s2r   bc, then DreamGym, then sim-to-real with a budget of real transitions
 * One policy (one worker) is reused: each condition starts from the saved state it builds on.
 *
 * Usage (the defaults are the reduced CPU scale; the full scale is a GPU job):
 *   DREAMGYM_DATA_DIR=../shared/data npm run alfworld-llm -w dreamgym-benchmarks -- \
 *     [--seen 4] [--unseen 4] [--max-steps 10] [--bc-trajectories 8] [--bc-epochs 2] \
 *     [--iterations 1] [--tasks-per-iteration 2] [--rollouts 2] [--budget 20] \
 *     [--selection generate|score] [--prompt compact|full] [--top-layers 4] [--lora-rank 16] \
 *     [--learning-rate 1e-4] [--device cpu|cuda] [--threads 2] [--modes greedy] [--seed 1] \
 *     [--conditions base,bc,dreamgym,dreamgym-s2r] [--model local|PATH.gguf] \
 *     [--bc-adapter DIR] [--work-dir DIR] [--out FILE]
 * `--top-layers all` puts LoRA on every block. `--bc-adapter DIR` takes behaviour cloning from a
 * run of `python -m dreamgym_trainer.behaviour_cloning` (DIR holds its `adapter/` and
 * `metrics.json`; on a GPU: benchmarks/gpu/llm-bc.sh) instead of cloning here; its LoRA shape
 * must be the one given (`--lora-rank`, `--top-layers`).
 * Writes benchmarks/results/alfworld-llm.json (or `--out FILE`) after every condition.
 * `--work-dir DIR` keeps the run's state in DIR instead of a temporary folder, so a run that
 * stops (a crash, Ctrl-C, the end of a session) continues where it was when started again
 * with the same arguments: each DreamGym loop resumes from its last checkpoint, and each
 * evaluation from its journal of finished episodes (`DIR/evaluations/*.jsonl`). The same
 * DIR with more games (`--seen 140 --unseen 134 --out FILE`) evaluates the policies it trained
 * on the rest of the games: a journal's games are a prefix of the larger split's.
 */
import { existsSync } from 'node:fs';
import { appendFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  type DreamGymConfigInput,
  DreamGymLoop,
  evaluatePolicy,
  HashingEmbedder,
  ReplayBuffer,
  SeededRandom,
  type Task,
  trajectoryToTransitions,
  wilsonInterval95,
} from '@dreamgym/core';
import { EnvironmentPool } from '@dreamgym/core/rollout';
import { cloneBehaviour } from '@dreamgym/core/training';
import { reportEpisodes, setUpDomain } from '@dreamgym/run';
import { LlamaPolicyRuntime, LlmPolicy } from '../packages/llama/src/index.js';
import { type AlfworldLlmPromptStyle, alfworldLlmPrompt } from './alfworld-llm-prompt.js';

const { values } = parseArgs({
  options: {
    seen: { type: 'string', default: '4' },
    unseen: { type: 'string', default: '4' },
    'max-steps': { type: 'string', default: '10' },
    'bc-trajectories': { type: 'string', default: '8' },
    'bc-epochs': { type: 'string', default: '2' },
    'bc-batch': { type: 'string', default: '16' },
    iterations: { type: 'string', default: '1' },
    'tasks-per-iteration': { type: 'string', default: '2' },
    rollouts: { type: 'string', default: '2' },
    budget: { type: 'string', default: '20' },
    selection: { type: 'string', default: 'generate' },
    prompt: { type: 'string', default: 'compact' },
    'top-layers': { type: 'string', default: '4' },
    'bc-adapter': { type: 'string' },
    'lora-rank': { type: 'string', default: '16' },
    'learning-rate': { type: 'string', default: '1e-4' },
    device: { type: 'string', default: 'cpu' },
    threads: { type: 'string', default: '2' },
    modes: { type: 'string', default: 'greedy' },
    seed: { type: 'string', default: '1' },
    conditions: { type: 'string', default: 'base,bc,dreamgym,dreamgym-s2r' },
    model: { type: 'string', default: 'local' },
    'context-size': { type: 'string', default: '2048' },
    servers: { type: 'string', default: '1' },
    'work-dir': { type: 'string' },
    out: { type: 'string' },
  },
});

const dataRoot = process.env.DREAMGYM_DATA_DIR;
if (!dataRoot || !existsSync(join(dataRoot, 'alfworld'))) {
  throw new Error('Set DREAMGYM_DATA_DIR to the folder holding alfworld/ (e.g. ../shared/data).');
}
const data = resolve(dataRoot, 'alfworld');
const number = (name: string) => Number(values[name as keyof typeof values]);
const maxSteps = number('max-steps');
const seed = number('seed');
const servers = number('servers');
const modes = values.modes!.split(',') as ('greedy' | 'sampled')[];
const conditions = values.conditions!.split(',');
for (const condition of conditions) {
  if (!['base', 'bc', 'dreamgym', 'dreamgym-s2r'].includes(condition)) {
    throw new Error(`Unknown condition ${condition}: base, bc, dreamgym, dreamgym-s2r.`);
  }
}
const selection = values.selection as 'generate' | 'score';
const splits = ['valid_seen', 'valid_unseen'] as const;
type Split = (typeof splits)[number];
const resultsFile = values.out
  ? resolve(values.out)
  : resolve(import.meta.dirname, 'results', 'alfworld-llm.json');
const log = (message: string) =>
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${message}\n`);
const started = performance.now();
const loadAtStart = loadavg();

const workDirectory = values['work-dir'] ? resolve(values['work-dir']) : undefined;
const scratch = workDirectory ?? (await mkdtemp(join(tmpdir(), 'dreamgym-alfworld-llm-')));
if (workDirectory) {
  await mkdir(workDirectory, { recursive: true });
  log(`work folder ${workDirectory}: a stopped run continues from it when started again`);
}
const setup = await setUpDomain(
  { domain: 'alfworld', data, evalTasks: number('seen'), index: 'flat' },
  log,
);
const unseen: Task[] = [];
for await (const task of setup.adapter.datasets.tasks.load(data, {
  splits: ['valid_unseen'],
  limit: number('unseen'),
})) {
  unseen.push(task);
}
const evaluationSets: Record<Split, Task[]> = {
  valid_seen: setup.evaluationTasks,
  valid_unseen: unseen,
};
const realPool = new EnvironmentPool(setup.realEnvironment);

const runtime = await LlamaPolicyRuntime.load({
  model: values.model!,
  contextSize: number('context-size'),
  concurrency: Math.max(2, servers),
  threads: number('threads'),
});
const policy = await LlmPolicy.create({
  runtime,
  prompt: alfworldLlmPrompt(setup, values.prompt as AlfworldLlmPromptStyle),
  actionSelection: selection,
  parseAction: (text) => setup.adapter.parseAction(text),
  maxTokens: 32,
  invalidAnswerPenalty: -0.1,
  trainer: {
    lora: {
      rank: number('lora-rank'),
      ...(values['top-layers'] === 'all' ? {} : { topLayers: number('top-layers') }),
    },
    learningRate: number('learning-rate'),
    seed,
    backend: {
      device: values.device!,
      threads: number('threads'),
      log: (line) => {
        if (!/Warning|warn/.test(line)) log(`worker: ${line}`);
      },
    },
  },
  workDirectory: join(scratch, 'exports'),
  random: new SeededRandom(seed),
  log,
});
log(`policy: ${JSON.stringify(policy.trainer)}`);

/** The offline transitions alone, in a new buffer: each loop adds its own experience to it. */
async function freshBuffer(): Promise<ReplayBuffer> {
  const buffer = ReplayBuffer.create({
    embedder: new HashingEmbedder({ dimension: 256 }),
    index: { type: 'flat' },
  });
  await buffer.add(
    setup.offlineTrajectories.flatMap((trajectory, index) =>
      trajectoryToTransitions(trajectory, { trajectoryId: trajectory.id ?? `offline:${index}` }),
    ),
  );
  return buffer;
}

/** One finished evaluation episode, as the journal keeps it. */
interface JournalEntry {
  task: string;
  success: boolean;
  steps: number;
  /** The policy's decisions (and the unparsable and invalid among them) since the entry before. */
  decisions: number;
  unparsable: number;
  invalid: number;
}

interface SplitOutcome {
  successRate: number;
  interval: [number, number];
  episodes: number;
  meanSteps: number;
  decisions: number;
  unparsable: number;
  invalid: number;
}

/**
 * Plays the split's games, each once, skipping those the journal already holds (a run stopped
 * mid-evaluation), and reports them all: the journal's and this call's.
 */
async function evaluate(
  condition: string,
  split: Split,
  mode: 'greedy' | 'sampled',
): Promise<SplitOutcome> {
  const journal = join(scratch, 'evaluations', `${condition}-${split}-${mode}.jsonl`);
  await mkdir(join(scratch, 'evaluations'), { recursive: true });
  const entries: JournalEntry[] = existsSync(journal)
    ? (await readFile(journal, 'utf8'))
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => JSON.parse(line) as JournalEntry)
    : [];
  const finished = new Set(entries.map((entry) => entry.task));
  const remaining = evaluationSets[split].filter((task) => !finished.has(task.id));
  if (entries.length > 0) {
    log(
      `${condition} ${split}: ${entries.length} games from the journal, ${remaining.length} to play`,
    );
  }
  if (remaining.length > 0) {
    let counted = policy.stats();
    const report = reportEpisodes(`${condition} ${split} (${mode})`);
    let journalWrite = Promise.resolve();
    await evaluatePolicy({
      policy,
      environmentFactory: () => realPool.lease(),
      environment: 'real',
      tasks: remaining,
      maxSteps,
      greedy: mode === 'greedy',
      concurrency: servers,
      random: new SeededRandom(seed + 1000),
      candidateActions: (observation, history) =>
        setup.adapter.candidateActions(observation, history),
      onEpisode: (rollout, progress) => {
        const now = policy.stats();
        const entry: JournalEntry = {
          task: rollout.task.id,
          success: rollout.success,
          steps: rollout.steps.length,
          decisions: now.decisions - counted.decisions,
          unparsable: now.unparsable - counted.unparsable,
          invalid: now.invalid - counted.invalid,
        };
        counted = now;
        entries.push(entry);
        journalWrite = journalWrite.then(() => appendFile(journal, `${JSON.stringify(entry)}\n`));
        report(rollout, {
          done: progress.done + finished.size,
          total: progress.total + finished.size,
        });
      },
    });
    await journalWrite;
  }
  const successes = entries.filter((entry) => entry.success).length;
  const sum = (key: 'steps' | 'decisions' | 'unparsable' | 'invalid') =>
    entries.reduce((total, entry) => total + entry[key], 0);
  return {
    successRate: entries.length === 0 ? 0 : successes / entries.length,
    interval: wilsonInterval95(successes, entries.length),
    episodes: entries.length,
    meanSteps: entries.length === 0 ? 0 : sum('steps') / entries.length,
    decisions: sum('decisions'),
    unparsable: sum('unparsable'),
    invalid: sum('invalid'),
  };
}

interface ConditionResult {
  condition: string;
  mode: 'greedy' | 'sampled';
  valid_seen: {
    successRate: number;
    interval: [number, number];
    episodes: number;
    meanSteps: number;
  };
  valid_unseen: {
    successRate: number;
    interval: [number, number];
    episodes: number;
    meanSteps: number;
  };
  trainingSeconds: number;
  realTransitions: number;
  syntheticTransitions: number;
  /** Decisions whose answer stated no action. */
  unparsable: number;
  /** Decisions whose action was outside the grammar or the admissible list. */
  invalid: number;
  decisions: number;
}
const results: ConditionResult[] = [];
const details: Record<string, unknown> = {};
/**
 * Conditions an earlier run measured at the same scale (games, steps, selection, seed) and
 * this run does not: kept in the results file beside this run's, so conditions can be run
 * separately (`--conditions base` after `--conditions bc,dreamgym`).
 */
const earlier: ConditionResult[] = []; // and their details: this run's replace them
if (existsSync(resultsFile)) {
  const previous = JSON.parse(await readFile(resultsFile, 'utf8')) as {
    scale?: Record<string, unknown>;
    results?: ConditionResult[];
    details?: Record<string, unknown>;
  };
  const same = (key: string, value: unknown) => previous.scale?.[key] === value;
  if (
    same('validSeenTasks', evaluationSets.valid_seen.length) &&
    same('validUnseenTasks', evaluationSets.valid_unseen.length) &&
    same('maxSteps', maxSteps) &&
    same('selection', selection) &&
    same('seed', seed)
  ) {
    earlier.push(
      ...(previous.results ?? []).filter((entry) => !conditions.includes(entry.condition)),
    );
    Object.assign(details, previous.details);
  }
}

function loopConfig(budget: number): DreamGymConfigInput {
  return {
    seed,
    iterations: number('iterations'),
    tasksPerIteration: number('tasks-per-iteration'),
    rolloutsPerTask: number('rollouts'),
    maxSteps,
    concurrency: 2,
    realConcurrency: servers,
    algorithm: 'grpo',
    trainer: { epochs: 1, maxGradNorm: 1 },
    curriculum: { lambda: 0.3, tasksToExpand: 2, variantsPerTask: 1 },
    retrieval: { k: 4 },
    evaluation: { every: 0, environments: [] },
    simToReal: {
      realTransitionBudget: budget,
      tasksPerIteration: number('tasks-per-iteration'),
      rolloutsPerTask: number('rollouts'),
    },
    checkpointEvery: 1,
  };
}

async function writeResults(): Promise<void> {
  await writeFile(
    resultsFile,
    `${JSON.stringify(
      {
        benchmark: 'alfworld-llm',
        date: new Date().toISOString(),
        scale: {
          validSeenTasks: evaluationSets.valid_seen.length,
          validUnseenTasks: evaluationSets.valid_unseen.length,
          maxSteps,
          ...(values['bc-adapter']
            ? {
                bcSamples: (details.behaviourCloning as { trainDecisions?: number } | undefined)
                  ?.trainDecisions,
                bcDevice: (details.behaviourCloning as { device?: string } | undefined)?.device,
              }
            : { bcTrajectories: number('bc-trajectories'), bcEpochs: number('bc-epochs') }),
          iterations: number('iterations'),
          tasksPerIteration: number('tasks-per-iteration'),
          rolloutsPerTask: number('rollouts'),
          s2rRealTransitions: number('budget'),
          selection,
          prompt: values.prompt,
          lora: { rank: number('lora-rank'), topLayers: values['top-layers'] },
          bcFrom: values['bc-adapter'] ?? 'cloned here (cloneBehaviour)',
          learningRate: number('learning-rate'),
          device: values.device,
          modes,
          seed,
        },
        machine: { cpus: cpus().length, loadAverage: { start: loadAtStart, end: loadavg() } },
        protocol:
          'SmolLM2-135M-Instruct (Q4_1 GGUF in llama.cpp; fp32 LoRA training in the torch worker). bc: behaviour cloning on successful expert trajectories; dreamgym: bc then the DreamGym loop on the retrieval experience model with 0 real transitions; dreamgym-s2r: bc, DreamGym, then real-engine GRPO within the budget. Success on the real ALFWorld engine, 95% Wilson intervals.',
        results: [...earlier, ...results],
        // Behaviour cloning's held-out figures, per evaluation (per epoch, or per share of one).
        bc: details.behaviourCloning,
        details,
        seconds: (performance.now() - started) / 1000,
      },
      null,
      2,
    )}\n`,
  );
}

async function measure(
  condition: string,
  extra: Pick<ConditionResult, 'trainingSeconds' | 'realTransitions' | 'syntheticTransitions'>,
) {
  for (const mode of modes) {
    const entry = { condition, mode, decisions: 0, unparsable: 0, invalid: 0 } as ConditionResult;
    for (const split of splits) {
      log(
        `${condition}: evaluating on ${split} (${evaluationSets[split].length} tasks, ${mode})...`,
      );
      const { decisions, unparsable, invalid, ...outcome } = await evaluate(condition, split, mode);
      entry[split] = outcome;
      entry.decisions += decisions;
      entry.unparsable += unparsable;
      entry.invalid += invalid;
      log(
        `${condition} ${split} ${mode}: ${(100 * outcome.successRate).toFixed(1)}% [${(100 * outcome.interval[0]).toFixed(1)}, ${(100 * outcome.interval[1]).toFixed(1)}] of ${outcome.episodes}`,
      );
    }
    results.push({ ...entry, ...extra });
    await writeResults();
  }
}

const baseState = join(scratch, 'base-state');
const bcState = join(scratch, 'bc-state');
try {
  // A resumed run keeps the states it saved: they are the same model and adapter.
  if (!existsSync(baseState)) await policy.saveState(baseState);
  if (conditions.includes('base')) {
    await measure('base', { trainingSeconds: 0, realTransitions: 0, syntheticTransitions: 0 });
  }
  let bcSeconds = 0;
  if (conditions.some((condition) => condition !== 'base') && values['bc-adapter']) {
    const from = resolve(values['bc-adapter']);
    await policy.loadAdapter(join(from, 'adapter'));
    const metrics = JSON.parse(await readFile(join(from, 'metrics.json'), 'utf8')) as {
      deviceName: string;
      trainingSeconds: number;
      steps: number;
      epochsTrained: number;
      data: { train: number; heldOut: number };
      evaluations: Record<string, number>[];
    };
    bcSeconds = metrics.trainingSeconds;
    details.behaviourCloning = {
      from,
      device: metrics.deviceName,
      trainDecisions: metrics.data.train,
      heldOutDecisions: metrics.data.heldOut,
      steps: metrics.steps,
      epochsTrained: metrics.epochsTrained,
      seconds: metrics.trainingSeconds,
      epochs: metrics.evaluations,
    };
    log(`bc: loaded ${from} (${metrics.steps} steps on ${metrics.deviceName})`);
  } else if (conditions.some((condition) => condition !== 'base')) {
    const cloningStarted = performance.now();
    const cloning = await cloneBehaviour({
      policy,
      trajectories: setup.offlineTrajectories,
      candidateActions: (observation, history) =>
        setup.adapter.candidateActions(observation, history),
      config: {
        epochs: number('bc-epochs'),
        miniBatchSize: number('bc-batch'),
        heldOutShare: 0.25,
        patience: 2,
        maxTrajectories: number('bc-trajectories'),
      },
      random: new SeededRandom(seed).fork('behaviour-cloning'),
      onEpoch: (epoch) =>
        log(
          `bc epoch ${epoch.epoch}: train NLL ${epoch.trainNegativeLogLikelihood.toFixed(3)}, held-out NLL ${epoch.heldOutNegativeLogLikelihood.toFixed(3)}`,
        ),
    });
    bcSeconds = (performance.now() - cloningStarted) / 1000;
    details.behaviourCloning = { ...cloning, seconds: bcSeconds };
    log(
      `bc: best epoch ${cloning.bestEpoch}, held-out NLL ${cloning.initialHeldOutNegativeLogLikelihood.toFixed(3)} -> ${cloning.bestHeldOutNegativeLogLikelihood.toFixed(3)} (${bcSeconds.toFixed(0)} s)`,
    );
  }
  if (conditions.some((condition) => condition !== 'base') && !existsSync(bcState)) {
    await policy.saveState(bcState);
  }
  if (conditions.includes('bc')) {
    await measure('bc', {
      trainingSeconds: bcSeconds,
      realTransitions: 0,
      syntheticTransitions: 0,
    });
  }
  for (const condition of ['dreamgym', 'dreamgym-s2r'] as const) {
    if (!conditions.includes(condition)) continue;
    await policy.loadState(bcState);
    const runDirectory = join(scratch, `run-${condition}`);
    const result = await new DreamGymLoop({
      config: loopConfig(condition === 'dreamgym' ? 0 : number('budget')),
      components: {
        adapter: setup.adapter,
        policy,
        experienceModel: setup.experienceModel,
        replayBuffer: await freshBuffer(),
        seedTasks: setup.seedTasks,
        realEnvironment: () => realPool.lease(),
        log,
        onIteration: (metrics, progress) =>
          log(
            `${condition} ${progress.done}/${progress.total} ${metrics.phase}: train success ${(100 * metrics.successRate).toFixed(1)}%, mismatch ${(metrics.update.behaviourMismatch ?? 0).toFixed(4)}, real ${metrics.realTransitions}, ${metrics.seconds.toFixed(0)} s`,
          ),
      },
      runDirectory,
    }).run({ resume: workDirectory !== undefined });
    details[condition] = { iterations: result.metrics };
    await measure(condition, {
      // From the iterations' own times, which a resumed run reads back with its checkpoints
      // (this process's wall time would leave out the iterations run before a stop).
      trainingSeconds:
        bcSeconds + result.metrics.reduce((total, metrics) => total + metrics.seconds, 0),
      realTransitions: result.metrics.at(-1)?.realTransitions ?? 0,
      syntheticTransitions: result.metrics.at(-1)?.syntheticTransitions ?? 0,
    });
  }
  details.policy = policy.stats();
  await writeResults();
  console.log(JSON.stringify(results, null, 2));
  log(`wrote ${resultsFile}`);
} finally {
  await policy.close();
  await realPool.closeAll();
  if (!workDirectory) await rm(scratch, { recursive: true, force: true });
}
