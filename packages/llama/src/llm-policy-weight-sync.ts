/**
 * Getting the trainer's weights to generation: after weights change, the worker exports them
 * into the policy's work folder in the runtime's format (`weightFormat`: a GGUF LoRA adapter or
 * whole model for llama.cpp, a PEFT adapter folder for an inference server) and the runtime
 * loads them. Generation then runs on the runtime's (quantised) copy, which
 * is why the behaviour log-probabilities differ from the trainer's even before the first step
 * (`PolicyUpdateMetrics.behaviourMismatch`).
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { LlmPolicyOptions, LlmPolicyStats } from './llm-policy-options.js';
import type { LlmTrainerClient } from './llm-trainer-client.js';

/** The version of the trainer's weights, and the one generation runs on. */
export class LlmWeightSync {
  private version = 0;
  private served = 0;
  private syncing: Promise<void> | undefined;
  private servedFile: string | undefined;

  /** `counters`: the policy's, whose export and reload figures this updates. */
  /** `actingOnTrainer`: generation runs on the trainer's weights, so nothing is ever handed over. */
  constructor(
    private readonly trainer: LlmTrainerClient,
    private readonly options: LlmPolicyOptions,
    private readonly counters: LlmPolicyStats,
    private readonly actingOnTrainer = false,
  ) {}

  /** The trainer's weights changed (a gradient step, or a loaded state). */
  weightsChanged(): void {
    this.version += 1;
  }

  /** Exports and reloads the trainer's weights if they changed since the last time. */
  async ensureServed(): Promise<void> {
    if (this.actingOnTrainer) return;
    while (this.served !== this.version) {
      this.syncing ??= this.sync().finally(() => {
        this.syncing = undefined;
      });
      await this.syncing;
    }
  }

  /** Deletes the last exported file (or adapter folder). */
  async removeServedFile(): Promise<void> {
    if (this.servedFile) await rm(this.servedFile, { force: true, recursive: true });
  }

  private async sync(): Promise<void> {
    const target = this.version;
    const version = String(target).padStart(5, '0');
    const started = performance.now();
    let file: string;
    let exported: { bytes: number; kind: 'lora' | 'model' | 'peft' };
    if (this.options.runtime.weightFormat === 'peft') {
      file = join(this.options.workDirectory, `adapter-${version}`);
      exported = { ...(await this.trainer.saveAdapter(file)), kind: 'peft' };
    } else {
      const exportType =
        this.options.trainer?.exportType ??
        ((this.options.trainer?.mode ?? 'lora') === 'lora' ? 'lora' : 'f16');
      file = join(
        this.options.workDirectory,
        `${exportType === 'lora' ? 'adapter' : 'model'}-${version}.gguf`,
      );
      exported = await this.trainer.export(file, exportType);
    }
    const reloadStarted = performance.now();
    await this.options.runtime.loadWeights({ kind: exported.kind, path: file });
    const ended = performance.now();
    this.counters.exports += 1;
    this.counters.exportSeconds += (reloadStarted - started) / 1000;
    this.counters.reloadSeconds += (ended - reloadStarted) / 1000;
    this.counters.lastExportBytes = exported.bytes;
    this.options.log?.(
      `llm policy: weights v${target} exported (${(exported.bytes / 1e6).toFixed(1)} MB, ${((reloadStarted - started) / 1000).toFixed(1)} s) and reloaded (${((ended - reloadStarted) / 1000).toFixed(1)} s)`,
    );
    if (this.servedFile && this.servedFile !== file) {
      await rm(this.servedFile, { force: true, recursive: true });
    }
    this.servedFile = file;
    this.served = target;
  }
}
