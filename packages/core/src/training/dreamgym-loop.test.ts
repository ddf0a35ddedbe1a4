import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ActionParseError, CheckpointError, ConfigError } from '../errors.js';
import { evaluatePolicy } from '../eval/policy-evaluation.js';
import type { ExperienceModel } from '../experience/experience-model.js';
import { RetrievalExperienceModel } from '../experience/retrieval-experience-model.js';
import type { Observation, Trajectory, Transition } from '../mdp/schemas.js';
import { LinearSoftmaxPolicy } from '../policy/linear-softmax-policy.js';
import type { PolicyContext } from '../policy/policy.js';
import { SeededRandom } from '../random/seeded-random.js';
import { startTypeScriptChild, waitForLine } from '../test-support/typescript-child.js';
import { CorridorEnvironment, createCorridorAdapter } from '../testing/corridor-domain.js';
import {
  corridorLoop,
  corridorLoopConfig,
  corridorOfflineBuffer,
  corridorSeedTasks,
} from './corridor-loop.test-support.js';
import {
  createLinearSoftmaxPolicy,
  type DreamGymConfigInput,
  parseDreamGymConfig,
} from './dreamgym-config.js';
import { loadRunPolicy } from './dreamgym-loop.js';
import type { IterationMetrics } from './metrics.js';

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'dreamgym-loop-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

function withoutTimings(metrics: readonly IterationMetrics[]) {
  return metrics.map(({ seconds: _, ...rest }) => rest);
}

describe('DreamGymLoop on the corridor with the embedded defaults', () => {
  it('grows the pool within lambda and the buffer, improves success, and spends the real budget exactly', async () => {
    const progress: { done: number; total: number }[] = [];
    const loop = await corridorLoop(join(directory, 'run'), {
      onIteration: (_metrics, reported) => progress.push(reported),
    });
    const { metrics, finalEvaluations } = await loop.run();
    const synthetic = metrics.filter((record) => record.phase === 'synthetic');
    const real = metrics.filter((record) => record.phase === 'real');
    expect(synthetic).toHaveLength(8);
    expect(real.length).toBeGreaterThan(0);
    expect(progress.at(-1)).toEqual({ done: metrics.length, total: metrics.length });

    // Curriculum: the pool grows, and no batch has more than lambda generated tasks.
    expect(synthetic.at(-1)!.generatedTasks).toBeGreaterThan(0);
    expect(synthetic.at(-1)!.poolSize).toBe(6 + synthetic.at(-1)!.generatedTasks);
    for (const record of synthetic) expect(record.generatedShare).toBeLessThanOrEqual(0.34);
    expect(synthetic.some((record) => record.generatedShare > 0)).toBe(true);

    // Replay: synthetic and real experience is added (exact duplicates are not stored twice,
    // and the corridor's state space is small, so growth slows down).
    for (let index = 1; index < metrics.length; index += 1) {
      expect(metrics[index]!.bufferSize).toBeGreaterThanOrEqual(metrics[index - 1]!.bufferSize);
    }
    expect(metrics.at(-1)!.bufferSize).toBeGreaterThan(synthetic[0]!.bufferSize);

    // Learning in the synthetic environment (the retrieval model simulates the corridor
    // imperfectly, so the real evaluation below is the test that matters).
    const first = synthetic[0]!.successRate;
    const lastThree = synthetic.slice(-3).reduce((sum, record) => sum + record.successRate, 0) / 3;
    console.log(
      `corridor loop: synthetic success ${synthetic.map((r) => r.successRate.toFixed(2)).join(' ')}; final evaluations ${JSON.stringify(finalEvaluations)}`,
    );
    expect(lastThree).toBeGreaterThanOrEqual(first + 0.3);
    expect(
      metrics.filter((record) => record.evaluations.length > 0).map((record) => record.iteration),
    ).toEqual([3, 7, metrics.at(-1)!.iteration]);

    // Sim-to-real: the budget is spent exactly, never exceeded.
    expect(real.at(-1)!.realTransitions).toBe(120);
    expect(finalEvaluations.map((evaluation) => evaluation.environment)).toEqual([
      'synthetic',
      'real',
    ]);
    const realEvaluation = finalEvaluations.find(
      (evaluation) => evaluation.environment === 'real',
    )!;
    expect(realEvaluation.episodes).toBe(6);
    // Trained on synthetic experience (and a little real), the policy solves real corridors
    // that the untrained uniform policy almost never solves.
    const untrained = await evaluatePolicy({
      policy: new LinearSoftmaxPolicy({ random: new SeededRandom(1), hashBits: 14 }),
      environmentFactory: () => new CorridorEnvironment({ maxSteps: corridorLoopConfig.maxSteps }),
      environment: 'real',
      tasks: corridorSeedTasks(),
      episodesPerTask: 10,
      maxSteps: corridorLoopConfig.maxSteps!,
      greedy: false,
      random: new SeededRandom(2),
    });
    console.log(`corridor loop: untrained real success ${untrained.metrics.successRate}`);
    expect(untrained.metrics.successRate).toBeLessThanOrEqual(0.2);
    expect(realEvaluation.successRate).toBeGreaterThanOrEqual(0.5);

    // The run folder holds what `dreamgym report` reads.
    const lines = (await readFile(join(directory, 'run', 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n');
    expect(lines).toHaveLength(metrics.length);
    expect(JSON.parse(await readFile(join(directory, 'run', 'config.json'), 'utf8')).seed).toBe(11);
  });

  it('revises the progress total from the real transitions used when episodes end early', async () => {
    const progress: { done: number; total: number }[] = [];
    const loop = await corridorLoop(
      join(directory, 'progress'),
      { onIteration: (_metrics, reported) => progress.push(reported) },
      {
        evaluation: { every: 0, environments: [] },
        simToReal: { realTransitionBudget: 400, tasksPerIteration: 3, rolloutsPerTask: 2 },
      },
    );
    const { metrics } = await loop.run();
    // The plan assumes every real episode runs to maxSteps (3 tasks x 2 rollouts x 16 steps:
    // 5 iterations for 400 transitions); the trained policy's corridor episodes end sooner.
    expect(metrics.filter((record) => record.phase === 'real').length).toBeGreaterThan(5);
    expect(progress.map((reported) => reported.done)).toEqual(metrics.map((_, index) => index + 1));
    for (const reported of progress) expect(reported.done).toBeLessThanOrEqual(reported.total);
    expect(progress.at(-1)).toEqual({ done: metrics.length, total: metrics.length });
  });

  it('waits for an asynchronous onIteration before the checkpoint: a snapshot per iteration holds the policy that iteration left', async () => {
    const runDirectory = join(directory, 'snapshots');
    const config: DreamGymConfigInput = {
      iterations: 3,
      evaluation: { every: 0, environments: [] },
      simToReal: { realTransitionBudget: 0, tasksPerIteration: 3, rolloutsPerTask: 2 },
    };
    const policy = createLinearSoftmaxPolicy(
      parseDreamGymConfig({ ...corridorLoopConfig, ...config }),
    );
    const snapshots: string[] = [];
    const loop = await corridorLoop(
      runDirectory,
      {
        policy,
        onIteration: async (metrics) => {
          // A slow hook: the loop may not save the iteration's checkpoint, nor finish, first.
          await new Promise((resolve) => setTimeout(resolve, 20));
          const snapshot = join(directory, `snapshot-${metrics.iteration}`);
          await policy.saveState(snapshot);
          snapshots.push(snapshot);
        },
      },
      config,
    );
    await loop.run();
    expect(snapshots).toHaveLength(3);
    // The last snapshot holds the trained policy: the same weights as the run's last checkpoint.
    const fromSnapshot = createLinearSoftmaxPolicy(parseDreamGymConfig(corridorLoopConfig));
    await fromSnapshot.loadState(snapshots.at(-1)!);
    const fromCheckpoint = createLinearSoftmaxPolicy(parseDreamGymConfig(corridorLoopConfig));
    await loadRunPolicy(runDirectory, fromCheckpoint);
    const decide = (decider: LinearSoftmaxPolicy) =>
      decider.act(
        { text: 'You are in cell 1 of the corridor.' },
        { task: corridorSeedTasks()[0]!, history: [], candidates: ['left', 'right'], greedy: true },
      );
    expect(await decide(fromSnapshot)).toEqual(await decide(policy));
    expect(await decide(fromCheckpoint)).toEqual(await decide(policy));
    expect((await decide(policy)).logprob).not.toBeCloseTo(Math.log(0.5), 6);
  });

  it('resumes after a crash mid-run exactly as an uninterrupted run of the same seed', async () => {
    const reference = await (await corridorLoop(join(directory, 'reference'))).run();

    const crashed = join(directory, 'crashed');
    const child = await startTypeScriptChild(
      resolve(import.meta.dirname, 'dreamgym-loop-child.test-support.ts'),
      [crashed],
    );
    // checkpointEvery is 2: after iteration 3 the run folder holds work past the checkpoint.
    await waitForLine(child, /^iteration 3$/);
    child.kill('SIGKILL');
    await new Promise((resolveExit) => child.once('exit', resolveExit));
    const linesAtCrash = (await readFile(join(crashed, 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n').length;
    expect(linesAtCrash).toBeGreaterThanOrEqual(3);

    const resumed = await (await corridorLoop(crashed)).run({ resume: true });
    expect(withoutTimings(resumed.metrics)).toEqual(withoutTimings(reference.metrics));
    const weights = (policy: unknown) =>
      Buffer.from((policy as LinearSoftmaxPolicy).weights.buffer);
    expect(weights(resumed.policy).equals(weights(reference.policy))).toBe(true);
  });

  it('refuses to overwrite a run, and detects a corrupt checkpoint', async () => {
    const run = join(directory, 'run');
    const loop = await corridorLoop(run);
    await loop.run();
    await expect((await corridorLoop(run)).run()).rejects.toThrow(/already holds a run.*--resume/);
    const latest = (await readFile(join(run, 'checkpoints', 'LATEST'), 'utf8')).trim();
    await writeFile(
      join(run, 'checkpoints', latest, 'policy', 'linear-softmax-policy.bin'),
      'garbage',
    );
    const error = await (await corridorLoop(run))
      .run({ resume: true })
      .catch((thrown: unknown) => thrown);
    expect(CheckpointError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/linear-softmax-policy\.bin is corrupt/);
  });
});

describe('DreamGymLoop: the starting policy', () => {
  it('evaluates the cloned policy before RL, keeps it across a resume, and measures the gap on one task sample', async () => {
    const run = join(directory, 'run');
    const config: DreamGymConfigInput = {
      iterations: 2,
      warmStart: { behaviourCloning: {} },
      evaluation: {
        every: 1,
        environments: ['real'],
        modes: ['greedy'],
        gapTasks: 3,
        atStart: true,
      },
      simToReal: { realTransitionBudget: 0 },
    };
    const result = await (await corridorLoop(run, {}, config)).run();
    const saved = JSON.parse(await readFile(join(run, 'start-evaluation.json'), 'utf8'));
    expect(result.start).toEqual(saved);
    expect(saved.evaluations).toHaveLength(1);
    expect(saved.evaluations[0]).toMatchObject({ environment: 'real', mode: 'greedy' });
    expect(saved.syntheticToRealGap.tasks).toBe(3);
    // Measured after cloning: the start evaluation is written after the warm start's record.
    expect(result.warmStart).toBeDefined();
    expect((await stat(join(run, 'start-evaluation.json'))).mtimeMs).toBeGreaterThanOrEqual(
      (await stat(join(run, 'warm-start.json'))).mtimeMs,
    );
    const resumed = await (await corridorLoop(run, {}, config)).run({ resume: true });
    expect(resumed.start).toEqual(saved);
  });

  it('keeps a warm start with no iterations as checkpoint 0, so eval and fidelity can measure it', async () => {
    const run = join(directory, 'run');
    const config: DreamGymConfigInput = {
      iterations: 0,
      warmStart: { behaviourCloning: { epochs: 2 } },
      evaluation: { every: 0, environments: ['real'], modes: ['greedy'] },
      simToReal: { realTransitionBudget: 0 },
    };
    await (await corridorLoop(run, {}, config)).run();
    const policy = createLinearSoftmaxPolicy(
      parseDreamGymConfig({ ...corridorLoopConfig, ...config }),
    );
    expect((await loadRunPolicy(run, policy)).checkpoint).toBe('iteration-000000');
  });
});

describe('DreamGymLoop: the experience model co-evolves with the policy', () => {
  it("hands every real iteration's episodes to the experience model's learn()", async () => {
    const learned: Trajectory[][] = [];
    const retrieval = new RetrievalExperienceModel();
    const experienceModel: ExperienceModel = {
      id: 'learning',
      predict: (input) => retrieval.predict(input),
      learn: (trajectories) => {
        learned.push([...trajectories]);
      },
    };
    const result = await (
      await corridorLoop(
        join(directory, 'run'),
        { experienceModel },
        {
          iterations: 1,
          simToReal: { realTransitionBudget: 60, tasksPerIteration: 2 },
        },
      )
    ).run();
    const realIterations = result.metrics.filter((record) => record.phase === 'real').length;
    expect(realIterations).toBeGreaterThan(0);
    expect(learned).toHaveLength(realIterations);
    expect(learned.flat().every((trajectory) => trajectory.source === 'real')).toBe(true);
    expect(learned.flat().reduce((steps, trajectory) => steps + trajectory.steps.length, 0)).toBe(
      result.metrics.at(-1)!.realTransitions,
    );
  });
});

describe('parseDreamGymConfig', () => {
  it('fills defaults and names a bad field', () => {
    expect(parseDreamGymConfig({}).curriculum.lambda).toBe(0.3);
    expect(parseDreamGymConfig(corridorLoopConfig).simToReal.realTransitionBudget).toBe(120);
    const error = (() => {
      try {
        parseDreamGymConfig({ curriculum: { lambda: 1.5 } });
      } catch (thrown) {
        return thrown;
      }
    })();
    expect(ConfigError.isInstance(error)).toBe(true);
    expect((error as ConfigError).field).toBe('curriculum.lambda');
    expect((error as Error).message).toMatch(/`curriculum\.lambda`: .*1/);
    expect(() => parseDreamGymConfig({ algorithm: 'sarsa' })).toThrow(/`algorithm`.*grpo/);
  });
});

/** Transitions the run appended to its experience log. */
async function experienceLog(runDirectory: string): Promise<Transition[]> {
  const text = await readFile(join(runDirectory, 'experience.jsonl'), 'utf8');
  return text
    .trim()
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => (JSON.parse(line) as { transition: Transition }).transition);
}

/** Stops a run after `iterations` iterations, as a crash after that checkpoint would. */
function stopAfter(iterations: number) {
  const controller = new AbortController();
  return {
    signal: controller.signal,
    onIteration: (_metrics: IterationMetrics, progress: { done: number }) => {
      if (progress.done === iterations) controller.abort(new Error('stopped for the test'));
    },
  };
}

describe('DreamGymLoop algorithms and resume', () => {
  it.each([
    ['ppo', { algorithm: 'ppo' }],
    ['dr-grpo with a KL term', { algorithm: 'dr-grpo', trainer: { loss: { klCoefficient: 0.1 } } }],
  ] as const)(
    '%s: resumes with its value function and KL reference exactly',
    async (_name, overrides) => {
      const config = {
        ...overrides,
        iterations: 4,
        checkpointEvery: 1,
        evaluation: { every: 0, environments: [] },
        simToReal: { realTransitionBudget: 0 },
      } as DreamGymConfigInput;
      const reference = await (await corridorLoop(join(directory, 'reference'), {}, config)).run();
      const update = reference.metrics.at(-1)!.update;
      if (overrides.algorithm === 'ppo') expect(update.valueLoss).toBeGreaterThan(0);
      else expect(update.kl).toBeGreaterThan(0);

      const stopped = join(directory, 'stopped');
      const stop = stopAfter(2);
      await expect(
        (await corridorLoop(stopped, { onIteration: stop.onIteration }, config)).run({
          signal: stop.signal,
        }),
      ).rejects.toThrow(/stopped for the test/);
      const checkpoint = (await readFile(join(stopped, 'checkpoints', 'LATEST'), 'utf8')).trim();
      const parts = await readdir(join(stopped, 'checkpoints', checkpoint));
      if (overrides.algorithm === 'ppo') expect(parts).toContain('value-weights.bin');
      else expect(parts).toContain('reference');

      const resumed = await (await corridorLoop(stopped, {}, config)).run({ resume: true });
      expect(withoutTimings(resumed.metrics)).toEqual(withoutTimings(reference.metrics));
      const weights = (policy: unknown) =>
        Buffer.from((policy as LinearSoftmaxPolicy).weights.buffer);
      expect(weights(resumed.policy).equals(weights(reference.policy))).toBe(true);
    },
  );
});

describe('DreamGymLoop with fork credit', () => {
  it.each(['grpo', 'ppo'] as const)(
    '%s: counts and logs the forks, and resumes from a stop mid-iteration exactly',
    async (algorithm) => {
      const config = {
        algorithm,
        iterations: 3,
        checkpointEvery: 1,
        trainer: { credit: 'fork', forks: { continuations: 2, every: 2 } },
        evaluation: { every: 0, environments: [] },
        simToReal: { realTransitionBudget: 0 },
      } as DreamGymConfigInput;
      /** The loop's policy, counting its decisions; `onCall` sees each count. */
      const countingPolicy = (onCall: (calls: number) => void = () => {}) => {
        const policy = createLinearSoftmaxPolicy(
          parseDreamGymConfig({ ...corridorLoopConfig, ...config }),
        );
        const act = policy.act.bind(policy);
        let calls = 0;
        policy.act = (observation: Observation, context: PolicyContext) => {
          calls += 1;
          onCall(calls);
          return act(observation, context);
        };
        return { policy, calls: () => calls };
      };
      const counted = countingPolicy();
      const callsAt: number[] = [];
      const logs: string[] = [];
      const reference = await (
        await corridorLoop(
          join(directory, 'reference'),
          {
            policy: counted.policy,
            log: (line) => logs.push(line),
            onIteration: () => callsAt.push(counted.calls()),
          },
          config,
        )
      ).run();
      let total = 0;
      for (const record of reference.metrics) {
        const forkSteps = record.update.forkSteps!;
        expect(forkSteps).toBeGreaterThan(record.update.forkStates!);
        total += forkSteps;
        expect(record.forkTransitions).toBe(total);
        expect(logs).toContain(
          `iteration ${record.iteration + 1}: fork credit: ${record.update.forkStates} states forked, ${forkSteps} synthetic steps in their continuations beside the episodes' ${record.syntheticTransitions - (reference.metrics[record.iteration - 1]?.syntheticTransitions ?? 0)} (${total} fork steps in all)`,
        );
      }

      // Stopped while iteration 3 plays its forks (its episodes are collected, its update not made).
      const third = reference.metrics[2]!;
      const episodeSteps = third.syntheticTransitions - reference.metrics[1]!.syntheticTransitions;
      const stopAt = callsAt[1]! + episodeSteps + Math.floor(third.update.forkSteps! / 2);
      const controller = new AbortController();
      const stopping = countingPolicy((calls) => {
        if (calls === stopAt) controller.abort(new Error('stopped for the test'));
      });
      const stopped = join(directory, 'stopped');
      await expect(
        (await corridorLoop(stopped, { policy: stopping.policy }, config)).run({
          signal: controller.signal,
        }),
      ).rejects.toThrow(/stopped for the test/);
      expect(
        (await readFile(join(stopped, 'metrics.jsonl'), 'utf8')).trim().split('\n'),
      ).toHaveLength(2);

      const resumed = await (await corridorLoop(stopped, {}, config)).run({ resume: true });
      expect(withoutTimings(resumed.metrics)).toEqual(withoutTimings(reference.metrics));
      const weights = (policy: unknown) =>
        Buffer.from((policy as LinearSoftmaxPolicy).weights.buffer);
      expect(weights(resumed.policy).equals(weights(reference.policy))).toBe(true);
    },
  );
});

describe('loadRunPolicy', () => {
  it("restores the latest checkpoint's policy and, given a buffer, the experience it covers", async () => {
    const run = join(directory, 'run');
    const config = {
      iterations: 3,
      checkpointEvery: 1,
      evaluation: { every: 0, environments: [] },
      simToReal: { realTransitionBudget: 0 },
    } as DreamGymConfigInput;
    const { replayBuffer: trained } = await corridorOfflineBuffer();
    const result = await (await corridorLoop(run, { replayBuffer: trained }, config)).run();
    const experienceFile = join(run, 'experience.jsonl');
    const covered = await readFile(experienceFile, 'utf8');
    const lines = covered.trim().split('\n').length;
    expect(lines).toBeGreaterThan(0);
    // What a crash after the last checkpoint left: a line the checkpoint does not cover.
    await writeFile(
      experienceFile,
      `${covered}${covered.split('\n')[0]!.replace(/"iteration":\d+/, '"iteration":9')}\n`,
    );

    const policy = createLinearSoftmaxPolicy(
      parseDreamGymConfig({ ...corridorLoopConfig, ...config }),
    );
    const { replayBuffer } = await corridorOfflineBuffer();
    const offlineSize = replayBuffer.size;
    const loaded = await loadRunPolicy(run, policy, { replayBuffer });
    expect(loaded).toEqual({ checkpoint: 'iteration-000003', experienceTransitions: lines });
    expect(replayBuffer.size).toBe(trained.size);
    expect(replayBuffer.size).toBeGreaterThan(offlineSize);
    const weights = (value: unknown) => Buffer.from((value as LinearSoftmaxPolicy).weights.buffer);
    expect(weights(policy).equals(weights(result.policy))).toBe(true);

    // Without a buffer, only the policy.
    expect(await loadRunPolicy(run, policy)).toEqual({
      checkpoint: 'iteration-000003',
      experienceTransitions: 0,
    });

    // A log shorter than the checkpoint says is damaged.
    await writeFile(experienceFile, `${covered.split('\n')[0]}\n`);
    const error = await loadRunPolicy(run, policy, {
      replayBuffer: (await corridorOfflineBuffer()).replayBuffer,
    }).catch((caught: unknown) => caught);
    expect(CheckpointError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(
      new RegExp(`experience\\.jsonl holds 1 lines but the checkpoint covers ${lines}`),
    );
  });
});

describe('DreamGymLoop ablations and penalties', () => {
  const short = {
    iterations: 3,
    evaluation: { every: 0, environments: [] },
    simToReal: { realTransitionBudget: 0 },
  } satisfies DreamGymConfigInput;

  it('no curriculum: the pool never grows', async () => {
    const { metrics } = await (
      await corridorLoop(join(directory, 'run'), {}, { ...short, curriculum: { enabled: false } })
    ).run();
    expect(metrics.map((record) => record.generatedTasks)).toEqual([0, 0, 0]);
    expect(metrics.every((record) => record.poolSize === 6)).toBe(true);
  });

  it('no replay write-back: the buffer keeps only the offline transitions', async () => {
    const loop = await corridorLoop(
      join(directory, 'run'),
      {},
      { ...short, replayWriteBack: false },
    );
    const { metrics } = await loop.run();
    expect(new Set(metrics.map((record) => record.bufferSize)).size).toBe(1);
    expect(await experienceLog(join(directory, 'run'))).toEqual([]);
  });

  it('no retrieval and no history: the experience model gets no demonstrations and no history', async () => {
    const seen: Array<{ demos: number; history: number }> = [];
    const model = new RetrievalExperienceModel();
    const recording: ExperienceModel = {
      id: 'recording',
      predict: (input) => {
        seen.push({ demos: input.demos.length, history: input.history.length });
        return model.predict(input);
      },
    };
    await (
      await corridorLoop(
        join(directory, 'run'),
        { experienceModel: recording },
        { ...short, iterations: 1, retrieval: { enabled: false }, history: { enabled: false } },
      )
    ).run();
    expect(seen.length).toBeGreaterThan(10);
    expect(seen.every((call) => call.demos === 0 && call.history === 0)).toBe(true);
  });

  it('adds a negative invalid-action penalty to the reward of invalid actions', async () => {
    const corridor = createCorridorAdapter();
    // "go left" is outside this adapter's grammar: the synthetic environment answers it as
    // an invalid action, with the configured penalty as its reward.
    const adapter = {
      ...corridor,
      parseAction: (text: string) => {
        if (/go left/.test(text)) {
          throw new ActionParseError(`"${text}" is not allowed here.`, { action: text });
        }
        return corridor.parseAction(text);
      },
    };
    const run = join(directory, 'run');
    await (await corridorLoop(run, { adapter }, { ...short, invalidActionPenalty: -0.5 })).run();
    const transitions = await experienceLog(run);
    const invalid = transitions.filter((transition) => transition.action === 'go left');
    expect(invalid.length).toBeGreaterThan(0);
    expect(new Set(invalid.map((transition) => transition.reward))).toEqual(new Set([-0.5]));
    expect(transitions.every((transition) => transition.reward <= 1)).toBe(true);
  });
});

describe('DreamGymLoop warm start', () => {
  it('clones the offline trajectories before RL, keeping the best held-out epoch', async () => {
    const run = join(directory, 'run');
    const result = await (
      await corridorLoop(
        run,
        {},
        {
          iterations: 0,
          warmStart: { behaviourCloning: { epochs: 6, miniBatchSize: 16, heldOutShare: 0.34 } },
          evaluation: { every: 0, environments: ['real'], modes: ['greedy', 'sampled'] },
          simToReal: { realTransitionBudget: 0 },
        },
      )
    ).run();
    const warmStart = result.warmStart!;
    expect(warmStart.heldOutTasks).toBe(2);
    expect(warmStart.trainSamples).toBeGreaterThan(20);
    expect(warmStart.bestHeldOutNegativeLogLikelihood).toBeLessThan(
      warmStart.initialHeldOutNegativeLogLikelihood,
    );
    expect(JSON.parse(await readFile(join(run, 'warm-start.json'), 'utf8')).bestEpoch).toBe(
      warmStart.bestEpoch,
    );
    // With no iterations, the run evaluates the cloned policy as it stands, in every mode.
    expect(result.metrics).toEqual([]);
    expect(result.finalEvaluations.map((metrics) => metrics.mode)).toEqual(['greedy', 'sampled']);
    const untrained = await evaluatePolicy({
      policy: createLinearSoftmaxPolicy(parseDreamGymConfig(corridorLoopConfig)),
      environmentFactory: () => new CorridorEnvironment({ maxSteps: corridorLoopConfig.maxSteps }),
      environment: 'real',
      tasks: corridorSeedTasks(),
      maxSteps: corridorLoopConfig.maxSteps!,
      greedy: false,
      random: new SeededRandom(5),
    });
    expect(result.finalEvaluations[1]!.successRate).toBeGreaterThan(untrained.metrics.successRate);
  });

  it('starts RL with fresh optimiser moments: iterations without a learning signal keep the cloned weights', async () => {
    // Without retrieval the experience model has no evidence: every action has no effect, no
    // episode succeeds, and every advantage is zero. Adam steps on zero gradients would still
    // move the weights by the moments behaviour cloning left, had the loop kept them.
    const config = {
      ...corridorLoopConfig,
      warmStart: { behaviourCloning: { epochs: 4, miniBatchSize: 16, heldOutShare: 0.34 } },
      evaluation: { every: 0, environments: [] },
      simToReal: { realTransitionBudget: 0 },
      retrieval: { enabled: false },
    } satisfies DreamGymConfigInput;
    const cloned = createLinearSoftmaxPolicy(parseDreamGymConfig(config));
    await (
      await corridorLoop(
        join(directory, 'cloned'),
        { policy: cloned },
        { ...config, iterations: 0 },
      )
    ).run();
    const trained = createLinearSoftmaxPolicy(parseDreamGymConfig(config));
    const { metrics } = await (
      await corridorLoop(
        join(directory, 'trained'),
        { policy: trained },
        { ...config, iterations: 2 },
      )
    ).run();
    expect(metrics.map((record) => record.update.gradNorm)).toEqual([0, 0]);
    expect(trained.updates).toBeGreaterThan(0);
    expect(Array.from(trained.weights)).toEqual(Array.from(cloned.weights));
  });

  it('needs demonstrations', async () => {
    await expect(
      corridorLoop(
        join(directory, 'run'),
        { demonstrations: [] },
        {
          warmStart: { behaviourCloning: {} },
        },
      ),
    ).rejects.toThrow(/warmStart\.behaviourCloning needs demonstrations/);
  });
});

describe('evaluatePolicy', () => {
  it('reports success with its Wilson interval, the mode, and step-limit truncations', async () => {
    const tasks = corridorSeedTasks();
    // The walker always goes right: it never takes the key, so every episode hits the limit.
    const walker = {
      id: 'walker',
      act: async () => ({ action: 'go right' }),
    };
    const { metrics, rollouts } = await evaluatePolicy({
      policy: walker,
      environmentFactory: () => new CorridorEnvironment({ maxSteps: 5 }),
      environment: 'real',
      tasks,
      episodesPerTask: 2,
      maxSteps: 5,
      random: new SeededRandom(1),
    });
    expect(metrics).toMatchObject({
      environment: 'real',
      mode: 'greedy',
      episodes: 12,
      successRate: 0,
      truncatedEpisodes: 12,
      meanSteps: 5,
    });
    expect(metrics.successInterval95[0]).toBeCloseTo(0, 12);
    expect(metrics.successInterval95[1]).toBeCloseTo(0.2425, 3);
    expect(rollouts.every((rollout) => rollout.truncated && !rollout.success)).toBe(true);

    // An oracle solves every corridor; sampled mode is reported as such.
    const oracle = {
      id: 'oracle',
      act: async (observation: Observation, context: PolicyContext) => {
        const { keyRoom, doorRoom } = context.task.meta as { keyRoom: number; doorRoom: number };
        const room = Number(/You are in room (\d+)/.exec(observation.text)![1]);
        const actions = observation.actions ?? [];
        if (actions.includes('open door') && /carry the key/.test(observation.text))
          return { action: 'open door' };
        if (actions.includes('take key')) return { action: 'take key' };
        const target = /carry the key/.test(observation.text) ? doorRoom : keyRoom;
        return { action: target > room ? 'go right' : 'go left' };
      },
    };
    const solved = await evaluatePolicy({
      policy: oracle,
      environmentFactory: () => new CorridorEnvironment({ maxSteps: 30 }),
      environment: 'real',
      tasks,
      maxSteps: 30,
      greedy: false,
      random: new SeededRandom(1),
    });
    expect(solved.metrics).toMatchObject({ mode: 'sampled', successRate: 1, truncatedEpisodes: 0 });
  });
});
