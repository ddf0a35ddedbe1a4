import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CheckpointError, ConfigError } from '../errors.js';
import type { Task } from '../mdp/schemas.js';
import { SeededRandom } from '../random/seeded-random.js';
import { CheckpointStore } from './checkpoint-store.js';
import { LinearValueFunction } from './linear-value-function.js';
import { valueFunctionFromCheckpoint } from './loop-state.js';

const task: Task = {
  id: 'page',
  domain: 'test',
  instruction: 'Click the button labelled submit on the form.',
  origin: 'seed',
  meta: {},
};

/**
 * A page-sized state: `words` tokens drawn from a vocabulary pages share (as accessibility
 * trees share roles and labels), so hundreds of overlapping task x state features.
 */
function pageText(page: number, words: number, succeeded: boolean): string {
  const random = new SeededRandom(page + 1);
  const tokens = Array.from({ length: words }, () => `w${random.int(300)}`);
  return `${succeeded ? 'done' : 'pending'} ${tokens.join(' ')}`;
}

describe('LinearValueFunction', () => {
  it('fits returns on page-sized states from mini-batches at its default learning rate', () => {
    const critic = new LinearValueFunction();
    const states = Array.from({ length: 40 }, (_, page) => {
      const succeeded = page % 2 === 0;
      return {
        features: critic.features(task, { text: pageText(page, 120, succeeded) }, []),
        target: succeeded ? 1 : -1,
      };
    });
    expect(states[0]!.features.length).toBeGreaterThan(500);
    // As PPO fits it: shuffled mini-batches of the iteration's steps, several passes.
    const random = new SeededRandom(7);
    for (let step = 0; step < 300; step += 1) {
      critic.fitBatch(Array.from({ length: 8 }, () => states[random.int(states.length)]!));
    }
    const loss =
      states.reduce(
        (total, { features, target }) => total + (critic.predict(features) - target) ** 2,
        0,
      ) /
      (2 * states.length);
    expect(loss).toBeLessThan(0.05);
  });

  it('moves V(s) by the learning rate in one step, whatever the number of features', () => {
    for (const words of [2, 400]) {
      const critic = new LinearValueFunction({ optimizer: { learningRate: 0.05 } });
      const features = critic.features(task, { text: pageText(0, words, true) }, []);
      expect(critic.predict(features)).toBe(0);
      critic.fitBatch([{ features, target: 1 }]);
      expect(critic.predict(features)).toBeCloseTo(0.05, 4);
    }
  });

  it('round-trips its state and refuses a state of another prediction', () => {
    const critic = new LinearValueFunction({ hashBits: 8 });
    const features = critic.features(task, { text: 'a form with a submit button' }, ['click [1]']);
    for (let step = 0; step < 5; step += 1) critic.fitBatch([{ features, target: 0.5 }]);
    const state = critic.exportState();
    expect(LinearValueFunction.fromState(state).predict(features)).toBe(critic.predict(features));
    const summed = { ...state, prediction: 'sum' as unknown as 'mean' };
    expect(() => LinearValueFunction.fromState(summed)).toThrow(ConfigError);
  });

  it('refuses to resume from a checkpoint whose critic summed its weights', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'dreamgym-value-'));
    try {
      const store = new CheckpointStore(directory);
      const {
        weights,
        adamM,
        adamV,
        prediction: _,
        ...header
      } = new LinearValueFunction({
        hashBits: 4,
      }).exportState();
      const bytes = (array: Float32Array) => new Uint8Array(array.buffer);
      await store.save('iteration-000001', {
        'value-header': header,
        'value-weights': bytes(weights),
        'value-adam-m': bytes(adamM),
        'value-adam-v': bytes(adamV),
      });
      const checkpoint = (await store.load())!;
      expect(() => valueFunctionFromCheckpoint(checkpoint, directory)).toThrow(CheckpointError);
      expect(() => valueFunctionFromCheckpoint(checkpoint, directory)).toThrow(
        /iteration-000001 in .* sums its feature weights.*Start a new --run-dir/,
      );
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});
