/**
 * `AgentTrainer`: reinforcement learning for an agent written with an agent framework, whose
 * code stays as it is. The agent is given a client whose `fetch` is a
 * {@link ModelCallCapture}'s and tools backed by a DreamGym environment; each iteration it
 * plays a group of episodes per task, its model calls become GRPO samples (the prompt's and
 * the answer's token ids as the server returned them; only the answer's tokens carry the
 * loss, so tool results and prompts are masked), the torch trainer updates a LoRA adapter,
 * and the adapter is handed to the OpenAI-compatible server the agent calls
 * (`POST /v1/load_lora_adapter`), so its next calls are answered by the new weights.
 *
 * The run folder is kept as every run's (`RunLedger`): `config.json` (the settings a resume
 * must repeat), `metrics.jsonl` (one line per iteration), `checkpoints/` (the counters and the
 * last update's folder after each iteration), and `iteration-0001/` ... with the trainer's
 * weights and optimiser (`trainer/`) and the adapter (`adapter/`) of each update. A run stopped
 * at any point resumes from its last finished iteration.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ConfigError, type DomainAdapter, type Environment, type Task } from '@dreamgym/core';
import type { RunLedger } from '@dreamgym/core/internal';
import { OpenAICompatibleRuntime, TorchTrainerBackend, trainerStartParams } from '@dreamgym/llama';
import { z } from 'zod';
import {
  type AgentRunCounters,
  type AgentRunOptions,
  METRICS_LOG,
  openAgentRunFolder,
} from './agent-run-folder.js';
import { type ModelCall, ModelCallCapture } from './capture.js';
import { EnvironmentEpisode } from './environment-episode.js';
import { grpoUpdate } from './grpo-update.js';

/** Options of {@link AgentTrainer}. */
export interface AgentTrainerOptions extends AgentRunOptions {
  /**
   * The OpenAI base URL of the server the agent calls (`http://127.0.0.1:8080/v1`):
   * `dreamgym model serve`, or vLLM / SGLang with LoRA loading at run time enabled.
   */
  baseURL: string;
  /** The domain: the `act` tool's description and the action grammar. */
  adapter: Pick<DomainAdapter, 'name' | 'prompts' | 'parseAction'>;
  /** Plays one episode with the agent: give it a client with `capture.fetch` and the episode's tools. */
  play: (episode: EnvironmentEpisode) => Promise<unknown>;
  /** The capture the agent's client uses. Default: a new one. */
  capture?: ModelCallCapture;
}

/** One episode the agent played. */
export interface AgentEpisodeResult {
  taskId: string;
  reward: number;
  success: boolean;
  steps: number;
  invalidActions: number;
  calls: ModelCall[];
  /** Why the agent stopped early, when it threw. */
  error?: string;
}

/** The figures of one iteration. */
export interface AgentIterationMetrics {
  iteration: number;
  episodes: number;
  successRate: number;
  meanReward: number;
  modelCalls: number;
  /** Calls trained on (those with token ids, in groups whose rewards differ). */
  samples: number;
  loss: number | undefined;
  /** The adapter the agent's calls go to after this iteration. */
  servedModel: string;
  seconds: number;
}

/** What a checkpoint holds besides the counters. */
const UpdatePartSchema = z.object({
  /** The iteration folder (in the run folder) of the last update, or null before the first. */
  lastUpdate: z.string().nullable(),
});

/** Trains an agent's model on the episodes it plays; see the file's comment. */
export class AgentTrainer {
  readonly capture: ModelCallCapture;
  readonly metrics: AgentIterationMetrics[] = [];
  /** The iteration folder (in the run folder) of the last update, if any. */
  private lastUpdate: string | null = null;
  private episodesStarted = 0;

  private constructor(
    private readonly options: AgentTrainerOptions,
    private readonly backend: TorchTrainerBackend,
    private readonly runtime: OpenAICompatibleRuntime,
    private readonly ledger: RunLedger<AgentRunCounters>,
  ) {
    this.capture = options.capture ?? new ModelCallCapture();
  }

  private get iterationsDone(): number {
    return this.ledger.counters.iteration;
  }

  /**
   * Starts the torch trainer on `modelPath` and, when `runDirectory` holds a saved run,
   * resumes it: the trainer's state is loaded and its adapter handed to the server.
   */
  static async start(options: AgentTrainerOptions): Promise<AgentTrainer> {
    if (options.tasks.length === 0) {
      throw new ConfigError('AgentTrainer: no tasks to train on.', { field: 'tasks' });
    }
    const trainerOptions = options.trainer ?? {};
    const { ledger, checkpoint } = await openRunFolder(options);
    const backend = TorchTrainerBackend.spawn({
      ...trainerOptions.backend,
      ...(options.log ? { log: options.log } : {}),
    });
    try {
      await backend.start(trainerStartParams(options.modelPath, trainerOptions, 1));
      const runtime = new OpenAICompatibleRuntime({
        baseURL: options.baseURL,
        model: options.model,
        modelPath: options.modelPath,
        adapterPrefix: 'agent',
      });
      const trainer = new AgentTrainer(options, backend, runtime, ledger);
      if (checkpoint) {
        await trainer.resume(UpdatePartSchema.parse(checkpoint.json('update')).lastUpdate);
      }
      return trainer;
    } catch (error) {
      await backend.close().catch(() => {});
      throw error;
    }
  }

  /** The model the agent's calls are sent to now: the base, or the adapter trained last. */
  get servedModel(): string {
    return this.runtime.servedModel;
  }

  /** Plays `groupSize` episodes of `task` and returns them (no update). */
  async playGroup(
    task: Task,
    groupSize = this.options.groupSize ?? 4,
  ): Promise<AgentEpisodeResult[]> {
    const concurrency = Math.max(1, this.options.concurrency ?? 1);
    const results: AgentEpisodeResult[] = [];
    for (let start = 0; start < groupSize; start += concurrency) {
      const count = Math.min(concurrency, groupSize - start);
      results.push(
        ...(await Promise.all(Array.from({ length: count }, () => this.playEpisode(task)))),
      );
    }
    return results;
  }

  /** Plays one episode of `task` with the agent, its model calls captured. */
  async playEpisode(
    task: Task,
    environmentFactory: () => Environment | Promise<Environment> = this.options.environment,
  ): Promise<AgentEpisodeResult> {
    this.episodesStarted += 1;
    const id = this.ledger.trajectoryId(this.source, `${task.id}#${this.episodesStarted}`);
    const environment = await environmentFactory();
    let failure: string | undefined;
    try {
      const { result: episode, calls } = await this.capture.episode(id, async (end) => {
        const played = await EnvironmentEpisode.begin({
          environment,
          task,
          adapter: this.options.adapter,
          maxSteps: this.options.maxSteps ?? 20,
          onEnd: end,
        });
        try {
          await this.options.play(played);
        } catch (error) {
          // After the episode's end the agent's loop may throw on the final answer (the AI
          // SDK does when a tool call was required): that is how it stops, not a failure.
          // Before it, the agent failed (its own error, a refused request): the episode ends
          // where it stopped, and its calls so far are kept.
          if (!played.done) {
            failure = (error as Error)?.message ?? String(error);
            this.options.log?.(`episode ${id}: the agent failed: ${failure}`);
          }
        }
        return played;
      });
      return {
        taskId: task.id,
        reward: episode.reward,
        success: episode.success,
        steps: episode.steps.length,
        invalidActions: episode.steps.filter((step) => step.invalid).length,
        calls,
        ...(failure === undefined ? {} : { error: failure }),
      };
    } finally {
      await environment.close();
    }
  }

  /** One iteration: groups of episodes on the next tasks, one update, the adapter handed over. */
  async iteration(): Promise<AgentIterationMetrics> {
    const started = performance.now();
    const { tasks } = this.options;
    const perIteration = this.options.tasksPerIteration ?? 2;
    const batch = Array.from(
      { length: perIteration },
      (_, offset) => tasks[(this.iterationsDone * perIteration + offset) % tasks.length]!,
    );
    const episodes: AgentEpisodeResult[] = [];
    for (const task of batch) episodes.push(...(await this.playGroup(task)));
    const folder = `iteration-${String(this.iterationsDone + 1).padStart(4, '0')}`;
    const directory = join(this.runDirectory, folder);
    const { samples, loss } = await grpoUpdate({
      episodes,
      backend: this.backend,
      runtime: this.runtime,
      directory,
      ...(this.options.loss ? { loss: this.options.loss } : {}),
      ...(this.options.miniBatchSize === undefined
        ? {}
        : { miniBatchSize: this.options.miniBatchSize }),
    });
    if (samples > 0) this.capture.model = this.runtime.servedModel;
    const metrics: AgentIterationMetrics = {
      iteration: this.iterationsDone + 1,
      episodes: episodes.length,
      successRate: episodes.filter((episode) => episode.success).length / episodes.length,
      meanReward: episodes.reduce((total, episode) => total + episode.reward, 0) / episodes.length,
      modelCalls: episodes.reduce((total, episode) => total + episode.calls.length, 0),
      samples,
      loss,
      servedModel: this.servedModel,
      seconds: (performance.now() - started) / 1000,
    };
    this.metrics.push(metrics);
    if (samples > 0) {
      await this.backend.request('save', { directory: join(directory, 'trainer') });
      this.lastUpdate = folder;
    }
    const counters = this.ledger.counters;
    counters[`${this.source}Transitions`] += episodes.reduce(
      (total, episode) => total + episode.steps,
      0,
    );
    counters.iteration += 1;
    await this.ledger.appendLines(METRICS_LOG, [JSON.stringify(metrics)]);
    await this.ledger.save({ update: { lastUpdate: this.lastUpdate } });
    this.options.log?.(
      `iteration ${metrics.iteration}: success ${(100 * metrics.successRate).toFixed(1)}%, reward ${metrics.meanReward.toFixed(3)}, ${metrics.samples}/${metrics.modelCalls} calls trained, ${metrics.seconds.toFixed(1)} s`,
    );
    return metrics;
  }

  /** Runs iterations until `iterations` are done (counting those of a resumed run). */
  async train(iterations: number): Promise<AgentIterationMetrics[]> {
    while (this.iterationsDone < iterations) await this.iteration();
    return this.metrics;
  }

  /** Stops the trainer; the server keeps the adapter loaded last unless `unload` is set. */
  async close(options: { unload?: boolean } = {}): Promise<void> {
    if (options.unload) await this.runtime.close();
    await this.backend.close();
  }

  private get runDirectory(): string {
    return resolve(this.options.runDirectory);
  }

  private get source(): 'synthetic' | 'real' {
    return this.options.source ?? 'synthetic';
  }

  /** Takes the run's figures back, and the last update's trainer state and adapter. */
  private async resume(lastUpdate: string | null): Promise<void> {
    const lines = (await readFile(this.ledger.path(METRICS_LOG), 'utf8')).split('\n');
    for (const line of lines.filter(Boolean)) {
      this.metrics.push(JSON.parse(line) as AgentIterationMetrics);
    }
    this.lastUpdate = lastUpdate;
    if (lastUpdate) {
      const directory = join(this.runDirectory, lastUpdate);
      await this.backend.request('load', { directory: join(directory, 'trainer') });
      await this.runtime.loadWeights({ kind: 'peft', path: join(directory, 'adapter') });
      this.capture.model = this.runtime.servedModel;
    }
    this.options.log?.(`resumed at iteration ${this.iterationsDone} (${this.servedModel})`);
  }
}

/**
 * Opens the trainer's run folder (`RunLedger`): a new run, or the saved one there, which must
 * have been started with the same settings.
 */
async function openRunFolder(options: AgentTrainerOptions) {
  const runDirectory = resolve(options.runDirectory);
  if (
    existsSync(join(runDirectory, 'progress.json')) &&
    !existsSync(join(runDirectory, 'checkpoints'))
  ) {
    throw new ConfigError(
      `${join(runDirectory, 'progress.json')} is the record of an earlier AgentTrainer, which this version cannot resume (it keeps checkpoints/ and metrics.jsonl). Start a new runDirectory; the adapters in ${runDirectory}/iteration-*/adapter stay usable.`,
      { field: 'runDirectory' },
    );
  }
  return openAgentRunFolder(options, runDirectory, {
    holds: 'an agent training run',
    server: { baseURL: options.baseURL },
  });
}
