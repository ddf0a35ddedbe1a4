/**
 * `dreamgym new adapter`: scaffolds into a scratch copy of the repository (its root
 * configuration and `packages/core`, with the repository's node_modules), builds the new
 * package with tsup, checks it with publint and Biome, and runs its conformance test, which
 * must fail exactly on the stubs: every failure a NotImplementedError naming a stub, every
 * stub named, and the one test of real code (option validation) passing.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli.js';
import { adapterNames, fillTemplate, templatesDirectory, workspacesCover } from './new-adapter.js';

const repositoryRoot = resolve(import.meta.dirname, '..', '..', '..', '..');
const bin = (name: string) => join(repositoryRoot, 'node_modules', '.bin', name);

function io(cwd: string) {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: {
      stdout: { write: (text: string) => out.push(text) },
      stderr: { write: (text: string) => err.push(text) },
      env: {},
      cwd,
    },
    stdout: () => out.join(''),
    stderr: () => err.join(''),
  };
}

/** Runs a command; resolves with its exit code and output (never rejects on a non-zero exit). */
function exec(
  command: string,
  args: string[],
  cwd: string,
): Promise<{ code: number; output: string }> {
  // The child is a fresh vitest/tsup, not a worker of this run.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.startsWith('VITEST') && key !== 'TEST'),
  );
  return new Promise((done) => {
    execFile(
      command,
      args,
      { cwd, env, maxBuffer: 64 * 1024 * 1024, timeout: 300_000 },
      (error, stdout, stderr) => {
        done({
          code: error ? ((error as { code?: number }).code ?? 1) : 0,
          output: `${stdout}${stderr}`,
        });
      },
    );
  });
}

/** A scratch copy of the repository: root configuration, packages/core and test-support, and node_modules linked. */
async function scratchRepository(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'dreamgym-new-adapter-'));
  for (const file of [
    'package.json',
    'tsconfig.base.json',
    'tsconfig.json',
    'vitest.config.ts',
    'turbo.json',
    'biome.json',
    '.gitignore',
  ]) {
    await cp(join(repositoryRoot, file), join(root, file));
  }
  await mkdir(join(root, '.changeset'));
  await cp(
    join(repositoryRoot, '.changeset', 'config.json'),
    join(root, '.changeset', 'config.json'),
  );
  // core, and test-support, whose workspace map the root vitest config builds its projects from.
  for (const name of ['core', 'test-support']) {
    await cp(join(repositoryRoot, 'packages', name), join(root, 'packages', name), {
      recursive: true,
      filter: (source) => !/[/\\](dist|node_modules|\.turbo)$/.test(source),
    });
  }
  await symlink(join(repositoryRoot, 'node_modules'), join(root, 'node_modules'), 'dir');
  return root;
}

const STUB_PARTS = [
  'toObservation',
  'parseAction',
  'candidateActions',
  'datasets.tasks',
  'datasets.trajectories',
  'prompts.',
  'mutateTask',
  'connectReal',
];

describe('dreamgym new adapter, end to end in a scratch copy of the repository', () => {
  let root: string;
  let scaffold: ReturnType<typeof io>;
  let code: number;

  beforeAll(async () => {
    root = await scratchRepository();
    scaffold = io(root);
    code = await runCli(
      ['new', 'adapter', 'demo-bench', '--title', 'Demo Bench', '--description', 'A "demo".'],
      scaffold.io,
    );
  }, 120_000);

  afterAll(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('writes the package, its conformance test and a changeset, and checks the wiring', async () => {
    expect(code, scaffold.stderr()).toBe(0);
    const directory = join(root, 'adapters', 'demo-bench');
    const manifest = JSON.parse(await readFile(join(directory, 'package.json'), 'utf8'));
    expect(manifest).toMatchObject({
      name: '@dreamgym/demo-bench',
      private: true,
      description: 'A "demo".',
      type: 'module',
      keywords: expect.arrayContaining(['dreamgym-adapter']),
      peerDependencies: { '@dreamgym/core': expect.stringMatching(/^\d+\.x$/) },
      files: ['dist', 'README.md'],
    });
    const files = (await readdir(directory, { recursive: true })).map(String);
    expect(files).toEqual(
      expect.arrayContaining([
        'README.md',
        'tsup.config.ts',
        'tsconfig.json',
        join('src', 'adapter.ts'),
        join('src', 'adapter.test.ts'),
        join('src', 'real', 'connect.ts'),
        join('src', 'datasets', 'tasks.ts'),
      ]),
    );
    for (const file of files.filter((name) => /\.(ts|json|md)$/.test(name))) {
      const text = await readFile(join(directory, file), 'utf8');
      expect(text, file).not.toMatch(/__(NAME|PASCAL|CAMEL|CONSTANT|TITLE|DESCRIPTION)__/);
    }
    const adapter = await readFile(join(directory, 'src', 'adapter.ts'), 'utf8');
    expect(adapter).toContain('export function createDemoBenchAdapter(');
    expect(adapter).toContain("export const DEMO_BENCH_DOMAIN = 'demo-bench'");
    expect(await readFile(join(root, '.changeset', 'demo-bench-adapter.md'), 'utf8')).toMatch(
      /^---\n"@dreamgym\/demo-bench": minor\n---/,
    );
    const output = scaffold.stdout();
    expect(output).toContain('npm workspaces: adapters/demo-bench is covered');
    expect(output).toContain('vitest: vitest.config.ts makes a project of every adapters/*');
    expect(output).toContain('turbo: build and typecheck run');
    expect(output).toContain('biome: the new files are formatted');
    expect(output).toContain('npm install');
    expect(output).toContain(
      'npx turbo run build typecheck --filter=@dreamgym/demo-bench   (dreamgym train --domain demo-bench loads dist/',
    );
  });

  it('builds with tsup, and passes publint and Biome', async () => {
    const directory = join(root, 'adapters', 'demo-bench');
    const build = await exec(bin('tsup'), [], directory);
    expect(
      build.code,
      `tsup failed (build @dreamgym/core first: npx turbo run build --filter=@dreamgym/core):\n${build.output}`,
    ).toBe(0);
    for (const file of ['index.js', 'index.cjs', 'index.d.ts', 'index.d.cts']) {
      expect(existsSync(join(directory, 'dist', file)), file).toBe(true);
    }
    const publint = await exec(bin('publint'), ['--strict', directory], root);
    expect(publint.output).toMatch(/All good/);
    const biome = await exec(bin('biome'), ['ci', 'adapters/demo-bench'], root);
    expect(biome.code, biome.output).toBe(0);
  }, 240_000);

  it('runs the conformance test, which fails exactly on the stubs', async () => {
    const report = join(root, 'vitest-report.json');
    const run = await exec(
      bin('vitest'),
      ['run', '--project', '@dreamgym/demo-bench', '--reporter=json', `--outputFile=${report}`],
      root,
    );
    expect(run.code, run.output).toBe(1);
    const results = JSON.parse(readFileSync(report, 'utf8')) as {
      testResults: Array<{
        assertionResults: Array<{ fullName: string; status: string; failureMessages: string[] }>;
      }>;
    };
    const tests = results.testResults.flatMap((file) => file.assertionResults);
    const failed = tests.filter((test) => test.status === 'failed');
    const passed = tests.filter((test) => test.status === 'passed');
    // The whole adapter and environment contract runs: every check of both suites.
    expect(
      failed.filter((test) => test.fullName.startsWith('DomainAdapter conformance')),
    ).toHaveLength(9);
    expect(
      failed.filter((test) => test.fullName.startsWith('Environment conformance')),
    ).toHaveLength(6);
    expect(passed.map((test) => test.fullName)).toEqual([
      'createDemoBenchAdapter rejects invalid options with a ConfigError naming the field',
    ]);
    const named = new Set<string>();
    for (const test of failed) {
      const message = test.failureMessages.join('\n');
      const match =
        /NotImplementedError: @dreamgym\/demo-bench: (\S+) is not implemented yet\. In adapters\/demo-bench\/(\S+): .*\(docs\/adding-a-benchmark\.md, step \d+\)/.exec(
          message,
        );
      expect(
        match,
        `${test.fullName} failed on something else than a stub:\n${message}`,
      ).not.toBeNull();
      const part = match![1]!;
      expect(existsSync(join(root, 'adapters', 'demo-bench', match![2]!)), match![2]).toBe(true);
      named.add(STUB_PARTS.find((stub) => part === stub || part.startsWith(stub)) ?? part);
    }
    expect([...named].sort()).toEqual([...STUB_PARTS].sort());
  }, 240_000);

  it("passes the adapter's dataDir to connectReal, and skips the real environment's checks, saying why, where its engine is absent", async () => {
    const directory = join(root, 'adapters', 'demo-bench');
    // As its author would on a machine without the engine: the check of step 8 says it is absent.
    const connect = join(directory, 'src', 'real', 'connect.ts');
    const source = await readFile(connect, 'utf8');
    expect(source).toContain('  return undefined;\n}');
    await writeFile(
      connect,
      source.replace(
        '  return undefined;\n}',
        "  return 'no Demo Bench engine here: install it';\n}",
      ),
    );
    // What `dreamgym train --data DIR` does: the factory gets { dataDir }, then connectReal({}).
    await writeFile(
      join(directory, 'src', 'data-dir.test.ts'),
      `import { expect, it, vi } from 'vitest';

const received = vi.hoisted(() => [] as unknown[]);
vi.mock('./real/connect.js', async (importOriginal) => ({
  ...(await importOriginal<Record<string, unknown>>()),
  connectDemoBenchReal: async (options: unknown) => {
    received.push(options);
    return {};
  },
}));
const { createDemoBenchAdapter } = await import('./adapter.js');

it('gives connectReal the dataDir the adapter was created with', async () => {
  await createDemoBenchAdapter({ dataDir: '/data/demo-bench', real: { maxSteps: 5 } }).connectReal({});
  await createDemoBenchAdapter({ dataDir: '/data/demo-bench' }).connectReal({ dataDir: '/elsewhere' });
  expect(received).toEqual([
    { dataDir: '/data/demo-bench', maxSteps: 5 },
    { dataDir: '/elsewhere' },
  ]);
});
`,
    );
    const report = join(root, 'vitest-report-absent-engine.json');
    const run = await exec(
      bin('vitest'),
      [
        'run',
        '--project',
        '@dreamgym/demo-bench',
        '--reporter=verbose',
        '--reporter=json',
        `--outputFile.json=${report}`,
      ],
      root,
    );
    expect(run.code, run.output).toBe(1);
    const results = JSON.parse(readFileSync(report, 'utf8')) as {
      testResults: Array<{ assertionResults: Array<{ fullName: string; status: string }> }>;
    };
    const tests = results.testResults.flatMap((file) => file.assertionResults);
    const environment = tests.filter((test) => test.fullName.startsWith('Environment conformance'));
    expect(environment).toHaveLength(6);
    expect(environment.map((test) => test.status)).toEqual(Array(6).fill('skipped'));
    // The reason is printed beside each skipped check.
    expect(run.output.match(/\[no Demo Bench engine here: install it\]/g)).toHaveLength(6);
    expect(
      tests.filter(
        (test) => test.fullName.startsWith('DomainAdapter conformance') && test.status === 'failed',
      ),
    ).toHaveLength(9);
    expect(
      tests.find(
        (test) => test.fullName === 'gives connectReal the dataDir the adapter was created with',
      )?.status,
    ).toBe('passed');
  }, 240_000);
});

describe('dreamgym new adapter, refusals and helpers', () => {
  let root: string;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'dreamgym-new-adapter-refusals-'));
    await writeFile(
      join(root, 'package.json'),
      JSON.stringify({ name: 'x', workspaces: ['packages/*'] }),
    );
  });

  afterAll(() => rm(root, { recursive: true, force: true }));

  it('derives identifiers as the CLI loads adapters (createWebarenaLiteAdapter)', () => {
    expect(adapterNames('webarena-lite', { title: 'WebArena-Lite' })).toEqual({
      name: 'webarena-lite',
      pascal: 'WebarenaLite',
      camel: 'webarenaLite',
      constant: 'WEBARENA_LITE',
      title: 'WebArena-Lite',
      description: 'DreamGym adapter for WebArena-Lite.',
    });
    expect(
      fillTemplate(
        'create__PASCAL__Adapter(__CONSTANT___DOMAIN)',
        adapterNames('my-site'),
        '1.0.0',
      ),
    ).toBe('createMySiteAdapter(MY_SITE_DOMAIN)');
    expect(existsSync(join(templatesDirectory(), 'adapter', 'src', 'adapter.ts'))).toBe(true);
  });

  it('matches npm workspace globs', () => {
    expect(workspacesCover(['packages/*', 'adapters/*'], 'adapters/x')).toBe(true);
    expect(workspacesCover({ packages: ['adapters/**'] }, 'adapters/x')).toBe(true);
    expect(workspacesCover(['adapters/x/'], 'adapters/x')).toBe(true);
    expect(workspacesCover(['packages/*'], 'adapters/x')).toBe(false);
  });

  it('rejects bad names, a second positional and an existing folder, naming what to do', async () => {
    let run = io(root);
    expect(await runCli(['new', 'adapter', 'Bad_Name'], run.io)).toBe(2);
    expect(run.stderr()).toMatch(/"Bad_Name" is not an adapter name: use lower-case letters/);
    run = io(root);
    expect(await runCli(['new', 'adapter'], run.io)).toBe(2);
    expect(run.stderr()).toMatch(/Name the adapter: dreamgym new adapter NAME/);
    run = io(root);
    expect(await runCli(['new', 'adapter', 'a', 'b'], run.io)).toBe(2);
    expect(run.stderr()).toMatch(/One adapter name, got 2/);
    run = io(root);
    expect(await runCli(['new', 'adapter', 'x', '--bogus'], run.io)).toBe(2);
    expect(run.stderr()).toMatch(/Unknown option '--bogus'[\s\S]*Usage: dreamgym new adapter/);
    await mkdir(join(root, 'adapters', 'taken'), { recursive: true });
    run = io(root);
    expect(await runCli(['new', 'adapter', 'taken'], run.io)).toBe(2);
    expect(run.stderr()).toMatch(/adapters\/taken already exists/);
    const plain = await mkdtemp(join(tmpdir(), 'dreamgym-new-adapter-plain-'));
    await writeFile(join(plain, 'package.json'), '{"name": "plain"}');
    run = io(plain);
    expect(await runCli(['new', 'adapter', 'x', '--root', plain], run.io)).toBe(2);
    expect(run.stderr()).toMatch(/declares no workspaces/);
    await rm(plain, { recursive: true, force: true });
  });

  it('adds adapters/* to workspaces that lack it; --dry-run writes nothing', async () => {
    let run = io(root);
    expect(await runCli(['new', 'adapter', 'dry', '--dry-run'], run.io)).toBe(0);
    expect(run.stdout()).toMatch(
      /Would write @dreamgym\/dry[\s\S]*adapters\/dry\/src\/adapter\.ts/,
    );
    expect(existsSync(join(root, 'adapters', 'dry'))).toBe(false);
    run = io(join(root, 'adapters'));
    expect(await runCli(['new', 'adapter', 'fresh'], run.io)).toBe(0);
    expect(run.stdout()).toContain('npm workspaces: added "adapters/*"');
    expect(JSON.parse(await readFile(join(root, 'package.json'), 'utf8')).workspaces).toEqual([
      'packages/*',
      'adapters/*',
    ]);
    expect(existsSync(join(root, 'adapters', 'fresh', 'src', 'adapter.test.ts'))).toBe(true);
  });
});
