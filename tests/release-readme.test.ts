/**
 * The core README's quick start, run as written: its `js` code block is extracted from the
 * Markdown into a fresh folder outside the workspace that sees only the built
 * `@dreamgym/core` (no data, no Python), and must print success before and after training.
 * `tests/release-registry.test.ts` runs the same block against packages installed from a
 * registry.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { codeBlocks, quickStartSuccess } from './release-registry.js';
import { repositoryRoot, run } from './workspace.js';

it('the core README quick start trains on the corridor domain in a fresh folder', async () => {
  const core = join(repositoryRoot, 'packages/core');
  if (
    !existsSync(join(core, 'dist/index.js')) ||
    !existsSync(join(core, 'dist/testing/index.js'))
  ) {
    throw new Error(
      'packages/core/dist is not built: run `npx turbo run build --filter=@dreamgym/core` first.',
    );
  }
  const readme = await readFile(join(core, 'README.md'), 'utf8');
  const [example] = codeBlocks(readme, '## Quick start', 'js');
  expect(example, 'the quick start has a js code block').toBeDefined();
  const folder = await mkdtemp(join(tmpdir(), 'dreamgym-quickstart-'));
  try {
    await mkdir(join(folder, 'node_modules/@dreamgym'), { recursive: true });
    await symlink(core, join(folder, 'node_modules/@dreamgym/core'), 'dir');
    await writeFile(join(folder, 'quickstart.mjs'), example!);
    const first = quickStartSuccess(await run('node', ['quickstart.mjs'], { cwd: folder }));
    expect(first.before).toBe(0);
    expect(first.after).toBeGreaterThanOrEqual(50);
    // Run again: the finished run resumes as done and the trained policy comes back.
    const again = quickStartSuccess(await run('node', ['quickstart.mjs'], { cwd: folder }));
    expect(again).toEqual(first);
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}, 180_000);
