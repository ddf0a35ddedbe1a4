/**
 * The embedded policy's relational features on the real ALFWorld engine (issue 53): cloned on
 * expert demonstrations of other scenes (other worlds: other rooms, furniture and objects'
 * places), a relational policy predicts the expert's moves in a game of a scene it never saw,
 * played on the real engine with the engine's own observations and admissible actions, better
 * than the lexical policy cloned on the same demonstrations the same way.
 */
import { LinearSoftmaxPolicy, SeededRandom, type Step, type Task } from '@dreamgym/core';
import { demonstrationSamples } from '@dreamgym/core/training';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAlfworldAdapter } from './adapter.js';
import { START_HOOK_TIMEOUT_MS, startTestEngineServer } from './real/engine-server.test-support.js';
import type { AlfworldServerProcess } from './real/server-process.js';
import { alfworldDataDirectory } from './test-data-directory.js';

const dataDir = alfworldDataDirectory();
// Its shared demonstration replays turn for turn on the engine (expert.test.ts); scene 306.
const GAME = 'train/pick_and_place_simple-CellPhone-None-Bed-306/trial_T20190909_012724_686117';
const adapter = createAlfworldAdapter({ dataDir });

let server: AlfworldServerProcess;
beforeAll(async () => {
  server = await startTestEngineServer(dataDir);
}, START_HOOK_TIMEOUT_MS);
afterAll(async () => {
  await server?.stop();
});

describe('relational features on the real engine', () => {
  it('predict the expert in a scene the policy never saw better than lexical features do', async () => {
    const trajectories = [];
    for await (const trajectory of adapter.datasets.trajectories.load(dataDir, {})) {
      trajectories.push(trajectory);
    }
    const target = trajectories.find((trajectory) => trajectory.task.id === GAME)!;
    expect(target, `${GAME} has a demonstration`).toBeDefined();
    const scene = target.task.meta?.scene;
    const otherScenes = trajectories
      .filter((trajectory) => trajectory.success && trajectory.task.meta?.scene !== scene)
      .slice(0, 150);
    const samples = demonstrationSamples(otherScenes, (observation, history) =>
      adapter.candidateActions(observation, history),
    );

    const cloned = async (features: 'lexical' | 'relational') => {
      const policy = new LinearSoftmaxPolicy({ random: new SeededRandom(1), features });
      const random = new SeededRandom(2);
      for (let epoch = 0; epoch < 6; epoch += 1) {
        await policy.imitate(samples, { random, miniBatchSize: 256 });
      }
      return policy;
    };
    const policies = { lexical: await cloned('lexical'), relational: await cloned('relational') };

    // The expert's moves on the real engine: its observations and admissible actions.
    const environment = await adapter.connectReal({ url: server.url });
    const logLikelihood = { lexical: 0, relational: 0 };
    const task: Task = target.task;
    const history: Step[] = [];
    try {
      let observation = await environment.reset(task);
      for (const { action } of target.steps) {
        const candidates = adapter.candidateActions(observation, history);
        expect(candidates).toContain(action);
        for (const features of ['lexical', 'relational'] as const) {
          const { logProbabilities } = policies[features].distribution(observation, {
            task,
            history,
            candidates,
          });
          logLikelihood[features] += logProbabilities[candidates.indexOf(action)]!;
        }
        const result = await environment.step(action);
        history.push({ observation, action, reward: result.reward, done: result.done });
        observation = result.observation;
      }
      expect(history.at(-1)?.reward).toBe(1);
    } finally {
      await environment.close();
    }
    const steps = target.steps.length;
    const perStep = {
      lexical: logLikelihood.lexical / steps,
      relational: logLikelihood.relational / steps,
    };
    expect(perStep.relational, JSON.stringify(perStep)).toBeGreaterThan(perStep.lexical + 0.2);
  }, 300_000);
});
