/**
 * `MutationTaskGenerator`: the embedded task generator. No model: new tasks come from
 * the domain adapter's `mutateTask` (other entities, rooms, constraints), de-duplicated
 * against the pool.
 */

import type { DomainAdapter } from '../adapter.js';
import { ConfigError } from '../errors.js';
import { formatFieldPath } from '../mdp/jsonl.js';
import { type Task, TaskSchema } from '../mdp/schemas.js';
import { worldOf } from '../mdp/task-world.js';
import type { EmbeddingModel } from '../models/embedding-model.js';
import { TaskDeduplicator } from './task-deduplicator.js';
import {
  splitCount,
  type TaskGenerationContext,
  type TaskGenerator,
  uniqueTaskId,
} from './task-generator.js';

/** Options of {@link MutationTaskGenerator}. */
export interface MutationTaskGeneratorOptions {
  /** The domain adapter whose `mutateTask` writes the variations. */
  adapter: Pick<DomainAdapter, 'name' | 'mutateTask'>;
  /** Also rejects near-duplicates by embedding similarity; without it, exact duplicates only. */
  embedder?: EmbeddingModel;
  /** Cosine threshold for near-duplicates, in (0, 1]; see `TaskDeduplicatorOptions`. Default 0.9. */
  similarityThreshold?: number;
  /**
   * Rounds of mutation per parent: after duplicates are dropped, the parent is mutated
   * again for the missing tasks, up to this many rounds. Default 4.
   */
  maxRounds?: number;
}

/** The embedded generator over `DomainAdapter.mutateTask`. */
export class MutationTaskGenerator implements TaskGenerator {
  private readonly adapter: Pick<DomainAdapter, 'name' | 'mutateTask'>;
  private readonly deduplicator: TaskDeduplicator;
  private readonly maxRounds: number;

  constructor(options: MutationTaskGeneratorOptions) {
    this.adapter = options.adapter;
    this.deduplicator = new TaskDeduplicator(options);
    this.maxRounds = options.maxRounds ?? 4;
    if (!Number.isInteger(this.maxRounds) || this.maxRounds < 1) {
      throw new ConfigError(`maxRounds must be a positive integer, got ${options.maxRounds}.`, {
        field: 'maxRounds',
      });
    }
  }

  async generate(
    parents: readonly Task[],
    count: number,
    context: TaskGenerationContext,
  ): Promise<Task[]> {
    const quotas = splitCount(count, parents.length);
    const known: Task[] = [...context.existing, ...parents];
    const takenIds = new Set(known.map((task) => task.id));
    const produced: Task[] = [];
    for (const [position, parent] of parents.entries()) {
      let missing = quotas[position]!;
      for (let round = 0; round < this.maxRounds && missing > 0; round += 1) {
        const candidates: Task[] = [];
        for (let attempt = 0; attempt < missing; attempt += 1) {
          const mutated = this.adapter.mutateTask(parent, context.random);
          if (mutated === undefined) break;
          const id = uniqueTaskId(mutated.id, takenIds);
          takenIds.add(id);
          candidates.push(this.validated(mutated, id, parent, context.iteration));
        }
        if (candidates.length === 0) {
          context.onReject?.({
            reason: 'mutation-failed',
            parentId: parent.id,
            detail: `${this.adapter.name} adapter's mutateTask() returned no task for ${parent.id}.`,
          });
          break;
        }
        const { accepted, rejected } = await this.deduplicator.filter(
          candidates,
          known,
          context.signal,
        );
        for (const rejection of rejected) context.onReject?.(rejection);
        known.push(...accepted);
        produced.push(...accepted);
        missing -= accepted.length;
      }
    }
    return produced;
  }

  private validated(mutated: Task, id: string, parent: Task, iteration: number): Task {
    const result = TaskSchema.safeParse({
      ...mutated,
      id,
      // A mutation keeps the parent's room and objects: the same world (`WorldMemory`).
      meta: { ...mutated.meta, world: worldOf(parent) },
      domain: parent.domain,
      origin: 'generated',
      parentId: parent.id,
      iteration,
    });
    if (result.success) return result.data;
    const issue = result.error.issues[0]!;
    const field = formatFieldPath(issue.path);
    throw new ConfigError(
      `The ${this.adapter.name} adapter's mutateTask() returned an invalid task for parent ${parent.id}: field \`${field}\`: ${issue.message}. Fix the adapter's mutateTask.`,
      { field, cause: result.error },
    );
  }
}
