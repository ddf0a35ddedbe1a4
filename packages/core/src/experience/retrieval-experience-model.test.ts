import { describe, expect, it } from 'vitest';
import { EnvironmentError } from '../errors.js';
import { type Step, type Task, TaskSchema, type Transition } from '../mdp/schemas.js';
import type { ScoredTransition } from '../replay/retriever.js';
import { earned } from './earned.test-support.js';
import {
  instructionOverlap,
  occurrenceWeight,
  RetrievalExperienceModel,
} from './retrieval-experience-model.js';

const task: Task = TaskSchema.parse({
  id: 'task-a',
  domain: 'household',
  instruction: 'put a clean apple in fridge.',
});

function demo(
  action: string,
  nextText: string,
  score: number,
  extra: Partial<Transition> = {},
): ScoredTransition {
  return {
    score,
    transition: {
      id: `${action}@${score}`,
      domain: 'household',
      taskId: 'other',
      instruction: 'put a clean mug in fridge.',
      stepIndex: 3,
      state: { text: 'somewhere' },
      action,
      nextState: { text: nextText },
      reward: 0,
      done: false,
      source: 'offline',
      trajectorySuccess: true,
      ...extra,
    },
  };
}

describe('instructionOverlap', () => {
  it('is the share of argument name words found in the instruction', () => {
    expect(instructionOverlap(['apple 1', 'fridge 1'], 'put a clean apple in fridge.')).toBe(1);
    expect(instructionOverlap(['mug 2', 'fridge 1'], 'put a clean apple in fridge.')).toBe(0.5);
    expect(instructionOverlap([], 'anything')).toBe(0);
  });
});

describe('RetrievalExperienceModel', () => {
  const model = new RetrievalExperienceModel();

  it('transfers the entities of the best-supported neighbour to the current action', async () => {
    const prediction = await model.predict({
      task,
      history: [],
      state: { text: 'On the countertop 2, you see a apple 1.' },
      action: 'take apple 1 from countertop 2',
      demos: [
        demo('take mug 3 from cabinet 1', 'You pick up the mug 3 from the cabinet 1.', 0.8),
        demo('go to cabinet 1', 'The cabinet 1 is closed.', 0.9),
        demo('take egg 2 from fridge 1', 'You pick up the egg 2 from the fridge 1.', 0.7),
      ],
    });
    expect(prediction.observation.text).toBe('You pick up the apple 1 from the countertop 2.');
    expect(earned({}, prediction)).toMatchObject({ reward: 0, done: false, success: false });
    expect(prediction.info?.supportingDemoIds).toHaveLength(2);
  });

  it('ends the episode with the outcome reward when like neighbours ended theirs in success', async () => {
    const prediction = await model.predict({
      task,
      history: [],
      state: { text: 'On the fridge 1, you see nothing.' },
      action: 'put apple 1 in/on fridge 1',
      demos: [
        demo('put mug 1 in/on fridge 1', 'You put the mug 1 in/on the fridge 1.', 0.9, {
          done: true,
          reward: 1,
        }),
        // A put of something the task does not ask for: not terminal.
        demo('put egg 1 in/on fridge 1', 'You put the egg 1 in/on the fridge 1.', 0.9, {
          instruction: 'put a clean mug in fridge.',
        }),
      ],
    });
    expect(prediction.observation.text).toBe('You put the apple 1 in/on the fridge 1.');
    expect(earned({}, prediction)).toMatchObject({ reward: 1, done: true, success: true });
  });

  it('repeats what the history showed when configured with revisit hints', async () => {
    const consistent = new RetrievalExperienceModel({
      hints: { revisitActionTypes: ['go to'], removeActionTypes: ['take'] },
    });
    const history: Step[] = [
      { observation: { text: 'A room.' }, action: 'go to desk 1', reward: 0, done: false },
      {
        observation: { text: 'On the desk 1, you see a apple 1, and a pen 2.' },
        action: 'take apple 1 from desk 1',
        reward: 0,
        done: false,
      },
    ];
    const prediction = await consistent.predict({
      task,
      history,
      state: { text: 'You pick up the apple 1 from the desk 1.' },
      action: 'go to desk 1',
      demos: [demo('go to desk 1', 'On the desk 1, you see a book 3.', 0.99)],
    });
    expect(prediction.observation.text).toBe('On the desk 1, you see a pen 2.');
    expect(prediction.info?.predictedBy).toBe('history');
  });

  it('answers an action no neighbour matches as having no effect', async () => {
    const prediction = await model.predict({
      task,
      history: [],
      state: { text: 'A room.' },
      action: 'dance wildly',
      demos: [demo('go to desk 1', 'On the desk 1, you see a book 3.', 0.5)],
    });
    expect(prediction).toMatchObject({
      observation: { text: 'Nothing happens.' },
      reward: 0,
      done: false,
    });
  });

  it('starts from the initial state of the most similar stored task', async () => {
    const initial = demo('go to desk 1', 'x', 0.7, {
      stepIndex: 0,
      state: { text: 'You are in the middle of a room.', actions: ['go to desk 1'] },
    });
    await expect(
      model.initialState({ task, demos: [demo('go to desk 1', 'x', 0.9), initial] }),
    ).resolves.toEqual({ text: 'You are in the middle of a room.', actions: ['go to desk 1'] });
    await expect(model.initialState({ task, demos: [] })).rejects.toSatisfy(
      EnvironmentError.isInstance,
    );
  });
});

describe('RetrievalExperienceModel termination prior', () => {
  it('does not end the episode on a put the task never asked for, however its neighbours ended', async () => {
    const model = new RetrievalExperienceModel();
    const prediction = await model.predict({
      task: TaskSchema.parse({
        id: 't',
        domain: 'alfworld',
        instruction: 'put a hot apple in fridge.',
      }),
      history: [],
      state: { text: 'On the garbagecan 1, you see nothing.' },
      action: 'put spatula 1 in/on garbagecan 1',
      demos: [
        demo('put mug 1 in/on shelf 1', 'You put the mug 1 in/on the shelf 1.', 0.9, {
          done: true,
          reward: 1,
          instruction: 'put some mug on shelf.',
        }),
        demo('put egg 2 in/on countertop 1', 'You put the egg 2 in/on the countertop 1.', 0.88, {
          done: true,
          reward: 1,
          instruction: 'put a egg in countertop.',
        }),
      ],
    });
    expect(prediction.observation.text).toBe('You put the spatula 1 in/on the garbagecan 1.');
    expect(earned({}, prediction)).toMatchObject({ reward: 0, done: false, success: false });
  });
});

describe('RetrievalExperienceModel grounding', () => {
  it('lets only offline and real neighbours vote on the outcome', async () => {
    const model = new RetrievalExperienceModel();
    const task = TaskSchema.parse({
      id: 't',
      domain: 'alfworld',
      instruction: 'put a keychain in desk.',
    });
    const synthetic = demo(
      'put laptop 2 in/on shelf 1',
      'You put the laptop 2 in/on the shelf 1.',
      0.95,
      {
        done: true,
        reward: 1,
        instruction: 'put a keychain in desk.',
      },
    );
    const prediction = await model.predict({
      task,
      history: [],
      state: { text: 'On the shelf 5, you see nothing.' },
      action: 'put laptop 1 in/on shelf 5',
      demos: [{ ...synthetic, transition: { ...synthetic.transition, source: 'synthetic' } }],
    });
    expect(prediction.observation.text).toBe('You put the laptop 1 in/on the shelf 5.');
    expect(earned({}, prediction)).toMatchObject({ done: false, reward: 0 });
  });
});

describe('RetrievalExperienceModel occurrence counts', () => {
  const model = new RetrievalExperienceModel();
  const counted = (entry: ScoredTransition, count: number): ScoredTransition => ({
    ...entry,
    count,
  });

  it('predicts the next state seen most often, not the one stored under the most ids', async () => {
    // Two outcomes of the same action: one stored once but seen five times, the other
    // stored as two distinct neighbours seen once each (and scored a little higher).
    const prediction = await model.predict({
      task,
      history: [],
      state: { text: 'You are in the middle of a room.' },
      action: 'go to drawer 1',
      demos: [
        demo('go to drawer 1', 'The drawer 1 is open. In it, you see nothing.', 0.9),
        demo('go to drawer 1', 'The drawer 1 is open. In it, you see nothing.', 0.899, {
          id: 'second',
        }),
        counted(demo('go to drawer 1', 'The drawer 1 is closed.', 0.89), 5),
      ],
    });
    expect(prediction.observation.text).toBe('The drawer 1 is closed.');
    expect(prediction.info?.supportingDemoIds).toEqual(['go to drawer 1@0.89']);
  });

  it('weighs the termination and reward votes by the counts', async () => {
    const put = (score: number, done: boolean, id: string) =>
      demo('put apple 2 in/on fridge 1', 'You put the apple 2 in/on the fridge 1.', score, {
        id,
        done,
        reward: done ? 1 : 0,
        instruction: 'put a clean apple in fridge.',
      });
    const input = {
      task,
      history: [],
      state: { text: 'On the fridge 1, you see nothing.' },
      action: 'put apple 1 in/on fridge 1',
    };
    const once = await model.predict({
      ...input,
      demos: [put(0.9, true, 'ended'), put(0.9, false, 'went-on')],
    });
    expect(earned({}, once)).toMatchObject({ done: false, reward: 0 });
    const ended = await model.predict({
      ...input,
      demos: [counted(put(0.9, true, 'ended'), 4), put(0.9, false, 'went-on')],
    });
    expect(earned({}, ended)).toMatchObject({ done: true, success: true, reward: 1 });
  });

  it('lets neighbours with the very same state and action outvote merely similar ones', async () => {
    const prediction = await model.predict({
      task,
      history: [],
      state: { text: 'You are in the middle of a room.' },
      action: 'go to drawer 1',
      demos: [
        demo('go to drawer 1', 'The drawer 1 is open. In it, you see nothing.', 1),
        counted(demo('go to drawer 1', 'The drawer 1 is closed.', 0.995), 3),
        demo('go to drawer 1', 'The drawer 1 is closed.', 0.994, { id: 'similar' }),
      ],
    });
    expect(prediction.observation.text).toBe('The drawer 1 is open. In it, you see nothing.');
    // A synthetic twin is only an earlier guess of this model: it silences no one.
    const guessed = await model.predict({
      task,
      history: [],
      state: { text: 'You are in the middle of a room.' },
      action: 'go to drawer 1',
      demos: [
        demo('go to drawer 1', 'The drawer 1 is open. In it, you see nothing.', 1, {
          source: 'synthetic',
        }),
        counted(demo('go to drawer 1', 'The drawer 1 is closed.', 0.995), 3),
      ],
    });
    expect(guessed.observation.text).toBe('The drawer 1 is closed.');
  });

  it('lets a synthetic neighbour vote once, however often this model guessed it', async () => {
    const guessed = demo('go to drawer 1', 'The drawer 1 is closed.', 0.9, { source: 'synthetic' });
    const prediction = await model.predict({
      task,
      history: [],
      state: { text: 'You are in the middle of a room.' },
      action: 'go to drawer 1',
      demos: [
        counted(guessed, 50),
        counted(demo('go to drawer 1', 'The drawer 1 is open. In it, you see nothing.', 0.9), 2),
      ],
    });
    expect(prediction.observation.text).toBe('The drawer 1 is open. In it, you see nothing.');
    expect(occurrenceWeight(counted(guessed, 50))).toBe(1);
    expect(occurrenceWeight(guessed)).toBe(1);
  });
});
