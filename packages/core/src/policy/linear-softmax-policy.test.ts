import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CheckpointError, ConfigError } from '../errors.js';
import { SeededRandom } from '../random/seeded-random.js';
import { collectRollouts } from '../rollout/rollout.js';
import { CorridorEnvironment, corridorTask } from '../testing/corridor-domain.js';
import { rolloutSamples } from '../training/policy-gradient-trainer.js';
import { LinearSoftmaxPolicy, type PreparedDecision } from './linear-softmax-policy.js';
import {
  type LinearSoftmaxPolicyHeader,
  writeLinearSoftmaxPolicyFile,
} from './linear-softmax-policy-file.js';
import { ppoStepLoss, resolvePpoLossOptions } from './ppo-loss.js';

const directory = await mkdtemp(join(tmpdir(), 'dreamgym-policy-'));
afterAll(() => rm(directory, { recursive: true, force: true }));

const task = corridorTask({ length: 6, keyRoom: 2, doorRoom: 4 });

async function preparedBatch(policy: LinearSoftmaxPolicy): Promise<PreparedDecision[]> {
  const rollouts = await collectRollouts({
    policy,
    tasks: [task],
    rolloutsPerTask: 3,
    random: new SeededRandom(5),
    environmentFactory: () => new CorridorEnvironment({ maxSteps: 6 }),
    maxSteps: 6,
  });
  return rolloutSamples(rollouts).map(({ sample }) => policy.prepare(sample));
}

describe('LinearSoftmaxPolicy', () => {
  it('acts uniformly at zero weights, with exact log-probabilities', async () => {
    const policy = new LinearSoftmaxPolicy({ random: new SeededRandom(1), hashBits: 12 });
    const observation = {
      text: 'You are in room 1.',
      actions: ['go left', 'go right', 'take key'],
    };
    const decision = await policy.act(observation, { task, history: [] });
    expect(observation.actions).toContain(decision.action);
    expect(decision.logprob).toBeCloseTo(Math.log(1 / 3), 12);
    const { logProbabilities } = policy.distribution(observation, { task, history: [] });
    expect(Array.from(logProbabilities, Math.exp).reduce((a, b) => a + b)).toBeCloseTo(1, 12);
  });

  it('falls back to the caller candidates and says what to do when there are none', async () => {
    const policy = new LinearSoftmaxPolicy({ random: new SeededRandom(1), hashBits: 12 });
    const decision = await policy.act(
      { text: 'room' },
      { task, history: [], candidates: ['open door'] },
    );
    expect(decision).toEqual({ action: 'open door', logprob: 0 });
    await expect(policy.act({ text: 'room' }, { task, history: [] })).rejects.toThrow(
      /candidateActions/,
    );
    expect(() =>
      policy.prepare({
        task,
        observation: { text: 'x' },
        previousActions: [],
        candidates: ['a'],
        action: 'b',
      }),
    ).toThrow(ConfigError);
  });

  it('samples reproducibly from the stream it is given', async () => {
    const policy = new LinearSoftmaxPolicy({
      random: new SeededRandom(1),
      hashBits: 12,
      initScale: 0.02,
    });
    const observation = {
      text: 'You are in room 1.',
      actions: ['go left', 'go right', 'take key', 'open door'],
    };
    const draw = async (seed: number) => {
      const random = new SeededRandom(seed);
      const actions: string[] = [];
      for (let index = 0; index < 20; index += 1)
        actions.push((await policy.act(observation, { task, history: [], random })).action);
      return actions;
    };
    expect(await draw(9)).toEqual(await draw(9));
    expect(await draw(9)).not.toEqual(await draw(10));
  });

  it('has the exact gradient of the full PPO/GRPO loss (finite differences)', async () => {
    const policy = new LinearSoftmaxPolicy({
      random: new SeededRandom(2),
      hashBits: 10,
      initScale: 0.3,
    });
    const batch = await preparedBatch(policy);
    expect(batch.length).toBeGreaterThan(8);
    const reference = await policy.snapshot();
    const config = resolvePpoLossOptions({
      clipLow: 0.2,
      clipHigh: 0.28,
      dualClip: 3,
      klCoefficient: 0.3,
      entropyCoefficient: 0.05,
    });
    const random = new SeededRandom(3);
    const advantages = batch.map(() => random.normal());
    // Old log-probabilities away from the current ones, so some steps sit in the clipped region.
    const oldLogprobs = batch.map(
      (prepared, index) =>
        policy.evaluate(prepared).logprob + (index % 3 === 0 ? 0.6 : 0.05 * random.normal()),
    );
    const referenceLogprobs = batch.map((prepared) => reference.evaluate(prepared).logprob);
    // Move the live weights off the reference so the KL term has a gradient.
    for (let index = 0; index < policy.weights.length; index += 1)
      policy.weights[index] = policy.weights[index]! + 0.1 * random.normal();

    const totalLoss = () =>
      batch.reduce((total, prepared, index) => {
        const { logprob, entropy } = policy.evaluate(prepared);
        return (
          total +
          ppoStepLoss(
            {
              logprob,
              entropy,
              oldLogprob: oldLogprobs[index]!,
              referenceLogprob: referenceLogprobs[index]!,
              advantage: advantages[index]!,
            },
            config,
          ).loss
        );
      }, 0) / batch.length;

    policy.zeroGradient();
    let clipped = 0;
    batch.forEach((prepared, index) => {
      const { logprob, entropy } = policy.evaluate(prepared);
      const step = ppoStepLoss(
        {
          logprob,
          entropy,
          oldLogprob: oldLogprobs[index]!,
          referenceLogprob: referenceLogprobs[index]!,
          advantage: advantages[index]!,
        },
        config,
      );
      if (step.clipped) clipped += 1;
      policy.accumulateGradient(
        prepared,
        step.dLogprob / batch.length,
        step.dEntropy / batch.length,
      );
    });
    expect(clipped).toBeGreaterThan(0);
    expect(clipped).toBeLessThan(batch.length);
    const analytic = Float64Array.from(policy.gradientBuffer());
    const features = [
      ...new Set(batch.flatMap((prepared) => prepared.features.flatMap((list) => [...list]))),
    ];
    let checked = 0;
    for (const feature of features) {
      const original = policy.weights[feature]!;
      policy.weights[feature] = original + 1e-3;
      const up = policy.weights[feature]!;
      const lossUp = totalLoss();
      policy.weights[feature] = original - 1e-3;
      const down = policy.weights[feature]!;
      const lossDown = totalLoss();
      policy.weights[feature] = original;
      const numeric = (lossUp - lossDown) / (up - down);
      expect(Math.abs(numeric - analytic[feature]!)).toBeLessThan(1e-6 + 1e-4 * Math.abs(numeric));
      checked += 1;
    }
    expect(checked).toBeGreaterThan(20);
    expect(features.some((feature) => Math.abs(analytic[feature]!) > 1e-3)).toBe(true);
  });

  it('saves and loads weights, Adam state and RNG so training resumes exactly', async () => {
    const policy = new LinearSoftmaxPolicy({
      random: new SeededRandom(4),
      hashBits: 10,
      optimizer: { learningRate: 0.1 },
    });
    const batch = await preparedBatch(policy);
    const update = (target: LinearSoftmaxPolicy) => {
      target.zeroGradient();
      for (const [index, prepared] of batch.entries()) {
        target.accumulateGradient(prepared, index % 2 === 0 ? -1 : 0.5, -0.01);
      }
      return target.applyGradient({ maxGradNorm: 2 });
    };
    update(policy);
    update(policy);
    const file = join(directory, 'policy.bin');
    await policy.save(file);
    const loaded = await LinearSoftmaxPolicy.load(file);
    expect(loaded.updates).toBe(2);
    expect(loaded.optimizerConfig).toEqual(policy.optimizerConfig);
    expect(loaded.weights).toEqual(policy.weights);
    const a = update(policy);
    const b = update(loaded);
    expect(b.gradNorm).toBe(a.gradNorm);
    expect(loaded.weights).toEqual(policy.weights);
    expect(loaded.exportState().adamM).toEqual(policy.exportState().adamM);
    const observation = {
      text: 'You are in room 1.',
      actions: ['go left', 'go right', 'take key'],
    };
    for (let index = 0; index < 5; index += 1) {
      expect((await loaded.act(observation, { task, history: [] })).action).toBe(
        (await policy.act(observation, { task, history: [] })).action,
      );
    }
  });

  it('a snapshot is frozen and independent of later updates', async () => {
    const policy = new LinearSoftmaxPolicy({ random: new SeededRandom(4), hashBits: 10 });
    const choice = (await preparedBatch(policy)).find((prepared) => prepared.features.length > 1)!;
    const snapshot = await policy.snapshot();
    // The gradient of -log pi(a|s): the update makes a more likely under the live policy only.
    policy.accumulateGradient(choice, -1, 0);
    policy.applyGradient();
    expect(policy.evaluate(choice).logprob).toBeGreaterThan(snapshot.evaluate(choice).logprob);
    expect(() => snapshot.applyGradient()).toThrow(/frozen/);
  });

  it('rejects corrupt and truncated files with a CheckpointError naming the file', async () => {
    const bad = join(directory, 'bad.bin');
    await writeFile(bad, 'not a policy');
    await expect(LinearSoftmaxPolicy.load(bad)).rejects.toThrow(CheckpointError);
    await expect(LinearSoftmaxPolicy.load(bad)).rejects.toThrow(/bad\.bin.*DGLSPOL1/);
    const policy = new LinearSoftmaxPolicy({ random: new SeededRandom(1), hashBits: 8 });
    const good = join(directory, 'good.bin');
    await policy.save(good);
    const { readFile } = await import('node:fs/promises');
    const bytes = await readFile(good);
    await writeFile(bad, bytes.subarray(0, bytes.length - 10));
    await expect(LinearSoftmaxPolicy.load(bad)).rejects.toThrow(/truncated or corrupt/);
    await expect(LinearSoftmaxPolicy.load(join(directory, 'missing.bin'))).rejects.toThrow(
      /Cannot read policy file/,
    );
  });

  it('loads files of version 1 as lexical policies and says which version or feature set does not fit', async () => {
    const policy = new LinearSoftmaxPolicy({ random: new SeededRandom(1), hashBits: 8 });
    policy.weights[3] = 0.25;
    const state = policy.exportState();
    // A file written before policies named their features.
    const { features: _features, ...before } = state.header;
    const old = join(directory, 'version-1.bin');
    await writeLinearSoftmaxPolicyFile(old, {
      ...state,
      header: { ...before, version: 1 } as unknown as LinearSoftmaxPolicyHeader,
    });
    const loaded = await LinearSoftmaxPolicy.load(old);
    expect(loaded.features).toBe('lexical');
    expect(loaded.weights[3]).toBe(0.25);
    const newer = join(directory, 'version-3.bin');
    await writeLinearSoftmaxPolicyFile(newer, {
      ...state,
      header: { ...state.header, version: 3 } as unknown as LinearSoftmaxPolicyHeader,
    });
    await expect(LinearSoftmaxPolicy.load(newer)).rejects.toThrow(
      /version-3\.bin: linear softmax policy file version 3; this @dreamgym\/core reads versions 1 and 2/,
    );
    const relational = new LinearSoftmaxPolicy({
      random: new SeededRandom(1),
      hashBits: 8,
      features: 'relational',
    });
    await relational.saveState(join(directory, 'relational'));
    expect(
      (await LinearSoftmaxPolicy.load(join(directory, 'relational', 'linear-softmax-policy.bin')))
        .features,
    ).toBe('relational');
    await expect(policy.loadState(join(directory, 'relational'))).rejects.toThrow(
      /features relational; this policy has 8, 2 and lexical.*policy\.features 'relational'/,
    );
  });

  it('validates its options', () => {
    expect(() => new LinearSoftmaxPolicy({ random: new SeededRandom(1), hashBits: 40 })).toThrow(
      /hashBits/,
    );
    expect(
      () =>
        new LinearSoftmaxPolicy({ random: new SeededRandom(1), optimizer: { learningRate: -1 } }),
    ).toThrow(/learningRate/);
  });
});
