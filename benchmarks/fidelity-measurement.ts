/**
 * What the on-policy fidelity benchmarks share (`on-policy-fidelity.ts` on ALFWorld,
 * `miniwob-fidelity.ts` on MiniWoB++): `dreamgym` run in process, one policy measured by
 * `dreamgym fidelity` with the experience model now or as it was before its outcome judge and
 * world memory, and the table of the measurements.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';

/** The experience model now, and before the learned outcome judge and the world memory. */
export const FIDELITY_MODELS = {
  now: { flags: ['--outcome-judge', 'on', '--world-memory', 'on'], label: 'judge+world-memory' },
  before: { flags: ['--outcome-judge', 'off', '--world-memory', 'off'], label: 'neighbour vote' },
} as const;
export type FidelityModel = keyof typeof FIDELITY_MODELS;

/** One measurement, with the fields the issue names. */
export interface PolicyFidelity {
  policy: string;
  experienceModel: string;
  /** The split the tasks were sampled from. */
  split: string;
  tasks: number;
  syntheticSuccess: unknown;
  realSuccess: unknown;
  syntheticSuccessPrecision: { rate: number; replayed: number; reallySucceeded: number };
  falseSuccessRate: number;
  trueSuccessRecall: number;
  nextStateExact: number;
  byActionType: unknown;
  /** The HTML page of the measurement. */
  report: string;
  /** Minutes the measurement took (NaN when it was made by an earlier run). */
  minutes: number;
}

/**
 * `DREAMGYM_DATA_DIR` resolved from the current folder (the commands run from the repository
 * root, so a relative path would change meaning), checked to hold `domain`, and the
 * environment that passes it on.
 */
export function dataRootEnvironment(domain: string): { dataRoot: string; env: NodeJS.ProcessEnv } {
  if (!process.env.DREAMGYM_DATA_DIR) {
    throw new Error(
      `Set DREAMGYM_DATA_DIR to the folder holding ${domain}/ (e.g. ../shared/data).`,
    );
  }
  const dataRoot = resolve(process.env.DREAMGYM_DATA_DIR);
  if (!existsSync(join(dataRoot, domain))) throw new Error(`${dataRoot} holds no ${domain}/.`);
  return { dataRoot, env: { ...process.env, DREAMGYM_DATA_DIR: dataRoot } };
}

/**
 * `dreamgym ARGS` as a user runs it (the built command, its own process), from `root`, its
 * output passed through; throws on a non-zero exit.
 */
export function dreamgymIn(
  root: string,
  env: NodeJS.ProcessEnv,
): (args: string[]) => Promise<void> {
  const bin = join(root, 'packages', 'cli', 'bin', 'dreamgym.js');
  return async (args) => {
    const code = await new Promise<number | null>((done, failed) => {
      const child = spawn(process.execPath, [bin, ...args], { cwd: root, env, stdio: 'inherit' });
      child.once('error', failed);
      child.once('exit', done);
    });
    if (code !== 0) throw new Error(`dreamgym ${args.join(' ')} exited ${code}`);
  };
}

/**
 * Measures the run in `runDirectory` with `dreamgym fidelity` on `split` (`taskFlags` choose
 * the tasks) unless `<file>.json` is there from an earlier run, and reads the report back.
 */
export async function measureFidelity(options: {
  dreamgym: (args: string[]) => Promise<void>;
  runDirectory: string;
  policy: string;
  model: FidelityModel;
  split: string;
  /** Flags that choose the tasks and seed: `--sample-tasks N --seed S`... */
  taskFlags: string[];
  /** The report's path without its extension (`.json`, `.html`, `.minutes` are added). */
  file: string;
  log: (message: string) => void;
}): Promise<PolicyFidelity> {
  const { model, policy, split, file } = options;
  const out = `${file}.json`;
  const html = `${file}.html`;
  const minutesFile = `${file}.minutes`;
  if (!existsSync(out)) {
    options.log(`measuring ${policy} on ${split} with the model ${model}...`);
    const begun = performance.now();
    await options.dreamgym([
      'fidelity',
      '--run-dir',
      options.runDirectory,
      '--eval-split',
      split,
      ...options.taskFlags,
      '--out',
      out,
      '--html',
      html,
      ...FIDELITY_MODELS[model].flags,
    ]);
    await writeFile(minutesFile, `${(performance.now() - begun) / 60_000}\n`);
  }
  const report = JSON.parse(await readFile(out, 'utf8'));
  const { replays: _replays, ...precision } = report.syntheticSuccessPrecision;
  return {
    policy,
    experienceModel: `${report.experienceModelId} (${FIDELITY_MODELS[model].label})`,
    split,
    tasks: report.tasks,
    syntheticSuccess: report.syntheticSuccess,
    realSuccess: report.realSuccess,
    syntheticSuccessPrecision: precision,
    falseSuccessRate: report.falseSuccessRate,
    trueSuccessRecall: report.trueSuccessRecall,
    nextStateExact: report.nextStateExact,
    byActionType: report.byActionType,
    report: html,
    minutes: existsSync(minutesFile) ? Number(await readFile(minutesFile, 'utf8')) : Number.NaN,
  };
}

/** The measurements as a Markdown table. */
export function fidelityTable(rows: readonly PolicyFidelity[]): string {
  const percent = (value: number) => `${(100 * value).toFixed(1)}%`;
  const rate = (value: unknown) => percent((value as { rate: number }).rate);
  return [
    '| split | policy | model | synthetic | real | precision (really / synthetic successes) | false-success rate | true-success recall | next state exact |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map((row) => {
      const precision = row.syntheticSuccessPrecision;
      return `| ${row.split} | ${row.policy} | ${row.experienceModel} | ${rate(row.syntheticSuccess)} | ${rate(row.realSuccess)} | ${precision.replayed === 0 ? 'n/a' : percent(precision.rate)} (${precision.reallySucceeded}/${precision.replayed}) | ${percent(row.falseSuccessRate)} | ${percent(row.trueSuccessRecall)} | ${percent(row.nextStateExact)} |`;
    }),
  ].join('\n');
}
