/**
 * `LlmPolicySnapshot`: a frozen copy of an `LlmPolicy`'s weights held in its worker, the KL
 * reference of an update. It scores, saves and loads; it neither acts nor learns.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError, type PolicyDecision, type TrainablePolicy } from '@dreamgym/core';
import type { ImitationMetrics, PolicySample, PolicyUpdateMetrics } from '@dreamgym/core/policy';
import { checkPolicyHeader, writePolicyHeader } from './llm-policy-state.js';
import type { LlmTrainerClient } from './llm-trainer-client.js';

/** A frozen copy of an LLM policy's weights in its worker: the KL reference. */
export class LlmPolicySnapshot implements TrainablePolicy {
  /** `name`: the snapshot's name in the worker. */
  constructor(
    private readonly trainer: LlmTrainerClient,
    private readonly name: string,
    readonly id: string,
  ) {}

  async act(): Promise<PolicyDecision> {
    throw new ConfigError(
      `${this.id} is a frozen snapshot kept for its log-probabilities (the KL reference); it does not generate. Act with the policy itself.`,
    );
  }

  async logprobs(samples: readonly PolicySample[], signal?: AbortSignal): Promise<number[]> {
    const results = await this.trainer.logprobs(samples, this.name, signal);
    results.forEach((entry, index) => {
      this.trainer.reference.set(samples[index]!, {
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
    const name = this.trainer.nextSnapshotName();
    // A snapshot of a snapshot: the same frozen weights under a new name.
    const folder = join(this.trainer.options.workDirectory, `.${name}`);
    await this.saveState(folder);
    await this.trainer.load(folder, name);
    await rm(folder, { recursive: true, force: true });
    return new LlmPolicySnapshot(this.trainer, name, this.id.replace(/@.*$/, `@${name}`));
  }

  async saveState(directory: string): Promise<void> {
    await mkdir(directory, { recursive: true });
    await this.trainer.save(directory, this.name);
    await writePolicyHeader(this.trainer.options, directory, true);
  }

  async loadState(directory: string): Promise<void> {
    await checkPolicyHeader(this.trainer.options, directory);
    await this.trainer.load(directory, this.name);
  }

  async close(): Promise<void> {
    await this.trainer.release(this.name);
  }
}
