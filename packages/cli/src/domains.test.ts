/**
 * Adapter discovery outside any project: a globally installed CLI finds the adapters installed
 * beside it, whatever the working folder (here: a child process in an empty temporary folder,
 * with the adapters next to this CLI in the workspace's node_modules).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../../..');

describe('adapter discovery', () => {
  it('finds the adapters installed beside the CLI from a folder outside any project', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'dreamgym-no-project-'));
    try {
      const script = join(folder, 'discover.mts');
      await writeFile(
        script,
        `import { installedAdapterPackages, loadDomainAdapter } from ${JSON.stringify(join(root, 'packages/cli/src/domains.ts'))};
const adapter = await loadDomainAdapter('alfworld', { dataDir: ${JSON.stringify(folder)} });
console.log(JSON.stringify({ installed: installedAdapterPackages(), name: adapter.name }));`,
      );
      const { stdout } = await promisify(execFile)(join(root, 'node_modules/.bin/tsx'), [script], {
        cwd: folder,
      });
      const found = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
        installed: string[];
        name: string;
      };
      expect(found.installed).toContain('@dreamgym/alfworld');
      expect(found.name).toBe('alfworld');
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  }, 60_000);
});
