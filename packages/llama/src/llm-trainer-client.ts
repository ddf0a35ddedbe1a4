/**
 * The LLM policy's side of the torch trainer worker's protocol (`trainers/python`,
 * `dreamgym_trainer.worker`, reached through core's `TorchTrainerBackend`): the `start`
 * parameters, policy samples as the worker's token-id samples (prompts rebuilt and tokenised
 * where a decision kept no record), and each request the policy and its snapshots send.
 */
import {
  agentAnswerFormat,
  buildAgentMessages,
  formatAgentAnswer,
  type ImitationOptions,
  type PolicySample,
  type PolicyUpdateBatch,
  type PolicyUpdateOptions,
} from '@dreamgym/core/policy';
import type {
  LlmDecisionRecord,
  LlmPolicyOptions,
  LlmTrainerOptions,
} from './llm-policy-options.js';
import { TorchTrainerBackend, type TrainerDescription } from './torch-trainer-backend.js';

/** A sample as the worker takes it: token ids, and a sequence or a choice. */
interface WorkerSample {
  prompt: number[];
  completion?: number[];
  candidates?: number[][];
  choice?: number;
  behaviour?: number[] | number | null;
  reference?: number[] | number | null;
  advantage?: number;
}

/** The worker's log-probability of one sample (and of its tokens or candidates). */
export interface WorkerLogprob {
  logprob: number;
  tokens?: number[];
  candidates?: number[];
}

/** The worker's figures of one `update`. */
export interface WorkerUpdate {
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

/** Most samples one `imitate` request carries (whole mini-batches; one batch may exceed it). */
export const IMITATION_REQUEST_SAMPLES = 512;

function chunks(order: readonly number[], size: number): number[][] {
  const batches: number[][] = [];
  for (let start = 0; start < order.length; start += size) {
    batches.push(order.slice(start, start + size));
  }
  return batches;
}

/**
 * The torch worker's `start` parameters for `trainer`'s options on the weights at `modelPath`
 * (`temperature`: the sampling temperature its log-probabilities are taken at).
 */
export function trainerStartParams(
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

function isRecord(value: unknown): value is LlmDecisionRecord {
  const record = value as Partial<LlmDecisionRecord> | undefined;
  return (
    typeof record === 'object' &&
    record !== null &&
    Array.isArray(record.prompt) &&
    (record.kind === 'sequence' || record.kind === 'choice')
  );
}

/** One worker, shared by a policy and its snapshots. */
export class LlmTrainerClient {
  /** Trainer-side log-probabilities a snapshot computed, per sample (token-level KL). */
  readonly reference = new WeakMap<PolicySample, { sum: number; tokens?: number[] }>();
  /** Worker samples built from policy samples (prompts tokenised once). */
  private readonly converted = new WeakMap<PolicySample, WorkerSample>();
  private snapshots = 0;

  private constructor(
    readonly backend: TorchTrainerBackend,
    readonly options: LlmPolicyOptions,
  ) {}

  /**
   * Spawns the worker and starts it on the runtime's base GGUF (loaded as fp32); returns the
   * client and the trainer's description. The worker is closed when starting fails.
   */
  static async start(
    options: LlmPolicyOptions,
  ): Promise<{ client: LlmTrainerClient; description: TrainerDescription }> {
    const trainer = options.trainer ?? {};
    const backend = TorchTrainerBackend.spawn({
      ...trainer.backend,
      ...(options.log || trainer.backend?.log
        ? { log: trainer.backend?.log ?? ((line: string) => options.log?.(line)) }
        : {}),
    });
    try {
      const description = await backend.start(
        trainerStartParams(options.runtime.modelPath, trainer, options.temperature ?? 1),
      );
      return { client: new LlmTrainerClient(backend, options), description };
    } catch (error) {
      await backend.close().catch(() => {});
      throw error;
    }
  }

  /** A new snapshot name (`snapshot-N`). */
  nextSnapshotName(): string {
    this.snapshots += 1;
    return `snapshot-${this.snapshots}`;
  }

  /** Log-probabilities of `samples` under the current weights, or the snapshot `weights`. */
  async logprobs(
    samples: readonly PolicySample[],
    weights: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<WorkerLogprob[]> {
    if (samples.length === 0) return [];
    const converted = await this.convertSamples(samples);
    const { results } = await this.backend.request<{ results: WorkerLogprob[] }>(
      'logprobs',
      {
        samples: converted.map(({ behaviour: _, ...sample }) => sample),
        ...(weights ? { weights } : {}),
      },
      signal,
    );
    return results;
  }

  /**
   * One clipped policy-gradient update. Per-token behaviour and reference log-probabilities
   * go with a sample where they are known and agree with the batch's totals. `seconds`: the
   * request's wall-clock time.
   */
  async update(
    batch: PolicyUpdateBatch,
    options: PolicyUpdateOptions,
  ): Promise<{ result: WorkerUpdate; seconds: number }> {
    const { samples, advantages, behaviourLogprobs, referenceLogprobs } = batch;
    const converted = await this.convertSamples(samples);
    const workerSamples = converted.map((sample, index) => {
      const source = samples[index]!;
      const reported = behaviourLogprobs[index]!;
      let behaviour: number[] | number | null;
      if (sample.candidates) behaviour = reported;
      else if (
        Array.isArray(sample.behaviour) &&
        Math.abs(sample.behaviour.reduce((total, value) => total + value, 0) - reported) < 1e-3
      )
        behaviour = sample.behaviour;
      // Only the sequence's total is known: the worker takes the weights before the first
      // step as the behaviour (exact for on-policy data).
      else behaviour = null;
      let reference: number[] | number | null = null;
      if (referenceLogprobs) {
        const value = referenceLogprobs[index]!;
        const cached = this.reference.get(source);
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
    const result = await this.backend.request<WorkerUpdate>(
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
    return { result, seconds: (performance.now() - started) / 1000 };
  }

  /**
   * Behaviour cloning on `samples`: one optimiser step per mini-batch, sent to the worker in
   * requests of at most {@link IMITATION_REQUEST_SAMPLES} samples each (a whole data set in
   * one request is a JSON line of millions of token ids). `seconds`: wall-clock time.
   */
  async imitate(
    samples: readonly PolicySample[],
    options: ImitationOptions,
  ): Promise<{
    result: { negativeLogLikelihood: number; gradientSteps: number };
    seconds: number;
  }> {
    const order = samples.map((_, index) => index);
    options.random.shuffle(order);
    const batches = chunks(order, options.miniBatchSize ?? Math.max(1, samples.length));
    const started = performance.now();
    let weightedNll = 0;
    let counted = 0;
    let gradientSteps = 0;
    for (let first = 0; first < batches.length; ) {
      // Whole mini-batches, up to the request's sample limit (at least one batch).
      let last = first + 1;
      let size = batches[first]!.length;
      while (last < batches.length && size + batches[last]!.length <= IMITATION_REQUEST_SAMPLES) {
        size += batches[last]!.length;
        last += 1;
      }
      const part = batches.slice(first, last);
      const indices = part.flat();
      const converted = await this.convertSamples(indices.map((index) => samples[index]!));
      const position = new Map(indices.map((index, at) => [index, at]));
      const result = await this.backend.request<{
        negativeLogLikelihood: number;
        gradientSteps: number;
      }>(
        'imitate',
        {
          samples: converted.map(({ behaviour: _, ...sample }) => sample),
          batches: part.map((batch) => batch.map((index) => position.get(index)!)),
          ...(options.maxGradNorm === undefined ? {} : { maxGradNorm: options.maxGradNorm }),
          ...(options.learningRate === undefined ? {} : { learningRate: options.learningRate }),
        },
        options.signal,
      );
      weightedNll += result.negativeLogLikelihood * indices.length;
      counted += indices.length;
      gradientSteps += result.gradientSteps;
      first = last;
    }
    return {
      result: { negativeLogLikelihood: weightedNll / Math.max(1, counted), gradientSteps },
      seconds: (performance.now() - started) / 1000,
    };
  }

  /** Freezes a copy of the current weights in the worker under `name`. */
  async snapshot(name: string): Promise<void> {
    await this.backend.request('snapshot', { name });
  }

  /** Frees the snapshot `name`; nothing when the worker is gone. */
  async release(name: string): Promise<void> {
    if (!this.backend.dead) {
      await this.backend.request('release', { name }).catch(() => {});
    }
  }

  async resetOptimizer(): Promise<void> {
    await this.backend.request('reset_optimizer', {});
  }

  /** Saves the current weights and optimiser, or the snapshot `weights` alone. */
  async save(directory: string, weights?: string): Promise<void> {
    await this.backend.request('save', { directory, ...(weights ? { weights } : {}) });
  }

  /** Loads into the current weights and optimiser, or into the snapshot `weights`. */
  async load(directory: string, weights?: string): Promise<void> {
    await this.backend.request('load', { directory, ...(weights ? { weights } : {}) });
  }

  /**
   * Samples answers to `prompts` (token ids) on the trainer's current weights, batched, with
   * each token's log-probability (`temperature` 0: greedy; else the trainer's temperature).
   */
  generate(request: {
    prompts: number[][];
    maxTokens: number;
    temperature: number;
    seed?: number;
    stop?: readonly string[];
    stopTokens?: readonly number[];
    signal?: AbortSignal;
  }): Promise<{
    generations: Array<{
      tokens: number[];
      logprobs: number[];
      text: string;
      finish: 'stop' | 'length';
    }>;
  }> {
    const { signal, ...params } = request;
    return this.backend.request('generate', params, signal);
  }

  /** Each candidate's per-token log-probabilities after `prompt`, on the current weights (raw distribution). */
  async scoreCandidates(
    prompt: number[],
    candidates: number[][],
    signal?: AbortSignal,
  ): Promise<number[][]> {
    const { results } = await this.backend.request<{
      results: Array<{ candidateTokens: number[][] }>;
    }>('logprobs', { samples: [{ prompt, candidates, choice: 0 }] }, signal);
    return results[0]!.candidateTokens;
  }

  /** Loads a PEFT LoRA adapter folder into the current weights (rank, alpha, modules and layers must fit). */
  async loadAdapter(directory: string): Promise<void> {
    await this.backend.request('load_adapter', { directory });
  }

  /** Writes the current LoRA weights as a PEFT adapter folder (fp16 safetensors). */
  async saveAdapter(directory: string): Promise<{ path: string; bytes: number }> {
    return this.backend.request<{ path: string; bytes: number }>('save_adapter', { directory });
  }

  /** Writes the current weights as a GGUF for generation (`type` `lora`, or a whole model). */
  export(path: string, type: string): Promise<{ bytes: number; kind: 'lora' | 'model' }> {
    return this.backend.request<{ bytes: number; kind: 'lora' | 'model' }>('export', {
      path,
      type,
    });
  }

  /** Stops the worker. */
  close(): Promise<void> {
    return this.backend.close();
  }

  /** Worker samples of `samples` (prompts tokenised; cached per sample object). */
  private async convertSamples(samples: readonly PolicySample[]): Promise<WorkerSample[]> {
    return Promise.all(
      samples.map(async (sample) => {
        const cached = this.converted.get(sample);
        if (cached) return cached;
        const converted = await this.convertSample(sample);
        this.converted.set(sample, converted);
        return converted;
      }),
    );
  }

  private async convertSample(sample: PolicySample): Promise<WorkerSample> {
    const { runtime } = this.options;
    const selection = this.options.actionSelection ?? 'auto';
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
    const messages = buildAgentMessages(
      sample.task,
      sample.observation,
      sample.previousActions,
      sample.candidates,
      this.options.prompt,
    );
    const prompt = await runtime.promptTokens(messages);
    const format = agentAnswerFormat(this.options.prompt);
    const answer = (action: string) => `${formatAgentAnswer(action, format)}${runtime.endOfTurn}`;
    if (selection === 'score' || (selection === 'auto' && sample.candidates.length > 0)) {
      const candidates = sample.candidates.includes(sample.action)
        ? [...sample.candidates]
        : [...sample.candidates, sample.action];
      return {
        prompt,
        candidates: await Promise.all(
          candidates.map((candidate) => runtime.tokenize(answer(candidate))),
        ),
        choice: candidates.indexOf(sample.action),
        behaviour: null,
      };
    }
    return {
      prompt,
      completion: await runtime.tokenize(answer(sample.action)),
      behaviour: null,
    };
  }
}
