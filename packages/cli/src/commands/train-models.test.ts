/**
 * `dreamgym train` selecting its model-backed parts: short real runs on ALFWorld data with the
 * reasoning experience model and the grounded hybrid on the real local SmolLM2-135M (the
 * hybrid run also with the LLM task generator, the same loaded model), resumed with the
 * parts its run.json names; the replay buffer embedded through an OpenAI-compatible
 * embeddings endpoint (core's recorded test server on 127.0.0.1: no embedding model runs
 * here); and the clear errors of flag combinations that cannot work, each naming its flag
 * and raised before the domain loads.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startOpenAICompatibleServer } from '@dreamgym/test-support';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli } from '../cli.js';
import { captureIo, dataRoot } from '../cli.test-support.js';

let directory: string;
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'dreamgym-cli-train-models-'));
});
afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

const env = () => ({ DREAMGYM_DATA_DIR: dataRoot() });

/** Runs `dreamgym train --domain alfworld` with `args`; expects exit code 2 and returns stderr. */
async function refused(args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<string> {
  const io = captureIo({ env: { ...env(), ...extraEnv } });
  const runDirectory = join(directory, `refused-${Math.random().toString(36).slice(2)}`);
  const code = await runCli(
    ['train', '--domain', 'alfworld', '--run-dir', runDirectory, ...args],
    io,
  );
  expect(code, io.err()).toBe(2);
  // Refused before the domain loads: nothing was written.
  expect(existsSync(join(runDirectory, 'run.json'))).toBe(false);
  return io.err();
}

/**
 * One iteration of one task, no evaluation. A SmolLM2 experience step took 20-40 s on two
 * shared cores (a ~900-token prompt, and greedy answers that often run to the format's token
 * limit; the default single thread decodes fastest when other processes share the cores), so
 * each LLM run is one rollout of one step, one request at a time.
 */
async function shortRun(
  name: string,
  models: string[],
  shape: { rolloutsPerTask: number; maxSteps: number; k: number },
) {
  const runDirectory = join(directory, name);
  const configFile = join(directory, `${name}.json`);
  await writeFile(
    configFile,
    JSON.stringify({
      seed: 3,
      iterations: 1,
      tasksPerIteration: 1,
      rolloutsPerTask: shape.rolloutsPerTask,
      maxSteps: shape.maxSteps,
      concurrency: 2,
      retrieval: { k: shape.k },
      evaluation: { every: 0, environments: [] },
      setup: { offlineLimit: 200, trainTasks: 2, evalTasks: 1 },
    }),
  );
  const io = captureIo({ env: env() });
  const started = performance.now();
  const code = await runCli(
    [
      'train',
      '--domain',
      'alfworld',
      '--config',
      configFile,
      '--run-dir',
      runDirectory,
      '--no-baseline',
      ...models,
    ],
    io,
  );
  const seconds = (performance.now() - started) / 1000;
  expect(code, io.err()).toBe(0);
  const [record, ...more] = (await readFile(join(runDirectory, 'metrics.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
  expect(more).toEqual([]);
  expect(record).toMatchObject({
    iteration: 0,
    phase: 'synthetic',
    episodes: shape.rolloutsPerTask,
  });
  expect(Number.isFinite(record.update.loss)).toBe(true);
  const experience = (await readFile(join(runDirectory, 'experience.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line).transition);
  return { io, runDirectory, record, experience, seconds };
}

/**
 * `dreamgym eval --environment synthetic` of a run on one train task (it starts from its expert
 * trajectory's first observation), `maxSteps` steps long, with `extra` flags.
 */
async function evalSynthetic(runDirectory: string, maxSteps: number, extra: string[] = []) {
  const io = captureIo({ env: env() });
  const code = await runCli(
    [
      'eval',
      '--run-dir',
      runDirectory,
      '--environment',
      'synthetic',
      '--eval-split',
      'train',
      '--eval-tasks',
      '1',
      '--max-steps',
      String(maxSteps),
      ...extra,
    ],
    io,
  );
  return { io, code };
}

/** The local model's loads and structured requests while `run` runs (the CLI imports the same module). */
async function countingLlama<T>(
  run: () => Promise<T>,
): Promise<T & { loads: number; structuredCalls: number }> {
  const { LlamaChatModel } = await import('@dreamgym/llama');
  const load = vi.spyOn(LlamaChatModel, 'load');
  const structured = vi.spyOn(LlamaChatModel.prototype, 'completeStructured');
  try {
    const result = await run();
    return {
      ...result,
      loads: load.mock.calls.length,
      structuredCalls: structured.mock.calls.length,
    };
  } finally {
    load.mockRestore();
    structured.mockRestore();
  }
}

/** The flags of the local model sized for the tests (see {@link shortRun}). */
const LOCAL_MODEL = ['--model', 'local', '--model-concurrency', '1'];

describe('dreamgym train model flags', () => {
  it('lists them in --help', async () => {
    const io = captureIo();
    expect(await runCli(['train', '--help'], io)).toBe(0);
    for (const flag of [
      '--experience embedded|llm|hybrid',
      '--task-generator mutation|llm',
      '--embedder hashing|openai',
      '--model local|PATH.gguf|NAME',
      '--base-url URL',
      '--embedding-model NAME',
      '--policy linear|llm',
      '--policy-model local|PATH.gguf|NAME',
    ]) {
      expect(io.out()).toContain(flag);
    }
  });

  it('refuses combinations that cannot work, naming the flag', async () => {
    const served = ['--base-url', 'http://127.0.0.1:9/v1', '--model', 'Qwen2.5-7B-Instruct'];
    const cases: Array<[string[], RegExp]> = [
      [['--experience', 'dream'], /--experience must be embedded or llm or hybrid, got "dream"/],
      [['--task-generator', 'gpt'], /--task-generator must be mutation or llm, got "gpt"/],
      [['--embedder', 'bert'], /--embedder must be hashing or openai, got "bert"/],
      [
        ['--embedder', 'openai'],
        /--embedder openai needs --embedding-model NAME and a server \(--embedding-base-url URL or --base-url URL\)/,
      ],
      [
        ['--embedder', 'openai', '--embedding-model', 'bge-small'],
        /--embedder openai needs --embedding-model NAME and a server/,
      ],
      [['--embedding-model', 'bge-small'], /--embedding-model is a setting of --embedder openai/],
      [
        ['--experience', 'llm', '--base-url', 'http://127.0.0.1:9/v1'],
        /--base-url needs --model NAME: the model name the server serves/,
      ],
      [
        ['--experience', 'llm', '--base-url', 'http://127.0.0.1:9/v1', '--model', 'local'],
        /--model local is a local model; drop --base-url/,
      ],
      [
        ['--experience', 'llm', '--base-url', 'localhost:8000', '--model', 'm'],
        /--base-url must be an http\(s\) URL/,
      ],
      [
        served,
        /--base-url is the server of --experience llm\|hybrid and --task-generator llm, and neither is selected \(an embedding server alone: --embedding-base-url URL\)/,
      ],
      [['--model', 'local'], /--model names the LLM of --experience llm\|hybrid/],
      [
        ['--experience-format', 'compact'],
        /--experience-format is a setting of the LLM experience model: add --experience llm or hybrid/,
      ],
      [
        ['--task-generator', 'llm', '--experience-temperature', '0.5'],
        /--experience-temperature is a setting of the LLM experience model/,
      ],
      [
        ['--experience', 'llm', '--experience-temperature', '3'],
        /--experience-temperature must be between 0 and 2, got 3/,
      ],
      [
        ['--model-threads', '2'],
        /--model-threads is a setting of the in-process model of --experience llm\|hybrid and --task-generator llm, and neither is selected/,
      ],
      [
        ['--experience', 'hybrid', ...served, '--model-context-size', '4096'],
        /--model-context-size is a setting of an in-process model; the server at --base-url has its own/,
      ],
      [
        ['--experience', 'llm', ...served, '--policy', 'llm'],
        /--policy llm trains its model in process, and --model Qwen2.5-7B-Instruct is served at --base-url: name the policy's local model with --policy-model/,
      ],
      [
        ['--policy-model', 'local'],
        /--policy-model is a setting of the LLM policy: add --policy llm/,
      ],
    ];
    for (const [args, message] of cases)
      expect(await refused(args), args.join(' ')).toMatch(message);
  });

  it('refuses a local model that is not there before loading the domain', async () => {
    const empty = join(directory, 'no-models');
    await mkdir(empty, { recursive: true });
    expect(
      await refused(['--experience', 'llm', '--model', 'local'], { DREAMGYM_MODEL_DIR: empty }),
    ).toMatch(/Model smollm2-135m-instruct is not in the model cache .*dreamgym model pull/s);
    expect(await refused(['--task-generator', 'llm', '--model', 'missing.gguf'])).toMatch(
      /Model file .*missing\.gguf does not exist/,
    );
  });

  it('keeps the models a run started with on resume', async () => {
    const runDirectory = join(directory, 'resumed');
    await mkdir(runDirectory, { recursive: true });
    const spec = (models: Record<string, string>) =>
      writeFile(
        join(runDirectory, 'run.json'),
        JSON.stringify({
          command: 'train',
          setup: { domain: 'alfworld', data: join(dataRoot(), 'alfworld') },
          policy: { kind: 'linear' },
          models,
        }),
      );
    await spec({ experience: 'llm', model: 'local' });
    await writeFile(join(runDirectory, 'config.json'), '{}');
    const resume = async (args: string[]) => {
      const io = captureIo({ env: env() });
      expect(await runCli(['train', '--run-dir', runDirectory, '--resume', ...args], io)).toBe(2);
      return io.err();
    };
    expect(await resume(['--experience', 'hybrid'])).toMatch(
      /was trained with --experience llm \(run\.json\); --resume continues it as it started: drop --experience hybrid/,
    );
    expect(await resume(['--task-generator', 'llm'])).toMatch(
      /was trained with the default --task-generator \(run\.json\).*drop --task-generator llm/,
    );
    // Which model is fixed; how the local one runs may change.
    expect(await resume(['--model', 'other.gguf'])).toMatch(/drop --model other\.gguf/);
    expect(await resume(['--model-threads', 'two'])).toMatch(/--model-threads must be an integer/);
    await spec({ experiance: 'llm' });
    expect(await resume([])).toMatch(/run\.json.*models.*experiance/s);
  });
});

describe('dreamgym train --embedder openai', () => {
  it('embeds the replay buffer through the embeddings server', {
    timeout: 120_000,
  }, async () => {
    const server = await startOpenAICompatibleServer({ embeddingDimension: 32 });
    try {
      const run = await shortRun(
        'embedder',
        [
          '--embedder',
          'openai',
          '--embedding-model',
          'test-embedder',
          '--embedding-base-url',
          server.url,
        ],
        { rolloutsPerTask: 2, maxSteps: 2, k: 4 },
      );
      expect(run.io.err()).toMatch(
        new RegExp(`embedder: test-embedder at ${server.url.replace(/[.]/g, '\\.')}`),
      );
      const requests = server.requestsTo('/v1/embeddings');
      // The dimension probe, the offline transitions, then the run's own queries.
      expect(requests.length).toBeGreaterThan(2);
      expect(requests.every((request) => request.status === 200)).toBe(true);
      expect(run.record.bufferSize).toBeGreaterThan(0);
      expect(JSON.parse(await readFile(join(run.runDirectory, 'run.json'), 'utf8')).models).toEqual(
        {
          embedder: 'openai',
          'embedding-model': 'test-embedder',
          'embedding-base-url': server.url,
        },
      );

      // `dreamgym eval --environment synthetic` embeds with the run's embedder; where the
      // server has moved, --embedding-base-url says so.
      const moved = await startOpenAICompatibleServer({ embeddingDimension: 32 });
      try {
        const before = server.requestsTo('/v1/embeddings').length;
        const { io, code } = await evalSynthetic(run.runDirectory, 2, [
          '--embedding-base-url',
          moved.url,
        ]);
        expect(code, io.err()).toBe(0);
        expect(io.err()).toMatch(
          new RegExp(`embedder: test-embedder at ${moved.url.replace(/[.]/g, '\\.')}`),
        );
        expect(io.err()).toMatch(/replay buffer: \d+ offline transitions \+ \d+ the run added/);
        expect(io.out()).toMatch(/success \(greedy\): .* on 1 synthetic episode/);
        expect(moved.requestsTo('/v1/embeddings').length).toBeGreaterThan(2);
        expect(server.requestsTo('/v1/embeddings')).toHaveLength(before);
      } finally {
        await moved.close();
      }
    } finally {
      await server.close();
    }
  });

  it('stops before the domain loads when the embeddings server is not there', {
    timeout: 60_000,
  }, async () => {
    expect(
      await refused([
        '--embedder',
        'openai',
        '--embedding-model',
        'test-embedder',
        '--embedding-base-url',
        'http://127.0.0.1:9/v1',
      ]),
    ).toMatch(
      /--embedder openai could not use test-embedder at http:\/\/127\.0\.0\.1:9\/v1: .*connection failed.* Check --embedding-base-url/,
    );
  });
});

describe('dreamgym train with the local LLM on ALFWorld', () => {
  it('trains with the reasoning experience model on SmolLM2, resumes and evaluates with it', {
    timeout: 420_000,
  }, async () => {
    // One rollout of one step: each SmolLM2 step costs 20-35 s on two shared cores.
    const run = await countingLlama(() =>
      shortRun('llm', ['--experience', 'llm', ...LOCAL_MODEL], {
        rolloutsPerTask: 1,
        maxSteps: 1,
        k: 1,
      }),
    );
    const log = run.io.err();
    expect(log).toMatch(
      /experience model: the reasoning LLM smollm2-135m-instruct in process \(.*\.gguf\) \(compact prompt, temperature 0\)/,
    );
    expect(log).toMatch(/task generator: the adapter's mutations/);
    expect(log).toMatch(/embedder: hashing/);
    expect(log).toMatch(/policy: linear softmax/);
    expect(run.experience).toHaveLength(1);
    expect(run.experience.every((transition) => transition.source === 'synthetic')).toBe(true);
    // Every synthetic step was the LLM's (one request each, more when an answer was malformed).
    expect(run.loads).toBe(1);
    expect(run.structuredCalls).toBeGreaterThanOrEqual(run.experience.length);
    expect(JSON.parse(await readFile(join(run.runDirectory, 'run.json'), 'utf8')).models).toEqual({
      experience: 'llm',
      model: 'local',
      'model-concurrency': '1',
    });
    process.stdout.write(
      `train --experience llm: ${run.seconds.toFixed(1)} s, ${run.experience.length} synthetic steps, ${run.structuredCalls} LLM requests\n`,
    );

    // The finished run resumes with the parts run.json names, and adds no iteration.
    const resumed = captureIo({ env: env() });
    expect(await runCli(['train', '--run-dir', run.runDirectory, '--resume'], resumed)).toBe(0);
    expect(resumed.err()).toMatch(/experience model: the reasoning LLM smollm2-135m-instruct/);
    expect(resumed.err()).toMatch(/resumed .* from checkpoint iteration-000001/);

    // `dreamgym eval --environment synthetic` steps the run's own synthetic environment: the
    // LLM of run.json, retrieving from the offline transitions and the run's experience.
    // On a train task, which starts from its expert trajectory's first observation (SmolLM2
    // cannot write a whole ALFWorld room as an initial state within its token limit).
    const evaluation = await countingLlama(() => evalSynthetic(run.runDirectory, 1));
    expect(evaluation.code, evaluation.io.err()).toBe(0);
    expect(evaluation.io.err()).toMatch(
      /experience model: the reasoning LLM smollm2-135m-instruct in process/,
    );
    expect(evaluation.io.err()).toMatch(
      /replay buffer: \d+ offline transitions \+ 1 the run added up to iteration-000001/,
    );
    expect(evaluation.loads).toBe(1);
    expect(evaluation.structuredCalls).toBeGreaterThanOrEqual(1);
    expect(evaluation.io.out()).toMatch(/success \(greedy\): .* on 1 synthetic episode/);

    // The real environment uses none of the run's models: their settings are refused.
    const real = captureIo({ env: env() });
    expect(
      await runCli(['eval', '--run-dir', run.runDirectory, '--model-threads', '2'], real),
    ).toBe(2);
    expect(real.err()).toMatch(
      /--model-threads is a setting of the synthetic environment's models/,
    );
  });

  it('trains with the grounded hybrid and the LLM task generator on one loaded SmolLM2', {
    timeout: 300_000,
  }, async () => {
    // One rollout of one step. A group of one has no reward variance, so the curriculum asks the LLM generator for nothing here (its own
    // tests run it); what counts is that both parts share one loaded model.
    const run = await countingLlama(() =>
      shortRun('hybrid', ['--experience', 'hybrid', '--task-generator', 'llm', ...LOCAL_MODEL], {
        rolloutsPerTask: 1,
        maxSteps: 1,
        // Four neighbours: where they disagree, the hybrid consults the LLM.
        k: 4,
      }),
    );
    const log = run.io.err();
    expect(log).toMatch(
      /experience model: grounded hybrid of retrieval and the reasoning LLM smollm2-135m-instruct in process/,
    );
    expect(log).toMatch(/task generator: LLM \(smollm2-135m-instruct in process/);
    expect(run.loads).toBe(1);
    expect(run.structuredCalls).toBeGreaterThanOrEqual(1);
    expect(run.experience.length).toBeGreaterThan(0);
    expect(run.experience.every((transition) => transition.source === 'synthetic')).toBe(true);
    process.stdout.write(
      `train --experience hybrid --task-generator llm: ${run.seconds.toFixed(1)} s, ${run.experience.length} synthetic steps, ${run.structuredCalls} LLM requests\n`,
    );
  });
});
