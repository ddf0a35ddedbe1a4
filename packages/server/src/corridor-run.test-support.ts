/**
 * Test support (not exported): the corridor domain of `@dreamgym/core/testing` served over
 * OpenEnv. Offline corridor trajectories are played on the real `CorridorEnvironment` by a
 * seeded mix of the optimal policy and random play; a replay buffer holds them; a small
 * WebSocket client speaks the protocol the way openenv-core's `EnvClient` does.
 */
import {
  HashingEmbedder,
  ReplayBuffer,
  RetrievalExperienceModel,
  SeededRandom,
  type Task,
  trajectoryToTransitions,
} from '@dreamgym/core';
import {
  corridorTasks,
  createCorridorAdapter,
  optimalCorridorAction,
  playCorridor,
} from '@dreamgym/core/testing';
import WebSocket from 'ws';

/**
 * A corridor domain ready to serve: adapter, seed tasks (every third layout, so the
 * curriculum's mutations can find new ones), a buffer of offline play on every layout, and
 * the embedded experience model.
 */
export async function corridorDomain(options: { length?: number; episodes?: number } = {}) {
  const tasks = corridorTasks(options.length ?? 4);
  const random = new SeededRandom(7);
  const replayBuffer = ReplayBuffer.create({ embedder: new HashingEmbedder({ dimension: 128 }) });
  for (let index = 0; index < (options.episodes ?? 60); index += 1) {
    const trajectory = await playCorridor(tasks[index % tasks.length]!, random, {
      noise: index % 3 === 0 ? 0.6 : 0.1,
      maxSteps: 12,
    });
    await replayBuffer.add(
      trajectoryToTransitions(trajectory, { trajectoryId: `offline:${index}` }),
    );
  }
  const adapter = createCorridorAdapter();
  return {
    adapter,
    seedTasks: tasks.filter((_, index) => index % 3 === 0),
    replayBuffer,
    experienceModel: new RetrievalExperienceModel({ parseAction: adapter.parseAction }),
  };
}

/** A reply of the server, parsed. */
export type Reply = { type: string; data: Record<string, unknown> & { [key: string]: unknown } };

/** A minimal OpenEnv WebSocket client: one request, one reply, like openenv-core's `EnvClient`. */
export class TestClient {
  private readonly replies: Reply[] = [];
  private readonly waiting: ((reply: Reply) => void)[] = [];
  /** The close code and reason, once closed. */
  closed: Promise<{ code: number; reason: string }>;

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      const reply = JSON.parse(data.toString()) as Reply;
      const next = this.waiting.shift();
      if (next) next(reply);
      else this.replies.push(reply);
    });
    this.closed = new Promise((resolve) => {
      socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    });
  }

  static async connect(url: string): Promise<TestClient> {
    const socket = new WebSocket(`${url.replace(/^http/, 'ws')}/ws`);
    const client = new TestClient(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    return client;
  }

  /** The next reply (already received or still to come). */
  next(): Promise<Reply> {
    const ready = this.replies.shift();
    if (ready) return Promise.resolve(ready);
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Sends a message (an object as JSON, a string or bytes as they are) and waits for the reply. */
  request(message: unknown, options: { binary?: boolean } = {}): Promise<Reply> {
    const payload =
      typeof message === 'string' || Buffer.isBuffer(message) ? message : JSON.stringify(message);
    this.socket.send(payload, { binary: options.binary ?? false });
    return this.next();
  }

  close(): Promise<{ code: number; reason: string }> {
    this.socket.close();
    return this.closed;
  }
}

/** Plays one WebSocket episode: the optimal policy with probability `1 - noise` per step. */
export async function playEpisode(
  client: TestClient,
  options: { taskId?: string; noise?: number; random?: SeededRandom } = {},
): Promise<{ taskId: string; steps: number; success: boolean; truncated: boolean }> {
  const random = options.random ?? new SeededRandom(1);
  let reply = await client.request({
    type: 'reset',
    data: options.taskId ? { task_id: options.taskId } : {},
  });
  if (reply.type !== 'observation') throw new Error(`reset failed: ${JSON.stringify(reply)}`);
  const observation = () =>
    reply.data.observation as {
      text: string;
      actions: string[];
      metadata: Record<string, unknown>;
    };
  const taskId = observation().metadata.task_id as string;
  const task = { meta: parseLayout(taskId) } as unknown as Task;
  let steps = 0;
  while (!reply.data.done) {
    const current = observation();
    const action =
      random.float() < (options.noise ?? 0)
        ? random.choice(current.actions.length > 0 ? current.actions : ['go right'])
        : optimalCorridorAction(task, current);
    reply = await client.request({ type: 'step', data: { action } });
    if (reply.type !== 'observation') throw new Error(`step failed: ${JSON.stringify(reply)}`);
    steps += 1;
  }
  const metadata = observation().metadata;
  return {
    taskId,
    steps,
    success: metadata.success as boolean,
    truncated: metadata.truncated as boolean,
  };
}

function parseLayout(taskId: string): Record<string, number> {
  // Generated corridor tasks are named `<parent>~<key>-<door>-<n>`.
  const match = /~(\d+)-(\d+)-\d+$/.exec(taskId) ?? /corridor-\d+-(\d+)-(\d+)/.exec(taskId);
  return { keyRoom: Number(match?.[1] ?? 0), doorRoom: Number(match?.[2] ?? 0) };
}
