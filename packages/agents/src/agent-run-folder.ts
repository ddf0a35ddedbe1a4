/**
 * The run folder of an agent training run, shared by `AgentTrainer` and `ProxyTrainer`: one
 * `RunLedger` with `config.json` (the settings a resume must match), `metrics.jsonl` (a line
 * per iteration) and `checkpoints/`.
 */
import type { Environment, Task } from '@dreamgym/core';
import { LedgerCountersSchema, RunLedger } from '@dreamgym/core/internal';
import { type PpoLossOptions, resolvePpoLossOptions } from '@dreamgym/core/training';
import { type LlmTrainerOptions, trainerStartParams } from '@dreamgym/llama';
import { z } from 'zod';

/** The run's metrics log in its folder. */
export const METRICS_LOG = 'metrics.jsonl';

/** What an agent run's checkpoint counts: the ledger's counters and the metrics lines covered. */
export const AgentRunCountersSchema = LedgerCountersSchema.extend({
  /** Lines of `metrics.jsonl` this checkpoint covers. */
  metricsLines: z.number().int().nonnegative(),
});
export type AgentRunCounters = z.infer<typeof AgentRunCountersSchema>;

/** The options `AgentTrainer` and `ProxyTrainer` share: the model, the episodes, the update. */
export interface AgentRunOptions {
  /** The base model's name on the inference server. */
  model: string;
  /** The weights the server serves (a GGUF): the trainer starts from them. */
  modelPath: string;
  /** Makes one environment (synthetic or real); one is made per episode and closed after it. */
  environment: () => Environment | Promise<Environment>;
  /** Which one `environment` makes, for the counters and trajectory ids. Default `synthetic`. */
  source?: 'synthetic' | 'real';
  /** The tasks to train on, taken in order, `tasksPerIteration` at a time. */
  tasks: readonly Task[];
  /** Where iterations, adapters and the trainer state are kept. */
  runDirectory: string;
  /** Episodes per task (the GRPO group). Default 4. */
  groupSize?: number;
  /** Tasks per iteration. Default 2. */
  tasksPerIteration?: number;
  /** Actions per episode before it is cut (ended as truncated). Default 20. */
  maxSteps?: number;
  /** Episodes played at once. Default 1. */
  concurrency?: number;
  /** The torch trainer: LoRA shape, learning rate (default 1e-4), device. */
  trainer?: LlmTrainerOptions;
  /** The clipped policy-gradient loss. Default: clip 0.2 / 0.28, no KL. */
  loss?: PpoLossOptions;
  /** Samples per optimiser step. Default: all of an iteration's in one step. */
  miniBatchSize?: number;
  /** Progress lines. */
  log?: (line: string) => void;
}

/**
 * Opens the run folder: a new run, or the saved one there, which must have been started with
 * the same settings. `holds` names the run in errors; `server` is kept in `config.json` beside
 * the settings (where the model is served: it may change on resume).
 */
export async function openAgentRunFolder(
  options: AgentRunOptions,
  runDirectory: string,
  run: { holds: string; server: Record<string, string> },
) {
  const { model: _modelPath, ...trainer } = trainerStartParams(
    options.modelPath,
    options.trainer ?? {},
    1,
  );
  const settings = {
    model: options.model,
    source: options.source ?? 'synthetic',
    tasks: options.tasks.map((task) => task.id),
    groupSize: options.groupSize ?? 4,
    tasksPerIteration: options.tasksPerIteration ?? 2,
    maxSteps: options.maxSteps ?? 20,
    trainer,
    loss: resolvePpoLossOptions(options.loss),
    miniBatchSize: options.miniBatchSize ?? null,
  };
  return RunLedger.open(
    {
      runDirectory,
      holds: run.holds,
      configFile: 'config.json',
      counters: AgentRunCountersSchema,
      logs: { [METRICS_LOG]: 'metricsLines' },
    },
    {
      resume: true,
      settings,
      config: { ...settings, modelPath: options.modelPath, ...run.server },
      seed: trainer.seed as number,
      counters: { metricsLines: 0 },
    },
  );
}
