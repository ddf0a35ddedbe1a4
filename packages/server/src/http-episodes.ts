/**
 * The HTTP episodes of the OpenEnv protocol: `POST /reset` starts (or restarts) an episode
 * kept on the server under its `episode_id`, `POST /step` steps it, `GET /state` reads it.
 *
 * OpenEnv's HTTP endpoints are stateless, so these episodes never take WebSocket slots: they
 * have their own cap (at which the least recently used idle episode is closed to make room,
 * and a later step on it says so) and a per-client token bucket on new resets, so HTTP
 * callers cannot lock WebSocket trainers out of the server.
 */
import { randomUUID } from 'node:crypto';
import type { EpisodeRunner } from './episode-runner.js';
import { HttpError } from './http-io.js';
import type { Logger } from './logger.js';
import {
  fieldErrors,
  HttpStepRequestSchema,
  ResetParametersSchema,
  type StepReply,
} from './protocol/openenv-messages.js';
import { WorkerLostError } from './remote-environment.js';
import { SerialQueue } from './serial-queue.js';

/** Limits of {@link HttpEpisodes} (the server's validated settings). */
export interface HttpEpisodeLimits {
  maxHttpEpisodes: number;
  httpResetsPerSecond: number;
  sessionTimeoutMs: number;
}

/** What {@link HttpEpisodes} needs from the server that holds it. */
export interface HttpEpisodesOptions {
  limits: HttpEpisodeLimits;
  createRunner: () => Promise<EpisodeRunner>;
  logger: Logger;
  /** Called with each step's duration in milliseconds. */
  onStep: (milliseconds: number) => void;
}

interface HttpEpisode {
  id: string;
  runner: EpisodeRunner;
  queue: SerialQueue;
  lastActivity: number;
}

/** Ids remembered as ended or evicted, so a late step gets the right message. */
const RECENTLY_ENDED = 4096;

/** The live HTTP episodes of one server. */
export class HttpEpisodes {
  /** Episodes opened, resets refused (cap, rate), closed idle, closed to make room. */
  readonly totals = { opened: 0, rejected: 0, reaped: 0, evicted: 0 };
  private readonly episodes = new Map<string, HttpEpisode>();
  /** Slots reserved by episodes whose environment is still being created. */
  private reserved = 0;
  private readonly ended = new Set<string>();
  /** Episode ids closed to make room, so a later step says so. */
  private readonly evicted = new Set<string>();
  /** Token buckets of `POST /reset`, by client address. */
  private readonly resetBuckets = new Map<string, { tokens: number; at: number }>();

  constructor(private readonly options: HttpEpisodesOptions) {}

  /** Live episodes. */
  get size(): number {
    return this.episodes.size;
  }

  /** `POST /reset` with its parsed JSON body, from client address `remote`. */
  async reset(body: unknown, remote: string): Promise<StepReply> {
    const parameters = ResetParametersSchema.safeParse(body);
    if (!parameters.success) throw new HttpError(422, fieldErrors(parameters.error, ['body']));
    const id = parameters.data.episode_id ?? randomUUID();
    const episode = this.episodes.get(id) ?? (await this.open(id, remote));
    episode.lastActivity = performance.now();
    try {
      return await this.inEpisode(episode, () =>
        episode.runner.reset({ ...parameters.data, episode_id: id }),
      );
    } catch (error) {
      if (!episode.runner.running) await this.end(episode);
      throw error;
    }
  }

  /** `POST /step` with its parsed JSON body. */
  async step(body: unknown): Promise<StepReply> {
    const parsed = HttpStepRequestSchema.safeParse(body);
    if (!parsed.success) throw new HttpError(422, fieldErrors(parsed.error, ['body']));
    const { episode_id: id, action } = parsed.data;
    const episode = this.episodes.get(id);
    if (!episode) throw new HttpError(this.ended.has(id) ? 409 : 404, this.missing(id));
    episode.lastActivity = performance.now();
    const started = performance.now();
    const reply = await this.inEpisode(episode, () => episode.runner.step(action));
    this.options.onStep(performance.now() - started);
    if (reply.done) await this.end(episode);
    return reply;
  }

  /**
   * Runs `work` in the episode's queue. Where the worker process holding the episode's
   * environment died, the episode ends and the client gets a 503 that says to start anew
   * (the WebSocket sessions of that worker are closed with 1012 instead).
   */
  private async inEpisode(
    episode: HttpEpisode,
    work: () => Promise<StepReply>,
  ): Promise<StepReply> {
    try {
      return await episode.queue.run(work);
    } catch (error) {
      if (!WorkerLostError.isLoss(error)) throw error;
      this.options.logger.log('warn', 'http_episode.environment_lost', {
        episode: episode.id,
        error,
      });
      await this.end(episode);
      throw new HttpError(
        503,
        `Episode "${episode.id}" ended: the worker process holding its environment stopped and was restarted (${(error as Error).message}). POST /reset to start a new episode.`,
      );
    }
  }

  /** `GET /state?episode_id=`: the episode's state, or an empty one without an id. */
  state(id: string | null): unknown {
    if (id === null) {
      return {
        episode_id: null,
        step_count: 0,
        task_id: null,
        instruction: null,
        done: false,
        truncated: false,
        total_reward: 0,
      };
    }
    const episode = this.episodes.get(id);
    if (!episode) throw new HttpError(404, `No episode "${id}" on this server.`);
    episode.lastActivity = performance.now();
    return episode.runner.state();
  }

  /** Closes the episodes idle (no step queued) for longer than the session timeout. */
  reapIdle(now: number): void {
    for (const episode of this.episodes.values()) {
      if (
        episode.queue.pending === 0 &&
        now - episode.lastActivity > this.options.limits.sessionTimeoutMs
      ) {
        this.totals.reaped += 1;
        this.options.logger.log('info', 'http_episode.reaped', { episode: episode.id });
        void this.end(episode);
      }
    }
  }

  /** Ends every episode once its step in flight is done. */
  closeAll(): Promise<void> {
    return Promise.all([...this.episodes.values()].map((episode) => this.end(episode))).then(
      () => undefined,
    );
  }

  private async open(id: string, remote: string): Promise<HttpEpisode> {
    if (!this.admitReset(remote)) {
      this.totals.rejected += 1;
      throw new HttpError(
        429,
        `Too many POST /reset from this client: at most ${this.options.limits.httpResetsPerSecond} per second. Reuse an episode_id, or use the WebSocket /ws.`,
      );
    }
    await this.makeRoom();
    this.reserved += 1;
    let runner: EpisodeRunner;
    try {
      runner = await this.options.createRunner();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new HttpError(500, `The environment factory failed: ${message}`);
    } finally {
      this.reserved -= 1;
    }
    const episode = { id, runner, queue: new SerialQueue(), lastActivity: performance.now() };
    this.episodes.set(id, episode);
    this.ended.delete(id);
    this.evicted.delete(id);
    this.totals.opened += 1;
    return episode;
  }

  private missing(id: string): string {
    if (this.evicted.has(id)) {
      return `Episode "${id}" was closed to make room for newer HTTP episodes (at most ${this.options.limits.maxHttpEpisodes} live); POST /reset to start another.`;
    }
    if (this.ended.has(id)) return `Episode "${id}" has ended; POST /reset to start another.`;
    return `No episode "${id}" on this server: start one with POST /reset (idle episodes are closed after ${this.options.limits.sessionTimeoutMs / 1000} s).`;
  }

  /** Whether a new reset from `remote` is within its rate (a token bucket per address). */
  private admitReset(remote: string): boolean {
    const rate = this.options.limits.httpResetsPerSecond;
    const now = performance.now();
    const bucket = this.resetBuckets.get(remote) ?? { tokens: rate, at: now };
    bucket.tokens = Math.min(rate, bucket.tokens + ((now - bucket.at) / 1000) * rate);
    bucket.at = now;
    if (this.resetBuckets.size > 10_000) this.resetBuckets.clear();
    this.resetBuckets.set(remote, bucket);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  /** Makes room for one more episode: closes the least recently used idle one. */
  private async makeRoom(): Promise<void> {
    const max = this.options.limits.maxHttpEpisodes;
    if (this.episodes.size + this.reserved < max) return;
    let oldest: HttpEpisode | undefined;
    for (const episode of this.episodes.values()) {
      if (episode.queue.pending > 0) continue;
      if (!oldest || episode.lastActivity < oldest.lastActivity) oldest = episode;
    }
    if (!oldest) {
      this.totals.rejected += 1;
      throw new HttpError(
        503,
        `HTTP episodes at capacity: ${this.episodes.size}/${max}, all stepping. Retry shortly.`,
      );
    }
    this.totals.evicted += 1;
    remember(this.evicted, oldest.id);
    this.options.logger.log('info', 'http_episode.evicted', { episode: oldest.id });
    await this.end(oldest);
  }

  private async end(episode: HttpEpisode): Promise<void> {
    if (this.episodes.get(episode.id) !== episode) return;
    this.episodes.delete(episode.id);
    remember(this.ended, episode.id);
    await episode.queue.idle();
    try {
      await episode.runner.close();
    } catch (error) {
      this.options.logger.log('warn', 'http_episode.close_failed', { episode: episode.id, error });
    }
  }
}

/** Adds `id` to a bounded set of recent ids, forgetting the oldest. */
function remember(ids: Set<string>, id: string): void {
  ids.add(id);
  if (ids.size > RECENTLY_ENDED) ids.delete(ids.values().next().value as string);
}
