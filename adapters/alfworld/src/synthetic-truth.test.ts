/**
 * Synthetic experience that tells the truth, on real ALFWorld data. The world memory answers
 * a place in a game as that game's own episodes saw it. The learned outcome judge: trained on the expert trajectories of 80%
 * of the train games, it must refuse the exploits RL found in the retrieval model's votes (a
 * `put` of the wrong object, of something never taken, without the preparation the task
 * asks for, a lamp used with nothing in hand) and keep paying the held-out games' real final
 * steps. The exploits are the ones recorded from a policy trained by the main job.
 */
import {
  JudgedExperienceModel,
  OutcomeJudge,
  type ReplayBuffer,
  RetrievalExperienceModel,
  SyntheticEnvironment,
  type Task,
  type Trajectory,
} from '@dreamgym/core';
import { learnActionRefusal, WorldMemory } from '@dreamgym/core/experience';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAlfworldAction } from './action-grammar.js';
import { createAlfworldAdapter } from './adapter.js';
import { alfworldExperienceHints } from './experience-hints.js';
import { loadExpertSplit } from './expert-split.test-support.js';

interface Data {
  train: Trajectory[];
  heldOut: Trajectory[];
  judge: OutcomeJudge;
  buffer: ReplayBuffer;
}
let data: Promise<Data> | undefined;
function load(): Promise<Data> {
  data ??= (async () => {
    const split = await loadExpertSplit();
    const refusal = learnActionRefusal(createAlfworldAdapter(), split.train);
    const judge = OutcomeJudge.train(split.train, { parseAction: parseAlfworldAction, refusal });
    if (!judge) throw new Error('the expert trajectories hold no ended episode');
    return { ...split, judge };
  })();
  return data;
}
// The expert split and the judge are built once for the file (~10 s alone, several times that
// on a loaded machine), before the tests' own timeouts start.
beforeAll(() => load(), 180_000);
afterAll(async () => {
  if (data) await (await data).buffer.close();
});

/** A step as the judge reads it. */
function judgeOf(judge: OutcomeJudge, instruction: string, history: string[], action: string) {
  return judge.judge({
    task: { instruction },
    history: history.map((previous) => ({ action: previous })),
    action,
  });
}

describe('OutcomeJudge on ALFWorld', () => {
  it('refuses the exploits a policy found in the retrieval model and pays the right steps', async () => {
    const { judge } = await load();
    const heat = 'heat some apple and put it in countertop.';
    const cases: Array<[string, string, string[], string, boolean]> = [
      // [what it shows, instruction, history, action, success expected]
      [
        'the wrong object',
        'put a box in armchair.',
        ['go to coffeetable 1', 'take remotecontrol 2 from coffeetable 1', 'go to armchair 1'],
        'put remotecontrol 2 in/on armchair 1',
        false,
      ],
      [
        'the right object',
        'put a box in armchair.',
        ['go to sidetable 1', 'take box 1 from sidetable 1', 'go to armchair 1'],
        'put box 1 in/on armchair 1',
        true,
      ],
      [
        'a put of something never taken',
        heat,
        ['go to fridge 1', 'open fridge 1', 'go to countertop 1'],
        'put bread 1 in/on countertop 1',
        false,
      ],
      [
        "the task's object, never taken",
        heat,
        ['go to fridge 1', 'open fridge 1', 'go to countertop 1'],
        'put apple 1 in/on countertop 1',
        false,
      ],
      [
        'a missing preparation (never heated)',
        heat,
        ['go to fridge 1', 'open fridge 1', 'take apple 1 from fridge 1', 'go to countertop 1'],
        'put apple 1 in/on countertop 1',
        false,
      ],
      [
        'taken, heated, placed',
        heat,
        [
          'go to fridge 1',
          'open fridge 1',
          'take apple 1 from fridge 1',
          'go to microwave 1',
          'heat apple 1 with microwave 1',
          'go to countertop 1',
        ],
        'put apple 1 in/on countertop 1',
        true,
      ],
      [
        'the first of two',
        'put two cellphone in bed.',
        ['go to desk 1', 'take cellphone 1 from desk 1', 'go to bed 1'],
        'put cellphone 1 in/on bed 1',
        false,
      ],
      [
        'the second of two',
        'put two cellphone in bed.',
        [
          'go to desk 1',
          'take cellphone 1 from desk 1',
          'go to bed 1',
          'put cellphone 1 in/on bed 1',
          'go to desk 2',
          'take cellphone 2 from desk 2',
          'go to bed 1',
        ],
        'put cellphone 2 in/on bed 1',
        true,
      ],
      [
        'a lamp used with nothing in hand',
        'look at alarmclock under the desklamp.',
        ['go to desk 1'],
        'use desklamp 1',
        false,
      ],
      [
        'a lamp used holding the object',
        'look at alarmclock under the desklamp.',
        ['go to desk 1', 'take alarmclock 1 from desk 1'],
        'use desklamp 1',
        true,
      ],
    ];
    const wrong = cases
      .map(([what, instruction, history, action, expected]) => {
        const verdict = judgeOf(judge, instruction, history, action);
        return { what, expected, verdict };
      })
      .filter(({ expected, verdict }) => verdict.success !== expected);
    expect(wrong.map(({ what, verdict }) => `${what}: P(done) ${verdict.doneProbability}`)).toEqual(
      [],
    );
  });

  it('keeps paying the real final steps of held-out games and rarely pays any other step', async () => {
    const { judge, heldOut } = await load();
    let finals = 0;
    let paidFinals = 0;
    let others = 0;
    let paidOthers = 0;
    for (const trajectory of heldOut) {
      trajectory.steps.forEach((step, index) => {
        const verdict = judge.judge({
          task: trajectory.task,
          history: trajectory.steps.slice(0, index),
          action: step.action,
        });
        if (index === trajectory.steps.length - 1) {
          finals += 1;
          if (verdict.success) paidFinals += 1;
        } else {
          others += 1;
          if (verdict.success) paidOthers += 1;
        }
      });
    }
    console.info(
      `outcome judge on ${heldOut.length} held-out expert games: final steps paid ${paidFinals}/${finals}, other steps paid ${paidOthers}/${others}`,
    );
    expect(paidFinals / finals).toBeGreaterThanOrEqual(0.97);
    expect(paidOthers / others).toBeLessThanOrEqual(0.002);
  });

  it('a synthetic episode of a put never taken earns nothing; a game played right is paid', async () => {
    const { judge, buffer, train } = await load();
    const adapter = createAlfworldAdapter();
    const model = new JudgedExperienceModel(
      new RetrievalExperienceModel({
        parseAction: parseAlfworldAction,
        hints: alfworldExperienceHints,
        worldMemory: WorldMemory.fromTrajectories(train, { parseAction: parseAlfworldAction }),
      }),
      judge,
    );
    async function play(task: Task, actions: readonly string[]) {
      const environment = new SyntheticEnvironment({ model, retriever: buffer, adapter, k: 8 });
      await environment.reset(task);
      const results = [];
      for (const action of actions) {
        const result = await environment.step(action);
        results.push(result);
        if (result.done) break;
      }
      await environment.close();
      return results;
    }
    const exploit = await play(
      {
        id: 'test/heat-apple',
        domain: 'alfworld',
        instruction: 'heat some apple and put it in countertop.',
        origin: 'seed',
        meta: {},
        initialObservation: {
          text: '-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, you see a countertop 1, a fridge 1, a microwave 1, and a sinkbasin 1.\n\nYour task is to: heat some apple and put it in countertop.',
        },
      },
      ['go to fridge 1', 'open fridge 1', 'go to countertop 1', 'put bread 1 in/on countertop 1'],
    );
    expect(exploit.map((result) => result.reward)).toEqual([0, 0, 0, 0]);
    expect(exploit.at(-1)!.done).toBe(false);
    // A training game of the heat type, played as its expert did, in the world its episodes showed.
    const game = train.find((trajectory) => /^heat /.test(trajectory.task.instruction))!;
    const right = await play(
      { ...game.task, initialObservation: game.steps[0]!.observation },
      game.steps.map((step) => step.action),
    );
    expect(right.filter((result) => result.info.invalidAction)).toEqual([]);
    expect(right.at(-1)).toMatchObject({ reward: 1, done: true });
    expect(right.at(-1)!.info.experienceModel).toBe('retrieval+judge');
  });
});

describe('invalid free-text actions on ALFWorld', () => {
  it('answers a put of an object never taken as the engine does: Nothing happens, no change, no reward', async () => {
    const { judge, buffer } = await load();
    const adapter = createAlfworldAdapter();
    const refusal = judge.refusal!;
    console.info(
      `refusal learned from ${refusal.steps} expert steps: the candidate actions hold ${refusal.listed}; answer ${JSON.stringify(refusal.answer)} (${refusal.answerSource})`,
    );
    expect(refusal.refuseUnlisted).toBe(true);
    const model = new JudgedExperienceModel(
      new RetrievalExperienceModel({
        parseAction: parseAlfworldAction,
        hints: alfworldExperienceHints,
      }),
      judge,
    );
    const answered: string[] = [];
    // Six games' first places; the put names an object of the instruction, never taken.
    const { train } = await load();
    for (const trajectory of train.slice(0, 6)) {
      const environment = new SyntheticEnvironment({ model, retriever: buffer, adapter, k: 8 });
      const task = { ...trajectory.task, initialObservation: trajectory.steps[0]!.observation };
      const start = await environment.reset(task);
      const arrived = await environment.step(trajectory.steps[0]!.action);
      const object =
        /(?:put|find|heat|cool|clean|examine|look at) (?:a |an |some |two )?([a-z]+)/.exec(
          task.instruction,
        )?.[1];
      const place = /go to (.+)$/.exec(trajectory.steps[0]!.action)?.[1] ?? 'countertop 1';
      const refused = await environment.step(`put ${object} 1 in/on ${place}`);
      answered.push(refused.observation.text);
      expect(refused.reward).toBe(0);
      expect(refused.done).toBe(false);
      expect(refused.info.invalidAction).toBe(true);
      expect(refused.observation.actions).toEqual(arrived.observation.actions);
      expect(start.actions!.length).toBeGreaterThan(0);
      await environment.close();
    }
    expect(answered).toEqual(Array(6).fill('Nothing happens.'));
  });
});

describe('WorldMemory on ALFWorld', () => {
  it("answers a held-out game's places as its own expert saw them, where neighbours answer from other games", async () => {
    const { heldOut, buffer } = await load();
    const memory = WorldMemory.fromTrajectories(heldOut, { parseAction: parseAlfworldAction });
    const plain = new RetrievalExperienceModel({
      parseAction: parseAlfworldAction,
      hints: alfworldExperienceHints,
    });
    const grounded = new RetrievalExperienceModel({
      parseAction: parseAlfworldAction,
      hints: alfworldExperienceHints,
      worldMemory: memory,
    });
    let visits = 0;
    let plainRight = 0;
    let groundedRight = 0;
    // The first visit of each place by the first 40 held-out games: the buffer holds none of them.
    for (const trajectory of heldOut.slice(0, 40)) {
      const seen = new Set<string>();
      for (const [index, step] of trajectory.steps.entries()) {
        if (!step.action.startsWith('go to ') || seen.has(step.action)) continue;
        seen.add(step.action);
        const truth = (trajectory.steps[index + 1]?.observation ?? trajectory.finalObservation)!
          .text;
        const input = {
          task: trajectory.task,
          history: [],
          state: step.observation,
          action: step.action,
          demos: await buffer.search(
            {
              state: step.observation,
              action: step.action,
              instruction: trajectory.task.instruction,
            },
            8,
          ),
        };
        visits += 1;
        if ((await plain.predict(input)).observation.text === truth) plainRight += 1;
        if ((await grounded.predict(input)).observation.text === truth) groundedRight += 1;
      }
    }
    console.info(
      `first visits of ${visits} places in 40 held-out games: neighbours right ${plainRight}, world memory right ${groundedRight}`,
    );
    expect(groundedRight).toBe(visits);
    expect(plainRight).toBeLessThan(0.5 * visits);
  });
});
