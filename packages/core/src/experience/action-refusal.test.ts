import { describe, expect, it } from 'vitest';
import type { DomainAdapter } from '../adapter.js';
import type { Step, Trajectory } from '../mdp/schemas.js';
import type { TransitionRetriever } from '../replay/retriever.js';
import { type ActionRefusal, learnActionRefusal, refuses } from './action-refusal.js';
import type { ExperienceModel } from './experience-model.js';
import { JudgedExperienceModel } from './judged-experience-model.js';
import { OutcomeJudge } from './outcome-judge.js';
import { SyntheticEnvironment } from './synthetic-environment.js';

/** A shelf domain: each observation ends with `You can: a; b; c.`, the admissible actions. */
const shelf: Pick<DomainAdapter, 'name' | 'parseAction' | 'candidateActions' | 'experienceHints'> =
  {
    name: 'shelf',
    parseAction: (text) => {
      const [type = '', ...rest] = text.trim().toLowerCase().split(/\s+/);
      return {
        type,
        args: rest.length > 0 ? [rest.join(' ')] : [],
        text: text.trim().toLowerCase(),
      };
    },
    // What the state lists, or after an answer that lists nothing, what the state before it did.
    candidateActions: (observation, history) => {
      for (const text of [
        observation.text,
        ...history.map((step) => step.observation.text).reverse(),
      ]) {
        const listed = /You can: (.+)\.$/.exec(text)?.[1]?.split('; ');
        if (listed) return listed;
      }
      return [];
    },
  };

const room = (what: string, can: string[]) => `${what} You can: ${can.join('; ')}.`;

function episode(
  pairs: Array<[observation: string, action: string]>,
  final: string,
  success: boolean,
): Trajectory {
  const steps: Step[] = pairs.map(([text, action], index) => ({
    observation: { text },
    action,
    reward: success && index === pairs.length - 1 ? 1 : 0,
    done: index === pairs.length - 1,
  }));
  return {
    task: {
      id: 't',
      domain: 'shelf',
      instruction: 'put the cup on the shelf.',
      origin: 'seed',
      meta: {},
    },
    steps,
    finalObservation: { text: final },
    source: 'offline',
    success,
  };
}

const start = room('You are in a kitchen.', ['take cup', 'open box']);
const holding = room('You hold the cup.', ['put cup', 'open box']);
const expert = (copy: number) =>
  episode(
    [
      [start, 'take cup'],
      [holding, 'put cup'],
    ],
    `The cup is on the shelf (${copy}).`,
    true,
  );
/** Exploration: actions the domain lists but refuses here get its own no-effect answer. */
const explored = (copy: number, answer: (state: string) => string) => {
  const shelved = room('The cup is on the shelf.', ['take cup', 'wave hand']);
  return episode(
    [
      [start, 'open box'],
      [answer(start), 'take cup'],
      [holding, 'open box'],
      [answer(holding), 'put cup'],
      [shelved, 'wave hand'],
      [answer(shelved), 'take cup'],
    ],
    answer(shelved),
    copy < 0,
  );
};
const data = (answer: (state: string) => string) => [
  ...Array.from({ length: 10 }, (_, copy) => expert(copy)),
  ...Array.from({ length: 10 }, (_, copy) => explored(copy, answer)),
];

describe('learnActionRefusal', () => {
  it("refuses unlisted actions where the listed ones are the domain's, answered with the domain's own text", () => {
    const refusal = learnActionRefusal(
      shelf,
      data(() => 'That does not work here.'),
    );
    expect(refusal).toMatchObject({
      refuseUnlisted: true,
      answer: { kind: 'text', text: 'That does not work here.' },
      answerSource: 'data',
      steps: 80,
      listed: 80,
    });
  });

  it('answers with the state unchanged where the data shows actions that change nothing', () => {
    const refusal = learnActionRefusal(
      shelf,
      data((state) => state),
    );
    expect(refusal.answer).toEqual({ kind: 'unchanged' });
  });

  it('refuses nothing where the listed actions miss what real steps did (free text)', () => {
    const typed = data(() => 'That does not work here.').map((trajectory) => ({
      ...trajectory,
      steps: trajectory.steps.map((step) => ({ ...step, action: `${step.action} carefully` })),
    }));
    const refusal = learnActionRefusal(shelf, typed);
    expect(refusal.refuseUnlisted).toBe(false);
    expect(refusal.listed).toBe(0);
  });

  it("falls back to the adapter's hint, then to `Nothing happens.`, where the data shows no failure", () => {
    const experts = Array.from({ length: 30 }, (_, copy) => expert(copy));
    expect(learnActionRefusal(shelf, experts)).toMatchObject({
      refuseUnlisted: true,
      answer: { kind: 'text', text: 'Nothing happens.' },
      answerSource: 'default',
    });
    const hinted = { ...shelf, experienceHints: { noEffectObservations: ['Nope.'] } };
    expect(learnActionRefusal(hinted, experts)).toMatchObject({
      answer: { kind: 'text', text: 'Nope.' },
      answerSource: 'hint',
    });
    // Too few steps to trust the share: nothing is refused.
    expect(learnActionRefusal(shelf, experts.slice(0, 5)).refuseUnlisted).toBe(false);
  });
});

describe('a judged model with a refusal', () => {
  const refusal: ActionRefusal = {
    refuseUnlisted: true,
    answer: { kind: 'text', text: 'That does not work here.' },
    answerSource: 'data',
    steps: 70,
    listed: 70,
  };
  const judge = OutcomeJudge.train(
    data(() => 'That does not work here.'),
    { parseAction: shelf.parseAction, refusal },
  )!;
  let asked = 0;
  /** A base model that pays every step, as a vote over expert puts would. */
  const generous: ExperienceModel = {
    id: 'generous',
    predict: async () => {
      asked += 1;
      return {
        reasoning: 'a put ends it',
        observation: { text: 'You put it on the shelf.' },
        reward: 1,
        done: true,
        success: true,
      };
    },
  };
  const model = new JudgedExperienceModel(generous, judge);
  const retriever: TransitionRetriever = { search: async () => [] };

  it('answers an unlisted free-text action as the domain does: no change, no reward, not asking the model', async () => {
    const environment = new SyntheticEnvironment({ model, retriever, adapter: shelf, k: 0 });
    const state = await environment.reset({
      id: 'kitchen',
      domain: 'shelf',
      instruction: 'put the cup on the shelf.',
      origin: 'seed',
      meta: {},
      initialObservation: { text: start },
    });
    expect(refuses(refusal, state, 'put cup')).toBe(true);
    const refused = await environment.step('put cup');
    expect(asked).toBe(0);
    expect(refused).toMatchObject({
      observation: { text: 'That does not work here.', actions: ['take cup', 'open box'] },
      reward: 0,
      done: false,
      info: { invalidAction: true, success: false },
    });
    // A listed action goes to the model as before.
    await environment.step('take cup');
    expect(asked).toBe(1);
  });
});
