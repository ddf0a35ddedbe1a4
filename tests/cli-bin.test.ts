/**
 * `npx dreamgym` from the repository (the first step of docs/adding-a-benchmark.md). npm links
 * a workspace package's bins when it installs it, and skips a bin whose file is missing then:
 * in a fresh clone nothing is built yet, so the CLI's bin must be a file of the source tree.
 * Here: a real `npm install` of a scratch workspace holding the CLI's files as a clone has them
 * (tracked or new, none ignored: no `dist/`), then `npx dreamgym` in the repository, which the
 * test command's set-up has built.
 */
import { execFile } from 'node:child_process';
import { lstatSync, readFileSync, realpathSync } from 'node:fs';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { repositoryRoot, run } from './workspace.js';

const execFileAsync = promisify(execFile);

function cliManifest(): { bin: { dreamgym: string } } {
  return JSON.parse(readFileSync(join(repositoryRoot, 'packages/cli/package.json'), 'utf8'));
}

/** The files of `directory` a clone of the repository has: tracked or new, not ignored. */
async function cloneFiles(directory: string): Promise<string[]> {
  const { stdout } = await execFileAsync(
    'git',
    ['ls-files', '--cached', '--others', '--exclude-standard', '-z', directory],
    { cwd: repositoryRoot, maxBuffer: 16 * 1024 * 1024 },
  );
  return stdout.split('\0').filter(Boolean);
}

it('npm links the dreamgym bin when it installs a fresh clone, before any build', async () => {
  const scratch = await mkdtemp(join(tmpdir(), 'dreamgym-cli-bin-'));
  try {
    for (const file of await cloneFiles('packages/cli')) {
      await mkdir(dirname(join(scratch, file)), { recursive: true });
      await cp(join(repositoryRoot, file), join(scratch, file));
    }
    // The CLI's manifest as it is, less its dependencies: this is about its bin, and the
    // scratch install must not reach a registry.
    const manifestPath = join(scratch, 'packages/cli/package.json');
    const {
      dependencies: _dependencies,
      devDependencies: _devDependencies,
      peerDependencies: _peerDependencies,
      peerDependenciesMeta: _peerDependenciesMeta,
      ...manifest
    } = JSON.parse(readFileSync(manifestPath, 'utf8'));
    await writeFile(manifestPath, JSON.stringify(manifest));
    await writeFile(
      join(scratch, 'package.json'),
      JSON.stringify({ name: 'clone', private: true, workspaces: ['packages/cli'] }),
    );
    await run('npm', ['install', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], {
      cwd: scratch,
    });

    const link = join(scratch, 'node_modules/.bin/dreamgym');
    expect(
      lstatSync(link, { throwIfNoEntry: false })?.isSymbolicLink(),
      'npm did not link node_modules/.bin/dreamgym: the bin of packages/cli/package.json names a file a fresh clone lacks',
    ).toBe(true);
    expect(realpathSync(link)).toBe(
      realpathSync(join(scratch, 'packages/cli', manifest.bin.dreamgym)),
    );
    // Not built yet: the bin says how to build it, instead of a module-not-found trace.
    const unbuilt = await execFileAsync(process.execPath, [link, '--help']).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(unbuilt.code).toBe(1);
    expect(unbuilt.stderr).toMatch(
      /dreamgym: the CLI is not built \(.*dist\/bin\.js is missing\)\. From the repository root: npx turbo run build --filter=@dreamgym\/cli/,
    );
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}, 120_000);

it('npx dreamgym runs the built CLI in the repository after the set-up', async () => {
  // `--no`: fail rather than fetch a registry package named `dreamgym` when the bin is missing.
  const output = await run('npx', ['--no', 'dreamgym', 'new', 'adapter', '--help'], {
    cwd: repositoryRoot,
  });
  expect(output).toMatch(/Usage: dreamgym new adapter/);
  expect(realpathSync(join(repositoryRoot, 'node_modules/.bin/dreamgym'))).toBe(
    realpathSync(join(repositoryRoot, 'packages/cli', cliManifest().bin.dreamgym)),
  );
}, 60_000);

it('the lockfile names the same bin (npm ci links what the lockfile says, not the manifest)', () => {
  const lock = JSON.parse(readFileSync(join(repositoryRoot, 'package-lock.json'), 'utf8'));
  expect(lock.packages['packages/cli'].bin).toEqual(cliManifest().bin);
});
