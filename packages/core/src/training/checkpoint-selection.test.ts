import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { evaluatePolicy } from '../eval/policy-evaluation.js';
import type {
  ExperienceInput,
  ExperienceModel,
  ExperiencePrediction,
} from '../experience/experience-model.js';
import { RetrievalExperienceModel } from '../experience/retrieval-experience-model.js';
import { SeededRandom } from '../random/seeded-random.js';
import { CorridorEnvironment } from '../testing/corridor-domain.js';
import {
  corridorLoop,
  corridorLoopConfig,
  corridorSeedTasks,
} from './corridor-loop.test-support.js';
import { createLinearSoftmaxPolicy, parseDreamGymConfig } from './dreamgym-config.js';
import { loadRunPolicy } from './dreamgym-loop.js';

/**
 * A synthetic environment that tells the truth until `lying` is set, then lies: it pays
 * walking past the key (and ends the episode there), never the real goal, so training in it
 * makes the policy worse on the real corridor, where the door needs the key.
 */
class TurningExperienceModel implements ExperienceModel {
  readonly id = 'turning';
  /** Its own rewards count (the penalty below), not only success and failure. */
  readonly rewardRule = { mode: 'model' as const, failureReward: -1 };
  lying = false;
  private readonly inner = new RetrievalExperienceModel();

  async predict(input: ExperienceInput): Promise<ExperiencePrediction> {
    const prediction = await this.inner.predict(input);
    if (!this.lying) return prediction;
    // Taking the key ends the episode with a penalty.
    const takesKey = input.action === 'take key';
    return { ...prediction, reward: takesKey ? -1 : 0, done: takesKey, success: false };
  }
}

const config = {
  iterations: 6,
  algorithm: 'ppo' as const,
  policy: { hashBits: 14, learningRate: 0.01 },
  evaluation: { every: 3, environments: ['real' as const], atStart: true },
  simToReal: { realTransitionBudget: 0 },
  selection: { realTasks: 6, every: 2 },
};

/** Real greedy successes of a run's latest checkpoint on the corridor's seed tasks. */
async function realSuccesses(run: string): Promise<number> {
  const policy = createLinearSoftmaxPolicy(
    parseDreamGymConfig({ ...corridorLoopConfig, ...config }),
  );
  await loadRunPolicy(run, policy);
  const { rollouts } = await evaluatePolicy({
    policy,
    environmentFactory: () => new CorridorEnvironment({ maxSteps: corridorLoopConfig.maxSteps }),
    environment: 'real',
    tasks: corridorSeedTasks(),
    maxSteps: corridorLoopConfig.maxSteps!,
    greedy: true,
    random: new SeededRandom(1),
  });
  return rollouts.filter((rollout) => rollout.success).length;
}

describe('checkpoint selection by a real validation set', () => {
  let directory: string;
  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), 'dreamgym-selection-'));
  });
  afterEach(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('ends a run whose synthetic environment turns to lying on the policy the real validation preferred, counting the real steps', async () => {
    const run = join(directory, 'run');
    const logs: string[] = [];
    const model = new TurningExperienceModel();
    const components = {
      experienceModel: model,
      log: (line: string) => logs.push(line),
      // Truthful for the first two iterations, lying after.
      onIteration: (metrics: { iteration: number }) => {
        model.lying = metrics.iteration >= 1;
      },
    };
    const result = await (await corridorLoop(run, components, config)).run();
    const selection = result.selection!;
    // Validated at the start and at every evaluation point.
    const records = selection.records;
    expect(records.map((record) => record.iteration)).toEqual([0, 2, 4, 6]);
    // The truthful iterations helped, the lie undid it; the run keeps the best, the earliest on a tie.
    const best = Math.max(...records.map((record) => record.successes));
    const kept = records.find((record) => record.successes === best)!;
    expect(selection.keptIteration).toBe(kept.iteration);
    expect(kept.iteration).toBeGreaterThan(0);
    expect(records.at(-1)!.successes).toBeLessThan(best);
    expect(
      logs.some((line) => line.includes(`the run ends on iteration ${kept.iteration}'s policy`)),
    ).toBe(true);
    // Validation's real steps are the run's real transitions.
    const spent = records.reduce((sum, record) => sum + record.transitions, 0);
    expect(spent).toBe(selection.transitions);
    expect(result.metrics.at(-1)!.realTransitions).toBe(spent);
    // The last checkpoint holds the kept policy: eval and fidelity measure what was kept.
    expect(await readdir(join(run, 'checkpoints'))).toContain('iteration-000006-kept');
    expect(await realSuccesses(run)).toBe(best);
    // The kept iteration was not evaluated (evaluation every 3), so the run evaluated the
    // kept policy: the evaluation tasks are the validation's here.
    expect(result.metrics[kept.iteration - 1]!.evaluations).toEqual([]);
    expect(result.finalEvaluations.map((metrics) => metrics.successRate)).toEqual([best / 6]);
    expect(JSON.parse(await readFile(join(run, 'selection.json'), 'utf8'))).toEqual({
      ...selection,
      evaluations: result.finalEvaluations,
    });

    // Resuming the finished run changes nothing; extending it validates again and keeps the best.
    const again = await (await corridorLoop(run, components, config)).run({ resume: true });
    expect(again.selection).toEqual(selection);
    // ...its final evaluations are the kept policy's, read back from selection.json.
    expect(again.finalEvaluations).toEqual(result.finalEvaluations);
    const extended = await (await corridorLoop(run, components, { ...config, iterations: 8 })).run({
      resume: true,
      extend: true,
    });
    expect(extended.selection!.records.map((record) => record.iteration)).toEqual([0, 2, 4, 6, 8]);
    expect(extended.selection!.keptIteration).toBe(kept.iteration);
    expect(await realSuccesses(run)).toBe(best);
  });

  it('needs a real environment and at least one task', async () => {
    await expect(
      corridorLoop(
        join(directory, 'no-real'),
        { realEnvironment: undefined },
        { ...config, evaluation: { environments: ['synthetic'] } },
      ),
    ).rejects.toThrow(/selection\.realTasks needs a real environment/);
    await expect(
      corridorLoop(join(directory, 'none'), {}, { ...config, selection: { realTasks: 0 } }),
    ).rejects.toThrow(/selection\.realTasks/);
  });
});
