/**
 * The run folder of an agent training run, shared by `AgentTrainer` and `ProxyTrainer`: one
 * `RunLedger` with `config.json` (the settings a resume must match), `metrics.jsonl` (a line
 * per iteration) and `checkpoints/`.
 */
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

/** The trainer options a run's settings are made of (both trainers have them). */
export interface AgentRunOptions {
  model: string;
  modelPath: string;
  source?: string;
  tasks: readonly { id: string }[];
  groupSize?: number;
  tasksPerIteration?: number;
  maxSteps?: number;
  trainer?: LlmTrainerOptions;
  loss?: PpoLossOptions;
  miniBatchSize?: number;
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
