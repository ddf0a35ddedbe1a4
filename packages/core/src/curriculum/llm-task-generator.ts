/**
 * `LlmTaskGenerator`: the paper's curriculum task generator. An LLM is shown an
 * informative parent task (one with high reward variance), the domain's guidance and
 * other tasks as examples, and writes variations that keep the parent's action types
 * and skills while changing its constraints, goals or context. Its output is validated
 * and de-duplicated (exactly and by embedding similarity) against the pool.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { DomainAdapter } from '../adapter.js';
import { ConfigError, ModelOutputError } from '../errors.js';
import { type Task, TaskSchema } from '../mdp/schemas.js';
import type { ChatMessage, ChatModel } from '../models/chat-model.js';
import type { EmbeddingModel } from '../models/embedding-model.js';
import { TaskDeduplicator } from './task-deduplicator.js';
import {
  splitCount,
  type TaskGenerationContext,
  type TaskGenerator,
  type TaskRejection,
  uniqueTaskId,
} from './task-generator.js';

/** The structure the model must answer with: `{"tasks": ["instruction", ...]}`. */
export const GeneratedTasksSchema = z.object({
  /** The new task instructions, one per task. */
  tasks: z.array(z.string()),
});
export type GeneratedTasks = z.infer<typeof GeneratedTasksSchema>;

/**
 * A domain-specific check of a generated instruction: returns why it is unusable (it is
 * then rejected as `invalid`), or undefined to accept it.
 */
export type TaskInstructionValidator = (instruction: string, parent: Task) => string | undefined;

/** Options of {@link LlmTaskGenerator}. */
export interface LlmTaskGeneratorOptions {
  /** The model that writes the tasks. */
  model: ChatModel;
  /** The domain: its name and prompts (`environmentDescription`, `taskGenerationGuidance`). */
  adapter: Pick<DomainAdapter, 'name' | 'prompts'>;
  /** Rejects near-duplicates by embedding similarity; without it, exact duplicates only. */
  embedder?: EmbeddingModel;
  /** Cosine threshold for near-duplicates, in (0, 1]; see `TaskDeduplicatorOptions`. Default 0.9. */
  similarityThreshold?: number;
  /** Shortest accepted instruction, in characters after trimming. Default 10. */
  minLength?: number;
  /** Longest accepted instruction, in characters after trimming. Default 600. */
  maxLength?: number;
  /** Domain-specific validation of each instruction. */
  validate?: TaskInstructionValidator;
  /** Sampling temperature; variety matters more than precision here. Default 0.8. */
  temperature?: number;
  /** Upper bound on generated tokens per request. Default 1024. */
  maxTokens?: number;
  /** Other tasks shown as examples of the domain's tasks (besides the parent). Default 3. */
  examples?: number;
  /**
   * Copy the parent's `meta` into generated tasks (under the generator's own keys). Off by
   * default: a parent's meta (a game file, a layout) usually describes the parent's goal,
   * not the new one. The parent's `initialObservation` is always kept: the new task is
   * set in the same starting state.
   */
  inheritMeta?: boolean;
}

/** Longest initial state text quoted in the prompt, in characters. */
const MAX_STATE_CHARS = 2000;

function truncate(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit)} [...]`;
}

/**
 * Builds the task-generation prompt for one parent task: the environment, the domain's
 * guidance, the parent (and its starting state) to vary, other tasks as examples and
 * the rules the paper gives the generator.
 */
export function buildTaskGenerationPrompt(input: {
  adapter: Pick<DomainAdapter, 'name' | 'prompts'>;
  parent: Task;
  examples: readonly Task[];
  count: number;
}): ChatMessage[] {
  const { adapter, parent, examples, count } = input;
  const system = [
    'You design training tasks for an AI agent that learns by reinforcement learning.',
    `Environment (${adapter.name}): ${adapter.prompts.environmentDescription}`,
    'You are given a task the agent currently solves only some of the time. Tasks like it are the most useful to practise, so you write new variations of it.',
  ].join('\n');
  const lines: string[] = [];
  lines.push(`Guidance for this domain: ${adapter.prompts.taskGenerationGuidance}`, '');
  if (examples.length > 0) {
    lines.push('Examples of tasks in this domain:');
    for (const example of examples) lines.push(`- ${example.instruction}`);
    lines.push('');
  }
  lines.push('Task to vary:', parent.instruction);
  if (parent.initialObservation) {
    lines.push(
      '',
      'Starting state of the task:',
      truncate(parent.initialObservation.text, MAX_STATE_CHARS),
    );
  }
  lines.push(
    '',
    `Write ${count} new task${count === 1 ? '' : 's'}. Each new task must:`,
    '1. need the same kinds of actions and skills as the task to vary;',
    '2. change its constraints, its goal (objects, targets, attributes) or its context, so that it is a different task and not a rephrasing;',
    `3. be achievable in this environment${parent.initialObservation ? ' from the same starting state' : ''}, using only things that exist there;`,
    '4. be one clear, self-contained instruction in the style of the examples, about as hard as the task to vary or slightly harder;',
    '5. differ from the task to vary, from the examples and from each other.',
    '',
    'Answer with JSON only, in this form: {"tasks": ["<first new instruction>", "<second new instruction>"]}',
  );
  return [
    { role: 'system', content: system },
    { role: 'user', content: lines.join('\n') },
  ];
}

/** The LLM-backed task generator of the paper. */
export class LlmTaskGenerator implements TaskGenerator {
  private readonly model: ChatModel;
  private readonly adapter: Pick<DomainAdapter, 'name' | 'prompts'>;
  private readonly deduplicator: TaskDeduplicator;
  private readonly minLength: number;
  private readonly maxLength: number;
  private readonly validate: TaskInstructionValidator | undefined;
  private readonly temperature: number;
  private readonly maxTokens: number;
  private readonly examples: number;
  private readonly inheritMeta: boolean;

  constructor(options: LlmTaskGeneratorOptions) {
    this.model = options.model;
    this.adapter = options.adapter;
    this.deduplicator = new TaskDeduplicator(options);
    this.minLength = options.minLength ?? 10;
    this.maxLength = options.maxLength ?? 600;
    if (!(Number.isInteger(this.minLength) && this.minLength >= 1)) {
      throw new ConfigError(`minLength must be a positive integer, got ${options.minLength}.`, {
        field: 'minLength',
      });
    }
    if (!(Number.isInteger(this.maxLength) && this.maxLength >= this.minLength)) {
      throw new ConfigError(
        `maxLength must be an integer >= minLength (${this.minLength}), got ${options.maxLength}.`,
        { field: 'maxLength' },
      );
    }
    this.validate = options.validate;
    this.temperature = options.temperature ?? 0.8;
    this.maxTokens = options.maxTokens ?? 1024;
    this.examples = options.examples ?? 3;
    this.inheritMeta = options.inheritMeta ?? false;
  }

  /**
   * One request per parent (sent concurrently; the model client bounds concurrency),
   * then validation and de-duplication in parent order, so the result does not depend
   * on which answer arrives first. A parent whose answer is malformed is skipped and
   * reported; when every answer is malformed the first `ModelOutputError` is thrown,
   * since then the model or server is misconfigured rather than unlucky.
   */
  async generate(
    parents: readonly Task[],
    count: number,
    context: TaskGenerationContext,
  ): Promise<Task[]> {
    const quotas = splitCount(count, parents.length);
    const work = parents
      .map((parent, position) => ({ parent, quota: quotas[position]! }))
      .filter(({ quota }) => quota > 0);
    if (work.length === 0) return [];

    // Seeds and examples are drawn before any request so the random stream does not
    // depend on response timing.
    const requests = work.map(({ parent, quota }) => ({
      parent,
      quota,
      seed: context.random.int(2 ** 31),
      messages: buildTaskGenerationPrompt({
        adapter: this.adapter,
        parent,
        examples: this.pickExamples(parent, parents, context),
        count: quota,
      }),
    }));
    const answers = await Promise.all(
      requests.map(async (request) => {
        try {
          const response = await this.model.completeStructured({
            messages: request.messages,
            schema: GeneratedTasksSchema,
            schemaName: 'generated_tasks',
            temperature: this.temperature,
            maxTokens: this.maxTokens,
            seed: request.seed,
            ...(context.signal ? { signal: context.signal } : {}),
          });
          return { ok: true as const, instructions: response.value.tasks };
        } catch (error) {
          if (ModelOutputError.isInstance(error)) return { ok: false as const, error };
          throw error;
        }
      }),
    );
    const failures = answers.filter((answer) => !answer.ok);
    if (failures.length === answers.length) {
      const first = failures[0]!.error;
      throw new ModelOutputError(
        `The task generator's model ${this.model.id} gave no usable answer for any of ${answers.length} parent task(s): ${first.message}`,
        { output: first.output, cause: first },
      );
    }

    const known: Task[] = [...context.existing, ...parents];
    const takenIds = new Set(known.map((task) => task.id));
    const produced: Task[] = [];
    for (const [position, request] of requests.entries()) {
      const answer = answers[position]!;
      const { parent, quota } = request;
      if (!answer.ok) {
        context.onReject?.({
          reason: 'malformed-output',
          parentId: parent.id,
          detail: answer.error.message,
        });
        continue;
      }
      const candidates: Task[] = [];
      for (const raw of answer.instructions) {
        const instruction = raw.replace(/\s+/g, ' ').trim();
        const problem = this.problemWith(instruction, parent);
        if (problem !== undefined) {
          context.onReject?.({
            reason: 'invalid',
            parentId: parent.id,
            instruction: raw,
            detail: problem,
          });
          continue;
        }
        candidates.push(this.toTask(instruction, parent, context.iteration, takenIds));
      }
      const { accepted, rejected } = await this.deduplicator.filter(
        candidates,
        known,
        context.signal,
      );
      for (const rejection of rejected) context.onReject?.(rejection);
      const kept = accepted.slice(0, quota);
      for (const surplus of accepted.slice(quota)) {
        const rejection: TaskRejection = {
          reason: 'surplus',
          parentId: parent.id,
          instruction: surplus.instruction,
          detail: `the model wrote more than the ${quota} task(s) asked for`,
        };
        context.onReject?.(rejection);
      }
      known.push(...kept);
      produced.push(...kept);
    }
    return produced;
  }

  private problemWith(instruction: string, parent: Task): string | undefined {
    if (instruction.length === 0) return 'empty instruction';
    if (instruction.length < this.minLength) {
      return `instruction shorter than ${this.minLength} characters`;
    }
    if (instruction.length > this.maxLength) {
      return `instruction longer than ${this.maxLength} characters (${instruction.length})`;
    }
    return this.validate?.(instruction, parent);
  }

  private toTask(instruction: string, parent: Task, iteration: number, taken: Set<string>): Task {
    const digest = createHash('sha256').update(instruction).digest('hex').slice(0, 10);
    const id = uniqueTaskId(`${parent.id}~llm${iteration}-${digest}`, taken);
    taken.add(id);
    return TaskSchema.parse({
      id,
      domain: parent.domain,
      instruction,
      origin: 'generated',
      parentId: parent.id,
      iteration,
      ...(parent.initialObservation ? { initialObservation: parent.initialObservation } : {}),
      meta: {
        ...(this.inheritMeta ? parent.meta : {}),
        generator: 'llm',
        generatorModel: this.model.id,
      },
    });
  }

  /** Other parents first (they are the tasks being learned now), then random pool tasks of the domain. */
  private pickExamples(
    parent: Task,
    parents: readonly Task[],
    context: TaskGenerationContext,
  ): Task[] {
    if (this.examples <= 0) return [];
    const picked = parents.filter((task) => task.id !== parent.id).slice(0, this.examples);
    const pickedIds = new Set([parent.id, ...picked.map((task) => task.id)]);
    const rest = context.existing.filter(
      (task) => task.domain === parent.domain && !pickedIds.has(task.id),
    );
    while (picked.length < this.examples && rest.length > 0) {
      const index = context.random.int(rest.length);
      picked.push(rest[index]!);
      rest.splice(index, 1);
    }
    return picked;
  }
}
