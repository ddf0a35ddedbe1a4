/**
 * The published declarations compile for a strict user: a bare project outside the workspace
 * installs every public package from its packed tarball (the rest from the npm registry),
 * imports every entry point from an ES module, and type-checks with
 * TypeScript 5.9 and TypeScript 7 at their defaults plus `strict` and `skipLibCheck: false`,
 * no `types` and no Node types of its own. TypeScript 7 includes no `@types` package unless a
 * file refers to it (its `types` defaults to `[]`): a package whose public types use Node's
 * (`Buffer`, `NodeJS.ProcessEnv`, `node:http`, or playwright-core's, which import Node's
 * modules) depends on `@types/node` and its declarations refer to it. (The CommonJS
 * declarations are built from the same sources with the same reference; that `require` finds
 * them is `tests/packaging.test.ts`'s attw check.)
 */
import { existsSync, readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installPackedProject, publicPackages, repositoryRoot, run } from './workspace.js';

/** Every entry point of every public package: `@dreamgym/core`, `@dreamgym/core/mdp` ... */
const entryPoints = publicPackages().flatMap(({ name, directory }) => {
  const manifest = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as {
    exports: Record<string, unknown>;
  };
  return Object.keys(manifest.exports)
    .filter((key) => key !== './package.json')
    .map((key) => (key === '.' ? name : `${name}/${key.slice(2)}`));
});

const compilers = {
  'TypeScript 5.9': 'ts59',
  'TypeScript 7': 'ts7',
} as const;

let project: string;

beforeAll(async () => {
  const directories = publicPackages().map(({ directory }) =>
    directory.slice(repositoryRoot.length + 1),
  );
  const unbuilt = directories.filter(
    (directory) => !existsSync(join(repositoryRoot, directory, 'dist/index.d.ts')),
  );
  if (unbuilt.length > 0) {
    throw new Error(
      `No declarations to pack in ${unbuilt.join(', ')} (dist/index.d.ts): run \`npx turbo run build\` first.`,
    );
  }
  project = await installPackedProject('declarations', directories, [
    // The compilers, side by side.
    'ts59@npm:typescript@5.9.3',
    'ts7@npm:typescript@7.0.2',
    // Optional peers whose types entry points use: vitest (core/testing/vitest), the OpenAI
    // Agents SDK (agents/openai-agents).
    'vitest@4.1.12',
    '@openai/agents@0.20.0',
  ]);
  const imports = entryPoints.map((entry, i) => ({ entry, name: `entry${i}` }));
  await writeFile(
    join(project, 'consumer.mts'),
    `${imports.map(({ entry, name }) => `import * as ${name} from '${entry}';`).join('\n')}\nexport const all: object[] = [${imports.map(({ name }) => name).join(', ')}];\n`,
  );
  await writeFile(
    join(project, 'tsconfig.json'),
    `${JSON.stringify(
      {
        compilerOptions: {
          strict: true,
          module: 'nodenext',
          target: 'es2022',
          skipLibCheck: false,
          noEmit: true,
        },
        files: ['consumer.mts'],
      },
      null,
      2,
    )}\n`,
  );
}, 600_000);

afterAll(async () => {
  if (project) await rm(project, { recursive: true, force: true });
});

it('every entry point of every public package is imported', () => {
  expect(entryPoints).toContain('@dreamgym/core');
  expect(entryPoints).toContain('@dreamgym/core/testing/vitest');
  expect(entryPoints).toContain('@dreamgym/miniwob');
  expect(entryPoints.length).toBeGreaterThanOrEqual(publicPackages().length);
});

/**
 * Errors in third-party declarations that `skipLibCheck: false` reports whoever imports them,
 * with or without DreamGym (file and code): node-llama-cpp 3.22's own `.d.ts` refer to an
 * option it does not declare and to `async-retry`, which has no types; the OpenAI Agents SDK
 * 0.20's event emitters do not match the current `@types/node`'s `EventEmitter`. Any other
 * error fails the check, above all one in `@dreamgym/*` or from a missing Node type.
 */
const THIRD_PARTY_ERRORS = new Set([
  'node_modules/node-llama-cpp/dist/bindings/getLlama.d.ts TS2339',
  'node_modules/node-llama-cpp/dist/gguf/readGgufFileInfo.d.ts TS7016',
  'node_modules/@openai/agents-core/dist/lifecycle.d.ts TS2416',
  'node_modules/@openai/agents-realtime/dist/openaiRealtimeBase.d.ts TS2416',
]);

describe.each(Object.entries(compilers))('%s', (label, folder) => {
  it('type-checks a strict consumer of every entry point, with the libraries checked too', async () => {
    const tsc = join(project, 'node_modules', folder, 'bin', 'tsc');
    const version = (await run(process.execPath, [tsc, '--version'], { cwd: project })).trim();
    expect(version).toMatch(label === 'TypeScript 7' ? /^Version 7\./ : /^Version 5\.9\./);
    // tsc prints the errors and exits non-zero (`run` throws with its output).
    const output = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], {
      cwd: project,
    }).catch((error: Error) => error.message);
    const errors = [...output.matchAll(/^(\S+)\(\d+,\d+\): error (TS\d+): (.*)$/gm)].map(
      ([, file, code, message]) => ({ at: `${file} ${code}`, message }),
    );
    expect(
      errors.filter((error) => !THIRD_PARTY_ERRORS.has(error.at)),
      output,
    ).toEqual([]);
    // Nothing but those errors: no other output (a crash, a config error) either.
    expect(output.split('\n').filter((line) => /error TS/.test(line)).length).toBe(errors.length);
    expect(output).not.toMatch(/@dreamgym\//);
  }, 300_000);
});
