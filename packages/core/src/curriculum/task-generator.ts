/**
 * `TaskGenerator`: writes new tasks that vary informative parent tasks. Implementations:
 * `LlmTaskGenerator` (the paper's LLM-based generator) and `MutationTaskGenerator` (the
 * embedded default, over the adapter's `mutateTask`).
 */

import { InvalidArgumentError } from '../errors.js';
import type { Task } from '../mdp/schemas.js';
import type { SeededRandom } from '../random/seeded-random.js';

/** Why a candidate task was not added. */
export type TaskRejectionReason =
  /**
   * Same instruction (case and spacing ignored) as a task in the pool or an earlier candidate
   * that starts from the same first state, or records none (see `TaskDeduplicator`).
   */
  | 'exact-duplicate'
  /**
   * Embedding cosine similarity at or above the threshold to a pool task or earlier candidate
   * of the same first state (or of none recorded).
   */
  | 'near-duplicate'
  /** Failed validation: empty, too short or long, or refused by the domain validator. */
  | 'invalid'
  /** The model's answer did not match the expected structure. */
  | 'malformed-output'
  /** The adapter could not mutate the parent (`mutateTask` returned undefined). */
  | 'mutation-failed'
  /** The model wrote more tasks than asked for; the extra ones are dropped. */
  | 'surplus';

/** A candidate task the generator dropped, and why. */
export interface TaskRejection {
  reason: TaskRejectionReason;
  /** The parent the candidate was derived from. */
  parentId: string;
  /** The candidate's instruction, when there was one. */
  instruction?: string;
  /** Human-readable explanation. */
  detail: string;
  /** For duplicates: the instruction of the task it duplicates. */
  duplicateOf?: string;
  /** For near-duplicates: the cosine similarity that triggered the rejection. */
  similarity?: number;
}

/** What a generator needs besides the parents. */
export interface TaskGenerationContext {
  /** The curriculum iteration; recorded on every generated task. */
  iteration: number;
  /** The only source of randomness. */
  random: SeededRandom;
  /** Tasks already in the pool: new tasks that duplicate one of them are rejected. */
  existing: readonly Task[];
  /** Told about every rejected candidate, for metrics and logs. */
  onReject?: (rejection: TaskRejection) => void;
  /** Cancels model requests. */
  signal?: AbortSignal;
}

/** Writes new tasks derived from parent tasks. */
export interface TaskGenerator {
  /**
   * Up to `count` new tasks in total, spread over `parents` in order as evenly as
   * possible (earlier parents get the remainder; see {@link splitCount}). Each has
   * `origin: 'generated'`, `parentId`, `iteration` and a unique id, and duplicates
   * neither `context.existing` nor another new task. May return fewer tasks than asked
   * when candidates are rejected; every rejection is reported to `context.onReject`.
   */
  generate(
    parents: readonly Task[],
    count: number,
    context: TaskGenerationContext,
  ): Promise<Task[]>;
}

/**
 * Splits `count` over `parts` as evenly as possible, the first `count % parts` parts
 * getting one more: `splitCount(5, 3)` is `[2, 2, 1]`.
 */
export function splitCount(count: number, parts: number): number[] {
  if (!Number.isInteger(count) || count < 0) {
    throw new InvalidArgumentError(
      `splitCount() needs a non-negative integer count, got ${count}.`,
      { argument: 'count' },
    );
  }
  if (!Number.isInteger(parts) || parts < 0) {
    throw new InvalidArgumentError(
      `splitCount() needs a non-negative integer number of parts, got ${parts}.`,
      { argument: 'parts' },
    );
  }
  if (parts === 0) return [];
  const base = Math.floor(count / parts);
  const extra = count % parts;
  return Array.from({ length: parts }, (_, index) => base + (index < extra ? 1 : 0));
}

/** A task id not in `taken`: `base`, else `base~2`, `base~3`... */
export function uniqueTaskId(base: string, taken: ReadonlySet<string>): string {
  if (!taken.has(base)) return base;
  let suffix = 2;
  while (taken.has(`${base}~${suffix}`)) suffix += 1;
  return `${base}~${suffix}`;
}
