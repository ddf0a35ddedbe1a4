/** Helpers for repository-level tests: the workspace's packages and running commands. */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
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
