/**
 * The main job (`npm run train`, scripts/train.sh) as a measurement: the command a new user
 * runs, as it is (set-up, build, the MiniWoB++ dataset unless built, `dreamgym train` with
 * configs/miniwob-main.json), timed phase by phase beside the machine's load, then its run
 * folder read back: greedy real success on the 300 held-out instances before (the start) and
 * after, the pre-flight verdict, the same 48 training instances in both environments.
 * `--job alfworld` measures the second command (`npm run train:alfworld`) the same way.
 *
 * Usage (the job sets itself up and builds what it runs):
 *   npx tsx benchmarks/main-job.ts [--job miniwob|alfworld] [--fresh-dataset] [--resume] [--out DIR]
 * `--fresh-dataset` removes the main job's dataset first, so that its build on the real pages
 * is timed as a fresh clone's first run pays it. `--resume` continues a measured run that was
 * stopped (its folder, `runs/main-job/measured-<job>`, is kept; `minutes` is the last part's). Writes `main-job.json` (`main-job-alfworld.json`)
 * into `--out DIR` (default benchmarks/results): `start`, `before` and `after` (`successRate`,
 * `interval`, `episodes`), `credit`, `preflight`, `sameTrainingTasks`, `minutes`, `phases`
 * (seconds), `cpuSeconds` (the CPU seconds of each phase, which load does not inflate), `load`.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    job: { type: 'string', default: 'miniwob' },
    'fresh-dataset': { type: 'boolean', default: false },
    resume: { type: 'boolean', default: false },
    out: { type: 'string' },
  },
});
const JOBS = {
  miniwob: {
    script: 'scripts/train.sh',
    result: 'main-job.json',
    config: 'configs/miniwob-main.json',
    evaluation: 'the 300 held-out MiniWoB++ instances (12 tasks x 25 eval seeds) on the real pages',
  },
  alfworld: {
    script: 'scripts/train-alfworld.sh',
    result: 'main-job-alfworld.json',
    config: 'configs/alfworld-main.json',
    evaluation: 'all 140 valid_seen games on the real ALFWorld engine',
  },
} as const;
const job = JOBS[values.job as keyof typeof JOBS];
if (!job) throw new Error(`--job is miniwob or alfworld, not "${values.job}".`);
const root = resolve(import.meta.dirname, '..');
const jobDirectory = resolve(root, process.env.DREAMGYM_MAIN_JOB_DIR ?? 'runs/main-job');
const runDirectory = join(jobDirectory, `measured-${values.job}`);
const resultsDirectory = values.out ? resolve(values.out) : resolve(import.meta.dirname, 'results');
await mkdir(resultsDirectory, { recursive: true });
if (!values.resume) await rm(runDirectory, { recursive: true, force: true });
if (values['fresh-dataset'])
  await rm(join(jobDirectory, 'dataset'), { recursive: true, force: true });

// The 1-minute load average every 15 s while the job runs: other work slows every phase.
const loadSamples: number[] = [loadavg()[0]!];
const loadTimer = setInterval(() => loadSamples.push(loadavg()[0]!), 15_000);

/** When the job's output first showed each marker (seconds from the start). */
const MARKERS = {
  loaded: /^policy: /,
  preflight: /^pre-flight: [0-9.]+ s$/,
  startEvaluation: /^evaluating the starting policy/,
  firstIteration: /dreamgym train 1\/\d+/,
} as const;
const seen: Partial<Record<keyof typeof MARKERS, number>> = {};
let jobLine = '';
const started = performance.now();
const exitCode = await new Promise<number>((resolveExit, reject) => {
  const resume = values.resume ? ['--resume'] : [];
  const child = spawn('bash', [job.script, '--run-dir', runDirectory, ...resume], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.on('error', reject);
  for (const [stream, sink] of [
    [child.stdout, process.stdout],
    [child.stderr, process.stderr],
  ] as const) {
    createInterface({ input: stream }).on('line', (line) => {
      sink.write(`${line}\n`);
      const at = (performance.now() - started) / 1000;
      for (const [name, pattern] of Object.entries(MARKERS) as [keyof typeof MARKERS, RegExp][])
        if (seen[name] === undefined && pattern.test(line)) seen[name] = at;
      if (line.startsWith('main job: ')) jobLine = line;
    });
  }
  child.on('close', (code) => resolveExit(code ?? 1));
});
clearInterval(loadTimer);
const minutes = (performance.now() - started) / 60_000;
if (exitCode !== 0)
  throw new Error(`${job.script} exited with ${exitCode}: the run is in ${runDirectory}.`);

interface Evaluation {
  environment: string;
  mode: string;
  episodes: number;
  successRate: number;
  successInterval95: [number, number];
}
const readJson = async (file: string) =>
  JSON.parse(await readFile(join(runDirectory, file), 'utf8'));
const config = await readJson('config.json');
const start = await readJson('start-evaluation.json');
const metrics = (await readFile(join(runDirectory, 'metrics.jsonl'), 'utf8'))
  .split('\n')
  .filter((line) => line.trim() !== '')
  .map((line) => JSON.parse(line));
const last = metrics.at(-1);
const greedyReal = (evaluations: Evaluation[]) => {
  const found = evaluations.find(
    (evaluation) => evaluation.environment === 'real' && evaluation.mode === 'greedy',
  );
  if (!found)
    throw new Error(`The run in ${runDirectory} has no greedy evaluation on the real environment.`);
  return {
    successRate: found.successRate,
    interval: found.successInterval95,
    episodes: found.episodes,
  };
};
const before = greedyReal(start.evaluations);
const after = greedyReal(last.evaluations);
const cloning = config.warmStart.behaviourCloning;
const preflight = existsSync(join(runDirectory, 'preflight.json'))
  ? await readJson('preflight.json')
  : undefined;

// The job's own phases (scripts/train.sh's last line: "set-up 12 s, build 9 s, ..."), and
// within `dreamgym train` the parts its output marks; the iterations' seconds are the loop's.
const jobPhases = Object.fromEntries(
  [...jobLine.matchAll(/([a-z-]+) (\d+) s \(cpu \d+ s\)/g)].map((match) => [
    match[1]!,
    Number(match[2]),
  ]),
);
const jobCpuSeconds = Object.fromEntries(
  [...jobLine.matchAll(/([a-z-]+) \d+ s \(cpu (\d+) s\)/g)].map((match) => [
    match[1]!,
    Number(match[2]),
  ]),
);
const iterationSeconds = metrics.map((record) => record.seconds as number);
const round = (seconds: number | undefined) =>
  seconds === undefined ? undefined : Math.round(seconds * 10) / 10;
const trainStarted = (jobPhases['set-up'] ?? 0) + (jobPhases.build ?? 0) + (jobPhases.dataset ?? 0);
const trainPhases = {
  loading: round(seen.loaded === undefined ? undefined : seen.loaded - trainStarted),
  untilStartEvaluation: round(
    seen.startEvaluation !== undefined && seen.loaded !== undefined
      ? seen.startEvaluation - seen.loaded
      : undefined,
  ),
  startEvaluation: round(
    seen.firstIteration !== undefined && seen.startEvaluation !== undefined
      ? seen.firstIteration - seen.startEvaluation - iterationSeconds[0]!
      : undefined,
  ),
  iterations: round(iterationSeconds.slice(0, -1).reduce((total, value) => total + value, 0)),
  lastIterationWithFinalEvaluation: round(iterationSeconds.at(-1)),
};

const result = {
  description: `The main job as a new user runs it (${job.script}, \`dreamgym train --config ${job.config}\`): greedy real success on ${job.evaluation} before (the starting policy) and after DreamGym training with no real transition.`,
  date: new Date().toISOString(),
  config,
  start: {
    how: cloning?.taskShare
      ? `behaviour cloning of the linear softmax policy on the successful exploration episodes of a seeded ${(cloning.taskShare * 100).toFixed(1)}% of the training instances that have one (learning rate ${cloning.learningRate}, the epoch with the best likelihood on held-out instances), as benchmarks/miniwob-budgets.ts's start clones those of the first 5 of 30 seeds of every task`
      : `behaviour cloning of the linear softmax policy on the first ${cloning?.maxTrajectories} of the expert demonstrations`,
    warmStart: await readJson('warm-start.json').then(
      ({ bestEpoch, bestHeldOutNegativeLogLikelihood, trainSamples, trainTasks }) => ({
        bestEpoch,
        bestHeldOutNegativeLogLikelihood,
        trainSamples,
        trainTasks,
      }),
    ),
  },
  credit: config.trainer.credit ?? 'episode',
  before,
  after,
  points: 100 * (after.successRate - before.successRate),
  intervalsOverlap:
    after.interval[0] <= before.interval[1] && before.interval[0] <= after.interval[1],
  preflight: preflight && {
    trusted: preflight.trusted,
    offline: preflight.offline,
    startingPolicy: preflight.startingPolicy,
  },
  sameTrainingTasks: { start: start.syntheticToRealGap, end: last.syntheticToRealGap },
  syntheticTransitions: last.syntheticTransitions,
  realTransitions: last.realTransitions,
  minutes,
  /** Whether this measurement continued a run stopped part-way (`minutes` is then this part's). */
  resumed: values.resume,
  /** The loop's own seconds over every iteration, the final evaluation included (all parts). */
  iterationSeconds: iterationSeconds.reduce((total, value) => total + value, 0),
  phases: { ...jobPhases, inTrain: trainPhases },
  /** CPU seconds (user + system) of each phase's commands: the work, which load does not inflate. */
  cpuSeconds: jobCpuSeconds,
  load: {
    mean: loadSamples.reduce((total, value) => total + value, 0) / loadSamples.length,
    min: Math.min(...loadSamples),
    max: Math.max(...loadSamples),
    cpus: cpus().length,
    samples: loadSamples.length,
  },
  datasetBuild: existsSync(join(jobDirectory, 'dataset', 'dataset.json'))
    ? JSON.parse(await readFile(join(jobDirectory, 'dataset', 'dataset.json'), 'utf8'))
    : undefined,
};
await writeFile(join(resultsDirectory, job.result), `${JSON.stringify(result, null, 2)}\n`);
console.log(
  `main job (${values.job}): ${(100 * before.successRate).toFixed(1)}% -> ${(100 * after.successRate).toFixed(1)}% greedy real on ${after.episodes} instances (${result.points >= 0 ? '+' : ''}${result.points.toFixed(1)} points, intervals ${result.intervalsOverlap ? 'overlap' : 'do not overlap'}) in ${minutes.toFixed(1)} minutes at load ${result.load.mean.toFixed(1)} on ${result.load.cpus} CPUs`,
);
