/**
 * `dreamgym doctor --fix` as a user runs it, from the registry alone: a bare folder outside the
 * workspace installs `@dreamgym/core` and `@dreamgym/cli` (their packed tarballs, everything
 * else from the npm registry) with a plain `npm install`. There faiss-node's own install script
 * runs and fails (it downloads from GitHub, unreachable here), so npm leaves the optional
 * dependency out; the replay buffer then says so in one line, naming the fix. The fix installs
 * faiss-node from the registry without its install script and compiles it against Debian's
 * libfaiss-dev (the real npm, the real compiler: ~1-2 minutes on two busy cores).
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { repositoryRoot, run } from './workspace.js';

let project: string;
const bare = `${JSON.stringify({ name: 'doctor-faiss-user', private: true, type: 'module' }, null, 2)}\n`;

beforeAll(async () => {
  project = await mkdtemp(join(tmpdir(), 'dreamgym-doctor-faiss-'));
  for (const directory of ['packages/core', 'packages/run', 'packages/cli']) {
    await run('npm', ['pack', '--pack-destination', project], {
      cwd: join(repositoryRoot, directory),
    });
  }
  const tarballs = (await readdir(project)).filter((file) => file.endsWith('.tgz'));
  await writeFile(join(project, 'package.json'), bare);
  await run('npm', ['install', '--no-audit', '--no-fund', ...tarballs.map((file) => `./${file}`)], {
    cwd: project,
  });
}, 300_000);

afterAll(async () => {
  if (project) await rm(project, { recursive: true, force: true });
});

it('a bare project without the faiss-node addon: one line names the fix, and doctor --fix builds it from the registry and Debian', async () => {
  // npm dropped the optional dependency: its install script needs GitHub.
  const manifest = await readFile(join(project, 'package.json'), 'utf8');
  expect(existsSync(join(project, 'node_modules/faiss-node'))).toBe(false);
  const probe =
    "import('@dreamgym/core/replay').then((m) => m.loadFaiss()).then(() => console.log('loaded'), (e) => { console.log(e.message); process.exitCode = 3; })";
  const missing = await run('node', ['-e', `${probe}`], { cwd: project }).catch(
    (error: Error) => error.message,
  );
  const [line, ...rest] = missing.trim().split('\n').slice(-1);
  expect(rest).toEqual([]);
  expect(line).toMatch(
    /^The faiss-node native addon \(the replay buffer's vector index, an optional dependency of @dreamgym\/core\) is not installed or not built: .*`npx @dreamgym\/cli doctor --fix --only faiss`/,
  );
  expect(line).not.toMatch(/scripts\//);

  const doctor = await run('npx', ['dreamgym', 'doctor', '--fix', '--only', 'faiss'], {
    cwd: project,
  });
  expect(doctor).toMatch(/^faiss +fixing +faiss-node is not installed/m);
  expect(doctor).toMatch(
    /^\$ npm install --no-save --ignore-scripts --no-audit --no-fund 'faiss-node@\^0\.5\.\d+'$/m,
  );
  expect(doctor).toMatch(/^\$ bash \S+\/node_modules\/@dreamgym\/cli\/setup\/faiss-node\.sh \S+$/m);
  expect(doctor).toMatch(
    /^faiss +ok +faiss-node 0\.5\.\d+ loads \(with the DreamGym additions, (avx2|generic) distance kernels\)/m,
  );
  expect(doctor).toMatch(/^nothing missing$/m);
  // The addon core loads is the one built, with the DreamGym additions.
  expect(
    (
      await run(
        'node',
        [
          '-e',
          probe.replace(
            "console.log('loaded')",
            "console.log('binding', require('faiss-node').dreamgymBinding)",
          ),
        ],
        {
          cwd: project,
        },
      )
    ).trim(),
  ).toMatch(/^binding [1-9]\d*$/);
  // faiss-node stays an optional dependency: the project's manifest is as it was.
  expect(await readFile(join(project, 'package.json'), 'utf8')).toBe(manifest);

  // A faiss-node whose addon is gone (a reinstall removes it): the fix is the compile alone.
  await rm(join(project, 'node_modules/faiss-node/build'), { recursive: true, force: true });
  const unbuilt = await run('npx', ['dreamgym', 'doctor', '--only', 'faiss'], {
    cwd: project,
  }).catch((error: Error) => error.message);
  expect(unbuilt).toMatch(
    /^faiss +MISSING +faiss-node 0\.5\.\d+ at \S+ has no working addon \(Error: Could not locate the bindings file/m,
  );
  expect(unbuilt).toMatch(/^ +fix +bash \S+\/setup\/faiss-node\.sh \S+$/m);
  expect(unbuilt).not.toMatch(/npm install/);
}, 600_000);
