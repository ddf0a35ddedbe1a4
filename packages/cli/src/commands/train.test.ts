/**
 * `dreamgym train --policy llm`: the LLM policy (the real SmolLM2-135M in llama.cpp for
 * acting, the real torch worker of trainers/python for its update) trained for one tiny
 * iteration on real ALFWorld data, checkpointed through the loop's policy/ folder, resumed, evaluated by `dreamgym eval`,
 * and the clear errors of a missing package or LLM flags without --policy llm.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli.js';
import { captureIo, dataRoot } from '../cli.test-support.js';

const capture = (env: NodeJS.ProcessEnv = {}) => captureIo({ env });

let directory: string;
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'dreamgym-cli-train-'));
});
afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('dreamgym train --policy', () => {
  it('fails clearly when the LLM package is missing or an LLM flag comes without --policy llm', async () => {
    const missing = capture({ DREAMGYM_DATA_DIR: dataRoot() });
    const code = await runCli(
      [
        'train',
        '--domain',
        'alfworld',
        '--run-dir',
        join(directory, 'missing'),
        '--policy',
        'llm',
        '--policy-package',
        '@dreamgym/no-such-llm-package',
      ],
      missing,
    );
    expect(code).toBe(2);
    expect(missing.err()).toMatch(
      /--policy llm needs the package @dreamgym\/no-such-llm-package, which could not be loaded .*npm install @dreamgym\/no-such-llm-package.*--policy linear/s,
    );
    // Nothing was set up: the error comes before the domain loads.
    expect(existsSync(join(directory, 'missing', 'run.json'))).toBe(false);

    const stray = capture({ DREAMGYM_DATA_DIR: dataRoot() });
    expect(
      await runCli(
        ['train', '--domain', 'alfworld', '--run-dir', join(directory, 'x'), '--model', 'local'],
        stray,
      ),
    ).toBe(2);
    expect(stray.err()).toMatch(
      /--model names the LLM of --experience llm\|hybrid, --task-generator llm and --policy llm, and none of them is selected/,
    );

    const badKind = capture({ DREAMGYM_DATA_DIR: dataRoot() });
    expect(
      await runCli(['train', '--domain', 'alfworld', '--policy', 'transformer'], badKind),
    ).toBe(2);
    expect(badKind.err()).toMatch(/--policy must be linear or llm, got "transformer"/);
  });

  it('trains the local LLM on ALFWorld for one tiny iteration, checkpoints it and resumes it', {
    // Model and worker start three times (train, resume, eval); the limit allows for a shared machine.
    timeout: 2_400_000,
  }, async () => {
    const runDirectory = join(directory, 'llm-run');
    const configFile = join(directory, 'llm-config.json');
    await writeFile(
      configFile,
      JSON.stringify({
        seed: 2,
        iterations: 1,
        tasksPerIteration: 1,
        rolloutsPerTask: 2,
        // One step an episode: each step scores every admissible ALFWorld action (30-60) with
        // the LLM, and what is checked here (the update, the checkpoint, resume and eval of an
        // LLM policy) does not depend on episode length.
        maxSteps: 1,
        concurrency: 2,
        evaluation: { every: 0 },
        setup: { offlineLimit: 200, trainTasks: 4, evalTasks: 1 },
        // Sized for 2 shared CPU cores: a short prompt and answers, LoRA on the top layer, and
        // one thread each for llama.cpp and torch: the suite keeps both cores busy, and there
        // llama.cpp's two threads wait on each other (scoring 60 ALFWorld candidates took 36 s
        // on two threads, 13 s on one).
        llmPolicy: {
          prompt: 'compact',
          historyWindow: 1,
          maxTokens: 24,
          contextSize: 2048,
          concurrency: 2,
          threads: 1,
          trainer: { loraRank: 4, topLayers: 1, threads: 1, learningRate: 1e-4 },
        },
      }),
    );
    const env = { DREAMGYM_DATA_DIR: dataRoot() };
    const io = capture(env);
    const code = await runCli(
      [
        'train',
        '--domain',
        'alfworld',
        '--config',
        configFile,
        '--run-dir',
        runDirectory,
        '--policy',
        'llm',
        '--model',
        'local',
        '--eval-mode',
        'greedy',
        '--no-curriculum',
        '--no-baseline',
      ],
      io,
    );
    expect(io.err()).not.toMatch(/unexpectedly/);
    expect(code).toBe(0);
    expect(io.err()).toMatch(/policy: LLM llm:smollm2-135m-instruct \(lora, \d+ trainable/);
    expect(io.out()).toMatch(/success after +training \(greedy\): .* on 1 real episode/);
    expect(JSON.parse(await readFile(join(runDirectory, 'run.json'), 'utf8')).policy).toMatchObject(
      {
        kind: 'llm',
        package: '@dreamgym/llama',
        settings: { model: 'local', maxTokens: 24, trainer: { topLayers: 1 } },
      },
    );
    // One iteration: one update of the LLM through the worker, its state in the checkpoint.
    const [record] = (await readFile(join(runDirectory, 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(record.episodes).toBe(2);
    expect(Number.isFinite(record.update.loss)).toBe(true);
    // Generation ran on llama.cpp's Q4_1 weights, the update on the worker's fp32 copy.
    expect(record.update.behaviourMismatch).toBeGreaterThanOrEqual(0);
    const checkpoints = join(runDirectory, 'checkpoints');
    const latest = (await readFile(join(checkpoints, 'LATEST'), 'utf8')).trim();
    const policyFolder = join(checkpoints, latest, 'policy');
    expect((await readdir(policyFolder)).sort()).toEqual(
      expect.arrayContaining([
        'llm-policy.json',
        'optimizer.pt',
        'trainer.json',
        'weights.safetensors',
      ]),
    );

    // The finished run resumes: the same LLM policy restored from the checkpoint, no new iteration.
    const resumed = capture(env);
    expect(await runCli(['train', '--run-dir', runDirectory, '--resume'], resumed)).toBe(0);
    expect(resumed.err()).toMatch(/policy: LLM llm:smollm2-135m-instruct/);
    expect(resumed.err()).toMatch(/resumed .* from checkpoint iteration-000001/);
    expect(resumed.out()).toMatch(/success after +training \(greedy\)/);

    const switched = capture(env);
    expect(
      await runCli(
        ['train', '--run-dir', runDirectory, '--resume', '--policy', 'linear'],
        switched,
      ),
    ).toBe(2);
    expect(switched.err()).toMatch(/trains the llm policy \(run.json\).*drop --policy linear/);

    // `dreamgym eval` rebuilds the run's LLM policy from run.json and its checkpoint.
    const evaluation = capture(env);
    expect(
      await runCli(
        ['eval', '--run-dir', runDirectory, '--eval-tasks', '1', '--max-steps', '1'],
        evaluation,
      ),
    ).toBe(0);
    expect(evaluation.err()).toMatch(/evaluating checkpoint iteration-000001/);
    expect(evaluation.out()).toMatch(/success \(greedy\): .* on 1 real episode/);
  });
});
