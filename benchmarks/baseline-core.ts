/**
 * Sources as they were at an earlier commit, for before/after measurements side by side in
 * one run: taken from git into a scratch directory (with this checkout's node_modules) and
 * loaded by tsx; `@dreamgym/core` that way by {@link loadBaselineCore}. Delete `directory`
 * when done.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The commit before issue 19 (the replay-buffer split and the synthetic-step profile). */
export const ISSUE_19_BASELINE = '534f9ec';

/** The commit before issue 53's pass over the synthetic step (the experience benchmark's baseline). */
export const ISSUE_53_BASELINE = '2a6f4ae';

/**
 * The files under `path` (e.g. `packages/core/src`) as they were at git revision `ref`, in a
 * scratch directory beside this checkout's node_modules (symlinked), so that tsx can load them;
 * `flag` names the option `ref` came from in the error for a malformed one. Delete `directory`
 * when done.
 */
export async function sourcesAt(
  ref: string,
  path: string,
  flag: string,
): Promise<{ directory: string; commit: string }> {
  if (!/^[\w./-]+$/.test(ref)) throw new Error(`${flag}: not a git revision: ${ref}`);
  const root = resolve(import.meta.dirname, '..');
  const commit = execFileSync('git', ['rev-parse', '--short', `${ref}^{commit}`], {
    cwd: root,
    encoding: 'utf8',
  }).trim();
  const directory = await mkdtemp(join(tmpdir(), 'dreamgym-sources-at-'));
  execFileSync(
    'sh',
    ['-c', 'git archive "$1" "$2" | tar -x -C "$3"', 'sh', commit, path, directory],
    {
      cwd: root,
    },
  );
  await symlink(join(root, 'node_modules'), join(directory, 'node_modules'));
  return { directory, commit };
}

export async function loadBaselineCore(ref: string) {
  const { directory, commit } = await sourcesAt(ref, 'packages/core/src', '--baseline-ref');
  const core = (await import(
    pathToFileURL(join(directory, 'packages', 'core', 'src', 'index.ts')).href
  )) as typeof import('@dreamgym/core');
  return { core, commit, directory };
}
