/**
 * Adapter discovery outside any project: a globally installed CLI finds the adapters installed
 * beside it, whatever the working folder (here: a child process in an empty temporary folder,
 * with the adapters next to this CLI in the workspace's node_modules). And an adapter of a
 * workspace that is installed (linked by npm) but not built is named as such.
 */
import { execFile } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
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
        `import { installedAdapterPackages, loadDomainAdapter } from ${JSON.stringify(join(root, 'packages/run/src/domains.ts'))};
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

  it('says an adapter of the workspace is installed but not built, with the command that builds it', async () => {
    // A workspace as npm lays it out after `dreamgym new adapter x` and `npm install`: the
    // package's folder linked into node_modules, its manifest naming a dist/ not built yet.
    const workspace = await mkdtemp(join(tmpdir(), 'dreamgym-unbuilt-adapter-'));
    try {
      const adapterFolder = join(workspace, 'adapters', 'x');
      await mkdir(join(adapterFolder, 'src'), { recursive: true });
      await writeFile(
        join(adapterFolder, 'package.json'),
        JSON.stringify({
          name: '@dreamgym/x',
          version: '0.0.0',
          type: 'module',
          keywords: ['dreamgym', 'dreamgym-adapter'],
          exports: {
            '.': {
              import: { types: './dist/index.d.ts', default: './dist/index.js' },
              require: { types: './dist/index.d.cts', default: './dist/index.cjs' },
            },
          },
          main: './dist/index.cjs',
        }),
      );
      await writeFile(
        join(adapterFolder, 'src', 'index.ts'),
        'export const createXAdapter = () => ({});\n',
      );
      await writeFile(
        join(workspace, 'package.json'),
        JSON.stringify({ name: 'workspace', private: true, workspaces: ['adapters/*'] }),
      );
      await mkdir(join(workspace, 'node_modules', '@dreamgym'), { recursive: true });
      await symlink(adapterFolder, join(workspace, 'node_modules', '@dreamgym', 'x'), 'dir');
      const script = join(workspace, 'load.mts');
      await writeFile(
        script,
        `import { loadDomainAdapter } from ${JSON.stringify(join(root, 'packages/run/src/domains.ts'))};
try {
  await loadDomainAdapter('x', { dataDir: ${JSON.stringify(workspace)} });
  console.log(JSON.stringify({ loaded: true }));
} catch (error) {
  console.log(JSON.stringify({ code: error.code, field: error.field, message: error.message }));
}`,
      );
      const { stdout } = await promisify(execFile)(join(root, 'node_modules/.bin/tsx'), [script], {
        cwd: workspace,
      });
      const outcome = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
        code: string;
        field: string;
        message: string;
      };
      expect(outcome).toMatchObject({ code: 'CONFIG_INVALID', field: 'domain' });
      expect(outcome.message).not.toMatch(/not installed/);
      expect(outcome.message).toContain(
        `Domain "x": package @dreamgym/x is installed (${realpathSync(adapterFolder)}) but not built: it has no dist/, which is what is loaded. Build it from the repository root: npx turbo run build --filter=@dreamgym/x`,
      );
    } finally {
      await rm(workspace, { recursive: true, force: true });
    }
  }, 60_000);
});
