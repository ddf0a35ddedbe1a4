/**
 * A run's real environment reads its observation budget in the tokens of the model that reads
 * the observations: `openRun` with the LLM policy (SmolLM2, llama.cpp in process, its torch
 * trainer started) on WebArena-Lite, whose real environment opens a long real page (the pydoc
 * page of Python's `typing`, ~30k SmolLM2 tokens flattened) from a server on 127.0.0.1.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { parseDreamGymConfig, type Task } from '@dreamgym/core';
import { LlamaChatModel } from '@dreamgym/llama';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openRun } from './open-run.js';
import { dataRoot } from './run.test-support.js';

const repository = resolve(import.meta.dirname, '../../..');
const webarenaAdapter = join(repository, 'adapters/webarena-lite/src/__fixtures__');

let scratch: string;
let server: Server;
let pageUrl: string;
let tokenizer: LlamaChatModel;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'dreamgym-open-run-'));
  // The page nobody here wrote: Python's own documentation of `typing`, written by pydoc.
  const python = join(repository, '.venv/bin/python');
  if (!existsSync(python)) {
    throw new Error(
      `${python} is missing: the test writes its page with it (bash scripts/setup.sh python).`,
    );
  }
  await promisify(execFile)(python, ['-m', 'pydoc', '-w', 'typing'], { cwd: scratch });
  const page = await readFile(join(scratch, 'typing.html'));
  server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(page);
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const address = server.address();
  pageUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/typing.html`;
  // WebArena-Lite's data as a run reads it: the task configs and a recorded trajectory.
  const data = join(scratch, 'webarena-lite');
  await mkdir(join(data, 'trajectories'), { recursive: true });
  await symlink(
    join(dataRoot(), 'webarena-lite/test_webarena_lite.raw.json'),
    join(data, 'test_webarena_lite.raw.json'),
  );
  await symlink(
    join(webarenaAdapter, 'trajectories/task-149.jsonl'),
    join(data, 'trajectories/task-149.jsonl'),
  );
  tokenizer = await LlamaChatModel.load({ model: 'local', contextSize: 256, concurrency: 1 });
}, 120_000);

afterAll(async () => {
  await tokenizer?.dispose();
  await new Promise((closed) => (server ? server.close(closed) : closed(undefined)));
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** Opens the run's real environment and returns the text the policy reads at the page. */
async function observe(realEnvironment: () => Promise<import('@dreamgym/core').Environment>) {
  const environment = await realEnvironment();
  try {
    const task: Task = {
      id: 'docs:typing',
      domain: 'webarena-lite',
      instruction: 'Find what TypeVar does.',
      origin: 'seed',
      meta: { startUrl: pageUrl },
    };
    return (await environment.reset(task)).text;
  } finally {
    await environment.close();
  }
}

it("holds the real environment's observations to maxObservationTokens in the LLM policy's tokens", async () => {
  const parts = await openRun({
    setup: {
      domain: 'webarena-lite',
      data: join(scratch, 'webarena-lite'),
      evalSplit: 'test',
      evalTasks: 1,
    },
    policy: {
      kind: 'llm',
      package: '@dreamgym/llama',
      settings: { model: 'local', concurrency: 1 },
    },
    selection: undefined,
    runDirectory: join(scratch, 'run'),
    env: {},
    cwd: repository,
    log: () => {},
    onDomain: () => parseDreamGymConfig({}),
    logModel: () => false,
  });
  try {
    expect(parts.policy.countTokens).toBeTypeOf('function');
    const read = await observe(() => parts.domain.realEnvironment());
    // Cut at the default budget of 8,000 tokens, counted in SmolLM2's own tokens: at most the
    // budget, and close to it (the estimate that stands in without a tokenizer cuts this page
    // at 4.3k-6.4k real tokens).
    expect(read).toContain('The observation is cut at its budget of 8000 tokens');
    const tokens = tokenizer.countTokens(read);
    expect(tokens).toBeLessThanOrEqual(8_000);
    expect(tokens).toBeGreaterThan(7_000);
    expect(parts.policy.countTokens!(read)).toBe(tokens);
  } finally {
    await parts.close();
  }
}, 300_000);

it('holds them without a model tokenizer too (the linear policy): the estimate never under-counts', async () => {
  const parts = await openRun({
    setup: {
      domain: 'webarena-lite',
      data: join(scratch, 'webarena-lite'),
      evalSplit: 'test',
      evalTasks: 1,
    },
    policy: { kind: 'linear' },
    selection: undefined,
    runDirectory: join(scratch, 'run-linear'),
    env: {},
    cwd: repository,
    log: () => {},
    onDomain: () => parseDreamGymConfig({}),
    logModel: () => false,
  });
  try {
    expect(parts.policy.countTokens).toBeUndefined();
    const read = await observe(() => parts.domain.realEnvironment());
    expect(read).toContain('The observation is cut at its budget of 8000 tokens');
    const tokens = tokenizer.countTokens(read);
    expect(tokens).toBeLessThanOrEqual(8_000);
    expect(tokens).toBeLessThan(7_000);
  } finally {
    await parts.close();
  }
}, 300_000);
