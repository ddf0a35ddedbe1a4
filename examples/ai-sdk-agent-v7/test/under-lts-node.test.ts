/**
 * The AI SDK 7 example under the project's LTS Node (the suite runs under Node 20, which `ai` 7
 * does not support): its own dependencies are `ai` 7 and `@ai-sdk/openai-compatible` 3, it
 * type-checks against them, the built `@dreamgym/agents` and faiss-node load, and its tests
 * (`lts-test/`: the capture middleware with `ai` 7, the agent trained with SmolLM2) pass.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { describe, expect, it } from 'vitest';
import { repositoryRoot, runUnderLtsNode } from '../../lts-node.test-support.js';

const example = resolve(import.meta.dirname, '..');
const installed = (name: string): string => {
  const manifest = resolve(example, 'node_modules', name, 'package.json');
  if (!existsSync(manifest)) {
    throw new Error(
      `${manifest} is missing: run \`bash scripts/setup.sh node\` to install the example's own dependencies`,
    );
  }
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
};

describe('the AI SDK 7 example under the LTS Node', () => {
  it('has ai 7 and @ai-sdk/openai-compatible 3 of its own lockfile', () => {
    const pinned = JSON.parse(readFileSync(resolve(example, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect(installed('ai')).toBe(pinned.dependencies.ai);
    expect(installed('@ai-sdk/openai-compatible')).toBe(
      pinned.dependencies['@ai-sdk/openai-compatible'],
    );
    expect(installed('ai')).toMatch(/^7\./);
  });

  it('type-checks against ai 7', async () => {
    const { code, output } = await runUnderLtsNode([
      resolve(repositoryRoot, 'node_modules/typescript/bin/tsc'),
      '-p',
      resolve(example, 'tsconfig.json'),
    ]);
    expect(output).toBe('');
    expect(code).toBe(0);
  }, 120_000);

  it('loads the built @dreamgym/agents (ESM and CJS) and the faiss-node addon', async () => {
    const program = `
      const agents = await import('@dreamgym/agents');
      const aiSdk = require('@dreamgym/agents/ai-sdk');
      const faiss = require('faiss-node');
      const index = new faiss.IndexFlatIP(2);
      index.addFloat32(new Float32Array([1, 0, 0, 1]));
      console.log(JSON.stringify({
        node: process.versions.node,
        capture: typeof agents.ModelCallCapture,
        middleware: aiSdk.captureMiddleware(new agents.ModelCallCapture()).specificationVersion,
        faiss: faiss.dreamgymBinding,
        label: index.searchFloat32(new Float32Array([0, 1]), 1).labels[0],
      }));`;
    const { code, output } = await runUnderLtsNode([
      '--input-type=module',
      '-e',
      `import { createRequire } from 'node:module'; const require = createRequire(${JSON.stringify(`${repositoryRoot}/`)}); ${program}`,
    ]);
    expect(code, output).toBe(0);
    const result = JSON.parse(output.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(Number(String(result.node).split('.')[0])).toBeGreaterThanOrEqual(22);
    // The addon built by set-up (under the machine's Node, N-API) loads with its additions.
    const faiss = createRequire(`${repositoryRoot}/`)('faiss-node') as { dreamgymBinding: number };
    expect(result).toMatchObject({
      capture: 'function',
      middleware: 'v3',
      faiss: faiss.dreamgymBinding,
      label: 1,
    });
  }, 60_000);

  it('passes its tests: the capture middleware with ai 7, the agent trained with SmolLM2', async () => {
    const { code, output } = await runUnderLtsNode(
      [
        resolve(repositoryRoot, 'node_modules/vitest/vitest.mjs'),
        'run',
        '--config',
        resolve(example, 'vitest.lts.config.ts'),
      ],
      { DREAMGYM_DATA_DIR: process.env.DREAMGYM_DATA_DIR ?? resolve(repositoryRoot, '../shared/data') },
    );
    expect(code, output).toBe(0);
    expect(stripVTControlCharacters(output)).toMatch(/Tests\s+\d+ passed \(\d+\)/);
  }, 1_200_000);
});
