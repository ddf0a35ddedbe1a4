/**
 * Keeping the policy a small real validation set prefers (`selection.realTasks`), so that a
 * synthetic environment that lies costs training time, not quality: the starting policy, the
 * policy every `selection.every` iterations and the last one play the same few training tasks
 * greedily in the real environment, the best of them (the earliest on a tie) is kept beside the run's checkpoints,
 * and when the run ends on a worse one, its final checkpoint holds the kept policy, so that
 * `eval`, `fidelity` and a later `--extend` start from it. Validation's real transitions are
 * the run's: counted in `realTransitions` and in the sim-to-real budget.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { Task } from '../mdp/schemas.js';
import type { TrainablePolicy } from '../policy/policy.js';
import { SeededRandom } from '../random/seeded-random.js';
import type { CheckpointFolders, LoadedCheckpoint } from './checkpoint-store.js';
import type { LoopEvaluation } from './loop-evaluation.js';
import { checkpointFolder, type RunState } from './loop-state.js';
import type { RealTransitionBudget } from './sim-to-real.js';

/** One validation of the run's policy on the real validation tasks. */
export const ValidationRecordSchema = z.object({
  /** Iterations finished when the policy was validated (0: the starting policy). */
  iteration: z.number().int().nonnegative(),
  successes: z.number().int().nonnegative(),
  episodes: z.number().int().positive(),
  /** Real transitions the validation spent. */
  transitions: z.number().int().nonnegative(),
});
export type ValidationRecord = z.infer<typeof ValidationRecordSchema>;

/** What a run's checkpoints say of its selection (the `selection` part). */
const SelectionPartSchema = z.object({
  records: z.array(ValidationRecordSchema),
  keptIteration: z.number().int().nonnegative(),
  /** The iteration at whose end the run's policy was replaced by the kept one, if it was. */
  appliedAt: z.number().int().nonnegative().optional(),
});

/** The selection's outcome, in `DreamGymResult`. */
export interface CheckpointSelectionResult {
  /** The iteration whose policy the run keeps (0: the starting policy). */
  keptIteration: number;
  /** Every validation, in order. */
  records: ValidationRecord[];
  /** Real transitions all validations spent. */
  transitions: number;
}

/** The run's validations and the policy they prefer. */
export class CheckpointSelection {
  private records: ValidationRecord[] = [];
  private keptIteration = 0;
  private kept: TrainablePolicy | undefined;
  private appliedAt: number | undefined;

  constructor(
    private readonly parts: {
      /** The run's seed. */
      seed: number;
      /** Training tasks in the validation set. */
      realTasks: number;
      seedTasks: readonly Task[];
      evaluation: LoopEvaluation;
      log: (message: string) => void;
    },
  ) {}

  /** The validation tasks: one seeded sample of the training tasks for the whole run. */
  private tasks(): Task[] {
    return new SeededRandom(this.parts.seed)
      .fork('selection-tasks')
      .shuffle([...this.parts.seedTasks])
      .slice(0, this.parts.realTasks);
  }

  /** Restores the validations and the kept policy a checkpoint holds. */
  async restore(checkpoint: LoadedCheckpoint, policy: TrainablePolicy, runDirectory: string) {
    const part = SelectionPartSchema.parse(checkpoint.json('selection'));
    this.records = part.records;
    this.keptIteration = part.keptIteration;
    this.appliedAt = part.appliedAt;
    this.kept = await policy.snapshot();
    await this.kept.loadState(checkpointFolder(checkpoint, 'kept-policy', runDirectory));
  }

  /**
   * Plays the validation tasks with the run's current policy in the real environment, and
   * keeps a copy of the policy when it does better than every earlier one.
   */
  async validate(state: RunState, budget: RealTransitionBudget, iteration: number): Promise<void> {
    if (this.records.at(-1)?.iteration === iteration) return;
    const metrics = await this.parts.evaluation.evaluateTasks(state, 'real', this.tasks(), {
      greedy: true,
      episodesPerTask: 1,
      label: `selection:${iteration}`,
    });
    const episodes = metrics.episodes;
    const record = {
      iteration,
      successes: Math.round(metrics.successRate * episodes),
      episodes,
      transitions: Math.round(metrics.meanSteps * episodes),
    };
    budget.spendOutside(record.transitions);
    state.counters.realTransitions = budget.spent;
    const best = this.records.find((earlier) => earlier.iteration === this.keptIteration);
    this.records.push(record);
    if (best === undefined || record.successes > best.successes) {
      this.keptIteration = iteration;
      this.kept = await state.policy.snapshot();
    }
    this.parts.log(
      `selection: iteration ${iteration}: ${record.successes}/${episodes} real validation successes; keeping iteration ${this.keptIteration}`,
    );
  }

  /** The parts every checkpoint carries: the validations and the kept policy. */
  checkpointParts(): { parts: Record<string, unknown>; folders: CheckpointFolders } {
    const kept = this.kept;
    if (kept === undefined) throw new Error('selection: no policy validated yet');
    return {
      parts: {
        selection: {
          records: this.records,
          keptIteration: this.keptIteration,
          ...(this.appliedAt === undefined ? {} : { appliedAt: this.appliedAt }),
        },
      },
      folders: { 'kept-policy': (folder) => kept.saveState(folder) },
    };
  }

  /**
   * Ends the run on the policy the validations preferred: when the last iteration's did
   * worse, the kept policy replaces the run's and is saved (`saveCheckpoint`) as the run's
   * last checkpoint, which `eval`, `fidelity` and `--extend` start from.
   */
  async keep(
    state: RunState,
    saveCheckpoint: (name: string) => Promise<void>,
  ): Promise<CheckpointSelectionResult> {
    const iteration = state.counters.iteration;
    const kept = this.records.find((record) => record.iteration === this.keptIteration);
    const last = this.records.at(-1);
    if (this.kept && this.keptIteration !== iteration && this.appliedAt !== iteration) {
      const folder = await mkdtemp(join(tmpdir(), 'dreamgym-kept-'));
      try {
        await this.kept.saveState(folder);
        await state.policy.loadState(folder);
      } finally {
        await rm(folder, { recursive: true, force: true });
      }
      this.appliedAt = iteration;
      await saveCheckpoint(`iteration-${String(iteration).padStart(6, '0')}-kept`);
    }
    const transitions = this.records.reduce((sum, record) => sum + record.transitions, 0);
    if (kept && last) {
      this.parts.log(
        `selection: the run ends on iteration ${kept.iteration}'s policy (real validation ${kept.successes}/${kept.episodes}; iteration ${last.iteration}: ${last.successes}/${last.episodes}; ${transitions} real transitions)`,
      );
    }
    return { keptIteration: this.keptIteration, records: [...this.records], transitions };
  }
}
