/**
 * The AI SDK example agent (`examples/ai-sdk-agent/agent.ts`, played by its `train.ts`'s
 * `playEpisode`), unchanged, on MiniWoB++'s real pages (issue 52): its held-out real success
 * before and after DreamGym training in the synthetic MiniWoB++ through `@dreamgym/agents`
 * (`AgentTrainer`: GRPO groups per task, the embedded experience model grounded on the
 * exploration episodes, LoRA rank 8 on the top 4 blocks trained by the torch worker on the CPU,
 * each new adapter handed to the model server). The tasks, dataset and held-out instances are
 * the MiniWoB++ experiment's (`miniwob-budgets.ts`, `miniwob-llm.ts`); the training reward is
 * `ts-agent.ts`'s (success + 0.05 x the share of the step budget spent in well-formed tool calls
 * + 0.05 x the share of grammatical actions), success always the real page's.
 *
 * Resumable: every evaluated episode is one line of `<keep>/episodes-<phase>.jsonl` (a resumed
 * run plays only the missing ones) and the trainer resumes from its run folder's last
 * iteration (`--scratch`). With `--commit M` the journals and the results entry are committed
 * (those paths only) at most every M minutes. Writes the `miniwob` entry of
 * `<out>/ts-agent.json` (default benchmarks/results) after every phase.
 *
 * Usage (after npm run build; a long run, in the background):
 *   OMP_NUM_THREADS=1 nice -n 10 npx tsx benchmarks/ts-agent-miniwob.ts [--eval-per-task 5] \
 *     [--iterations 12] [--tasks-per-iteration 4] [--group 4] [--max-steps 5] [--commit 30] \
 *     [--data DIR] [--scratch DIR] [--keep DIR] [--out DIR]
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { appendFile, cp, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { AgentTrainer, type EnvironmentEpisode, ModelCallCapture } from '@dreamgym/agents';
import { launchChromium, startMiniwobServer } from '@dreamgym/browser';
import { SeededRandom, syntheticEnvironmentFromConfig, type Task } from '@dreamgym/core';
import { wilsonInterval95 } from '@dreamgym/core/eval';
import { LlamaChatModel, startLlamaServer } from '@dreamgym/llama';
import { connectMiniwobReal } from '@dreamgym/miniwob';
import { setUpDomain } from '@dreamgym/run';
import { playEpisode } from '../examples/ai-sdk-agent/train.js';
import { log } from './alfworld-protocol.js';

const root = resolve(import.meta.dirname, '..');
const { values } = parseArgs({
  options: {
    'eval-per-task': { type: 'string', default: '5' },
    iterations: { type: 'string', default: '12' },
    'tasks-per-iteration': { type: 'string', default: '4' },
    group: { type: 'string', default: '4' },
    'max-steps': { type: 'string', default: '5' },
    commit: { type: 'string', default: '0' },
    data: { type: 'string' },
    scratch: { type: 'string' },
    keep: { type: 'string' },
    out: { type: 'string' },
  },
});
const number = (flag: keyof typeof values) => {
  const value = Number(values[flag]);
  if (!Number.isInteger(value) || value < 0) {
    throw new Error(`ts-agent-miniwob: --${flag} must be a whole number, got ${values[flag]}.`);
  }
  return value;
};
const [evalPerTask, iterations, tasksPerIteration, group, maxSteps, commitMinutes] = (
  ['eval-per-task', 'iterations', 'tasks-per-iteration', 'group', 'max-steps', 'commit'] as const
).map(number) as [number, number, number, number, number, number];
const scratch = resolve(values.scratch ?? join(root, 'scratch', 'ts-agent-miniwob'));
const keep = resolve(values.keep ?? join(root, 'benchmarks', 'results', 'ts-agent-miniwob'));
const resultsFile = join(
  resolve(values.out ?? join(root, 'benchmarks', 'results')),
  'ts-agent.json',
);
await mkdir(scratch, { recursive: true });
await mkdir(keep, { recursive: true });

/**
 * The MiniWoB++ experiment's dataset (12 tasks x 30 training and 25 held-out seeds, one
 * exploration episode per training instance), copied from the LLM experiment's scratch folder
 * on first use, so this run never reads a folder another run writes.
 */
const data = resolve(values.data ?? join(scratch, 'dataset'));
if (!existsSync(join(data, 'tasks.jsonl'))) {
  const source = join(root, 'scratch', 'miniwob-llm', 'dataset');
  if (values.data || !existsSync(join(source, 'tasks.jsonl'))) {
    throw new Error(
      `ts-agent-miniwob: no MiniWoB++ dataset in ${data}: pass --data DIR (miniwob-llm.ts or miniwob-budgets.ts builds one).`,
    );
  }
  await cp(source, data, { recursive: true });
}
const setup = await setUpDomain({ domain: 'miniwob', data, evalSplit: 'eval' }, log);
const evalTasks = setup.evaluationTasks.filter(
  (task) => Number(task.meta.seed) < 100_000 + evalPerTask,
);
// Training takes the tasks in order: a seeded shuffle mixes the twelve task kinds.
const trainTasks = new SeededRandom(1).fork('ts-agent-training').shuffle([...setup.seedTasks]);
log(`${trainTasks.length} training instances, ${evalTasks.length} held-out instances`);

const [pages, browser] = await Promise.all([startMiniwobServer(), launchChromium()]);
const model = await LlamaChatModel.load({ model: 'local', contextSize: 4096, concurrency: 1 });
const server = await startLlamaServer({ model, maxBodyBytes: 4 << 20 });
const capture = new ModelCallCapture();
const endpoint = {
  baseURL: server.baseURL,
  model: server.modelName,
  fetch: capture.fetch,
  capture,
};
/** Share of the episode's actions the grammar accepted. */
const validShare = (episode: EnvironmentEpisode) =>
  episode.steps.length === 0
    ? 0
    : episode.steps.filter((step) => !step.invalid).length / episode.steps.length;
const trainer = await AgentTrainer.start({
  baseURL: server.baseURL,
  model: server.modelName,
  modelPath: model.path,
  capture,
  adapter: setup.adapter,
  tasks: trainTasks,
  environment: () =>
    syntheticEnvironmentFromConfig(
      { maxSteps },
      {
        experienceModel: setup.experienceModel,
        retriever: setup.replayBuffer,
        adapter: setup.adapter,
      },
    ),
  play: async (episode) => {
    try {
      await playEpisode(episode, endpoint, maxSteps);
    } finally {
      episode.reportReward(
        (episode.success ? 1 : 0) +
          0.05 * (episode.steps.length / maxSteps) +
          0.05 * validShare(episode),
        episode.success,
      );
    }
  },
  runDirectory: join(scratch, 'run'),
  groupSize: group,
  tasksPerIteration,
  maxSteps,
  trainer: { learningRate: 1e-4, lora: { rank: 8, topLayers: 4 } },
  log,
});

interface EpisodeLine {
  taskId: string;
  success: boolean;
  steps: number;
  invalidActions: number;
  calls: number;
  seconds: number;
  error?: string;
}

async function journal(phase: string): Promise<EpisodeLine[]> {
  const file = join(keep, `episodes-${phase}.jsonl`);
  if (!existsSync(file)) return [];
  return (await readFile(file, 'utf8'))
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as EpisodeLine);
}

/** Plays the held-out instances not yet in `phase`'s journal on the real pages. */
async function evaluate(phase: 'before' | 'after'): Promise<Record<string, unknown>> {
  const done = new Set((await journal(phase)).map((line) => line.taskId));
  for (const task of evalTasks.filter((each: Task) => !done.has(each.id))) {
    const started = performance.now();
    const episode = await trainer.playEpisode(task, () =>
      connectMiniwobReal({ server: pages, browser, maxSteps }),
    );
    const line: EpisodeLine = {
      taskId: task.id,
      success: episode.success,
      steps: episode.steps,
      invalidActions: episode.invalidActions,
      calls: episode.calls.length,
      seconds: (performance.now() - started) / 1000,
      ...(episode.error === undefined ? {} : { error: episode.error }),
    };
    await appendFile(join(keep, `episodes-${phase}.jsonl`), `${JSON.stringify(line)}\n`);
    done.add(task.id);
    log(
      `${phase}: ${done.size}/${evalTasks.length} real episodes (${task.id}: ${episode.success ? 'success' : 'failure'})`,
    );
  }
  const lines = await journal(phase);
  const successes = lines.filter((line) => line.success).length;
  const steps = lines.reduce((total, line) => total + line.steps, 0);
  return {
    successRate: successes / lines.length,
    interval: wilsonInterval95(successes, lines.length),
    episodes: lines.length,
    successes,
    meanSteps: steps / lines.length,
    invalidShare:
      steps === 0 ? 0 : lines.reduce((total, line) => total + line.invalidActions, 0) / steps,
    failures: lines.filter((line) => line.error !== undefined).length,
    secondsPerEpisode: lines.reduce((total, line) => total + line.seconds, 0) / lines.length,
  };
}

let lastCommit = 0;
/** Commits the journals and the results file (those paths only), at most every `--commit` minutes. */
async function commitKept(force: boolean): Promise<void> {
  if (!(commitMinutes > 0) || (!force && Date.now() - lastCommit < commitMinutes * 60_000)) return;
  const paths = [relative(root, keep), relative(root, resultsFile)];
  const git = (...args: string[]) =>
    new Promise<string>((done, fail) =>
      execFile('git', args, { cwd: root }, (error, stdout, stderr) =>
        error ? fail(new Error(`git ${args[0]}: ${stderr || error.message}`)) : done(stdout),
      ),
    );
  try {
    await git('add', '--', ...paths);
    if ((await git('diff', '--cached', '--name-only', '--', ...paths)).trim() === '') return;
    await git(
      'commit',
      '-q',
      '-m',
      `benchmarks/ts-agent-miniwob: the AI SDK agent's real-page journals so far (${new Date().toISOString().slice(0, 16)}Z, run in the background)`,
      '--',
      ...paths,
    );
    lastCommit = Date.now();
    log(`committed ${paths.join(', ')}`);
  } catch (error) {
    log(`commit skipped: ${(error as Error).message.trim().split('\n')[0]}`);
  }
}

const entry: Record<string, unknown> = {};
async function writeEntry(): Promise<void> {
  const document = existsSync(resultsFile)
    ? (JSON.parse(await readFile(resultsFile, 'utf8')) as Record<string, unknown>)
    : { benchmark: 'ts-agent' };
  document.miniwob = {
    date: new Date().toISOString(),
    partial: !(entry.before && entry.after),
    protocol:
      "examples/ai-sdk-agent/agent.ts unchanged (its train.ts's playEpisode: generateText, toolChoice required, one act tool), SmolLM2-135M-Instruct (Q4_1 GGUF) behind startLlamaServer with grammar-constrained tool calls; trained by @dreamgym/agents' AgentTrainer in the synthetic MiniWoB++ (the embedded experience model grounded on one exploration episode per training instance), GRPO groups per task, LoRA rank 8 on the top 4 blocks, lr 1e-4, torch worker on the CPU; training reward success + 0.05 x step-budget share + 0.05 x grammatical share. Evaluation: the real MiniWoB++ pages (miniwob 1.1.0 in Chromium), the held-out instances of the MiniWoB++ experiment's 12 tasks, one episode each, sampling at the server's temperature 1.",
    scale: {
      heldOutInstances: evalTasks.length,
      heldOutPerTask: evalPerTask,
      trainingInstances: trainTasks.length,
      iterations,
      tasksPerIteration,
      groupSize: group,
      trainingEpisodes: iterations * tasksPerIteration * group,
      maxSteps,
      cpus: cpus().length,
      loadAverage: loadavg(),
      device: 'cpu (no accelerator)',
      why: `the largest that fits two cores shared by five engineers' runs (load 30-45): a real or synthetic episode of this agent takes tens of seconds, so ${evalTasks.length} held-out episodes per phase and ${iterations * tasksPerIteration * group} training episodes run for hours`,
    },
    ...entry,
    journals: relative(root, keep),
  };
  const temporary = `${resultsFile}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(document, null, 2)}\n`);
  await rename(temporary, resultsFile);
  await commitKept(false);
}

try {
  entry.before = await evaluate('before');
  await writeEntry();
  const trainingStarted = performance.now();
  await trainer.train(iterations);
  entry.training = {
    iterations: trainer.metrics,
    secondsThisProcess: (performance.now() - trainingStarted) / 1000,
    servedModel: trainer.servedModel,
  };
  await writeEntry();
  entry.after = await evaluate('after');
  await writeEntry();
  await commitKept(true);
} finally {
  await trainer.close();
  await server.close();
  await model.dispose();
  await browser.close().catch(() => undefined);
  await pages.close().catch(() => undefined);
}
