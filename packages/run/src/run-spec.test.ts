import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readRunSpec, writeRunSpec } from './run-spec.js';

let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'run-spec-'));
});
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

const setup = { domain: 'alfworld', data: '/data/alfworld', trainTasks: 12 };
const write = (name: string, value: unknown) =>
  writeFile(join(folder, name), typeof value === 'string' ? value : JSON.stringify(value));

describe('run.json', () => {
  it('reads back what a run wrote', async () => {
    const spec = {
      command: 'train' as const,
      setup,
      policy: { kind: 'llm' as const, package: '@dreamgym/llama', settings: { model: 'local' } },
      models: { experience: 'hybrid', model: 'local' },
    };
    await writeRunSpec(folder, spec);
    expect(await readRunSpec(folder)).toEqual(spec);
  });

  it('is absent from a folder that holds no run', async () => {
    expect(await readRunSpec(folder)).toBeUndefined();
  });

  it('reads the files of a train run written before it', async () => {
    await write('setup.json', setup);
    await write('models.json', { experience: 'llm' });
    expect(await readRunSpec(folder)).toEqual({
      command: 'train',
      setup,
      policy: { kind: 'linear' },
      models: { experience: 'llm' },
    });
    await write('policy.json', { kind: 'llm', settings: { model: 'local' } });
    expect((await readRunSpec(folder))?.policy).toEqual({
      kind: 'llm',
      package: '@dreamgym/llama',
      settings: { model: 'local' },
    });
  });

  it("reads the setup.json of a served run written before it (the service's config beside it)", async () => {
    await write('setup.json', { iterations: 3, setup, server: { port: 8000 } });
    await write('serve-config.json', { iterations: 3 });
    expect(await readRunSpec(folder)).toEqual({ command: 'serve', setup, server: { port: 8000 } });
  });

  it('names the file and the field of what it refuses', async () => {
    await write('run.json', '{"command": "train", ');
    await expect(readRunSpec(folder)).rejects.toThrow(/run\.json is not JSON/);
    await write('run.json', { command: 'train', setup, models: { experiance: 'llm' } });
    await expect(readRunSpec(folder)).rejects.toThrow(/run\.json.*models.*experiance/s);
    await write('run.json', { command: 'train', setup: { ...setup, trainTasks: -1 } });
    await expect(readRunSpec(folder)).rejects.toThrow(/domain set-up \(.*run\.json\).*trainTasks/s);
    await write('run.json', { command: 'eval', setup });
    await expect(readRunSpec(folder)).rejects.toThrow(/run\.json.*command/s);
  });
});
