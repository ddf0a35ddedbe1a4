/**
 * README examples run exactly as written. A README's example is a file of its package
 * (`<!-- example: examples/quickstart.mjs -->` before the code block names it) and the block is
 * that file, character for character. The files run in a bare folder outside the workspace, as
 * a user's project: the packages installed from their packed tarballs, the README's set-up step
 * run as the README says (`npx @dreamgym/cli doctor --fix --only faiss`), `.mjs` with node and
 * `.mts` with tsx.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { copyFile, mkdir, rm, symlink } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installPackedProject, repositoryRoot, run } from './workspace.js';

interface ReadmeExample {
  readme: string;
  /** The example's file, relative to the repository. */
  file: string;
  block: string;
}

/** Every `<!-- example: FILE -->` of the packages' READMEs, with the code block after it. */
function readmeExamples(): ReadmeExample[] {
  const examples: ReadmeExample[] = [];
  for (const group of ['packages', 'adapters']) {
    for (const name of readdirSync(join(repositoryRoot, group))) {
      const readme = join(group, name, 'README.md');
      let text: string;
      try {
        text = readFileSync(join(repositoryRoot, readme), 'utf8');
      } catch {
        continue;
      }
      for (const match of text.matchAll(/<!-- example: (\S+) -->\n```\w*\n([\s\S]*?)```\n/g)) {
        examples.push({ readme, file: join(group, name, match[1]!), block: match[2]! });
      }
    }
  }
  return examples;
}

const examples = readmeExamples();
/** The examples' `.mts` files run as the READMEs say: `npx tsx FILE`. */
const tsx = join(repositoryRoot, 'node_modules', '.bin', 'tsx');

/** The examples that read real data find it through DREAMGYM_DATA_DIR, as their READMEs say. */
function requireDataDirectory(who: string): void {
  if (!process.env.DREAMGYM_DATA_DIR) {
    throw new Error(`DREAMGYM_DATA_DIR is not set: ${who} read it.`);
  }
}
/** The packages the examples import, packed and installed. */
const PACKED = [
  'packages/core',
  'packages/cli',
  'packages/browser',
  'packages/server',
  'packages/llama',
  'packages/openai-wire',
  'packages/run',
  'adapters/alfworld',
  'adapters/webshop',
  'adapters/webarena-lite',
  'adapters/miniwob',
];

describe('README examples', () => {
  it('are files of their package, shown in the README as they are', () => {
    expect(examples.map((example) => example.file).sort()).toEqual([
      'adapters/alfworld/examples/example.mts',
      'adapters/miniwob/examples/example.mts',
      'adapters/webarena-lite/examples/example.mts',
      'adapters/webshop/examples/example.mts',
      'packages/browser/examples/miniwob-click.mts',
      'packages/core/examples/quickstart.mjs',
      'packages/llama/examples/chat.mts',
      'packages/openai-wire/examples/echo-server.mts',
      'packages/run/examples/preflight.mts',
      'packages/server/examples/serve-alfworld.mts',
    ]);
    for (const example of examples) {
      expect(example.block, `${example.readme} shows ${example.file}`).toBe(
        readFileSync(join(repositoryRoot, example.file), 'utf8'),
      );
    }
  });

  describe('run as written in a project outside the workspace', () => {
    let project: string;

    beforeAll(async () => {
      // The README's doctor step below builds the faiss-node addon the install leaves out.
      project = await installPackedProject('readme-examples', PACKED);
      // The MiniWoB++ examples' reader has the PyPI package miniwob in the project's
      // virtualenv: this one is the repository's (made by the set-up).
      await symlink(join(repositoryRoot, '.venv'), join(project, '.venv'), 'dir');
      // The quick start's set-up line, as written.
      await run('npx', ['@dreamgym/cli', 'doctor', '--fix', '--only', 'faiss'], { cwd: project });
      // Each example in a folder of its own (the adapters' are all example.mts).
      for (const example of examples) {
        const folder = join(project, example.file.split('/')[1]!);
        await mkdir(folder, { recursive: true });
        await copyFile(join(repositoryRoot, example.file), join(folder, basename(example.file)));
      }
    }, 900_000);

    afterAll(async () => {
      if (project) await rm(project, { recursive: true, force: true });
    });

    it("core's quick start trains the corridor policy from 0% to 67% real success", async () => {
      const output = await run('node', ['quickstart.mjs'], { cwd: join(project, 'core') });
      expect(output).toContain('real success before training: 0%');
      expect(output).toContain('real success after training: 67%');
    }, 300_000);

    const adapterExamples: Array<[string, RegExp[]]> = [
      ['alfworld', [/type: 'put'/, /args: \[ 'apple 1', 'fridge 1' \]/]],
      ['webshop', [/type: 'click'/, /text: 'click\[Buy Now\]'/]],
      ['webarena-lite', [/type: 'type'/, /args: \[ '13', 'red shoes', '1' \]/]],
    ];
    it.each(adapterExamples)(
      'the %s example loads tasks, mutates one and parses an action (.mts under tsx)',
      async (adapter, expected) => {
        requireDataDirectory('the adapter examples');
        const output = await run(tsx, ['example.mts'], { cwd: join(project, adapter) });
        for (const pattern of expected) expect(output).toMatch(pattern);
      },
      300_000,
    );

    it("llama's example chats, answers to a schema and scores with the local model, and serves it", async () => {
      await run(tsx, ['chat.mts'], { cwd: join(project, 'llama') });
    }, 300_000);

    it("openai-wire's example answers a chat completion and refuses a bad request with a 400", async () => {
      const output = await run(tsx, ['echo-server.mts'], {
        cwd: join(project, 'openai-wire'),
        env: { PORT: '0' },
      });
      expect(output).toContain('You said: Hi!');
      expect(output).toContain('Invalid request (field `messages`)');
    }, 60_000);

    it("run's example sets up ALFWorld and passes the pre-flight check of its synthetic environment", async () => {
      requireDataDirectory('the run example');
      const output = await run(tsx, ['preflight.mts'], { cwd: join(project, 'run') });
      expect(output).toMatch(
        /^8 tasks, \d+ offline transitions, experience model retrieval\+judge$/m,
      );
      expect(output).toContain('pre-flight: the synthetic environment passes every check');
    }, 300_000);

    it("the browser's MiniWoB++ example clicks the button of click-test in Chromium", async () => {
      const output = await run(tsx, ['miniwob-click.mts'], { cwd: join(project, 'browser') });
      expect(output).toMatch(/button 'Click Me!'/);
      expect(output).toMatch(/^1 true$/m);
    }, 300_000);

    it('the MiniWoB++ example builds a dataset on the real pages and steps one', async () => {
      const output = await run(tsx, ['example.mts'], { cwd: join(project, 'miniwob') });
      expect(output).toMatch(/reward: -?1/);
      expect(output).toMatch(/done: true/);
    }, 300_000);

    it("the server's example serves ALFWorld over OpenEnv until Ctrl-C, then exits", async () => {
      requireDataDirectory('the server example');
      const child = spawn(tsx, ['serve-alfworld.mts'], {
        cwd: join(project, 'server'),
        env: { ...process.env, PORT: '0' },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      const url = await new Promise<string>((resolve, reject) => {
        let output = '';
        child.stdout!.on('data', (chunk: Buffer) => {
          output += chunk.toString('utf8');
          const match = /OpenEnv clients connect to (\S+)/.exec(output);
          if (match) resolve(match[1]!);
        });
        child.once('exit', (code) => reject(new Error(`the example exited (${code}): ${output}`)));
      });
      try {
        expect(await (await fetch(`${url}/health`)).json()).toEqual({ status: 'healthy' });
        const status = (await (await fetch(`${url}/dreamgym/status`)).json()) as {
          domain: string;
          curriculum: { seedTasks: number };
          buffer: { size: number };
        };
        expect(status.domain).toBe('alfworld');
        expect(status.curriculum.seedTasks).toBe(20);
        expect(status.buffer.size).toBeGreaterThan(1000);
      } finally {
        child.kill('SIGINT');
      }
      expect(await exited).toBe(0);
    }, 300_000);
  });
});
