/**
 * `@dreamgym/core` as it was at an earlier commit, for before/after measurements side by
 * side in one run: its sources are taken from git into a scratch directory (with this
 * checkout's node_modules) and loaded by tsx. Delete `directory` when done.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The commit before issue 19 (the replay-buffer split and the synthetic-step profile). */
export const ISSUE_19_BASELINE = '534f9ec';

export async function loadBaselineCore(ref: string) {
  if (!/^[\w./-]+$/.test(ref)) throw new Error(`--baseline-ref: not a git revision: ${ref}`);
  const root = resolve(import.meta.dirname, '..');
  const commit = execFileSync('git', ['rev-parse', '--short', `${ref}^{commit}`], {
    cwd: root,
    encoding: 'utf8',
  }).trim();
  const directory = await mkdtemp(join(tmpdir(), 'dreamgym-baseline-core-'));
  execFileSync(
    'sh',
    ['-c', 'git archive "$1" packages/core/src | tar -x -C "$2"', 'sh', commit, directory],
    { cwd: root },
  );
  await symlink(join(root, 'node_modules'), join(directory, 'node_modules'));
  const core = (await import(
    pathToFileURL(join(directory, 'packages', 'core', 'src', 'index.ts')).href
  )) as typeof import('@dreamgym/core');
  return { core, commit, directory };
}
