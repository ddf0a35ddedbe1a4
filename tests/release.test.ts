/** `npm run release:dry` versions every public package together and packs it, publishing nothing. */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { publicPackages, repositoryRoot, run } from './workspace.js';

it('release:dry packs every public package at one new version without touching the tree', async () => {
  const out = await mkdtemp(join(tmpdir(), 'dreamgym-release-out-'));
  try {
    const before = await run('git', ['status', '--porcelain'], { cwd: repositoryRoot });
    const output = await run('npm', ['run', 'release:dry', '--', out], { cwd: repositoryRoot });
    expect(output).toMatch(/nothing was published/);
    const packed = [...output.matchAll(/^packed (@dreamgym\/[a-z-]+)@(\S+)$/gm)];
    expect(packed.map((match) => match[1]).sort()).toEqual(
      publicPackages()
        .map((p) => p.name)
        .sort(),
    );
    const versions = new Set(packed.map((match) => match[2]));
    expect(versions.size).toBe(1);
    // Before 1.0 a release stays in 0.x: no changeset is `major`, and the peer dependents of a
    // bumped package are not bumped a major while its new version is inside their peer range.
    expect([...versions][0]).toMatch(/^0\.\d+\.\d+$/);
    const tarballs = await readdir(out);
    expect(tarballs).toHaveLength(publicPackages().length);
    // Each holds its build, ESM and CommonJS (built in the scratch copy, or restored there from
    // the repository's turbo cache for the same sources).
    for (const tarball of tarballs) {
      const listing = await run('tar', ['tzf', join(out, tarball)], { cwd: out });
      expect(listing, tarball).toMatch(/^package\/dist\/index\.js$/m);
      expect(listing, tarball).toMatch(/^package\/dist\/index\.cjs$/m);
    }
    expect(await run('git', ['status', '--porcelain'], { cwd: repositoryRoot })).toBe(before);
  } finally {
    await rm(out, { recursive: true, force: true });
  }
});
