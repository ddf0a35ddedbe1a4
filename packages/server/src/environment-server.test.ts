import { connect } from 'node:net';
import {
  type Environment,
  EnvironmentStateError,
  type Observation,
  type StepResult,
  type Task,
} from '@dreamgym/core';
import { CorridorEnvironment, corridorTask, corridorTasks } from '@dreamgym/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { playEpisode, TestClient } from './corridor-run.test-support.js';
import { EnvironmentServer, type EnvironmentServerOptions } from './environment-server.js';
import { createJsonLogger } from './logger.js';
import {
  CLOSE_CODES,
  EnvironmentMetadataSchema,
  StateSchema,
  StepReplySchema,
  WsErrorResponseSchema,
} from './protocol/openenv-messages.js';
import { type EpisodeRecord, StaticTaskSource } from './task-source.js';

/** A corridor whose steps take `delayMs`, recording when it was closed. */
class SlowCorridor implements Environment {
  readonly inner = new CorridorEnvironment({ maxSteps: 10 });
  closedAt: number | undefined;
  stepsFinished = 0;
  constructor(private readonly delayMs: number) {}
  reset(task: Task): Promise<Observation> {
    return this.inner.reset(task);
  }
  async step(action: string): Promise<StepResult> {
    await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    const result = await this.inner.step(action);
    this.stepsFinished += 1;
    return result;
  }
  async close(): Promise<void> {
    this.closedAt = performance.now();
    await this.inner.close();
  }
}

const servers: EnvironmentServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function startServer(options: Partial<EnvironmentServerOptions> = {}) {
  const finished: EpisodeRecord[] = [];
  const abandoned: EpisodeRecord[] = [];
  const environments: Environment[] = [];
  const source = new StaticTaskSource(corridorTasks(4), { seed: 3 });
  const server = new EnvironmentServer({
    port: 0,
    createEnvironment: () => {
      const environment = new CorridorEnvironment({ maxSteps: 10 });
      environments.push(environment);
      return environment;
    },
    tasks: {
      drawTask: (request) => source.drawTask(request),
      episodeFinished: (episode) => {
        finished.push(episode);
      },
      episodeAbandoned: (episode) => {
        abandoned.push(episode);
      },
    },
    metadata: { name: 'corridor', description: 'The corridor test domain.', version: '1.2.3' },
    ...options,
  });
  servers.push(server);
  const { url, host } = await server.start();
  return { server, url, host, finished, abandoned, environments };
}

async function waitFor(check: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('WebSocket /ws', () => {
  it('plays full episodes with OpenEnv replies and reports each finished episode', async () => {
    const { url, finished, host } = await startServer();
    expect(host).toBe('127.0.0.1');
    const client = await TestClient.connect(url);
    const reset = await client.request({ type: 'reset', data: { task_id: 'corridor-4-2-3' } });
    expect(reset.type).toBe('observation');
    const first = StepReplySchema.parse(reset.data);
    expect(first).toMatchObject({ reward: null, done: false });
    expect(first.observation.metadata).toMatchObject({
      task_id: 'corridor-4-2-3',
      step: 0,
      truncated: false,
    });
    expect(first.observation.instruction).toContain('room 2');

    const state = await client.request({ type: 'state' });
    expect(state.type).toBe('state');
    expect(StateSchema.parse(state.data)).toMatchObject({
      task_id: 'corridor-4-2-3',
      step_count: 0,
    });

    const episode = await playEpisode(client, { taskId: 'corridor-4-2-3' });
    expect(episode).toMatchObject({ success: true, truncated: false, steps: 5 });
    // The first reset was abandoned by the second, which ran to success.
    await waitFor(() => finished.length === 1, 'the finished episode');
    expect(finished[0]).toMatchObject({ success: true, truncated: false, totalReward: 1 });
    expect(finished[0]!.steps).toHaveLength(5);
    expect(finished[0]!.finalObservation?.text).toContain('open the door');
    await client.close();
  });

  it('carries truncated: a step cap ends the episode as done and truncated', async () => {
    const { url, finished } = await startServer({ maxSteps: 3 });
    const client = await TestClient.connect(url);
    await client.request({ type: 'reset', data: { task_id: 'corridor-4-3-3' } });
    let reply = await client.request({ type: 'step', data: { action: 'go right' } });
    reply = await client.request({ type: 'step', data: { action: 'go left' } });
    reply = await client.request({ type: 'step', data: { action: 'go right' } });
    const last = StepReplySchema.parse(reply.data);
    expect(last.done).toBe(true);
    expect(last.observation.metadata).toMatchObject({ truncated: true, success: false, step: 3 });
    await waitFor(() => finished.length === 1, 'the truncated episode');
    expect(finished[0]!.truncated).toBe(true);
    const after = await client.request({ type: 'step', data: { action: 'go left' } });
    expect(after.data).toMatchObject({ code: 'EXECUTION_ERROR' });
    expect(after.data.message).toMatch(/has ended.*reset/);
    await client.close();
  });

  it('answers every malformed message with an error reply and keeps the session serving', async () => {
    const { url, server } = await startServer();
    const client = await TestClient.connect(url);
    const cases: [unknown, string, RegExp, { binary?: boolean }?][] = [
      ['{"type": "reset"', 'INVALID_JSON', /Invalid JSON/],
      [Buffer.from([1, 2, 3]), 'INVALID_JSON', /Binary frames/, { binary: true }],
      ['[1, 2]', 'VALIDATION_ERROR', /JSON object/],
      [{ type: 'teleport' }, 'UNKNOWN_TYPE', /Unknown message type: teleport/],
      [{ data: {} }, 'UNKNOWN_TYPE', /Unknown message type: $/],
      [{ type: 'state', extra: 1 }, 'VALIDATION_ERROR', /extra/],
      [{ type: 'step', data: { act: 'go right' } }, 'VALIDATION_ERROR', /data\.action/],
      [{ type: 'step', data: { action: 7 } }, 'VALIDATION_ERROR', /data\.action/],
      [{ type: 'reset', data: { taskId: 'x' } }, 'VALIDATION_ERROR', /data\.taskId/],
      [{ type: 'reset', data: { seed: -1 } }, 'VALIDATION_ERROR', /data\.seed/],
      [{ type: 'reset', data: { task_id: 'nowhere' } }, 'VALIDATION_ERROR', /task_id "nowhere"/],
      [{ type: 'step', data: { action: 'go right' } }, 'EXECUTION_ERROR', /step before reset/],
    ];
    for (const [message, code, text, options] of cases) {
      const reply = await client.request(message, options);
      const error = WsErrorResponseSchema.parse(reply);
      expect(error.data.code, JSON.stringify(message)).toBe(code);
      expect(error.data.message).toMatch(text);
    }
    const validation = await client.request({ type: 'step', data: { action: 1 } });
    expect(validation.data.errors).toEqual([
      expect.objectContaining({ loc: ['data', 'action'], type: 'invalid_type' }),
    ]);
    // Still serving: a whole episode right after.
    expect((await playEpisode(client)).success).toBe(true);
    expect(server.stats().errors).toMatchObject({
      INVALID_JSON: 2,
      UNKNOWN_TYPE: 2,
      EXECUTION_ERROR: 1,
    });
    await client.close();
  });

  it('answers an action outside the grammar with an observation, not an error', async () => {
    const { url } = await startServer();
    const client = await TestClient.connect(url);
    await client.request({ type: 'reset', data: {} });
    const reply = await client.request({ type: 'step', data: { action: 'fly away' } });
    expect(reply.type).toBe('observation');
    expect(StepReplySchema.parse(reply.data).observation.text).toContain('Nothing happens');
    await client.close();
  });

  it('closes an oversized message with 1009 and keeps serving other sessions', async () => {
    const { url } = await startServer({ maxPayloadBytes: 4096 });
    const other = await TestClient.connect(url);
    await other.request({ type: 'reset', data: {} });
    const client = await TestClient.connect(url);
    client.socket.send(JSON.stringify({ type: 'step', data: { action: 'x'.repeat(10_000) } }));
    expect((await client.closed).code).toBe(CLOSE_CODES.messageTooBig);
    expect((await playEpisode(other)).success).toBe(true);
    await other.close();
  });

  it('closes a malformed WebSocket frame with 1002 (protocol error)', async () => {
    const { url } = await startServer();
    const { port } = new URL(url);
    const socket = connect(Number(port), '127.0.0.1');
    const received: Buffer[] = [];
    socket.on('data', (chunk) => received.push(chunk));
    socket.write(
      'GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
    );
    await waitFor(() => Buffer.concat(received).includes('\r\n\r\n'), 'the handshake');
    const handshake = Buffer.concat(received).length;
    // FIN + reserved opcode 0x3, masked, empty payload: not a valid frame.
    socket.write(Buffer.from([0x83, 0x80, 1, 2, 3, 4]));
    await new Promise((resolve) => socket.on('close', resolve));
    const frame = Buffer.concat(received).subarray(handshake);
    expect(frame[0]).toBe(0x88); // a close frame
    expect(frame.readUInt16BE(2)).toBe(CLOSE_CODES.protocolError);
  });

  it('refuses sessions beyond the cap with CAPACITY_REACHED and 1013, and admits again when one ends', async () => {
    const { url, server } = await startServer({ maxSessions: 2 });
    const first = await TestClient.connect(url);
    const second = await TestClient.connect(url);
    const third = await TestClient.connect(url);
    const refusal = WsErrorResponseSchema.parse(await third.next());
    expect(refusal.data).toMatchObject({
      code: 'CAPACITY_REACHED',
      active_sessions: 2,
      max_sessions: 2,
    });
    expect((await third.closed).code).toBe(CLOSE_CODES.tryAgainLater);
    expect((await playEpisode(second)).success).toBe(true);
    await first.close();
    await waitFor(() => server.stats().activeSessions === 1, 'the first session to end');
    const fourth = await TestClient.connect(url);
    expect((await playEpisode(fourth)).success).toBe(true);
    await Promise.all([second.close(), fourth.close()]);
  });

  it('survives an abrupt disconnect mid-step: the step finishes, the environment closes, the episode is abandoned', async () => {
    const slow: SlowCorridor[] = [];
    const { url, server, abandoned } = await startServer({
      createEnvironment: () => {
        const environment = new SlowCorridor(150);
        slow.push(environment);
        return environment;
      },
    });
    const survivor = await TestClient.connect(url);
    const victim = await TestClient.connect(url);
    await victim.request({ type: 'reset', data: { task_id: 'corridor-4-3-0' } });
    victim.socket.send(JSON.stringify({ type: 'step', data: { action: 'go right' } }));
    await new Promise((resolve) => setTimeout(resolve, 30));
    victim.socket.terminate();
    expect((await playEpisode(survivor, { taskId: 'corridor-4-1-1' })).success).toBe(true);
    await waitFor(() => server.stats().websocketSessions === 1, 'the dropped session to end');
    const dropped = slow[1]!;
    expect(dropped.stepsFinished).toBe(1);
    expect(dropped.closedAt).toBeDefined();
    expect(abandoned.map((episode) => episode.task.id)).toEqual(['corridor-4-3-0']);
    expect(abandoned[0]!.steps).toHaveLength(1);
    await survivor.close();
  });

  it('reaps idle sessions with close code 4408', async () => {
    const { url, server, environments } = await startServer({ sessionTimeoutMs: 150 });
    const client = await TestClient.connect(url);
    await client.request({ type: 'reset', data: {} });
    const closed = await client.closed;
    expect(closed.code).toBe(CLOSE_CODES.idleTimeout);
    expect(closed.reason).toMatch(/idle/);
    await waitFor(() => server.stats().activeSessions === 0, 'the reaped session to end');
    expect(server.stats().sessionsReaped).toBe(1);
    await expect(
      environments[0]!.reset(corridorTask({ length: 3, keyRoom: 1, doorRoom: 2 })),
    ).rejects.toThrow(EnvironmentStateError);
  });

  it('shuts down gracefully: the step in flight is answered, then the session closes with 1001', async () => {
    const slow: SlowCorridor[] = [];
    const { url, server } = await startServer({
      createEnvironment: () => {
        const environment = new SlowCorridor(200);
        slow.push(environment);
        return environment;
      },
    });
    const client = await TestClient.connect(url);
    await client.request({ type: 'reset', data: { task_id: 'corridor-4-3-0' } });
    const reply = client.request({ type: 'step', data: { action: 'go right' } });
    await new Promise((resolve) => setTimeout(resolve, 30));
    const stopping = server.close();
    const health = await fetch(`${url}/health`).catch(() => undefined);
    if (health) expect(health.status).toBe(503);
    expect((await reply).type).toBe('observation');
    expect((await client.closed).code).toBe(CLOSE_CODES.goingAway);
    await stopping;
    expect(slow[0]!.stepsFinished).toBe(1);
    expect(slow[0]!.closedAt).toBeDefined();
    await expect(TestClient.connect(url)).rejects.toThrow();
  });
});

describe('HTTP', () => {
  it('serves health, metadata, schema, openapi and JSON-RPC errors on /mcp as OpenEnv does', async () => {
    const { url } = await startServer();
    expect(await (await fetch(`${url}/health`)).json()).toEqual({ status: 'healthy' });
    const metadata = EnvironmentMetadataSchema.parse(await (await fetch(`${url}/metadata`)).json());
    expect(metadata).toMatchObject({ name: 'corridor', version: '1.2.3' });
    const schema = (await (await fetch(`${url}/schema`)).json()) as Record<
      string,
      Record<string, unknown>
    >;
    expect(schema.action).toMatchObject({
      type: 'object',
      required: ['action'],
      properties: { action: { type: 'string' } },
    });
    expect(Object.keys(schema.observation!.properties as object)).toEqual(
      expect.arrayContaining(['text', 'actions', 'done', 'reward', 'metadata']),
    );
    expect(schema.state).toMatchObject({ properties: { step_count: { type: 'integer' } } });
    const openapi = (await (await fetch(`${url}/openapi.json`)).json()) as {
      info: { version: string };
      paths: Record<string, unknown>;
    };
    expect(openapi.info.version).toBe('1.2.3');
    expect(Object.keys(openapi.paths)).toEqual(
      expect.arrayContaining(['/reset', '/step', '/state']),
    );
    const post = (body: string) =>
      fetch(`${url}/mcp`, { method: 'POST', body }).then((response) => response.json());
    expect(await post('{}')).toMatchObject({ jsonrpc: '2.0', error: { code: -32600 } });
    expect(await post('{')).toMatchObject({ error: { code: -32700 } });
    expect(await post('{"jsonrpc":"2.0","method":"resources/list","id":4}')).toMatchObject({
      error: { code: -32601, message: 'Method not found: resources/list' },
      id: 4,
    });
    // Tools are listed without a session; calling one needs a session (one episode).
    const listed = (await post('{"jsonrpc":"2.0","method":"tools/list","id":5}')) as {
      result: { tools: Array<{ name: string }> };
    };
    expect(listed.result.tools.map((tool) => tool.name)).toEqual(['observe', 'act']);
    expect(
      await post('{"jsonrpc":"2.0","method":"tools/call","id":6,"params":{"name":"observe"}}'),
    ).toMatchObject({ error: { code: -32600, message: expect.stringContaining('initialize') } });
  });

  it('plays a full episode over POST /reset and /step under its episode_id', async () => {
    const { url, finished, server } = await startServer();
    const post = async (path: string, body: unknown) => {
      const response = await fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const reset = await post('/reset', { task_id: 'corridor-4-0-1', episode_id: 'http-1' });
    expect(reset.status).toBe(200);
    expect(StepReplySchema.parse(reset.body).observation.metadata.episode_id).toBe('http-1');
    expect(server.stats().httpEpisodes).toBe(1);
    for (const action of ['take key', 'go right']) {
      const step = await post('/step', { action: { action }, episode_id: 'http-1' });
      expect(step.status).toBe(200);
      expect(step.body.done).toBe(false);
    }
    const state = await (await fetch(`${url}/state?episode_id=http-1`)).json();
    expect(state).toMatchObject({ episode_id: 'http-1', step_count: 2 });
    const last = await post('/step', { action: { action: 'open door' }, episode_id: 'http-1' });
    expect(last.body).toMatchObject({ reward: 1, done: true });
    await waitFor(() => finished.length === 1, 'the HTTP episode');
    expect(server.stats().httpEpisodes).toBe(0);

    const ended = await post('/step', { action: { action: 'go left' }, episode_id: 'http-1' });
    expect(ended.status).toBe(409);
    expect(ended.body.detail).toMatch(/has ended/);
    const unknown = await post('/step', { action: { action: 'go left' }, episode_id: 'nope' });
    expect(unknown.status).toBe(404);
    const invalid = await post('/step', { action: { command: 'go left' }, episode_id: 'x' });
    expect(invalid.status).toBe(422);
    expect(invalid.body.detail).toEqual(
      expect.arrayContaining([expect.objectContaining({ loc: ['body', 'action', 'action'] })]),
    );
    const fresh = await (await fetch(`${url}/state`)).json();
    expect(fresh).toMatchObject({ episode_id: null, step_count: 0 });
  });

  it('refuses bad requests with the right status', async () => {
    const { url } = await startServer({ maxPayloadBytes: 2048 });
    const big = await fetch(`${url}/reset`, { method: 'POST', body: 'x'.repeat(5000) });
    expect(big.status).toBe(413);
    const badJson = await fetch(`${url}/reset`, { method: 'POST', body: '{"seed":' });
    expect(badJson.status).toBe(422);
    expect(((await badJson.json()) as { detail: [{ type: string }] }).detail[0].type).toBe(
      'json_invalid',
    );
    const unknownTask = await fetch(`${url}/reset`, {
      method: 'POST',
      body: JSON.stringify({ task_id: 'mars' }),
    });
    expect(unknownTask.status).toBe(422);
    expect(JSON.stringify(await unknownTask.json())).toMatch(/task_id \\"mars\\"/);
    expect((await fetch(`${url}/nowhere`)).status).toBe(404);
    expect((await fetch(`${url}/reset`)).status).toBe(405);
    expect((await fetch(`${url}/ws`)).status).toBe(405);
  });

  it('keeps HTTP episodes apart from WebSocket sessions: 64 bare resets lock no trainer out', async () => {
    const { url, server } = await startServer({
      maxSessions: 2,
      maxHttpEpisodes: 4,
      httpResetsPerSecond: 1000,
    });
    const reset = () =>
      fetch(`${url}/reset`, { method: 'POST', body: '{}' }).then(async (response) => ({
        status: response.status,
        body: (await response.json()) as { observation?: { metadata: { episode_id: string } } },
      }));
    const first = await reset();
    for (let index = 0; index < 63; index += 1) expect((await reset()).status).toBe(200);
    expect(server.stats()).toMatchObject({ httpEpisodes: 4, httpEpisodesEvicted: 60 });
    // Both WebSocket slots are still free: trainers connect and play.
    const trainers = [await TestClient.connect(url), await TestClient.connect(url)];
    for (const trainer of trainers) expect((await playEpisode(trainer)).success).toBe(true);
    // Every WebSocket slot taken: OpenEnv's `degraded`, still answered with 200.
    const health = await fetch(`${url}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'degraded' });
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toContain('dreamgym_websocket_sessions 2');
    expect(metrics).toContain('dreamgym_http_episodes 4');
    expect(metrics).toContain('dreamgym_http_episodes_max 4');
    // The first HTTP episode made room for newer ones, and a step says so.
    const step = await fetch(`${url}/step`, {
      method: 'POST',
      body: JSON.stringify({
        action: { action: 'go right' },
        episode_id: first.body.observation!.metadata.episode_id,
      }),
    });
    expect(step.status).toBe(409);
    expect(JSON.stringify(await step.json())).toMatch(
      /closed to make room for newer HTTP episodes/,
    );
    await Promise.all(trainers.map((trainer) => trainer.close()));
  });

  it('rate-limits POST /reset per client with 429, and reaps idle HTTP episodes', async () => {
    const { url } = await startServer({ httpResetsPerSecond: 2, sessionTimeoutMs: 150 });
    const reset = () => fetch(`${url}/reset`, { method: 'POST', body: '{}' });
    const first = await reset();
    expect(first.status).toBe(200);
    const { observation } = (await first.json()) as {
      observation: { metadata: { episode_id: string } };
    };
    expect((await reset()).status).toBe(200);
    const limited = await reset();
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('1');
    expect(JSON.stringify(await limited.json())).toMatch(/at most 2 per second/);
    await new Promise((resolve) => setTimeout(resolve, 600));
    const step = await fetch(`${url}/step`, {
      method: 'POST',
      body: JSON.stringify({
        action: { action: 'go right' },
        episode_id: observation.metadata.episode_id,
      }),
    });
    expect(step.status).toBe(409);
    expect((await reset()).status).toBe(200);
  });

  it('answers a WebSocket mcp message with a JSON-RPC reply, as OpenEnv does', async () => {
    const { url } = await startServer();
    const client = await TestClient.connect(url);
    const listed = await client.request({
      type: 'mcp',
      data: { jsonrpc: '2.0', method: 'resources/list', id: 7 },
    });
    expect(listed).toEqual({
      type: 'mcp',
      data: {
        jsonrpc: '2.0',
        error: { code: -32601, message: 'Method not found: resources/list' },
        id: 7,
      },
    });
    const invalid = await client.request({ type: 'mcp', data: { method: 'tools/list' } });
    expect((invalid as unknown as { data: { error: { code: number } } }).data.error.code).toBe(
      -32600,
    );
    // The session still plays after MCP messages.
    expect((await playEpisode(client)).success).toBe(true);
    await client.close();
  });
});

describe('logs', () => {
  it('writes structured JSON lines for sessions and never writes secrets', async () => {
    const lines: string[] = [];
    const { url } = await startServer({
      logger: createJsonLogger({
        write: (line) => lines.push(line),
        base: { apiKey: 'sk-very-secret', upstream: 'https://user:hunter2@example.com/v1' },
      }),
    });
    const client = await TestClient.connect(url);
    await playEpisode(client);
    await client.close();
    await waitFor(() => lines.some((line) => line.includes('session.closed')), 'the close log');
    const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records.map((record) => record.event)).toEqual(
      expect.arrayContaining(['server.listening', 'session.opened', 'session.closed']),
    );
    expect(records.find((record) => record.event === 'session.closed')).toMatchObject({
      reason: 'disconnect',
      steps: expect.any(Number),
    });
    const text = lines.join('');
    expect(text).not.toContain('sk-very-secret');
    expect(text).not.toContain('hunter2');
    expect(text).toContain('[redacted]');
  });
});
