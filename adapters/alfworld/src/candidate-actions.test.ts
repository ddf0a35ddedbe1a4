import type { Step, Trajectory } from '@dreamgym/core';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAlfworldAction } from './action-grammar.js';
import { alfworldCandidateActions, measureCandidateCoverage } from './candidate-actions.js';
import { loadAlfworldExpertTrajectories } from './datasets/expert-trajectories.js';
import { alfworldDataDirectory } from './test-data-directory.js';

const adapter = { candidateActions: alfworldCandidateActions, parseAction: parseAlfworldAction };

describe('alfworldCandidateActions', () => {
  const start = {
    text: 'You are in the middle of a room. Looking quickly around you, you see a countertop 1, a drawer 1, a fridge 1, and a sinkbasin 1.',
  };

  it('proposes going to every receptacle of the room at the start', () => {
    expect(alfworldCandidateActions(start, [])).toEqual([
      'go to countertop 1',
      'go to drawer 1',
      'go to fridge 1',
      'go to sinkbasin 1',
      'inventory',
      'look',
    ]);
  });

  it('tracks place, contents, open state and the held object', () => {
    const history = [
      { observation: start, action: 'go to drawer 1', reward: 0, done: false },
      {
        observation: { text: 'The drawer 1 is closed.' },
        action: 'open drawer 1',
        reward: 0,
        done: false,
      },
    ];
    const opened = {
      text: 'You open the drawer 1. The drawer 1 is open. In it, you see a apple 1, and a desklamp 1.',
    };
    const atDrawer = alfworldCandidateActions(opened, history);
    expect(atDrawer).toContain('close drawer 1');
    expect(atDrawer).toContain('take apple 1 from drawer 1');
    expect(atDrawer).toContain('use desklamp 1');
    expect(atDrawer).not.toContain('go to drawer 1');
    expect(atDrawer).not.toContain('open drawer 1');

    const holding = alfworldCandidateActions({ text: 'On the sinkbasin 1, you see nothing.' }, [
      ...history,
      { observation: opened, action: 'take apple 1 from drawer 1', reward: 0, done: false },
      {
        observation: { text: 'You pick up the apple 1 from the drawer 1.' },
        action: 'go to sinkbasin 1',
        reward: 0,
        done: false,
      },
    ]);
    expect(holding).toContain('clean apple 1 with sinkbasin 1');
    expect(holding).toContain('put apple 1 in/on sinkbasin 1');
    expect(holding).toContain('examine apple 1');
    expect(holding.some((action) => action.startsWith('take '))).toBe(false);
  });

  it('does not move the agent when go to was answered with Nothing happens.', () => {
    const candidates = alfworldCandidateActions({ text: 'Nothing happens.' }, [
      { observation: start, action: 'go to bed 1', reward: 0, done: false },
    ]);
    expect(candidates).not.toContain('examine bed 1');
    expect(candidates).toContain('go to countertop 1');
  });

  it('returns the engine list unchanged when the observation has one', () => {
    expect(alfworldCandidateActions({ text: 'x', actions: ['look', 'inventory'] }, [])).toEqual([
      'look',
      'inventory',
    ]);
  });
});

describe('measureCandidateCoverage on expert trajectories', () => {
  let trajectories: Trajectory[];
  beforeAll(async () => {
    const all: Trajectory[] = [];
    for await (const trajectory of loadAlfworldExpertTrajectories(alfworldDataDirectory())) {
      all.push(trajectory);
    }
    // Every 11th train trajectory: a deterministic subset of 324 spread over all task types.
    trajectories = all.filter((_, index) => index % 11 === 0);
  });

  it('contains the expert next command at least 95% of the time', () => {
    const result = measureCandidateCoverage(trajectories, adapter);
    console.log(
      `candidate coverage over ${trajectories.length} expert trajectories (${result.steps} steps): ${(100 * result.coverage).toFixed(2)}%, mean candidates ${result.meanCandidates.toFixed(1)}`,
      JSON.stringify(result.byActionType),
    );
    expect(trajectories.length).toBeGreaterThanOrEqual(300);
    expect(result.coverage).toBeGreaterThanOrEqual(0.95);
    expect(result.meanCandidates).toBeGreaterThan(1);
  });

  it('gives the same candidates when one growing history is resumed as when replayed anew', () => {
    let compared = 0;
    for (const trajectory of trajectories.slice(0, 40)) {
      // One array grown in place, as the synthetic environment grows its history: calls
      // after the first resume from the state remembered for it.
      const growing: Step[] = [];
      for (const [index, step] of trajectory.steps.entries()) {
        const observation = trajectory.steps[index + 1]?.observation ?? step.observation;
        growing.push({ ...step, observation: step.observation });
        // The second call on the same array and length must not apply the last step twice.
        alfworldCandidateActions({ text: observation.text }, growing);
        const resumed = alfworldCandidateActions({ text: observation.text }, growing);
        const replayed = alfworldCandidateActions({ text: observation.text }, [...growing]);
        expect(resumed).toEqual(replayed);
        compared += 1;
      }
      // A step replaced in the middle is not the remembered episode: it is replayed anew.
      if (growing.length > 3) {
        growing[1] = { ...growing[1]!, action: 'look', observation: { text: 'Nothing happens.' } };
        const last = { text: trajectory.steps.at(-1)!.observation.text };
        expect(alfworldCandidateActions(last, growing)).toEqual(
          alfworldCandidateActions(last, [...growing]),
        );
      }
    }
    expect(compared).toBeGreaterThan(200);
  });
});
