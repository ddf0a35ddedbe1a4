/**
 * The loop's evaluations: every configured environment x mode on the held-out tasks, and the
 * synthetic-to-real gap (the same training tasks in both environments), with a progress line
 * every tenth of a long evaluation.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { DomainAdapter } from '../adapter.js';
import type { EvaluationMetrics, SyntheticToRealGap } from '../eval/evaluation-metrics.js';
import { evaluatePolicy } from '../eval/policy-evaluation.js';
import { writeFileAtomic } from '../files/atomic-write.js';
import type { Task } from '../mdp/schemas.js';
import { SeededRandom } from '../random/seeded-random.js';
import type { DreamGymConfig } from './dreamgym-config.js';
import type { RunState } from './loop-state.js';

/** What the loop's evaluations read. */
export interface LoopEvaluationParts {
  config: DreamGymConfig;
  adapter: Pick<DomainAdapter, 'candidateActions'>;
  /** Held-out tasks; none: no evaluation. */
  evaluationTasks: readonly Task[];
  /** The tasks the gap is sampled from. */
  seedTasks: readonly Task[];
  log: (message: string) => void;
}

/** The starting policy measured before RL (`start-evaluation.json`). */
export interface StartEvaluation {
  /** Every configured evaluation (environment x mode). */
  evaluations: EvaluationMetrics[];
  /** The same training tasks in both environments, with `evaluation.gapTasks`. */
  syntheticToRealGap?: SyntheticToRealGap;
}

/** The loop's evaluations of the run's current policy. */
export class LoopEvaluation {
  constructor(private readonly parts: LoopEvaluationParts) {}

  /**
   * The starting policy's evaluation (`evaluation.atStart`): measured once when the run
   * begins and kept in `file`, read back when it resumes.
   */
  async start(
    state: RunState,
    options: { resumed: boolean; file: string },
  ): Promise<StartEvaluation | undefined> {
    if (!this.parts.config.evaluation.atStart) return undefined;
    if (options.resumed) {
      return existsSync(options.file)
        ? (JSON.parse(await readFile(options.file, 'utf8')) as StartEvaluation)
        : undefined;
    }
    this.parts.log('evaluating the starting policy...');
    const evaluations = await this.evaluate(state, 0);
    const gap = await this.syntheticToRealGap(state, 0);
    const start = { evaluations, ...(gap ? { syntheticToRealGap: gap } : {}) };
    await writeFileAtomic(options.file, `${JSON.stringify(start, null, 2)}\n`);
    return start;
  }

  /** Every configured evaluation (environment x mode) on the held-out tasks. */
  async evaluate(state: RunState, iterationNumber: number): Promise<EvaluationMetrics[]> {
    const { config, evaluationTasks } = this.parts;
    const { evaluation } = config;
    const results: EvaluationMetrics[] = [];
    if (evaluationTasks.length === 0) return results;
    for (const environment of evaluation.environments) {
      for (const mode of evaluation.modes) {
        results.push(
          await this.evaluateTasks(state, environment, evaluationTasks, {
            greedy: mode === 'greedy',
            episodesPerTask: evaluation.episodesPerTask,
            label: `evaluation:${iterationNumber}:${mode}`,
          }),
        );
      }
    }
    return results;
  }

  /** The same policy on the same training tasks in both environments (Theorem 1's gap). */
  async syntheticToRealGap(
    state: RunState,
    iterationNumber: number,
  ): Promise<SyntheticToRealGap | undefined> {
    const { config, seedTasks } = this.parts;
    const { gapTasks, modes } = config.evaluation;
    if (gapTasks === 0 || !state.real) return undefined;
    // One sample for the whole run (from the seed, not the run's advancing state), so that
    // the gaps before, during and after training are measured on the same tasks.
    const tasks = new SeededRandom(config.seed)
      .fork('gap-tasks')
      .shuffle([...seedTasks])
      .slice(0, gapTasks);
    const options = {
      greedy: modes[0] === 'greedy',
      episodesPerTask: 1,
      label: `gap:${iterationNumber}`,
    };
    const synthetic = await this.evaluateTasks(state, 'synthetic', tasks, options);
    const real = await this.evaluateTasks(state, 'real', tasks, options);
    return {
      tasks: tasks.length,
      syntheticSuccessRate: synthetic.successRate,
      realSuccessRate: real.successRate,
      gap: synthetic.successRate - real.successRate,
    };
  }

  /** The run's current policy on `tasks` in one environment. */
  async evaluateTasks(
    state: RunState,
    environment: 'synthetic' | 'real',
    tasks: readonly Task[],
    options: { greedy: boolean; episodesPerTask: number; label: string },
  ): Promise<EvaluationMetrics> {
    const { config, adapter, log } = this.parts;
    const pool = environment === 'real' ? state.real! : state.synthetic;
    // A long evaluation (many real games) says how far it is, a line every tenth.
    let successes = 0;
    let reported = 0;
    const onEpisode = (
      rollout: { success: boolean },
      { done, total }: { done: number; total: number },
    ) => {
      if (rollout.success) successes += 1;
      const tenth = Math.floor((10 * done) / total);
      if (total >= 20 && tenth > reported) {
        reported = tenth;
        log(`${options.label} (${environment}): ${done}/${total} episodes, ${successes} successes`);
      }
    };
    const { metrics } = await evaluatePolicy({
      onEpisode,
      policy: state.policy,
      environmentFactory: () => pool.lease(),
      environment,
      tasks,
      episodesPerTask: options.episodesPerTask,
      maxSteps: config.maxSteps,
      greedy: options.greedy,
      concurrency: environment === 'real' ? config.realConcurrency : config.concurrency,
      random: state.random.fork(options.label),
      candidateActions: (observation, history) => adapter.candidateActions(observation, history),
    });
    return metrics;
  }
}
