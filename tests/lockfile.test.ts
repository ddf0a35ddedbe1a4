/**
 * `npm ci` on a clean clone must accept the lockfile. The registry this project installs
 * from can lag behind for other platforms' optional binaries (rollup, biome, turbo); a
 * lockfile that misses them makes `npm ci` fail before any test runs.
 */
import { cp, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { expect, it } from 'vitest';
import { publicPackages, repositoryRoot, run } from './workspace.js';

it('the lockfile satisfies `npm ci` in a clean checkout', async () => {
  const scratch = await mkdtemp(join(tmpdir(), 'dreamgym-lockfile-'));
  try {
    const manifests = [
      'package.json',
      'package-lock.json',
      'benchmarks/package.json',
      ...publicPackages().map(({ directory }) =>
        join(relative(repositoryRoot, directory), 'package.json'),
      ),
    ];
    for (const manifest of manifests) {
      await mkdir(dirname(join(scratch, manifest)), { recursive: true });
      await cp(join(repositoryRoot, manifest), join(scratch, manifest));
    }
    const output = await run('npm', ['ci', '--dry-run', '--ignore-scripts', '--no-audit'], {
      cwd: scratch,
    });
    expect(output).not.toMatch(/Missing: .* from lock file/);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
});
