/**
 * `dreamgym train --domain webshop` end to end: the CLI loads this adapter by its package
 * name (built `dist/`), seeds tasks from human goals 1500+, fills the replay buffer from the
 * real human sessions (the one on an eval goal left out), trains on the synthetic
 * environment and evaluates on eval goals 500-1499.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { webshopDataDirectory } from './test-data-directory.js';

interface CliIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  env: NodeJS.ProcessEnv;
  cwd: string;
}
type RunCli = (argv: readonly string[], io: CliIo) => Promise<number>;

// Imported by name at run time: @dreamgym/cli is not a dependency of this package (the CLI
// finds adapters by name, so a dependency would be a cycle).
const cliPackage = '@dreamgym/cli';

let directory: string;
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'dreamgym-webshop-train-'));
});
afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

it('dreamgym train --domain webshop trains on the embedded defaults and evaluates on eval goals by default', {
  timeout: 180_000,
}, async () => {
  const dataDir = webshopDataDirectory();
  const built = resolve(import.meta.dirname, '..', 'dist', 'index.js');
  if (!existsSync(built)) {
    throw new Error(
      `${built} is missing: the CLI loads @dreamgym/webshop from its build. Run npx turbo run build --filter=@dreamgym/webshop first.`,
    );
  }
  const { runCli } = (await import(cliPackage)) as { runCli: RunCli };
  let out = '';
  let err = '';
  const runDirectory = join(directory, 'run');
  const code = await runCli(
    [
      'train',
      '--domain',
      'webshop',
      '--data',
      dataDir,
      '--run-dir',
      runDirectory,
      '--train-tasks',
      '12',
      '--eval-tasks',
      '4',
      '--iterations',
      '2',
      '--tasks-per-iteration',
      '4',
      '--rollouts-per-task',
      '2',
      '--max-steps',
      '8',
      '--eval-every',
      '1',
      '--seed',
      '3',
    ],
    {
      stdout: { write: (text: string) => (out += text) },
      stderr: { write: (text: string) => (err += text) },
      env: { DREAMGYM_DATA_DIR: resolve(dataDir, '..') },
      cwd: process.cwd(),
    },
  );
  expect(err).not.toMatch(/unexpected/);
  expect(code).toBe(0);
  // The human sessions fill the buffer (8 of 9: the one on eval goal 1319 is held out).
  expect(err).toMatch(/12 seed tasks, 4 eval tasks, [1-9]\d* offline transitions/);
  expect(out).toMatch(/before training.*\d+\.\d%/);
  expect(out).toMatch(/after +training.*\d+\.\d%/);
  // The adapter's defaults: eval goals, and the synthetic environment (no WebShop server set).
  const config = JSON.parse(await readFile(join(runDirectory, 'config.json'), 'utf8')) as {
    evaluation: { environments: string[] };
  };
  expect(config.evaluation.environments).toEqual(['synthetic']);
  const metrics = (await readFile(join(runDirectory, 'metrics.jsonl'), 'utf8')).trim().split('\n');
  expect(metrics.length).toBeGreaterThanOrEqual(2);
});
