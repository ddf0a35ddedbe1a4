/**
 * The options of an `LlmPolicy` (acting, the trainer, where exported weights go), their
 * validation, its counters, and what it keeps of each decision for the update.
 */
import { ConfigError, type SeededRandom } from '@dreamgym/core';
import type { AgentPromptOptions, InvalidAnswerFallback } from '@dreamgym/core/policy';
import type { LlmRuntime } from './llm-runtime.js';
import type { TorchTrainerBackendOptions } from './torch-trainer-backend.js';

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

/** Options of `LlmPolicy.create`. */
export interface LlmPolicyOptions {
  /** Generation and tokenisation (llama.cpp in process: `LlamaPolicyRuntime`). */
  runtime: LlmRuntime;
  /** The prompt (core's agent prompt): the adapter's `prompts` and the answer format (default `tagged`). */
  prompt: AgentPromptOptions;
  /**
   * How the policy acts. `auto` (default): `score` at steps that list candidate actions,
   * `generate` at steps that list none. `score`: the candidates' likelihoods as answers, a
   * softmax over them, one sampled (never invalid, and the trainer scores the same
   * distribution). `generate`: the model writes its answer, parsed afterwards (invalid answers
   * are penalised and replaced by the fallback). `auto` is the default because, measured on
   * 256 held-out ALFWorld decisions after behaviour cloning, score selection matched the
   * expert as often as generation (89.8% vs 88.7%) without its inadmissible answers, and on
   * the untrained model it chose the expert's action 10.9% of the time where generation wrote
   * no parsable action at all (benchmarks/results/alfworld-llm-bc-h200.json).
   */
  actionSelection?: 'auto' | 'generate' | 'score';
  /**
   * Where generation and scoring run. `runtime` (default): the runtime, which is handed the
   * trainer's weights after every update. `trainer`: the torch worker, on its own weights
   * (batched sampling with log-probabilities), so one GPU acts and learns with no inference
   * server and no hand-over; the runtime then only tokenises.
   */
  actOn?: 'runtime' | 'trainer';
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
  invalidAnswerPenalty?: number;
  /** What to send when the output is invalid. Default `skip` (the raw text). */
  invalidAnswerFallback?: InvalidAnswerFallback;
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

/** Counters and timings of an `LlmPolicy`. */
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

function isNonPositive(value: number): boolean {
  return Number.isFinite(value) && value <= 0;
}

/** Throws `ConfigError` for acting or trainer options out of range. */
export function validateLlmPolicyOptions(options: LlmPolicyOptions): void {
  const penalty = options.invalidAnswerPenalty ?? -0.1;
  if (!isNonPositive(penalty)) {
    throw new ConfigError(
      'invalidAnswerPenalty must be zero or negative (it is added to the reward).',
      { field: 'invalidAnswerPenalty' },
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
  if (options.runtime.weightFormat === 'peft' && options.trainer?.mode === 'full') {
    throw new ConfigError(
      `The runtime ${options.runtime.id} loads new weights as LoRA adapters (PEFT): trainer.mode must be lora.`,
      { field: 'trainer.mode' },
    );
  }
}
