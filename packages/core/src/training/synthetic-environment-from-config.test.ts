import { describe, expect, it } from 'vitest';
import type { ExperienceInput, ExperienceModel } from '../experience/experience-model.js';
import type { RetrievalQuery, ScoredTransition } from '../replay/retriever.js';
import { corridorTask, createCorridorAdapter } from '../testing/corridor-domain.js';
import { syntheticEnvironmentFromConfig } from './synthetic-environment-from-config.js';

const adapter = createCorridorAdapter();
const task = {
  ...corridorTask({ length: 4, keyRoom: 2, doorRoom: 1 }),
  initialObservation: { text: 'You are in room 0.', actions: ['go right'] },
};

/** A model that says what it was given, and a retriever that counts what it was asked. */
function parts() {
  /** The history length each prediction saw (the environment's history grows in place). */
  const historyLengths: number[] = [];
  const queries: Array<{ query: RetrievalQuery; k: number }> = [];
  const experienceModel: ExperienceModel = {
    id: 'recorder',
    predict: async (input: ExperienceInput) => {
      historyLengths.push(input.history.length);
      return {
        observation: { text: `after ${input.action}` },
        reward: 0,
        done: false,
        success: false,
        reasoning: '',
      };
    },
  };
  const retriever = {
    search: async (query: RetrievalQuery, k: number): Promise<ScoredTransition[]> => {
      queries.push({ query, k });
      return [];
    },
  };
  return { historyLengths, queries, parts: { experienceModel, retriever, adapter } };
}

describe('syntheticEnvironmentFromConfig', () => {
  it('asks for retrieval.k demonstrations with the history, and none when retrieval is off', async () => {
    const on = parts();
    const environment = syntheticEnvironmentFromConfig({ retrieval: { k: 5 } }, on.parts);
    await environment.reset(task);
    await environment.step('go right');
    await environment.step('go right');
    expect(on.queries.map(({ k }) => k)).toEqual([5, 5]);
    expect(on.historyLengths).toEqual([0, 1]);

    const off = parts();
    const ablated = syntheticEnvironmentFromConfig(
      { retrieval: { enabled: false, k: 5 }, history: { enabled: false } },
      off.parts,
    );
    await ablated.reset(task);
    await ablated.step('go right');
    await ablated.step('go right');
    expect(off.queries).toEqual([]);
    expect(off.historyLengths).toEqual([0, 0]);
  });

  it('applies the configured invalid-action penalty and step limit', async () => {
    const { parts: built } = parts();
    const environment = syntheticEnvironmentFromConfig(
      { invalidActionPenalty: -0.25, maxSteps: 2 },
      built,
    );
    await environment.reset(task);
    const invalid = await environment.step('fly away');
    expect(invalid).toMatchObject({ reward: -0.25, done: false, info: { invalidAction: true } });
    const last = await environment.step('go right');
    expect(last).toMatchObject({ done: true, truncated: true });
  });

  it('refuses an invalid configuration with the field it names', () => {
    expect(() =>
      syntheticEnvironmentFromConfig({ invalidActionPenalty: 0.5 }, parts().parts),
    ).toThrow(/invalidActionPenalty/);
  });
});
