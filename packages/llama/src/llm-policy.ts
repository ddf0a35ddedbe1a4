/**
 * `LlmPolicy`: an LLM that acts through a runtime (llama.cpp in process: `LlamaPolicyRuntime`;
 * an inference server: `OpenAICompatibleRuntime`; or the trainer itself, `actOn: 'trainer'`)
 * and learns through the torch trainer backend (a Python worker), so the DreamGym loop trains
 * it like any `TrainablePolicy`.
 *
 * Acting (`generate` or `score`) is in `llm-policy-acting.ts`. Updates, behaviour cloning,
 * log-probabilities, snapshots and checkpoints go to the trainer, which holds the fp32
 * weights (the worker protocol: `llm-trainer-client.ts`). After weights change, the next
 * decision first exports them as GGUF and reloads the runtime (`llm-policy-weight-sync.ts`).
 */
import { mkdir } from 'node:fs/promises';
import {
  ConfigError,
  type Observation,
  type PolicyContext,
  type PolicyDecision,
  type TrainablePolicy,
} from '@dreamgym/core';
import type {
  ImitationMetrics,
  ImitationOptions,
  PolicySample,
  PolicyUpdateBatch,
  PolicyUpdateMetrics,
  PolicyUpdateOptions,
} from '@dreamgym/core/policy';
import { LlmPolicyActor } from './llm-policy-acting.js';
import {
  type LlmPolicyOptions,
  type LlmPolicyStats,
  validateLlmPolicyOptions,
} from './llm-policy-options.js';
import { LlmPolicySnapshot } from './llm-policy-snapshot.js';
import { checkPolicyHeader, writePolicyHeader } from './llm-policy-state.js';
import { LlmWeightSync } from './llm-policy-weight-sync.js';
import { LlmTrainerClient } from './llm-trainer-client.js';
import type { TorchTrainerBackend, TrainerDescription } from './torch-trainer-backend.js';
import { TrainerActingRuntime } from './trainer-acting-runtime.js';

/** The trainable LLM policy. */
export class LlmPolicy implements TrainablePolicy {
  readonly id: string;
  /** The trainer's description (model, device, trainable parameters). */
  readonly trainer: TrainerDescription;
  /**
   * Tokens of a text in this policy's tokenizer, where its runtime counts in process (llama.cpp;
   * not an inference server): what an environment's observation budget
   * (`maxObservationTokens`) should count in, since this model reads the observations.
   */
  readonly countTokens: ((text: string) => number) | undefined;
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
  private readonly actor: LlmPolicyActor;
  private readonly weights: LlmWeightSync;
  private closed: Promise<void> | undefined;

  private constructor(
    private readonly client: LlmTrainerClient,
    trainer: TrainerDescription,
  ) {
    this.trainer = trainer;
    this.id = client.options.id ?? `llm:${client.options.runtime.id}`;
    const { runtime } = client.options;
    this.countTokens = runtime.countTokens ? runtime.countTokens.bind(runtime) : undefined;
    const actOnTrainer = client.options.actOn === 'trainer';
    this.actor = new LlmPolicyActor(
      actOnTrainer
        ? { ...client.options, runtime: new TrainerActingRuntime(client, client.options.runtime) }
        : client.options,
      this.counters,
    );
    this.weights = new LlmWeightSync(client, client.options, this.counters, actOnTrainer);
  }

  /** Starts the trainer worker (it loads the runtime's base GGUF as fp32) and returns the policy. */
  static async create(options: LlmPolicyOptions): Promise<LlmPolicy> {
    validateLlmPolicyOptions(options);
    const { client, description } = await LlmTrainerClient.start(options);
    try {
      await mkdir(options.workDirectory, { recursive: true });
    } catch (error) {
      await client.close().catch(() => {});
      throw error;
    }
    return new LlmPolicy(client, description);
  }

  /** The trainer worker (health checks, crash tests). */
  get backend(): TorchTrainerBackend {
    return this.client.backend;
  }

  /** Counters and timings so far. */
  stats(): LlmPolicyStats {
    return { ...this.counters };
  }

  private get options(): LlmPolicyOptions {
    return this.client.options;
  }

  async act(observation: Observation, context: PolicyContext): Promise<PolicyDecision> {
    await this.ensureServed();
    return this.actor.act(observation, context);
  }

  // ------------------------------------------------------------------ training

  async logprobs(samples: readonly PolicySample[], signal?: AbortSignal): Promise<number[]> {
    return (await this.client.logprobs(samples, undefined, signal)).map((entry) => entry.logprob);
  }

  async update(
    batch: PolicyUpdateBatch,
    options: PolicyUpdateOptions,
  ): Promise<PolicyUpdateMetrics> {
    const { samples, advantages, behaviourLogprobs } = batch;
    if (advantages.length !== samples.length || behaviourLogprobs.length !== samples.length) {
      throw new ConfigError(
        `update(): ${samples.length} samples but ${advantages.length} advantages and ${behaviourLogprobs.length} behaviour log-probabilities.`,
        { field: 'batch' },
      );
    }
    const { result, seconds } = await this.client.update(batch, options);
    this.counters.updateSeconds += seconds;
    this.counters.updates += 1;
    this.counters.lastUpdate = { ...result };
    if (result.gradientSteps > 0) this.weights.weightsChanged();
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
    const { result, seconds } = await this.client.imitate(samples, options);
    this.counters.updateSeconds += seconds;
    this.counters.imitations += 1;
    if (result.gradientSteps > 0) this.weights.weightsChanged();
    return {
      negativeLogLikelihood: result.negativeLogLikelihood,
      gradientSteps: result.gradientSteps,
    };
  }

  async snapshot(): Promise<TrainablePolicy> {
    const name = this.client.nextSnapshotName();
    await this.client.snapshot(name);
    return new LlmPolicySnapshot(this.client, name, `${this.id}@${name}`);
  }

  async resetOptimizer(): Promise<void> {
    await this.client.resetOptimizer();
  }

  async saveState(directory: string): Promise<void> {
    await mkdir(directory, { recursive: true });
    await this.client.save(directory);
    await writePolicyHeader(this.options, directory, false);
  }

  async loadState(directory: string): Promise<void> {
    await checkPolicyHeader(this.options, directory);
    await this.client.load(directory);
    this.weights.weightsChanged();
  }

  /**
   * Loads a PEFT LoRA adapter folder (`adapter_config.json`, `adapter_model.safetensors`: what
   * `python -m dreamgym_trainer.behaviour_cloning` and {@link LlmPolicy.saveAdapter} write) into
   * the policy's weights; the next decision acts on them. Its rank, alpha, target modules and
   * layers must be the policy's (`trainer.lora`), or this throws naming both.
   */
  async loadAdapter(directory: string): Promise<void> {
    await this.client.loadAdapter(directory);
    this.weights.weightsChanged();
  }

  /** Writes the current LoRA weights as a PEFT adapter folder (fp16), the format vLLM and SGLang load. */
  saveAdapter(directory: string): Promise<{ path: string; bytes: number }> {
    return this.client.saveAdapter(directory);
  }

  /**
   * Makes generation run on the trainer's current weights (export, then runtime reload), if
   * they changed since the last time. `act` calls it; call it to time the sync on its own.
   */
  ensureServed(): Promise<void> {
    return this.weights.ensureServed();
  }

  /** Stops the worker and (when it owns it) the runtime. Idempotent. */
  close(): Promise<void> {
    this.closed ??= (async () => {
      await this.client.close();
      if (this.options.ownsRuntime ?? true) await this.options.runtime.close();
      await this.weights.removeServedFile();
    })();
    return this.closed;
  }
}
