import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExperienceSftExampleSchema } from '@dreamgym/core/annotate';
import { compactExperienceFormat } from '@dreamgym/core/experience';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli.js';
import { captureIo, dataRoot } from '../cli.test-support.js';

const capture = () => captureIo({ env: { ...process.env, DREAMGYM_DATA_DIR: dataRoot() } });

let directory: string;
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'dreamgym-annotate-cli-'));
});
afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('dreamgym annotate', () => {
  it('annotates with the local teacher, resumes, and exports the SFT set', async () => {
    const common = [
      'annotate',
      '--domain',
      'alfworld',
      '--out',
      directory,
      '--offline-limit',
      '2',
      '--k',
      '2',
    ];
    const first = capture();
    expect(await runCli([...common, '--limit', '2'], first), first.err()).toBe(0);
    expect(first.out()).toMatch(/traces\.jsonl: 2 traces \(2 new, 0 failed/);
    expect(first.err()).toMatch(/teacher: smollm2-135m-instruct@llama\.cpp/);

    const second = capture();
    expect(await runCli([...common, '--limit', '1'], second), second.err()).toBe(0);
    expect(second.out()).toMatch(/traces\.jsonl: 3 traces \(1 new/);

    const exported = capture();
    expect(await runCli([...common, '--export-only'], exported)).toBe(0);
    expect(exported.out()).toMatch(/sft\.jsonl: 3 examples/);
    const examples = (await readFile(join(directory, 'sft.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => ExperienceSftExampleSchema.parse(JSON.parse(line)));
    const schema = compactExperienceFormat().schema;
    for (const example of examples) {
      expect(example.meta.teacher).toBe('smollm2-135m-instruct@llama.cpp');
      expect(example.messages[0]!.content).toContain('ALFWorld');
      const answer = schema.parse(JSON.parse(example.messages.at(-1)!.content));
      expect(answer.reasoning.length).toBeGreaterThan(0);
      expect(Object.keys(answer)).toEqual(['reasoning', 'nextState', 'done', 'success']);
    }
    const manifest = JSON.parse(await readFile(join(directory, 'manifest.json'), 'utf8'));
    expect(manifest).toMatchObject({
      domain: 'alfworld',
      format: 'compact',
      traces: 3,
      export: { examples: 3 },
    });

    const missing = capture();
    expect(await runCli(['annotate', '--domain', 'alfworld'], missing)).toBe(2);
    expect(missing.err()).toMatch(/--out DIR is required/);
  }, 240_000);
});
