/**
 * The goal check against the real engine: the expert's games and variants of them that break
 * one rule each, replayed on TextWorld; where the engine's game ends, the check must say what
 * the engine says.
 */
import type { Step, Trajectory } from '@dreamgym/core/mdp';
import { describe, expect, it } from 'vitest';
import { createTextworldAdapter } from './adapter.js';
import { textworldTestDataset } from './test-data-directory.js';

const { dir: dataDir } = await textworldTestDataset();
const adapter = createTextworldAdapter({ dataDir });

/** The expert's actions, and variants each breaking one rule of the recipe. */
function variants(trajectory: Trajectory): Array<{ name: string; actions: string[] }> {
  const actions = trajectory.steps.map((step) => step.action);
  const cooking = actions.findIndex((action) => action.startsWith('cook '));
  const cutting = actions.findIndex((action) => /^(slice|dice|chop) /.test(action));
  const prepare = actions.indexOf('prepare meal');
  const without = (index: number) => actions.filter((_, at) => at !== index);
  const result = [{ name: 'expert', actions }];
  if (cooking >= 0) {
    result.push({
      name: 'cooked twice',
      actions: [...actions.slice(0, cooking + 1), actions[cooking]!, ...actions.slice(cooking + 1)],
    });
    result.push({ name: 'not cooked', actions: without(cooking) });
  }
  if (cutting >= 0) result.push({ name: 'not cut', actions: without(cutting) });
  if (prepare > 0 && cooking >= 0 && cooking < prepare) {
    // The meal prepared before the cooking is done.
    const early = without(cooking);
    early.splice(early.indexOf('prepare meal') + 1, 0, actions[cooking]!);
    result.push({ name: 'prepared before cooking', actions: early });
  }
  return result;
}

describe('textworldGoalCheck', () => {
  it("says what the real engine says of eating the meal, for the expert's games and variants breaking one rule", async () => {
    const environment = await adapter.connectReal({});
    let checked = 0;
    let refused = 0;
    try {
      for await (const trajectory of adapter.datasets.trajectories.load(dataDir)) {
        for (const variant of variants(trajectory)) {
          const history: Step[] = [];
          let observation = await environment.reset(trajectory.task);
          for (const action of variant.actions) {
            const result = await environment.step(action);
            const check = adapter.goalCheck!({
              task: trajectory.task,
              history,
              action,
              nextState: result.observation,
            });
            if (action === 'eat meal') {
              checked += 1;
              if (result.info.success !== true) refused += 1;
              expect(check, `${trajectory.task.id} ${variant.name}`).toBe(
                result.info.success === true,
              );
            } else {
              expect(check).toBeUndefined();
            }
            history.push({ observation, action, reward: result.reward, done: result.done });
            observation = result.observation;
            if (result.done) break;
          }
        }
      }
    } finally {
      await environment.close();
    }
    // The expert's wins, and variants the engine does not pay (a burnt ingredient ends the
    // game before the meal).
    expect(checked - refused).toBe(4);
    expect(refused).toBeGreaterThanOrEqual(4);
  }, 240_000);
});
