/**
 * `annotateReasoning`: teacher reasoning traces R* for offline transitions, from any
 * `ChatModel`. Traces go to an append-only JSONL file, one record per distinct transition
 * (task instruction, state, action, next state and outcome hashed into a key), so a run that
 * stops can be started again and annotates only what is missing, and a transition that
 * occurs in many trajectories is annotated once.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { appendFile, readFile, truncate } from 'node:fs/promises';
import { z } from 'zod';
import { ModelOutputError } from '../errors.js';
import type { TokenCounter } from '../experience/history-window.js';
import { JsonlWriter } from '../mdp/jsonl.js';
import type { Trajectory } from '../mdp/schemas.js';
import { trajectoryToTransitions } from '../mdp/transitions.js';
import type { ChatModel } from '../models/chat-model.js';
import { Semaphore } from '../models/semaphore.js';
import { buildTeacherPrompt, teacherOutputSchema } from './teacher-prompt.js';

/** One trace record of the traces file. */
export const ReasoningTraceSchema = z.object({
  /** {@link transitionKey} of the transition. */
  key: z.string().min(1),
  /** R*. */
  reasoning: z.string(),
  /** The teacher model's id. */
  teacher: z.string(),
  /** Where the transition was first seen. */
  trajectoryId: z.string(),
  stepIndex: z.number().int().min(0),
});
export type ReasoningTrace = z.infer<typeof ReasoningTraceSchema>;

/** What makes two transitions the same for annotation: the task, s_t, a_t, s_{t+1} and the outcome. */
export function transitionKey(transition: {
  instruction: string;
  state: { text: string };
  action: string;
  nextState: { text: string };
  done: boolean;
  reward: number;
}): string {
  return createHash('sha256')
    .update(
      JSON.stringify([
        transition.instruction,
        transition.state.text,
        transition.action,
        transition.nextState.text,
        transition.done,
        transition.reward,
      ]),
    )
    .digest('hex')
    .slice(0, 32);
}

/**
 * The traces in `file`, by key (the last record wins). A torn last line (a crash while
 * writing) is cut off so appending can go on; a damaged line elsewhere is an error.
 */
export async function readReasoningTraces(file: string): Promise<Map<string, ReasoningTrace>> {
  const traces = new Map<string, ReasoningTrace>();
  if (!existsSync(file)) return traces;
  const text = await readFile(file, 'utf8');
  const lines = text.split('\n');
  let offset = 0;
  let torn = false;
  for (const [index, line] of lines.entries()) {
    const last = index === lines.length - 1 || (index === lines.length - 2 && lines.at(-1) === '');
    if (line.trim() !== '') {
      let parsed: ReasoningTrace | undefined;
      try {
        parsed = ReasoningTraceSchema.parse(JSON.parse(line));
      } catch (error) {
        if (last && !text.endsWith('\n')) {
          await truncate(file, Buffer.byteLength(text.slice(0, offset)));
          torn = true;
          break;
        }
        throw new ModelOutputError(
          `${file}:${index + 1}: not a reasoning trace record (${(error as Error).message}).`,
          {
            output: line,
          },
        );
      }
      traces.set(parsed.key, parsed);
    }
    offset += line.length + 1;
  }
  // A complete last record without its newline: add it, so the next record starts a line.
  if (!torn && text.length > 0 && !text.endsWith('\n')) await appendFile(file, '\n');
  return traces;
}

/** Options of {@link annotateReasoning}. */
export interface AnnotateReasoningOptions {
  /** The teacher: any chat model (a large one behind a server, or the local runtime). */
  teacher: ChatModel;
  /** Offline trajectories whose transitions to annotate. */
  trajectories: Iterable<Trajectory> | AsyncIterable<Trajectory>;
  /** The domain's `prompts.environmentDescription`. */
  environmentDescription: string;
  /** The traces file (JSONL); existing records are kept and not annotated again. */
  file: string;
  /** Annotate at most this many new transitions in this run. */
  limit?: number;
  /** Requests in flight. Default 2. */
  concurrency?: number;
  /** Longest reasoning, in characters. Default 200. */
  maxReasoningChars?: number;
  /** Teacher sampling temperature. Default 0. */
  temperature?: number;
  /** Tries per transition before it is skipped (left for a later run). Default 2. */
  maxAttempts?: number;
  countTokens?: TokenCounter;
  /** Called after each transition with counts so far. */
  onProgress?: (progress: AnnotationCounts) => void;
  signal?: AbortSignal;
}

/** What an annotation run did. */
export interface AnnotationCounts {
  /** Distinct transitions seen. */
  transitions: number;
  /** Traces written now. */
  annotated: number;
  /** Transitions already in the file. */
  existing: number;
  /** Transitions identical to one seen before in this run. */
  duplicates: number;
  /** Transitions the teacher failed on (left for a later run). */
  failed: number;
}

/** Annotates the transitions of `trajectories` that have no trace yet; see the module doc. */
export async function annotateReasoning(
  options: AnnotateReasoningOptions,
): Promise<AnnotationCounts> {
  const existing = await readReasoningTraces(options.file);
  const writer = await JsonlWriter.open(options.file, ReasoningTraceSchema);
  const semaphore = new Semaphore(options.concurrency ?? 2);
  const schema = teacherOutputSchema(options.maxReasoningChars ?? 200);
  const counts: AnnotationCounts = {
    transitions: 0,
    annotated: 0,
    existing: 0,
    duplicates: 0,
    failed: 0,
  };
  const seen = new Set<string>();
  const pending = new Set<Promise<void>>();
  let started = 0;
  let firstError: unknown;
  try {
    for await (const trajectory of options.trajectories) {
      const trajectoryId = trajectory.id ?? trajectory.task.id;
      for (const transition of trajectoryToTransitions(trajectory, { trajectoryId })) {
        const key = transitionKey(transition);
        if (seen.has(key)) {
          counts.duplicates += 1;
          continue;
        }
        seen.add(key);
        counts.transitions += 1;
        if (existing.has(key)) {
          counts.existing += 1;
          continue;
        }
        if (options.limit !== undefined && started >= options.limit) continue;
        if (firstError !== undefined) break;
        started += 1;
        const release = await semaphore.acquire(options.signal);
        const messages = buildTeacherPrompt(
          options.environmentDescription,
          transition,
          trajectory.steps.slice(0, transition.stepIndex),
          {
            ...(options.maxReasoningChars === undefined
              ? {}
              : { maxReasoningChars: options.maxReasoningChars }),
            ...(options.countTokens ? { countTokens: options.countTokens } : {}),
          },
        );
        const task = (async () => {
          try {
            for (let attempt = 1; ; attempt += 1) {
              try {
                const response = await options.teacher.completeStructured({
                  messages,
                  schema,
                  schemaName: 'reasoning_trace',
                  temperature: attempt === 1 ? (options.temperature ?? 0) : 0.7,
                  maxTokens: Math.ceil((options.maxReasoningChars ?? 200) / 2) + 32,
                  ...(options.signal ? { signal: options.signal } : {}),
                });
                await writer.write({
                  key,
                  reasoning: response.value.reasoning.trim(),
                  teacher: options.teacher.id,
                  trajectoryId,
                  stepIndex: transition.stepIndex,
                });
                counts.annotated += 1;
                return;
              } catch (error) {
                if (!ModelOutputError.isInstance(error)) throw error;
                if (attempt >= (options.maxAttempts ?? 2)) {
                  counts.failed += 1;
                  return;
                }
              }
            }
          } catch (error) {
            firstError ??= error;
          } finally {
            release();
            options.onProgress?.({ ...counts });
          }
        })();
        pending.add(task);
        void task.finally(() => pending.delete(task));
      }
      if (firstError !== undefined) break;
    }
    await Promise.all(pending);
  } finally {
    await writer.sync();
    await writer.close();
  }
  // A server failure or a cancellation ends the run; what was written stays for the next one.
  if (firstError !== undefined) throw firstError;
  return counts;
}
