/**
 * The README's TypeScript example runs as written, on the real ALFWorld data: only the data
 * folder is defined, the port and run folder made free, and the final `SIGINT` line replaced
 * by an export so the test can close the server. (Its Python block runs in the interop tests.)
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import type { ServedDreamGym } from './serve-dreamgym.js';

const root = join(import.meta.dirname, '..');
let directory: string | undefined;

afterAll(async () => {
  if (directory) await rm(directory, { recursive: true, force: true });
});

it('runs the README example: ALFWorld served over OpenEnv', async () => {
  const data = process.env.DREAMGYM_DATA_DIR;
  if (!data) {
    throw new Error(
      'DREAMGYM_DATA_DIR is not set: set it to the shared data folder (e.g. ../shared/data) holding alfworld/.',
    );
  }
  const readme = await readFile(join(root, 'README.md'), 'utf8');
  const block = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
  expect(block, 'README.md has a ```ts block').toBeDefined();
  const lastLine = "process.once('SIGINT', () => served.close());";
  expect(block).toContain(lastLine);
  directory = await mkdtemp(join(tmpdir(), 'dreamgym-readme-'));
  const program = [
    `const dataDir = ${JSON.stringify(join(data, 'alfworld'))};`,
    block!
      .replace('port: 8000', 'port: 0')
      .replace("'runs/serve-alfworld'", JSON.stringify(join(directory, 'run')))
      .replace(lastLine, 'export { served };'),
  ].join('\n');
  const file = join(directory, 'example.ts');
  await writeFile(file, program);
  const { served } = (await import(file)) as { served: ServedDreamGym };
  try {
    const status = (await (await fetch(`${served.url}/dreamgym/status`)).json()) as {
      domain: string;
      curriculum: { seedTasks: number };
      buffer: { size: number };
    };
    expect(status.domain).toBe('alfworld');
    expect(status.curriculum.seedTasks).toBe(20);
    expect(status.buffer.size).toBeGreaterThan(1000);
    const health = await (await fetch(`${served.url}/health`)).json();
    expect(health).toEqual({ status: 'healthy' });
  } finally {
    await served.close();
  }
}, 120_000);
