/**
 * Test support (not exported): runs a TypeScript entry point of this repository in a child
 * Node process, for crash tests that SIGKILL a writer. The entry is bundled with esbuild
 * (already installed through tsup) into `node_modules/.cache`, where the bundle's external
 * imports (zod, faiss-node...) resolve.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { build } from 'esbuild';

const cacheDirectory = resolve(
  import.meta.dirname,
  '../../../../node_modules/.cache/dreamgym-test-children',
);

/** Bundles `entry` (an absolute path to a .ts file) and starts it with `args`; stdout is piped. */
export async function startTypeScriptChild(
  entry: string,
  args: readonly string[],
): Promise<ChildProcess> {
  await mkdir(cacheDirectory, { recursive: true });
  const outfile = join(
    cacheDirectory,
    `${basename(entry, '.ts')}-${process.pid}-${Date.now()}.mjs`,
  );
  await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    outfile,
    logLevel: 'silent',
  });
  return spawn(process.execPath, [outfile, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
}

/** Resolves with the first stdout line matching `pattern`; rejects when the child exits first. */
export function waitForLine(
  child: ChildProcess,
  pattern: RegExp,
  timeoutMs = 60_000,
): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    let buffered = '';
    const timer = setTimeout(
      () => reject(new Error(`no line matching ${pattern} within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      const match = lines.find((line) => pattern.test(line));
      if (match !== undefined) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        resolvePromise(match);
      }
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`child exited (code ${code}) before printing a line matching ${pattern}`));
    });
  });
}
