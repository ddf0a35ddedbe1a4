/** Helpers for repository-level tests: the workspace's packages and running commands. */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

export const repositoryRoot = join(import.meta.dirname, '..');

export interface PublicPackage {
  name: string;
  version: string;
  directory: string;
}

/** Every publishable (non-private) workspace package. */
export function publicPackages(): PublicPackage[] {
  return ['packages', 'adapters'].flatMap((group) => {
    const groupDirectory = join(repositoryRoot, group);
    if (!existsSync(groupDirectory)) return [];
    return readdirSync(groupDirectory)
      .map((name) => join(groupDirectory, name))
      .filter((directory) => existsSync(join(directory, 'package.json')))
      .map((directory) => ({
        directory,
        ...JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')),
      }))
      .filter((manifest) => !manifest.private)
      .map(({ name, version, directory }) => ({ name, version, directory }));
  });
}

const execFileAsync = promisify(execFile);

/** Runs a command; on failure the error carries its full output. */
export async function run(
  command: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv },
): Promise<string> {
  try {
    const { stdout, stderr } = await execFileAsync(command, args, {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      maxBuffer: 64 * 1024 * 1024,
    });
    return `${stdout}${stderr}`;
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed in ${options.cwd}:\n${stdout}${stderr}`);
  }
}

/**
 * A user's project outside the workspace: a new folder holding the packages of `directories`
 * (relative to the repository) installed from their packed tarballs, with `extra` registry
 * packages. Install scripts are denied as npm 11 does by default: faiss-node's (and
 * node-llama-cpp's) fetch prebuilts from GitHub, unreachable here.
 */
export async function installPackedProject(
  name: string,
  directories: readonly string[],
  extra: readonly string[] = [],
): Promise<string> {
  const project = await mkdtemp(join(tmpdir(), `dreamgym-${name}-`));
  // Packed side by side: each `npm pack` is mostly npm starting up.
  await Promise.all(
    directories.map((directory) =>
      run('npm', ['pack', '--pack-destination', project], {
        cwd: join(repositoryRoot, directory),
      }),
    ),
  );
  const tarballs = (await readdir(project)).filter((file) => file.endsWith('.tgz'));
  await writeFile(
    join(project, 'package.json'),
    JSON.stringify({
      name,
      private: true,
      allowScripts: { 'faiss-node': false, 'node-llama-cpp': false },
    }),
  );
  await run(
    'npm',
    [
      'install',
      '--no-audit',
      '--no-fund',
      '--prefer-offline',
      ...tarballs.map((file) => `./${file}`),
      ...extra,
    ],
    { cwd: project },
  );
  return project;
}
