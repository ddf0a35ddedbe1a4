import { describe, expect, it } from 'vitest';
import type { Task } from '../mdp/schemas.js';
import { SeededRandom } from '../random/seeded-random.js';
import { LinearSoftmaxPolicy } from './linear-softmax-policy.js';
import type { PolicySample } from './policy.js';
import { RelationalDecision } from './relational-features.js';

const MASK = (1 << 18) - 1;

/** Replaces whole words of `text` by `renames`: another world, the same situation. */
function renamed(text: string, renames: Record<string, string>): string {
  return text.replace(/[a-z]+/g, (word) => renames[word] ?? word);
}

const episode = {
  instruction: 'put a clean apple in the fridge.',
  previousActions: ['go to countertop 1', 'go to cabinet 2', 'open cabinet 2'],
  previousObservations: [
    'You are in a room. You see a countertop 1, a cabinet 2, a fridge 1 and a sinkbasin 1.',
    'On the countertop 1, you see a apple 1, and a knife 3.',
    'You arrive at cabinet 2. The cabinet 2 is closed.',
  ],
  observation: 'You open the cabinet 2. In it, you see a plate 2.',
};
const candidates = [
  'go to countertop 1',
  'go to cabinet 2',
  'go to sinkbasin 1',
  'take plate 2 from cabinet 2',
  'close cabinet 2',
];

describe('RelationalDecision', () => {
  it('gives the same features in a world where every object and place has another name', () => {
    const renames = {
      apple: 'tomato',
      countertop: 'diningtable',
      cabinet: 'drawer',
      knife: 'fork',
      plate: 'cup',
      sinkbasin: 'bathtub',
      fridge: 'safe',
    };
    const here = new RelationalDecision(episode);
    const there = new RelationalDecision({
      instruction: renamed(episode.instruction, renames),
      observation: renamed(episode.observation, renames),
      previousActions: episode.previousActions.map((action) => renamed(action, renames)),
      previousObservations: episode.previousObservations.map((text) => renamed(text, renames)),
    });
    for (const action of candidates) {
      expect(there.features(renamed(action, renames), MASK)).toEqual(here.features(action, MASK));
    }
  });

  it('tells apart a place searched before, a place not yet searched and the place that revealed the instruction object', () => {
    const decision = new RelationalDecision(episode);
    const back = new Set(decision.features('go to countertop 1', MASK));
    const fresh = new Set(decision.features('go to sinkbasin 1', MASK));
    const searched = new Set(decision.features('go to cabinet 2', MASK));
    // The countertop revealed the apple; the cabinet did not; the sink basin was never visited.
    expect(back).not.toEqual(fresh);
    expect(back).not.toEqual(searched);
    expect(fresh).not.toEqual(searched);
    // Whole words: 'cabinet 2' is not 'cabinet 20'.
    const other = new RelationalDecision({ ...episode, observation: 'You see a cabinet 20.' });
    expect(new Set(other.features('go to cabinet 2', MASK))).not.toEqual(
      new Set(decision.features('go to cabinet 2', MASK)),
    );
  });
});

/** A pick-the-named-object decision in a world whose object names come from `words`. */
function pickSample(words: readonly string[], random: SeededRandom): PolicySample {
  const [wanted, other, place] = random.shuffle([...words]).slice(0, 3) as [string, string, string];
  // Numbers drawn afresh: only the instruction tells the two objects apart.
  const [w, o, p] = random.shuffle([1, 2, 3, 4, 5, 6, 7, 8, 9]).slice(0, 3) as [
    number,
    number,
    number,
  ];
  const take = `take ${wanted} ${w} from ${place} ${p}`;
  const candidates = random.shuffle([take, `take ${other} ${o} from ${place} ${p}`]);
  const seenThere = random.shuffle([`a ${wanted} ${w}`, `a ${other} ${o}`]).join(', and ');
  const task: Task = {
    id: `pick-${wanted}`,
    domain: 'test',
    instruction: `put a ${wanted} in the box.`,
    origin: 'seed',
    initialObservation: { text: 'You are in a room.' },
    meta: {},
  };
  return {
    task,
    observation: { text: `On the ${place} ${p}, you see ${seenThere}.` },
    previousActions: [`go to ${place} ${p}`],
    previousObservations: ['You are in a room.'],
    candidates,
    action: take,
  };
}

describe('LinearSoftmaxPolicy features', () => {
  const seen = ['apple', 'mug', 'book', 'pen', 'plate', 'vase', 'lamp', 'spoon', 'table', 'shelf'];
  const unseen = ['tomato', 'watch', 'candle', 'soap', 'bowl', 'key', 'egg', 'cup', 'desk', 'sofa'];

  async function greedyAccuracy(features: 'lexical' | 'relational'): Promise<number> {
    const policy = new LinearSoftmaxPolicy({ random: new SeededRandom(1), hashBits: 16, features });
    const random = new SeededRandom(2);
    const train = Array.from({ length: 200 }, () => pickSample(seen, random));
    for (let epoch = 0; epoch < 5; epoch += 1) {
      await policy.imitate(train, { random, miniBatchSize: 32 });
    }
    const test = Array.from({ length: 100 }, () => pickSample(unseen, random));
    let right = 0;
    for (const sample of test) {
      const decision = await policy.act(sample.observation, {
        task: sample.task,
        history: sample.previousActions.map((action, index) => ({
          observation: { text: sample.previousObservations![index]! },
          action,
          reward: 0,
          done: false,
        })),
        candidates: sample.candidates,
        greedy: true,
      });
      if (decision.action === sample.action) right += 1;
    }
    return right / test.length;
  }

  it('carries what it learned to objects it never saw with relational features, not with lexical ones', async () => {
    const relational = await greedyAccuracy('relational');
    const lexical = await greedyAccuracy('lexical');
    expect(relational).toBe(1);
    // Unseen words have untrained lexical weights: about a coin flip.
    expect(lexical).toBeLessThan(0.8);
  });

  it('needs the earlier observations of the episode and says where they come from', () => {
    const policy = new LinearSoftmaxPolicy({ random: new SeededRandom(1), features: 'relational' });
    const sample = pickSample(seen, new SeededRandom(3));
    const { previousObservations: _dropped, ...withoutObservations } = sample;
    expect(() => policy.prepare(withoutObservations)).toThrow(/previousObservations/);
    expect(policy.prepare(sample).features).toHaveLength(2);
  });

  it('rejects an unknown feature set by name', () => {
    expect(
      () =>
        new LinearSoftmaxPolicy({
          random: new SeededRandom(1),
          features: 'syntactic' as 'lexical',
        }),
    ).toThrow(/policy.features must be one of lexical, relational, lexical\+relational/);
  });
});
