/**
 * The hybrid's rules, with fixed stand-ins for its two models (the real SmolLM2 runs it in
 * @dreamgym/cli's model-selection tests and in benchmarks/llm.ts): which model speaks when,
 * and which LLM answers are overruled as contradicting the episode.
 */
import { describe, expect, it } from 'vitest';
import type { Task } from '../mdp/schemas.js';
import type { ScoredTransition } from '../replay/retriever.js';
import type { ExperienceInput, ExperienceModel, ExperiencePrediction } from './experience-model.js';
import { GroundedHybridExperienceModel } from './grounded-hybrid-experience-model.js';

const task: Task = {
  id: 't',
  domain: 'house',
  instruction: 'put a mug in the fridge',
  origin: 'seed',
  meta: {},
};
const demos = ['a', 'b', 'c', 'd'].map(
  (id) => ({ score: 0.9, transition: { id } }) as unknown as ScoredTransition,
);
const input: ExperienceInput = {
  task,
  history: [
    {
      observation: { text: 'You are in the middle of a room. You see a fridge 1, a cabinet 1.' },
      action: 'look',
      reward: 0,
      done: false,
    },
  ],
  state: { text: 'You are in the middle of a room. You see a fridge 1, a cabinet 1.' },
  action: 'go to fridge 1',
  demos,
};

function fixed(
  id: string,
  prediction: Partial<ExperiencePrediction>,
): ExperienceModel & { calls: number } {
  const model = {
    id,
    calls: 0,
    async predict() {
      model.calls += 1;
      return {
        reasoning: id,
        observation: { text: '' },
        reward: 0,
        done: false,
        success: false,
        ...prediction,
      };
    },
  };
  return model;
}

const groundedText = 'The fridge 1 is closed.';
function retrieval(
  predictedBy: string,
  supporting: string[],
  outcome: Partial<ExperiencePrediction> = {},
) {
  return fixed('retrieval', {
    observation: { text: groundedText },
    info: { predictedBy, supportingDemoIds: supporting },
    ...outcome,
  });
}

describe('GroundedHybridExperienceModel', () => {
  it('recalls what the episode showed and keeps well-supported grounded predictions without asking the LLM', async () => {
    const llm = fixed('llm', { observation: { text: 'You arrive at fridge 1.' } });
    const fromHistory = new GroundedHybridExperienceModel({
      retrieval: retrieval('history', []),
      reasoning: llm,
    });
    expect((await fromHistory.predict(input)).info).toMatchObject({ hybrid: 'history' });
    const supported = new GroundedHybridExperienceModel({
      retrieval: retrieval('neighbours', ['a', 'b']),
      reasoning: llm,
    });
    expect((await supported.predict(input)).info).toMatchObject({
      hybrid: 'grounded',
      support: 0.5,
    });
    expect(llm.calls).toBe(0);
    const always = new GroundedHybridExperienceModel({
      retrieval: retrieval('neighbours', ['a', 'b']),
      reasoning: llm,
      consult: 'always',
    });
    expect((await always.predict(input)).observation.text).toBe('You arrive at fridge 1.');
    expect(llm.calls).toBe(1);
  });

  it("takes the LLM's next state where grounding is weak, with the neighbours' outcome", async () => {
    const llm = fixed('llm', {
      observation: { text: 'You arrive at fridge 1. The fridge 1 is closed.' },
      done: true,
      success: true,
      reward: 1,
      reasoning: 'walks there',
    });
    const model = new GroundedHybridExperienceModel({
      retrieval: retrieval('neighbours', ['a'], { done: false }),
      reasoning: llm,
    });
    const prediction = await model.predict(input);
    expect(prediction).toMatchObject({
      reasoning: 'walks there',
      observation: { text: 'You arrive at fridge 1. The fridge 1 is closed.' },
      done: false,
      reward: 0,
      info: { hybrid: 'llm', outcomeFrom: 'neighbours' },
    });
    const noNeighbours = new GroundedHybridExperienceModel({
      retrieval: retrieval('default', []),
      reasoning: llm,
    });
    expect(await noNeighbours.predict(input)).toMatchObject({
      done: true,
      reward: 1,
      info: { outcomeFrom: 'llm' },
    });
    expect(model.stats()).toEqual({ llm: 1 });
  });

  it('overrules an LLM answer that invents entities, ignores the action, repeats the state, or failed', async () => {
    const cases: Array<[Partial<ExperiencePrediction>, string]> = [
      [
        { observation: { text: 'You arrive at fridge 1. On it, you see a tomato 4.' } },
        'unknown-entity',
      ],
      [{ observation: { text: 'You arrive at cabinet 1.' } }, 'ignores-action'],
      [{ observation: { text: input.state.text } }, 'repeats-state'],
      [
        {
          observation: { text: input.state.text },
          info: { experienceModelFailure: true, failures: ['cut off'] },
        },
        'llm-failed',
      ],
    ];
    for (const [answer, reason] of cases) {
      const model = new GroundedHybridExperienceModel({
        retrieval: retrieval('neighbours', ['a']),
        reasoning: fixed('llm', answer),
      });
      const prediction = await model.predict(input);
      expect(prediction.observation.text, reason).toBe(groundedText);
      expect(prediction.info?.hybrid).toBe('overruled');
      expect(prediction.info?.contradictions).toContain(reason);
      expect(prediction.done).toBe(false);
    }
  });

  it('reads action arguments with the domain grammar when given', () => {
    const model = new GroundedHybridExperienceModel({
      retrieval: retrieval('neighbours', []),
      reasoning: fixed('llm', {}),
      parseAction: (text) => ({ type: 'go to', args: [text.replace('go to ', '')], text }),
    });
    expect(model.contradictions(input, 'You arrive at the fridge 1.', groundedText)).toEqual([]);
    expect(model.contradictions(input, 'You arrive somewhere.', groundedText)).toEqual([
      'ignores-action',
    ]);
  });
});
