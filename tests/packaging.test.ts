/**
 * Every public package must build to ESM + CJS + types that work for real consumers:
 * publint and arethetypeswrong pass, and @dreamgym/core installs from its tarball into a
 * project outside the workspace and imports from ESM, CJS and TypeScript.
 */
import { existsSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SeededRandom } from '@dreamgym/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installPackedProject, publicPackages, repositoryRoot, run } from './workspace.js';

const bin = (name: string) => join(repositoryRoot, 'node_modules', '.bin', name);

describe.each(publicPackages())('$name', ({ directory, name }) => {
  it('is built', () => {
    expect(existsSync(join(directory, 'dist')), `${name} has no dist/: run \`npm run build\``).toBe(
      true,
    );
  });

  it('passes publint', async () => {
    const output = await run(bin('publint'), ['--strict', directory], { cwd: repositoryRoot });
    expect(output).toMatch(/All good/);
  });

  it('passes arethetypeswrong under every profile (node10, node16 ESM and CJS, bundlers)', async () => {
    // attw exits non-zero on any problem, for every entry point the package exports.
    const output = await run(bin('attw'), ['--pack', directory], { cwd: repositoryRoot });
    expect(output).toContain('No problems found');
  });
});

describe('@dreamgym/core from its tarball, outside the workspace', () => {
  let project: string;

  beforeAll(async () => {
    // A TypeScript consumer of a Node library has Node's types; core loads faiss only on use.
    project = await installPackedProject('consumer', ['packages/core'], ['@types/node@20']);
  });

  afterAll(async () => {
    if (project) await rm(project, { recursive: true, force: true });
  });

  const program = `
    const random = new SeededRandom(1);
    const task = TaskSchema.parse({ id: 't', domain: 'corridor', instruction: 'Open the door.' });
    const error = new DatasetFormatError('bad', { file: 'f.jsonl', line: 3 });
    console.log(JSON.stringify({ float: random.float(), origin: task.origin, dg: DreamGymError.isInstance(error), message: error.message }));
  `;
  const expected = {
    float: new SeededRandom(1).float(),
    origin: 'seed',
    dg: true,
    message: 'f.jsonl:3: bad',
  };

  it('imports from CommonJS', async () => {
    await writeFile(
      join(project, 'main.cjs'),
      `const { SeededRandom, TaskSchema, DatasetFormatError, DreamGymError } = require('@dreamgym/core');${program}`,
    );
    const output = await run('node', ['main.cjs'], { cwd: project });
    expect(JSON.parse(output)).toEqual(expected);
  });

  it('imports from ESM', async () => {
    await writeFile(
      join(project, 'main.mjs'),
      `import { SeededRandom, TaskSchema, DatasetFormatError, DreamGymError } from '@dreamgym/core';${program}`,
    );
    const output = await run('node', ['main.mjs'], { cwd: project });
    expect(JSON.parse(output)).toEqual(expected);
  });

  it('type-checks from TypeScript in ESM and CJS files', async () => {
    const usage = `
      import { type Environment, type Task, SeededRandom, TaskSchema } from '@dreamgym/core';
      export const task: Task = TaskSchema.parse({ id: 't', domain: 'd', instruction: 'i' });
      export const seed: number = new SeededRandom(1).int(10);
      export type Env = Environment;
    `;
    await writeFile(join(project, 'usage.mts'), usage);
    await writeFile(join(project, 'usage.cts'), usage);
    await writeFile(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: ['node'],
        },
        files: ['usage.mts', 'usage.cts'],
      }),
    );
    await run(bin('tsc'), ['-p', 'tsconfig.json'], { cwd: project });
  });
});
