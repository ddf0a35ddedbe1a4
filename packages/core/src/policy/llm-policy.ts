/**
 * `LlmPolicy`: an LLM that acts through a runtime (llama.cpp in process, see
 * `@dreamgym/llama`) and learns through the torch trainer backend (a Python worker), so the
 * DreamGym loop trains it like any `TrainablePolicy`.
 *
 * Two ways to act:
 * - `generate` (default): the model writes its answer; the action is parsed with the answer
 *   format and the domain's grammar. Invalid outputs (no action, outside the grammar or the
 *   admissible list, cut by the token limit) are counted, get `invalidActionPenalty` (zero or
 *   negative, added to the step's reward) and the configured fallback action. log pi is the sum
 *   of the sampled tokens' log-probabilities, and each token's is kept for the update's
 *   token-level importance ratios.
 * - `score`: the admissible actions are scored by their likelihood as answers and one is
 *   sampled from the softmax over them; log pi is that softmax's log-probability. Never invalid.
 *
 * Updates, behaviour cloning, log-probabilities, snapshots and checkpoints go to the trainer,
 * which holds the fp32 weights. After weights change, the next decision first exports them
 * as GGUF (a LoRA adapter, or the whole model) and reloads the runtime: generation runs on
 * the runtime's (quantised) copy, which is why the behaviour log-probabilities differ from
 * the trainer's even before the first step (`PolicyUpdateMetrics.behaviourMismatch`).
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CheckpointError, ConfigError } from '../errors.js';
import type { Observation } from '../mdp/schemas.js';
import type { ChatMessage } from '../models/chat-model.js';
import type { SeededRandom } from '../random/seeded-random.js';
import {
  type TorchTrainerBackend,
  type TorchTrainerBackendOptions,
  TorchTrainerBackend as TrainerBackend,
  type TrainerDescription,
} from '../training/torch-trainer-backend.js';
import type { InvalidActionFallback } from './chat-model-policy.js';
import {
  buildLlmPolicyMessages,
  formatLlmPolicyAnswer,
  type LlmPolicyPromptOptions,
  parseLlmPolicyAnswer,
} from './llm-policy-prompt.js';
import type { LlmRuntime } from './llm-runtime.js';
import {
  candidateActionsOf,
  type ImitationMetrics,
  type ImitationOptions,
  type PolicyContext,
  type PolicyDecision,
  type PolicySample,
  type PolicyUpdateBatch,
  type PolicyUpdateMetrics,
  type PolicyUpdateOptions,
  type TrainablePolicy,
} from './policy.js';

/** How the trainer backend trains the LLM. */
export interface LlmTrainerOptions {
  /** `lora` (default): low-rank adapters (peft); `full`: every weight. */
  mode?: 'lora' | 'full';
  lora?: {
    /** Rank r. Default 16. */
    rank?: number;
    /** Scale alpha (the update is scaled by alpha / r). Default 2 r. */
    alpha?: number;
    dropout?: number;
    /** Linear modules with adapters. Default every attention and MLP projection. */
    targetModules?: string[];
    /** Layers with adapters (0-based). Default: all, or the top `topLayers`. */
    layers?: number[];
    /**
     * Adapters on the top N layers only. The layers below never change, so the worker
     * computes their output once per token sequence and keeps it: on a CPU this is what makes
     * an update affordable. Default: all layers.
     */
    topLayers?: number;
  };
  /** AdamW learning rate. Default 1e-4. */
  learningRate?: number;
  weightDecay?: number;
  /** `token-mean` (default): every token weighs the same; `sequence-mean`: every sample does. */
  aggregation?: 'token-mean' | 'sequence-mean';
  /** Most tokens (rows x longest row) in one forward pass. Default 4096. */
  maxBatchTokens?: number;
  /** Bytes of cached frozen-layer outputs. Default 1 GiB. */
  trunkCacheBytes?: number;
  /**
   * What generation reloads after an update: `lora` (an adapter over the base GGUF, the
   * default in LoRA mode), or a whole model as `f16` (default in full mode), `f32`, `q8_0`,
   * `source` (the base GGUF's own tensor types: small updates are lost to re-quantisation).
   */
  exportType?: 'lora' | 'f16' | 'f32' | 'q8_0' | 'source';
  /** Weights in the trainer: `float32` (default) or `bfloat16` (GPU). */
  dtype?: 'float32' | 'bfloat16';
  /** Seeds adapter initialisation. Default 0. */
  seed?: number;
  /** Where and how the Python worker runs (interpreter, device, threads). */
  backend?: TorchTrainerBackendOptions;
}

/** Options of {@link LlmPolicy.create}. */
export interface LlmPolicyOptions {
  /** Generation and tokenisation (llama.cpp in process: `@dreamgym/llama`'s `LlamaPolicyRuntime`). */
  runtime: LlmRuntime;
  /** The prompt: the adapter's `prompts` and the answer format. */
  prompt: LlmPolicyPromptOptions;
  /** `generate` (default): the model writes the action; `score`: it chooses among the candidates. */
  actionSelection?: 'generate' | 'score';
  /**
   * The domain grammar (`DomainAdapter.parseAction`): an action it rejects is invalid; one it
   * accepts is replaced by its canonical text.
   */
  parseAction?: (text: string) => { text: string };
  /** Accept actions outside the admissible list when the grammar accepts them. Default false. */
  allowActionsOutsideCandidates?: boolean;
  /** Sampling temperature of `generate` (the trainer scores at the same one). Default 1. */
  temperature?: number;
  /** Token limit of a generated answer. Default 64. */
  maxTokens?: number;
  /** Added to the step's reward when the output is invalid (<= 0). Default -0.1. */
  invalidActionPenalty?: number;
  /** What to send when the output is invalid. Default `skip` (the raw text). */
  invalidActionFallback?: InvalidActionFallback;
  trainer?: LlmTrainerOptions;
  /** Folder for exported weights (created). */
  workDirectory: string;
  /** Default sampling stream (rollouts pass their own). */
  random: SeededRandom;
  /** Identifies the policy. Default `llm:<runtime id>`. */
  id?: string;
  /** Close the runtime with the policy. Default true. */
  ownsRuntime?: boolean;
  /** Receives progress lines (weight exports, worker logs). */
  log?: (message: string) => void;
}

/** Counters and timings of an {@link LlmPolicy}. */
export interface LlmPolicyStats {
  decisions: number;
  /** Outputs with no action (none written, or cut by the token limit). */
  unparsable: number;
  /** Outputs whose action was outside the grammar or the admissible list. */
  invalid: number;
  updates: number;
  imitations: number;
  /** Weight exports and runtime reloads, and the seconds they took. */
  exports: number;
  exportSeconds: number;
  reloadSeconds: number;
  lastExportBytes: number;
  /** Seconds spent in the trainer's update and imitate calls. */
  updateSeconds: number;
  /**
   * Wall-clock seconds with at least one decision in flight (generation or scoring);
   * concurrent decisions count once.
   */
  actSeconds: number;
  /** The last update's worker figures (token-level mismatch, mean ratio...). */
  lastUpdate?: Record<string, number>;
}

/** What an LLM policy keeps in `PolicyDecision.info.llm`, for the update. */
export type LlmDecisionRecord =
  | {
      kind: 'sequence';
      prompt: number[];
      completion: number[];
      /** Per-token behaviour log-probabilities; null where unknown. */
      behaviour: number[] | null;
    }
  | {
      kind: 'choice';
      prompt: number[];
      candidates: number[][];
      choice: number;
      behaviour: number;
    };

interface WorkerSample {
  prompt: number[];
  completion?: number[];
  candidates?: number[][];
  choice?: number;
  behaviour?: number[] | number | null;
  reference?: number[] | number | null;
  advantage?: number;
}

interface WorkerLogprob {
  logprob: number;
  tokens?: number[];
  candidates?: number[];
}

interface WorkerUpdate {
  loss: number;
  policyLoss: number;
  kl: number;
  entropy: number;
  clipFraction: number;
  gradNorm: number;
  gradientSteps: number;
  behaviourMismatch: number;
  tokenMismatch: number;
  maxTokenMismatch: number;
  meanRatio: number;
  seconds: number;
}

const HEADER_FILE = 'llm-policy.json';

/** State shared by a policy and its snapshots: one worker, one runtime. */
interface SharedState {
  backend: TorchTrainerBackend;
  runtime: LlmRuntime;
  options: LlmPolicyOptions;
  /** Trainer-side log-probabilities a snapshot computed, per sample (token-level KL). */
  reference: WeakMap<PolicySample, { sum: number; tokens?: number[] }>;
  /** Worker samples built from policy samples (prompts tokenised once). */
  converted: WeakMap<PolicySample, WorkerSample>;
  snapshots: number;
}

function isNonPositive(value: number): boolean {
  return Number.isFinite(value) && value <= 0;
}

function normaliseAction(action: string): string {
  return action.trim().replace(/\s+/g, ' ').toLowerCase();
}

function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

function chunks(order: readonly number[], size: number): number[][] {
  const batches: number[][] = [];
  for (let start = 0; start < order.length; start += size) {
    batches.push(order.slice(start, start + size));
  }
  return batches;
}

function trainerStartParams(
  modelPath: string,
  trainer: LlmTrainerOptions,
  temperature: number,
): Record<string, unknown> {
  const lora = trainer.lora ?? {};
  return {
    model: modelPath,
    mode: trainer.mode ?? 'lora',
    lora: {
      ...(lora.rank === undefined ? {} : { rank: lora.rank }),
      ...(lora.alpha === undefined ? {} : { alpha: lora.alpha }),
      ...(lora.dropout === undefined ? {} : { dropout: lora.dropout }),
      ...(lora.targetModules ? { targetModules: lora.targetModules } : {}),
      ...(lora.layers ? { layers: lora.layers } : {}),
      ...(lora.topLayers === undefined ? {} : { topLayers: lora.topLayers }),
    },
    learningRate: trainer.learningRate ?? 1e-4,
    weightDecay: trainer.weightDecay ?? 0,
    aggregation: trainer.aggregation ?? 'token-mean',
    maxBatchTokens: trainer.maxBatchTokens ?? 4096,
    trunkCacheBytes: trainer.trunkCacheBytes ?? 2 ** 30,
    temperature,
    dtype: trainer.dtype ?? 'float32',
    seed: trainer.seed ?? 0,
  };
}

/** Validated acting options, shared by a policy and its snapshots. */
function validateOptions(options: LlmPolicyOptions): void {
  const penalty = options.invalidActionPenalty ?? -0.1;
  if (!isNonPositive(penalty)) {
    throw new ConfigError(
      'invalidActionPenalty must be zero or negative (it is added to the reward).',
      { field: 'invalidActionPenalty' },
    );
  }
  const temperature = options.temperature ?? 1;
  if (!(temperature > 0 && temperature <= 2)) {
    throw new ConfigError(
      `temperature must be in (0, 2], got ${temperature}; greedy decoding is PolicyContext.greedy.`,
      { field: 'temperature' },
    );
  }
  const maxTokens = options.maxTokens ?? 64;
  if (!Number.isInteger(maxTokens) || maxTokens < 1) {
    throw new ConfigError(`maxTokens must be a positive integer, got ${maxTokens}.`, {
      field: 'maxTokens',
    });
  }
  const exportType = options.trainer?.exportType;
  if (exportType === 'lora' && options.trainer?.mode === 'full') {
    throw new ConfigError('trainer.exportType lora needs trainer.mode lora.', {
      field: 'trainer.exportType',
    });
  }
}

/** The trainable LLM policy. */
export class LlmPolicy implements TrainablePolicy {
  readonly id: string;
  /** The trainer's description (model, device, trainable parameters). */
  readonly trainer: TrainerDescription;
  private readonly shared: SharedState;
  private readonly counters: LlmPolicyStats = {
    decisions: 0,
    unparsable: 0,
    invalid: 0,
    updates: 0,
    imitations: 0,
    exports: 0,
    exportSeconds: 0,
    reloadSeconds: 0,
    lastExportBytes: 0,
    updateSeconds: 0,
    actSeconds: 0,
  };
  /** Version of the trainer's weights, and the one generation runs on. */
  private version = 0;
  private served = 0;
  private syncing: Promise<void> | undefined;
  private servedFile: string | undefined;
  private closed: Promise<void> | undefined;
  /** Decisions in flight, and since when one has been (for `actSeconds`). */
  private acting = 0;
  private actingSince = 0;

  private constructor(shared: SharedState, trainer: TrainerDescription) {
    this.shared = shared;
    this.trainer = trainer;
    this.id = shared.options.id ?? `llm:${shared.runtime.id}`;
  }

  /** Starts the trainer worker (it loads the runtime's base GGUF as fp32) and returns the policy. */
  static async create(options: LlmPolicyOptions): Promise<LlmPolicy> {
    validateOptions(options);
    const trainer = options.trainer ?? {};
    const backend = TrainerBackend.spawn({
      ...trainer.backend,
      ...(options.log || trainer.backend?.log
        ? { log: trainer.backend?.log ?? ((line: string) => options.log?.(line)) }
        : {}),
    });
    try {
      const description = await backend.start(
        trainerStartParams(options.runtime.modelPath, trainer, options.temperature ?? 1),
      );
      await mkdir(options.workDirectory, { recursive: true });
      return new LlmPolicy(
        {
          backend,
          runtime: options.runtime,
          options,
          reference: new WeakMap(),
          converted: new WeakMap(),
          snapshots: 0,
        },
        description,
      );
    } catch (error) {
      await backend.close().catch(() => {});
      throw error;
    }
  }

  /** The trainer worker (health checks, crash tests). */
  get backend(): TorchTrainerBackend {
    return this.shared.backend;
  }

  /** Counters and timings so far. */
  stats(): LlmPolicyStats {
    return { ...this.counters };
  }

  private get options(): LlmPolicyOptions {
    return this.shared.options;
  }

  private get selection(): 'generate' | 'score' {
    return this.options.actionSelection ?? 'generate';
  }

  async act(observation: Observation, context: PolicyContext): Promise<PolicyDecision> {
    await this.ensureServed();
    if (this.acting++ === 0) this.actingSince = performance.now();
    try {
      const candidates = candidateActionsOf(observation, context.candidates);
      const previous = context.history.map((step) => step.action);
      const messages = buildLlmPolicyMessages(
        context.task,
        observation,
        previous,
        candidates,
        this.options.prompt,
      );
      this.counters.decisions += 1;
      return this.selection === 'score'
        ? await this.choose(messages, candidates, context)
        : await this.write(messages, candidates, context);
    } finally {
      if (--this.acting === 0) {
        this.counters.actSeconds += (performance.now() - this.actingSince) / 1000;
      }
    }
  }

  /** `generate`: the model writes its answer. */
  private async write(
    messages: ChatMessage[],
    candidates: readonly string[],
    context: PolicyContext,
  ): Promise<PolicyDecision> {
    const { runtime } = this.shared;
    const format = this.options.prompt.actionFormat ?? 'tagged';
    const prompt = await runtime.promptTokens(messages);
    const generation = await runtime.generate({
      messages,
      maxTokens: this.options.maxTokens ?? 64,
      temperature: context.greedy ? 0 : (this.options.temperature ?? 1),
      ...(context.random ? { seed: context.random.nextUint32() & 0x7fffffff } : {}),
      stop: format === 'tagged' ? ['</action>'] : ['\n'],
      ...(context.signal ? { signal: context.signal } : {}),
    });
    let record: LlmDecisionRecord | undefined;
    if (generation.tokens.length > 0) {
      record = {
        kind: 'sequence',
        prompt,
        completion: generation.tokens.map((token) => token.id),
        behaviour: generation.tokens.map((token) => token.logprob),
      };
    } else if (runtime.endOfTurn !== '') {
      // The model ended its turn at once: that end token is what it chose.
      record = {
        kind: 'sequence',
        prompt,
        completion: runtime.tokenize(runtime.endOfTurn),
        behaviour: null,
      };
    }
    const logprob =
      record?.kind === 'sequence' && record.behaviour ? sum(record.behaviour) : undefined;
    const info: Record<string, unknown> = {
      output: generation.text,
      ...(record ? { llm: record } : {}),
    };
    const base = { ...(logprob === undefined ? {} : { logprob }) };
    // Generation stops on `</action>` and the runtime cuts it off the text: put it back.
    const answer =
      format === 'tagged' && !generation.text.includes('</action>')
        ? `${generation.text}</action>`
        : generation.text;
    const stated =
      generation.finishReason === 'length' ? undefined : parseLlmPolicyAnswer(answer, format);
    if (stated === undefined) {
      this.counters.unparsable += 1;
      return this.invalid(generation.text, candidates, base, {
        ...info,
        unparsable: true,
        invalidReason:
          generation.finishReason === 'length'
            ? `cut by the token limit (maxTokens ${this.options.maxTokens ?? 64})`
            : 'no action in the answer',
      });
    }
    let action = stated;
    if (this.options.parseAction) {
      try {
        action = this.options.parseAction(action).text;
      } catch (error) {
        this.counters.invalid += 1;
        return this.invalid(stated, candidates, base, {
          ...info,
          invalidReason: (error as Error).message,
        });
      }
    }
    if (candidates.length > 0 && !this.options.allowActionsOutsideCandidates) {
      const match = candidates.find(
        (candidate) => normaliseAction(candidate) === normaliseAction(action),
      );
      if (match === undefined) {
        this.counters.invalid += 1;
        return this.invalid(stated, candidates, base, {
          ...info,
          invalidReason: 'not an admissible action',
        });
      }
      action = match;
    }
    return { action, ...base, info };
  }

  private invalid(
    text: string,
    candidates: readonly string[],
    base: { logprob?: number },
    info: Record<string, unknown>,
  ): PolicyDecision {
    const fallback = this.options.invalidActionFallback ?? 'skip';
    let action = text;
    if (fallback === 'first-candidate' && candidates.length > 0) action = candidates[0]!;
    else if (typeof fallback === 'object') action = fallback.action;
    return {
      action,
      ...base,
      rewardPenalty: this.options.invalidActionPenalty ?? -0.1,
      info: {
        ...info,
        invalidAction: true,
        fallback: typeof fallback === 'object' ? 'default' : fallback,
      },
    };
  }

  /** `score`: a softmax over the candidates' likelihoods as answers. */
  private async choose(
    messages: ChatMessage[],
    candidates: readonly string[],
    context: PolicyContext,
  ): Promise<PolicyDecision> {
    if (candidates.length === 0) {
      throw new ConfigError(
        `No candidate actions at a step of task ${context.task.id}: actionSelection "score" chooses among the observation's actions or the adapter's candidateActions.`,
        { field: 'candidates' },
      );
    }
    const { runtime } = this.shared;
    const continuations = candidates.map((candidate) => this.answerText(candidate));
    const [prompt, scores] = await Promise.all([
      runtime.promptTokens(messages),
      runtime.score({
        messages,
        continuations,
        ...(context.signal ? { signal: context.signal } : {}),
      }),
    ]);
    const sums = scores.map((tokens) => sum(tokens));
    const max = Math.max(...sums);
    const normaliser = max + Math.log(sum(sums.map((value) => Math.exp(value - max))));
    const logProbabilities = sums.map((value) => value - normaliser);
    let index = 0;
    if (context.greedy) {
      for (let other = 1; other < logProbabilities.length; other += 1) {
        if (logProbabilities[other]! > logProbabilities[index]!) index = other;
      }
    } else {
      const random = context.random ?? this.options.random;
      index = random.weightedIndex(logProbabilities.map((value) => Math.exp(value)));
    }
    const record: LlmDecisionRecord = {
      kind: 'choice',
      prompt,
      candidates: continuations.map((text) => runtime.tokenize(text)),
      choice: index,
      behaviour: logProbabilities[index]!,
    };
    return {
      action: candidates[index]!,
      logprob: logProbabilities[index]!,
      info: { llm: record, candidateLogprobs: logProbabilities },
    };
  }

  /** The answer text of `action` as a complete turn (for scoring and cloning). */
  private answerText(action: string): string {
    return `${formatLlmPolicyAnswer(action, this.options.prompt.actionFormat ?? 'tagged')}${this.shared.runtime.endOfTurn}`;
  }

  // ------------------------------------------------------------------ training

  async logprobs(samples: readonly PolicySample[], signal?: AbortSignal): Promise<number[]> {
    return (await scoreSamples(this.shared, samples, undefined, signal)).map(
      (entry) => entry.logprob,
    );
  }

  async update(
    batch: PolicyUpdateBatch,
    options: PolicyUpdateOptions,
  ): Promise<PolicyUpdateMetrics> {
    const { samples, advantages, behaviourLogprobs, referenceLogprobs } = batch;
    if (advantages.length !== samples.length || behaviourLogprobs.length !== samples.length) {
      throw new ConfigError(
        `update(): ${samples.length} samples but ${advantages.length} advantages and ${behaviourLogprobs.length} behaviour log-probabilities.`,
        { field: 'batch' },
      );
    }
    const converted = await convertSamples(this.shared, samples);
    const workerSamples = converted.map((sample, index) => {
      const source = samples[index]!;
      const reported = behaviourLogprobs[index]!;
      let behaviour: number[] | number | null;
      if (sample.candidates) behaviour = reported;
      else if (Array.isArray(sample.behaviour) && Math.abs(sum(sample.behaviour) - reported) < 1e-3)
        behaviour = sample.behaviour;
      // Only the sequence's total is known: the worker takes the weights before the first
      // step as the behaviour (exact for on-policy data).
      else behaviour = null;
      let reference: number[] | number | null = null;
      if (referenceLogprobs) {
        const value = referenceLogprobs[index]!;
        const cached = this.shared.reference.get(source);
        reference =
          cached?.tokens && !sample.candidates && Math.abs(cached.sum - value) < 1e-4
            ? cached.tokens
            : value;
      }
      return { ...sample, behaviour, reference, advantage: advantages[index]! };
    });
    const order = samples.map((_, index) => index);
    const size = options.miniBatchSize ?? Math.max(1, samples.length);
    const schedule: number[][][] = [];
    for (let epoch = 0; epoch < options.epochs && samples.length > 0; epoch += 1) {
      options.random.shuffle(order);
      schedule.push(chunks(order, size));
    }
    const started = performance.now();
    const result = await this.shared.backend.request<WorkerUpdate>(
      'update',
      {
        samples: workerSamples,
        schedule,
        loss: options.loss,
        ...(options.maxGradNorm === undefined ? {} : { maxGradNorm: options.maxGradNorm }),
        ...(options.learningRate === undefined ? {} : { learningRate: options.learningRate }),
      },
      options.signal,
    );
    this.counters.updateSeconds += (performance.now() - started) / 1000;
    this.counters.updates += 1;
    this.counters.lastUpdate = { ...result };
    if (result.gradientSteps > 0) this.version += 1;
    return {
      loss: result.loss,
      policyLoss: result.policyLoss,
      kl: result.kl,
      entropy: result.entropy,
      clipFraction: result.clipFraction,
      gradNorm: result.gradNorm,
      gradientSteps: result.gradientSteps,
      behaviourMismatch: result.behaviourMismatch,
    };
  }

  async imitate(
    samples: readonly PolicySample[],
    options: ImitationOptions,
  ): Promise<ImitationMetrics> {
    const converted = await convertSamples(this.shared, samples);
    const order = samples.map((_, index) => index);
    options.random.shuffle(order);
    const batches = chunks(order, options.miniBatchSize ?? Math.max(1, samples.length));
    const started = performance.now();
    const result = await this.shared.backend.request<{
      negativeLogLikelihood: number;
      gradientSteps: number;
    }>(
      'imitate',
      {
        samples: converted.map(({ behaviour: _, ...sample }) => sample),
        batches,
        ...(options.maxGradNorm === undefined ? {} : { maxGradNorm: options.maxGradNorm }),
        ...(options.learningRate === undefined ? {} : { learningRate: options.learningRate }),
      },
      options.signal,
    );
    this.counters.updateSeconds += (performance.now() - started) / 1000;
    this.counters.imitations += 1;
    if (result.gradientSteps > 0) this.version += 1;
    return {
      negativeLogLikelihood: result.negativeLogLikelihood,
      gradientSteps: result.gradientSteps,
    };
  }

  async snapshot(): Promise<TrainablePolicy> {
    this.shared.snapshots += 1;
    const name = `snapshot-${this.shared.snapshots}`;
    await this.shared.backend.request('snapshot', { name });
    return new LlmPolicySnapshot(this.shared, name, `${this.id}@${name}`);
  }

  async resetOptimizer(): Promise<void> {
    await this.shared.backend.request('reset_optimizer', {});
  }

  async saveState(directory: string): Promise<void> {
    await mkdir(directory, { recursive: true });
    await this.shared.backend.request('save', { directory });
    await writeFile(
      join(directory, HEADER_FILE),
      `${JSON.stringify(policyHeader(this.shared, false), null, 2)}\n`,
    );
  }

  async loadState(directory: string): Promise<void> {
    await checkHeader(this.shared, directory);
    await this.shared.backend.request('load', { directory });
    this.version += 1;
  }

  /**
   * Makes generation run on the trainer's current weights (export, then runtime reload), if
   * they changed since the last time. `act` calls it; call it to time the sync on its own.
   */
  async ensureServed(): Promise<void> {
    while (this.served !== this.version) {
      this.syncing ??= this.sync().finally(() => {
        this.syncing = undefined;
      });
      await this.syncing;
    }
  }

  private async sync(): Promise<void> {
    const target = this.version;
    const exportType =
      this.options.trainer?.exportType ??
      ((this.options.trainer?.mode ?? 'lora') === 'lora' ? 'lora' : 'f16');
    const file = join(
      this.options.workDirectory,
      `${exportType === 'lora' ? 'adapter' : 'model'}-${String(target).padStart(5, '0')}.gguf`,
    );
    const started = performance.now();
    const exported = await this.shared.backend.request<{ bytes: number; kind: 'lora' | 'model' }>(
      'export',
      { path: file, type: exportType },
    );
    const reloadStarted = performance.now();
    await this.shared.runtime.loadWeights({ kind: exported.kind, path: file });
    const ended = performance.now();
    this.counters.exports += 1;
    this.counters.exportSeconds += (reloadStarted - started) / 1000;
    this.counters.reloadSeconds += (ended - reloadStarted) / 1000;
    this.counters.lastExportBytes = exported.bytes;
    this.options.log?.(
      `llm policy: weights v${target} exported (${(exported.bytes / 1e6).toFixed(1)} MB, ${((reloadStarted - started) / 1000).toFixed(1)} s) and reloaded (${((ended - reloadStarted) / 1000).toFixed(1)} s)`,
    );
    if (this.servedFile && this.servedFile !== file) await rm(this.servedFile, { force: true });
    this.servedFile = file;
    this.served = target;
  }

  /** Stops the worker and (when it owns it) the runtime. Idempotent. */
  close(): Promise<void> {
    this.closed ??= (async () => {
      await this.shared.backend.close();
      if (this.options.ownsRuntime ?? true) await this.shared.runtime.close();
      if (this.servedFile) await rm(this.servedFile, { force: true });
    })();
    return this.closed;
  }
}

/** A frozen copy of an {@link LlmPolicy}'s weights in its worker: the KL reference. */
class LlmPolicySnapshot implements TrainablePolicy {
  constructor(
    private readonly shared: SharedState,
    private readonly name: string,
    readonly id: string,
  ) {}

  async act(): Promise<PolicyDecision> {
    throw new ConfigError(
      `${this.id} is a frozen snapshot kept for its log-probabilities (the KL reference); it does not generate. Act with the policy itself.`,
    );
  }

  async logprobs(samples: readonly PolicySample[], signal?: AbortSignal): Promise<number[]> {
    const results = await scoreSamples(this.shared, samples, this.name, signal);
    results.forEach((entry, index) => {
      this.shared.reference.set(samples[index]!, {
        sum: entry.logprob,
        ...(entry.tokens ? { tokens: entry.tokens } : {}),
      });
    });
    return results.map((entry) => entry.logprob);
  }

  async update(): Promise<PolicyUpdateMetrics> {
    throw new ConfigError(`${this.id} is a frozen snapshot; it cannot be updated.`);
  }

  async imitate(): Promise<ImitationMetrics> {
    throw new ConfigError(`${this.id} is a frozen snapshot; it cannot be trained.`);
  }

  async resetOptimizer(): Promise<void> {
    throw new ConfigError(`${this.id} is a frozen snapshot; it has no optimiser.`);
  }

  async snapshot(): Promise<TrainablePolicy> {
    this.shared.snapshots += 1;
    const name = `snapshot-${this.shared.snapshots}`;
    // A snapshot of a snapshot: the same frozen weights under a new name.
    const folder = join(this.shared.options.workDirectory, `.${name}`);
    await this.saveState(folder);
    await this.shared.backend.request('load', { directory: folder, weights: name });
    await rm(folder, { recursive: true, force: true });
    return new LlmPolicySnapshot(this.shared, name, this.id.replace(/@.*$/, `@${name}`));
  }

  async saveState(directory: string): Promise<void> {
    await mkdir(directory, { recursive: true });
    await this.shared.backend.request('save', { directory, weights: this.name });
    await writeFile(
      join(directory, HEADER_FILE),
      `${JSON.stringify(policyHeader(this.shared, true), null, 2)}\n`,
    );
  }

  async loadState(directory: string): Promise<void> {
    await checkHeader(this.shared, directory);
    await this.shared.backend.request('load', { directory, weights: this.name });
  }

  async close(): Promise<void> {
    if (!this.shared.backend.dead) {
      await this.shared.backend.request('release', { name: this.name }).catch(() => {});
    }
  }
}

function policyHeader(shared: SharedState, frozen: boolean): Record<string, unknown> {
  return {
    format: 'dreamgym-llm-policy',
    version: 1,
    actionSelection: shared.options.actionSelection ?? 'generate',
    actionFormat: shared.options.prompt.actionFormat ?? 'tagged',
    model: shared.runtime.modelPath.replace(/^.*[\\/]/, ''),
    frozen,
  };
}

async function checkHeader(shared: SharedState, directory: string): Promise<void> {
  const file = join(directory, HEADER_FILE);
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  } catch (error) {
    throw new CheckpointError(
      `${file} is missing or not JSON: ${directory} holds no LLM policy state (${(error as Error).message}).`,
      { path: file, cause: error },
    );
  }
  const expected = policyHeader(shared, false);
  for (const key of ['format', 'actionSelection', 'actionFormat'] as const) {
    if (header[key] !== expected[key]) {
      throw new CheckpointError(
        `${file}: saved with ${key} ${JSON.stringify(header[key])}, but this policy uses ${JSON.stringify(expected[key])}.`,
        { path: file },
      );
    }
  }
}

/** Worker samples of `samples` (prompts tokenised; cached per sample object). */
async function convertSamples(
  shared: SharedState,
  samples: readonly PolicySample[],
): Promise<WorkerSample[]> {
  return Promise.all(
    samples.map(async (sample) => {
      const cached = shared.converted.get(sample);
      if (cached) return cached;
      const converted = await convertSample(shared, sample);
      shared.converted.set(sample, converted);
      return converted;
    }),
  );
}

function isRecord(value: unknown): value is LlmDecisionRecord {
  const record = value as Partial<LlmDecisionRecord> | undefined;
  return (
    typeof record === 'object' &&
    record !== null &&
    Array.isArray(record.prompt) &&
    (record.kind === 'sequence' || record.kind === 'choice')
  );
}

async function convertSample(shared: SharedState, sample: PolicySample): Promise<WorkerSample> {
  const { runtime, options } = shared;
  const selection = options.actionSelection ?? 'generate';
  const record = sample.decisionInfo?.llm;
  if (isRecord(record)) {
    if (record.kind === 'choice') {
      return {
        prompt: record.prompt,
        candidates: record.candidates,
        choice: record.choice,
        behaviour: record.behaviour,
      };
    }
    return { prompt: record.prompt, completion: record.completion, behaviour: record.behaviour };
  }
  const messages = buildLlmPolicyMessages(
    sample.task,
    sample.observation,
    sample.previousActions,
    sample.candidates,
    options.prompt,
  );
  const prompt = await runtime.promptTokens(messages);
  const format = options.prompt.actionFormat ?? 'tagged';
  const answer = (action: string) => `${formatLlmPolicyAnswer(action, format)}${runtime.endOfTurn}`;
  if (selection === 'score') {
    const candidates = sample.candidates.includes(sample.action)
      ? [...sample.candidates]
      : [...sample.candidates, sample.action];
    return {
      prompt,
      candidates: candidates.map((candidate) => runtime.tokenize(answer(candidate))),
      choice: candidates.indexOf(sample.action),
      behaviour: null,
    };
  }
  return { prompt, completion: runtime.tokenize(answer(sample.action)), behaviour: null };
}

async function scoreSamples(
  shared: SharedState,
  samples: readonly PolicySample[],
  weights: string | undefined,
  signal: AbortSignal | undefined,
): Promise<WorkerLogprob[]> {
  if (samples.length === 0) return [];
  const converted = await convertSamples(shared, samples);
  const { results } = await shared.backend.request<{ results: WorkerLogprob[] }>(
    'logprobs',
    {
      samples: converted.map(({ behaviour: _, ...sample }) => sample),
      ...(weights ? { weights } : {}),
    },
    signal,
  );
  return results;
}
