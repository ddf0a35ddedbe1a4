/**
 * `ProxyTrainer`: reinforcement learning for an agent that is not ours to wrap (any language,
 * any framework, a separate process), through its base URL alone. It runs two endpoints:
 * the recording proxy in front of the inference server (the agent's `OPENAI_BASE_URL`), and the
 * environment as MCP tools (an `EnvironmentServer`; the agent's MCP URL). Each episode gets its
 * own base URL and MCP URL, both naming the episode, so the model calls the proxy records and
 * the reward the MCP session earns meet under one id. The agent is started by `run` (a plain
 * subprocess, typically) and plays until the environment says done.
 *
 * Each iteration plays a group of episodes per task, reads their calls back from the proxy's
 * records (`proxy/calls.jsonl`), and makes the same GRPO update as `AgentTrainer`
 * (`grpo-update.ts`); the new adapter is loaded into the server and the proxy routes the
 * agent's later calls to it. The run folder is kept as `AgentTrainer`'s (`config.json`,
 * `metrics.jsonl`, `checkpoints/`, `iteration-NNNN/{adapter,trainer}`), so a stopped run resumes
 * from its last finished iteration, the proxy's records appended to.
 */
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ConfigError, type DomainAdapter, type Task } from '@dreamgym/core';
import type { RunLedger } from '@dreamgym/core/internal';
import { OpenAICompatibleRuntime, TorchTrainerBackend, trainerStartParams } from '@dreamgym/llama';
import { EnvironmentServer, type EpisodeRecord, StaticTaskSource } from '@dreamgym/server';
import { z } from 'zod';
import {
  type AgentRunCounters,
  type AgentRunOptions,
  METRICS_LOG,
  openAgentRunFolder,
} from '../agent-run-folder.js';
import { grpoUpdate } from '../grpo-update.js';
import { type ProxyRecord, readProxyRecords, recordCall } from './proxy-records.js';
import { type RecordingProxy, startRecordingProxy } from './recording-proxy.js';

/** What the agent of one episode is given (its environment variables, typically). */
export interface ProxyEpisode {
  episodeId: string;
  task: Task;
  /** The agent's OpenAI base URL (`OPENAI_BASE_URL`): this episode's path on the proxy. */
  openaiBaseURL: string;
  /** The model name to ask for (the base model; the proxy routes to the adapter). */
  model: string;
  /** The agent's MCP server URL (Streamable HTTP): this episode's session of the environment. */
  mcpURL: string;
}

/** Options of {@link ProxyTrainer}. */
export interface ProxyTrainerOptions extends AgentRunOptions {
  /** The inference server's OpenAI base URL (`dreamgym model serve`, or vLLM with LoRA loading). */
  upstream: string;
  /** The domain: its name and action grammar (the MCP `act` tool's description). */
  adapter: Pick<DomainAdapter, 'name' | 'prompts'>;
  /** Runs the agent for one episode; resolves when it has finished (its process exited). */
  run: (episode: ProxyEpisode) => Promise<void>;
  /**
   * The reward an episode is trained with, judged outside the environment (a rubric on the
   * agent's calls, a user's rating). Default: the environment's reward from the MCP session.
   */
  judge?: (episode: ProxyEpisodeResult) => number;
  /** How long to wait, after the agent has finished, for its episode's end to arrive. Default 2000 ms. */
  settleMs?: number;
}

/** One episode the agent played through the proxy. */
export interface ProxyEpisodeResult {
  episodeId: string;
  taskId: string;
  reward: number;
  success: boolean;
  /** Actions taken through the MCP `act` tool. */
  steps: number;
  /** The episode ended (done or truncated) before the agent stopped. */
  finished: boolean;
  /** The proxy's records of the episode's model calls. */
  records: ProxyRecord[];
  /** Why the agent failed, when its run threw. */
  error?: string;
}

/** The figures of one iteration. */
export interface ProxyIterationMetrics {
  iteration: number;
  episodes: number;
  successRate: number;
  meanReward: number;
  modelCalls: number;
  /** Calls trained on. */
  samples: number;
  loss: number | undefined;
  /** The adapter the agent's calls go to after this iteration. */
  servedModel: string;
  /** Seconds to save the adapter and load it into the server (0 without an update). */
  handOverSeconds: number;
  /** Adapters handed to the server so far in the run. */
  handOvers: number;
  seconds: number;
}

const UpdatePartSchema = z.object({ lastUpdate: z.string().nullable() });

/** Trains an outside agent's model through the proxy and the MCP environment; see the file's comment. */
export class ProxyTrainer {
  readonly metrics: ProxyIterationMetrics[] = [];
  private lastUpdate: string | null = null;
  private episodesStarted = 0;
  private readonly outcomes = new Map<string, (record: EpisodeRecord, finished: boolean) => void>();

  private constructor(
    private readonly options: ProxyTrainerOptions,
    private readonly backend: TorchTrainerBackend,
    private readonly runtime: OpenAICompatibleRuntime,
    private readonly ledger: RunLedger<AgentRunCounters>,
    /** The recording proxy the agent's OpenAI client calls. */
    readonly proxy: RecordingProxy,
    /** The environment as MCP tools. */
    readonly environment: EnvironmentServer,
    private readonly environmentURL: string,
  ) {}

  /** Starts the torch trainer, the proxy and the MCP environment; resumes a saved run. */
  static async start(options: ProxyTrainerOptions): Promise<ProxyTrainer> {
    if (options.tasks.length === 0) {
      throw new ConfigError('ProxyTrainer: no tasks to train on.', { field: 'tasks' });
    }
    const runDirectory = resolve(options.runDirectory);
    const { ledger, checkpoint } = await openRunFolder(options, runDirectory);
    const backend = TorchTrainerBackend.spawn({
      ...options.trainer?.backend,
      ...(options.log ? { log: options.log } : {}),
    });
    const closers: Array<() => Promise<unknown>> = [() => backend.close()];
    try {
      await backend.start(trainerStartParams(options.modelPath, options.trainer ?? {}, 1));
      const runtime = new OpenAICompatibleRuntime({
        baseURL: options.upstream,
        model: options.model,
        modelPath: options.modelPath,
        adapterPrefix: 'proxy',
      });
      const proxy = await startRecordingProxy({
        upstream: options.upstream,
        records: join(runDirectory, 'proxy', 'calls.jsonl'),
      });
      closers.push(() => proxy.close());
      let trainer: ProxyTrainer | undefined;
      const tasks = new StaticTaskSource(options.tasks);
      const environment = new EnvironmentServer({
        port: 0,
        maxSteps: options.maxSteps ?? 20,
        createEnvironment: options.environment,
        tasks: {
          drawTask: (request) => tasks.drawTask(request),
          episodeFinished: (record) => trainer?.ended(record, true),
          episodeAbandoned: (record) => trainer?.ended(record, false),
        },
        metadata: {
          name: `dreamgym-${options.adapter.name}`,
          description: `The ${options.adapter.name} environment an agent is trained in, as MCP tools.`,
        },
        actionGrammar: options.adapter.prompts.agentInstructions,
      });
      const { url } = await environment.start();
      closers.push(() => environment.close());
      trainer = new ProxyTrainer(options, backend, runtime, ledger, proxy, environment, url);
      if (checkpoint) {
        await trainer.resume(UpdatePartSchema.parse(checkpoint.json('update')).lastUpdate);
      }
      return trainer;
    } catch (error) {
      for (const close of closers.reverse()) await close().catch(() => {});
      throw error;
    }
  }

  /** The model the agent's calls are routed to now: the base, or the adapter trained last. */
  get servedModel(): string {
    return this.runtime.servedModel;
  }

  private get iterationsDone(): number {
    return this.ledger.counters.iteration;
  }

  /** Plays one episode of `task`: the agent runs with this episode's URLs. */
  async playEpisode(task: Task): Promise<ProxyEpisodeResult> {
    this.episodesStarted += 1;
    const episodeId = this.ledger.trajectoryId(
      this.options.source ?? 'synthetic',
      `${task.id}#${this.episodesStarted}`,
    );
    let settle!: (outcome: { record: EpisodeRecord; finished: boolean }) => void;
    const outcome = new Promise<{ record: EpisodeRecord; finished: boolean }>((done) => {
      settle = done;
    });
    this.outcomes.set(episodeId, (record, finished) => settle({ record, finished }));
    const query = new URLSearchParams({ task_id: task.id, episode_id: episodeId });
    let error: string | undefined;
    try {
      await this.options.run({
        episodeId,
        task,
        openaiBaseURL: this.proxy.episodeBaseURL(episodeId),
        model: this.options.model,
        mcpURL: `${this.environmentURL}/mcp?${query}`,
      });
    } catch (failure) {
      error = failure instanceof Error ? failure.message : String(failure);
      this.options.log?.(`episode ${episodeId}: the agent failed: ${error}`);
    }
    // The episode's end comes from the MCP session (done, or abandoned when the agent closed
    // it); an agent that left its session open has played no finished episode.
    const timeout = new Promise<undefined>((done) =>
      setTimeout(() => done(undefined), this.options.settleMs ?? 2_000).unref(),
    );
    const ended = await Promise.race([outcome, timeout]);
    this.outcomes.delete(episodeId);
    this.proxy.endEpisode(episodeId);
    const records = (await readProxyRecords(this.proxy.recordsFile)).records.filter(
      (record) => record.episodeId === episodeId,
    );
    return {
      episodeId,
      taskId: task.id,
      reward: ended?.record.totalReward ?? 0,
      success: ended?.record.success ?? false,
      steps: ended?.record.steps.length ?? 0,
      finished: ended?.finished ?? false,
      records,
      ...(error === undefined ? {} : { error }),
    };
  }

  /** Plays `groupSize` episodes of `task`. */
  async playGroup(task: Task): Promise<ProxyEpisodeResult[]> {
    const groupSize = this.options.groupSize ?? 4;
    const concurrency = Math.max(1, this.options.concurrency ?? 1);
    const results: ProxyEpisodeResult[] = [];
    for (let start = 0; start < groupSize; start += concurrency) {
      const count = Math.min(concurrency, groupSize - start);
      results.push(
        ...(await Promise.all(Array.from({ length: count }, () => this.playEpisode(task)))),
      );
    }
    return results;
  }

  /** One iteration: groups of episodes on the next tasks, one update, the adapter handed over. */
  async iteration(): Promise<ProxyIterationMetrics> {
    const started = performance.now();
    const { tasks } = this.options;
    const perIteration = this.options.tasksPerIteration ?? 2;
    const batch = Array.from(
      { length: perIteration },
      (_, offset) => tasks[(this.iterationsDone * perIteration + offset) % tasks.length]!,
    );
    const episodes: ProxyEpisodeResult[] = [];
    for (const task of batch) episodes.push(...(await this.playGroup(task)));
    const folder = `iteration-${String(this.iterationsDone + 1).padStart(4, '0')}`;
    const directory = join(resolve(this.options.runDirectory), folder);
    const update = await grpoUpdate({
      episodes: episodes.map((episode) => ({
        taskId: episode.taskId,
        reward: this.options.judge ? this.options.judge(episode) : episode.reward,
        calls: episode.records.map(recordCall),
      })),
      backend: this.backend,
      runtime: this.runtime,
      directory,
      ...(this.options.loss ? { loss: this.options.loss } : {}),
      ...(this.options.miniBatchSize === undefined
        ? {}
        : { miniBatchSize: this.options.miniBatchSize }),
    });
    if (update.samples > 0) {
      this.proxy.model = this.runtime.servedModel;
      await this.backend.request('save', { directory: join(directory, 'trainer') });
      this.lastUpdate = folder;
    }
    const previous = this.metrics.at(-1)?.handOvers ?? 0;
    const metrics: ProxyIterationMetrics = {
      iteration: this.iterationsDone + 1,
      episodes: episodes.length,
      successRate: episodes.filter((episode) => episode.success).length / episodes.length,
      meanReward: episodes.reduce((total, episode) => total + episode.reward, 0) / episodes.length,
      modelCalls: episodes.reduce((total, episode) => total + episode.records.length, 0),
      samples: update.samples,
      loss: update.loss,
      servedModel: this.servedModel,
      handOverSeconds: update.handOverSeconds,
      handOvers: previous + (update.samples > 0 ? 1 : 0),
      seconds: (performance.now() - started) / 1000,
    };
    this.metrics.push(metrics);
    const counters = this.ledger.counters;
    counters[`${this.options.source ?? 'synthetic'}Transitions`] += episodes.reduce(
      (total, episode) => total + episode.steps,
      0,
    );
    counters.iteration += 1;
    await this.ledger.appendLines(METRICS_LOG, [JSON.stringify(metrics)]);
    await this.ledger.save({ update: { lastUpdate: this.lastUpdate } });
    this.options.log?.(
      `iteration ${metrics.iteration}: success ${(100 * metrics.successRate).toFixed(1)}%, reward ${metrics.meanReward.toFixed(3)}, ${metrics.samples}/${metrics.modelCalls} calls trained, hand-over ${metrics.handOverSeconds.toFixed(2)} s, ${metrics.seconds.toFixed(1)} s`,
    );
    return metrics;
  }

  /** Runs iterations until `iterations` are done (counting those of a resumed run). */
  async train(iterations: number): Promise<ProxyIterationMetrics[]> {
    while (this.iterationsDone < iterations) await this.iteration();
    return this.metrics;
  }

  /** Stops the MCP environment, the proxy and the trainer (the server keeps the last adapter). */
  async close(): Promise<void> {
    await this.environment.close();
    await this.proxy.close();
    await this.backend.close();
  }

  private ended(record: EpisodeRecord, finished: boolean): void {
    if (finished) this.proxy.endEpisode(record.episodeId);
    this.outcomes.get(record.episodeId)?.(record, finished);
  }

  private async resume(lastUpdate: string | null): Promise<void> {
    const lines = (await readFile(this.ledger.path(METRICS_LOG), 'utf8')).split('\n');
    for (const line of lines.filter(Boolean)) {
      this.metrics.push(JSON.parse(line) as ProxyIterationMetrics);
    }
    this.lastUpdate = lastUpdate;
    if (lastUpdate) {
      const directory = join(resolve(this.options.runDirectory), lastUpdate);
      await this.backend.request('load', { directory: join(directory, 'trainer') });
      await this.runtime.loadWeights({ kind: 'peft', path: join(directory, 'adapter') });
      this.proxy.model = this.runtime.servedModel;
    }
    this.options.log?.(`resumed at iteration ${this.iterationsDone} (${this.servedModel})`);
  }
}

/** Opens the run folder: a new run, or the saved one, which must have the same settings. */
async function openRunFolder(options: ProxyTrainerOptions, runDirectory: string) {
  return openAgentRunFolder(options, runDirectory, {
    holds: 'a proxy training run',
    server: { upstream: options.upstream },
  });
}
