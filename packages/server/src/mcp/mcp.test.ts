/**
 * The environment as MCP tools, driven by the official MCP SDKs' clients (TypeScript
 * `@modelcontextprotocol/client` over Streamable HTTP; Python `mcp` in a subprocess) and by
 * the WebSocket `mcp` message: each session plays one episode, whose reward and end reach the
 * task source (the trainer's side).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CorridorEnvironment, corridorTask } from '@dreamgym/core/testing';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { TestClient } from '../corridor-run.test-support.js';
import { EnvironmentServer } from '../environment-server.js';
import { type EpisodeRecord, StaticTaskSource } from '../task-source.js';

const GRAMMAR = 'Actions: "go left", "go right", "take key", "open door".';
const TASK = corridorTask({ length: 3, keyRoom: 1, doorRoom: 2 });
/** The corridor's expert actions for TASK. */
const SOLUTION = ['go right', 'take key', 'go right', 'open door'];

const servers: EnvironmentServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function startServer(settings: { maxMcpSessions?: number } = {}) {
  const finished: EpisodeRecord[] = [];
  const abandoned: EpisodeRecord[] = [];
  const source = new StaticTaskSource([TASK, corridorTask({ length: 4, keyRoom: 2, doorRoom: 3 })]);
  const server = new EnvironmentServer({
    port: 0,
    ...settings,
    createEnvironment: () => new CorridorEnvironment({ maxSteps: 10 }),
    tasks: {
      drawTask: (request) => source.drawTask(request),
      episodeFinished: (episode) => void finished.push(episode),
      episodeAbandoned: (episode) => void abandoned.push(episode),
    },
    metadata: { name: 'corridor', description: 'The corridor test domain.', version: '1.2.3' },
    actionGrammar: GRAMMAR,
  });
  servers.push(server);
  const { url } = await server.start();
  return { server, url, finished, abandoned };
}

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = performance.now() + 5_000;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('MCP over Streamable HTTP', () => {
  it('plays one episode per session with the official TypeScript client; the reward reaches the task source', async () => {
    const { url, finished, server } = await startServer();
    const client = new Client({ name: 'test-agent', version: '0.0.1' });
    const transport = new StreamableHTTPClientTransport(
      new URL(`${url}/mcp?task_id=${TASK.id}&episode_id=episode-ts-1`),
    );
    await client.connect(transport);
    expect(client.getServerVersion()).toMatchObject({ name: 'corridor', version: '1.2.3' });
    expect(transport.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['observe', 'act']);
    expect(tools[1]!.description).toContain(GRAMMAR);
    expect(tools[1]!.inputSchema).toMatchObject({ required: ['action'] });

    const observed = await client.callTool({ name: 'observe', arguments: {} });
    expect(observed.isError).toBe(false);
    expect((observed.content as Array<{ text: string }>)[0]!.text).toContain(
      `Task: ${TASK.instruction}`,
    );
    expect(observed.structuredContent).toMatchObject({
      episode_id: 'episode-ts-1',
      task_id: TASK.id,
      step: 0,
      done: false,
    });
    let last: Record<string, unknown> | undefined;
    for (const action of SOLUTION) {
      const result = await client.callTool({ name: 'act', arguments: { action } });
      expect(result.isError).toBe(false);
      last = result.structuredContent as Record<string, unknown>;
    }
    expect(last).toMatchObject({ done: true, success: true, reward: 1, step: 4 });
    // The episode has ended: the agent is told, nothing is stepped.
    const after = await client.callTool({ name: 'act', arguments: { action: 'go left' } });
    expect(after.isError).toBe(true);
    expect((after.content as Array<{ text: string }>)[0]!.text).toContain('has ended (success)');

    expect(finished).toHaveLength(1);
    expect(finished[0]).toMatchObject({
      episodeId: 'episode-ts-1',
      success: true,
      totalReward: 1,
      task: { id: TASK.id },
    });
    expect(finished[0]!.steps.map((step) => step.action)).toEqual(SOLUTION);
    expect(server.stats().mcpSessions).toBe(1);
    await transport.terminateSession();
    await client.close();
    await until(() => server.stats().mcpSessions === 0, 'the session to end');
  });

  it('abandons an unfinished episode when its session ends, and refuses calls on an ended session', async () => {
    const { url, abandoned, finished } = await startServer();
    const client = new Client({ name: 'test-agent', version: '0.0.1' });
    const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`));
    await client.connect(transport);
    const first = await client.callTool({ name: 'act', arguments: { action: 'go right' } });
    expect(first.structuredContent).toMatchObject({ step: 1, done: false });
    const invalid = await client.callTool({ name: 'act', arguments: { action: 'fly' } });
    expect(invalid.structuredContent).toMatchObject({ invalid_action: true });
    await expect(client.callTool({ name: 'jump', arguments: {} })).rejects.toThrow(
      'Unknown tool: jump',
    );
    const sessionId = transport.sessionId!;
    await transport.terminateSession();
    await client.close();
    await until(() => abandoned.length === 1, 'the episode to be abandoned');
    expect(finished).toHaveLength(0);
    expect(abandoned[0]!.episodeId).toBe(sessionId);
    const late = await fetch(`${url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'mcp-session-id': sessionId },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(late.status).toBe(404);
    expect(((await late.json()) as { error: { message: string } }).error.message).toContain(
      'send initialize to open another',
    );
  });

  it('caps sessions, refuses a bad query, and answers GET with 405', async () => {
    const { url } = await startServer({ maxMcpSessions: 1 });
    const initialize = (query = '') =>
      fetch(`${url}/mcp${query}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2024-11-05',
            capabilities: {},
            clientInfo: { name: 'curl', version: '1' },
          },
        }),
      });
    const bad = await initialize('?seed=-3');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toContain(
      'query.seed',
    );
    const opened = await initialize();
    expect(opened.status).toBe(200);
    expect(
      ((await opened.json()) as { result: { protocolVersion: string } }).result.protocolVersion,
    ).toBe('2024-11-05');
    const full = await initialize();
    expect(full.status).toBe(503);
    expect(((await full.json()) as { error: { message: string } }).error.message).toContain(
      'MCP sessions at capacity: 1/1',
    );
    expect((await fetch(`${url}/mcp`)).status).toBe(405);
  });

  it('plays an episode with the official Python client (mcp on PyPI)', async () => {
    const python = join(process.cwd(), '.venv', 'bin', 'python');
    expect(existsSync(python), `${python} missing: run scripts/setup-python.sh`).toBe(true);
    const { url, finished } = await startServer();
    const { stdout } = await promisify(execFile)(
      python,
      [
        join(import.meta.dirname, '__fixtures__', 'python_mcp_client.py'),
        `${url}/mcp?task_id=${TASK.id}&episode_id=episode-py-1`,
        ...SOLUTION,
      ],
      { timeout: 60_000 },
    );
    const played = JSON.parse(stdout.trim()) as {
      server: string;
      protocol: string;
      tools: string[];
      observe: string;
      results: Array<{ error: boolean; structured: Record<string, unknown> }>;
    };
    expect(played.server).toBe('corridor');
    expect(played.tools).toEqual(['observe', 'act']);
    expect(played.observe).toContain(TASK.instruction);
    expect(played.results.at(-1)!.structured).toMatchObject({ done: true, success: true });
    await until(() => finished.length === 1, 'the episode to finish');
    expect(finished[0]).toMatchObject({ episodeId: 'episode-py-1', success: true });
  });
});

describe('MCP over the WebSocket mcp message', () => {
  it('plays the session episode a reset message started', async () => {
    const { url, finished } = await startServer();
    const client = await TestClient.connect(url);
    await client.request({ type: 'reset', data: { task_id: TASK.id, episode_id: 'ws-1' } });
    let id = 0;
    const call = (method: string, params: Record<string, unknown> = {}) =>
      client.request({
        type: 'mcp',
        data: { jsonrpc: '2.0', id: ++id, method, params },
      }) as unknown as Promise<{
        data: { result: Record<string, unknown> };
      }>;
    const initialized = await call('initialize', { protocolVersion: '2025-06-18' });
    expect(initialized.data.result).toMatchObject({
      protocolVersion: '2025-06-18',
      capabilities: { tools: {} },
    });
    for (const action of SOLUTION) {
      await call('tools/call', { name: 'act', arguments: { action } });
    }
    const observed = await call('tools/call', { name: 'observe', arguments: {} });
    expect(observed.data.result.structuredContent).toMatchObject({
      episode_id: 'ws-1',
      done: true,
    });
    expect(finished).toMatchObject([{ episodeId: 'ws-1', success: true }]);
    await client.close();
  });
});
