/**
 * De-duplication of generated tasks against the pool and against the other new candidates:
 * exact duplicates by normalised instruction, and near-duplicates by cosine similarity of
 * instruction embeddings, each among tasks that start from the same first state.
 *
 * A task is what the policy is given: an instruction and a first state. The synthetic
 * environment plays a task from those two (and its world), so two tasks alike in both are
 * one task to the policy and to the synthetic environment, whatever else their `meta` holds
 * (a goal the instruction does not state cannot be learned apart). Two tasks that share an
 * instruction sentence but start from different states (another room, page or board) are
 * different tasks: comparing instructions alone rejected every variant of a domain whose
 * tasks all say the same sentence. A task whose first state is not recorded could start
 * anywhere, so it is compared with every task by its instruction, as before.
 */
import { ConfigError, ModelError } from '../errors.js';
import type { Task } from '../mdp/schemas.js';
import type { EmbeddingModel } from '../models/embedding-model.js';
import type { TaskRejection } from './task-generator.js';

/** Options of {@link TaskDeduplicator}. */
export interface TaskDeduplicatorOptions {
  /** Embeds instructions for near-duplicate detection; without it only exact duplicates are caught. */
  embedder?: EmbeddingModel;
  /**
   * A candidate whose cosine similarity to any known instruction is at or above this is a
   * near-duplicate. In (0, 1]. Default 0.9. The right value depends on the embedder and
   * the domain: with `HashingEmbedder`, adding or dropping one word of an instruction
   * scores about 0.93-0.95, while swapping an object or a receptacle scores about 0.8;
   * instructions that differ only in numbers (rooms, quantities) can score above 0.9, so
   * such domains need a higher threshold.
   */
  similarityThreshold?: number;
}

/** Outcome of {@link TaskDeduplicator.filter}. */
export interface DeduplicationResult {
  /** Candidates that duplicate nothing, in input order. */
  accepted: Task[];
  /** Candidates dropped as exact or near-duplicates, in input order. */
  rejected: TaskRejection[];
}

/** Default cosine threshold above which two instructions are the same task. */
export const DEFAULT_SIMILARITY_THRESHOLD = 0.9;

/**
 * The instruction as compared for exact duplicates: Unicode-normalised (NFKC), lower
 * case, runs of white space collapsed, trailing sentence punctuation dropped.
 */
export function normalizeInstruction(instruction: string): string {
  return instruction
    .normalize('NFKC')
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/[.!?;]+$/u, '')
    .trim();
}

/** Cosine similarity; embedders return unit vectors, but dividing by the norms keeps a sloppy one honest. */
function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let index = 0; index < a.length; index += 1) {
    const x = a[index]!;
    const y = b[index]!;
    dot += x * y;
    normA += x * x;
    normB += y * y;
  }
  if (normA === 0 || normB === 0) return 0;
  return dot / Math.sqrt(normA * normB);
}

/**
 * The first state as compared: its text with runs of white space collapsed, or undefined when
 * the task does not record one. A state mapper gives one text per state (the adapter guide's
 * step 3), so equal texts are the same state.
 */
function startOf(task: Task): string | undefined {
  const text = task.initialObservation?.text;
  return text === undefined ? undefined : text.replace(/\s+/g, ' ').trim();
}

/** Whether two tasks may start from the same state: equal first states, or one unrecorded. */
function sameStart(a: string | undefined, b: string | undefined): boolean {
  return a === undefined || b === undefined || a === b;
}

/** A task as the de-duplicator compares it. */
interface Compared {
  task: Task;
  start: string | undefined;
}

function compared(task: Task): Compared {
  return { task, start: startOf(task) };
}

function duplicateDetail(kind: string, other: Compared, candidate: Compared): string {
  const where =
    other.start === undefined || candidate.start === undefined
      ? 'one of them records no first state'
      : 'from the same first state';
  return `${kind} "${other.task.instruction}" (task ${other.task.id}), ${where}`;
}

/**
 * Rejects candidate tasks that duplicate known tasks or each other. Keeps the embeddings
 * of instructions it has seen, so a growing pool is embedded once, not at every call.
 */
export class TaskDeduplicator {
  readonly similarityThreshold: number;
  private readonly embedder: EmbeddingModel | undefined;
  private readonly embeddings = new Map<string, Float32Array>();

  constructor(options: TaskDeduplicatorOptions = {}) {
    const threshold = options.similarityThreshold ?? DEFAULT_SIMILARITY_THRESHOLD;
    if (!(threshold > 0 && threshold <= 1)) {
      throw new ConfigError(`similarityThreshold must be in (0, 1], got ${threshold}.`, {
        field: 'similarityThreshold',
      });
    }
    this.similarityThreshold = threshold;
    this.embedder = options.embedder;
  }

  /**
   * Splits `candidates` into accepted and rejected. A candidate is compared with every
   * task in `known` and with the candidates accepted before it that may share its first
   * state, so of two duplicates among the candidates the first wins.
   */
  async filter(
    candidates: readonly Task[],
    known: readonly Task[],
    signal?: AbortSignal,
  ): Promise<DeduplicationResult> {
    const accepted: Task[] = [];
    const rejected: Array<{ position: number; rejection: TaskRejection }> = [];
    // Normalised instruction -> the tasks with it (known, then accepted candidates).
    const seen = new Map<string, Compared[]>();
    const remember = (entry: Compared): void => {
      const key = normalizeInstruction(entry.task.instruction);
      const list = seen.get(key);
      if (list) list.push(entry);
      else seen.set(key, [entry]);
    };
    for (const task of known) remember(compared(task));

    const exactSurvivors: Array<{ position: number; candidate: Compared }> = [];
    candidates.forEach((task, position) => {
      const candidate = compared(task);
      const duplicate = seen
        .get(normalizeInstruction(task.instruction))
        ?.find((other) => sameStart(other.start, candidate.start));
      if (duplicate !== undefined) {
        rejected.push({
          position,
          rejection: {
            reason: 'exact-duplicate',
            parentId: task.parentId ?? task.id,
            instruction: task.instruction,
            detail: duplicateDetail('same instruction as', duplicate, candidate),
            duplicateOf: duplicate.task.instruction,
          },
        });
        return;
      }
      remember(candidate);
      exactSurvivors.push({ position, candidate });
    });
    const result = (): DeduplicationResult => ({
      accepted,
      // Rejections are reported in candidate order, whichever stage caught them.
      rejected: rejected.sort((a, b) => a.position - b.position).map(({ rejection }) => rejection),
    });
    if (!this.embedder || exactSurvivors.length === 0) {
      accepted.push(...exactSurvivors.map(({ candidate }) => candidate.task));
      return result();
    }

    await this.embedMissing(
      [...known, ...exactSurvivors.map(({ candidate }) => candidate.task)],
      signal,
    );
    const reference: Array<Compared & { vector: Float32Array }> = known.map((task) => ({
      ...compared(task),
      vector: this.vectorOf(task.instruction),
    }));
    for (const { position, candidate } of exactSurvivors) {
      const vector = this.vectorOf(candidate.task.instruction);
      let best = -1;
      let closest: Compared | undefined;
      for (const other of reference) {
        if (!sameStart(other.start, candidate.start)) continue;
        const similarity = cosine(vector, other.vector);
        if (similarity > best) {
          best = similarity;
          closest = other;
        }
      }
      if (closest !== undefined && best >= this.similarityThreshold) {
        rejected.push({
          position,
          rejection: {
            reason: 'near-duplicate',
            parentId: candidate.task.parentId ?? candidate.task.id,
            instruction: candidate.task.instruction,
            detail: duplicateDetail(
              `cosine similarity ${best.toFixed(3)} >= ${this.similarityThreshold} to`,
              closest,
              candidate,
            ),
            duplicateOf: closest.task.instruction,
            similarity: best,
          },
        });
        continue;
      }
      accepted.push(candidate.task);
      reference.push({ ...candidate, vector });
    }
    return result();
  }

  private vectorOf(instruction: string): Float32Array {
    return this.embeddings.get(normalizeInstruction(instruction))!;
  }

  private async embedMissing(tasks: readonly Task[], signal?: AbortSignal): Promise<void> {
    const missing = [
      ...new Set(
        tasks
          .map((task) => normalizeInstruction(task.instruction))
          .filter((key) => !this.embeddings.has(key)),
      ),
    ];
    if (missing.length === 0) return;
    signal?.throwIfAborted();
    const embedder = this.embedder!;
    const vectors = await embedder.embed(missing);
    if (vectors.length !== missing.length) {
      throw new ModelError(
        `Embedder ${embedder.id} returned ${vectors.length} vectors for ${missing.length} instructions; an embedder must return one vector per text.`,
      );
    }
    missing.forEach((key, index) => {
      this.embeddings.set(key, vectors[index]!);
    });
  }
}
