/**
 * `dreamgym proxy` as users run it: the CLI in its own process in front of the real SmolLM2,
 * killed (SIGKILL) while calls are in flight, then started again on its records: every call
 * that was answered is in the records, and the restarted proxy goes on numbering after them.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readProxyRecords } from '@dreamgym/agents/proxy';
import { LlamaChatModel, type LlamaServer, startLlamaServer } from '@dreamgym/llama';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..', '..', '..');
const children: ChildProcess[] = [];
let model: LlamaChatModel;
let server: LlamaServer;
let folder: string;

beforeAll(async () => {
  model = await LlamaChatModel.load({ model: 'local', contextSize: 512, concurrency: 1 });
  server = await startLlamaServer({ model });
  folder = await mkdtemp(join(tmpdir(), 'dreamgym-proxy-cli-'));
}, 60_000);
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await server?.close();
  await model?.dispose();
  if (folder) await rm(folder, { recursive: true, force: true });
});

/** Starts `dreamgym proxy` and resolves with its base URL. */
async function startProxy(): Promise<{ child: ChildProcess; baseURL: string }> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(root, 'packages', 'cli', 'src', 'bin.ts'),
      'proxy',
      '--upstream',
      server.baseURL,
      '--records',
      folder,
      '--port',
      '0',
    ],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (chunk) => {
    stderr += chunk;
  });
  const baseURL = await new Promise<string>((resolve, reject) => {
    let stdout = '';
    child.stdout!.on('data', (chunk) => {
      stdout += chunk;
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+\/v1)/.exec(stdout);
      if (match) resolve(match[1]!);
    });
    child.on('exit', (code) => reject(new Error(`dreamgym proxy exited with ${code}: ${stderr}`)));
  });
  return { child, baseURL };
}

const call = (baseURL: string, episode: string) =>
  fetch(`${baseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-dreamgym-episode': episode },
    body: JSON.stringify({
      model: server.modelName,
      messages: [{ role: 'user', content: `Say a word (${episode}).` }],
      max_tokens: 2,
    }),
  }).then(async (response) => {
    if (!response.ok) throw new Error(`status ${response.status}`);
    await response.json();
    return episode;
  });

describe('dreamgym proxy', () => {
  it('loses no answered call when killed, and resumes its records', async () => {
    const first = await startProxy();
    const answered: string[] = [];
    const calls = Array.from({ length: 12 }, (_, index) =>
      call(first.baseURL, `kill-${index}`).then((episode) => {
        answered.push(episode);
        if (answered.length === 4) first.child.kill('SIGKILL');
      }),
    );
    await Promise.allSettled(calls);
    expect(answered.length).toBeGreaterThanOrEqual(4);
    expect(answered.length).toBeLessThan(12);
    const { records } = await readProxyRecords(join(folder, 'calls.jsonl'));
    const recorded = new Set(records.map((record) => record.episodeId));
    for (const episode of answered) expect(recorded.has(episode), episode).toBe(true);

    const second = await startProxy();
    await call(second.baseURL, 'after-restart');
    const after = await readProxyRecords(join(folder, 'calls.jsonl'));
    expect(after.records.at(-1)).toMatchObject({
      episodeId: 'after-restart',
      seq: records.length + 1,
    });
    const exited = new Promise<number | null>((resolve) => second.child.on('exit', resolve));
    second.child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 90_000);
});
