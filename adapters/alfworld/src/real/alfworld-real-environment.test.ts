/**
 * The real ALFWorld engine behind the Python server, driven through the connector. One
 * server is shared by the conformance suite and the expert replays (sessions attach with
 * `url`); the crash test starts its own, as it kills it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import {
  ConfigError,
  DatasetNotFoundError,
  EnvironmentError,
  EnvironmentStateError,
  type Task,
  TaskSchema,
} from '@dreamgym/core';
import { describeEnvironmentConformance } from '@dreamgym/core/testing/vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mapAlfworldObservation } from '../state-mapper.js';
import { alfworldDataDirectory } from '../test-data-directory.js';
import { type AlfworldRealEnvironment, alfworldGameOf } from './alfworld-real-environment.js';
import { connectAlfworldReal } from './connect.js';
import { START_HOOK_TIMEOUT_MS, startTestEngineServer } from './engine-server.test-support.js';
import type { AlfworldServerProcess } from './server-process.js';

const dataDir = alfworldDataDirectory();

interface ExpertRecord {
  game: string;
  task_type: string;
  conversations: { from: 'human' | 'gpt'; value: string }[];
}

/**
 * The first expert trajectory of each task type whose game file is in the data directory
 * (the file has trajectories of more train games than the 300 kept), read straight from it.
 */
function expertsByType(): Map<string, ExpertRecord> {
  const experts = new Map<string, ExpertRecord>();
  const text = readFileSync(join(dataDir, 'expert_trajectories.jsonl'), 'utf8');
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const record = JSON.parse(line) as ExpertRecord;
    if (experts.has(record.task_type)) continue;
    if (existsSync(join(dataDir, record.game, 'game.tw-pddl')))
      experts.set(record.task_type, record);
    if (experts.size === 6) break;
  }
  return experts;
}

function taskOf(record: ExpertRecord): Task {
  const instruction = /Your task is to: (.+)/.exec(record.conversations[0]!.value)![1]!;
  return TaskSchema.parse({
    id: record.game,
    domain: 'alfworld',
    instruction,
    meta: { game: record.game, taskType: record.task_type, split: 'train' },
  });
}

const commandsOf = (record: ExpertRecord) =>
  record.conversations.filter((turn) => turn.from === 'gpt').map((turn) => turn.value);

/** A port nothing listens on: bound once, then released. */
function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolvePort(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

const experts = expertsByType();
const lookAtLight = experts.get('look_at_obj_in_light')!;

let server: AlfworldServerProcess;

beforeAll(async () => {
  server = await startTestEngineServer(dataDir);
}, START_HOOK_TIMEOUT_MS);

afterAll(async () => {
  await server?.stop();
});

describeEnvironmentConformance(
  'ALFWorld real engine',
  {
    createEnvironment: () => connectAlfworldReal({ url: server.url }),
    tasks: [taskOf(lookAtLight)],
    solution: commandsOf(lookAtLight),
    invalidAction: 'xyzzy plugh 42',
  },
  { timeout: 90_000 },
);

describe('ALFWorld real engine', () => {
  let environment: AlfworldRealEnvironment;
  beforeAll(async () => {
    environment = await connectAlfworldReal({ url: server.url });
  });
  afterAll(async () => {
    await environment?.close();
  });

  it.each([
    'pick_clean_then_place_in_recep',
    'pick_heat_then_place_in_recep',
    'pick_two_obj_and_place',
  ])(
    'plays the expert trajectory of a %s game to reward 1, seeing the recorded observations',
    async (type) => {
      const record = experts.get(type)!;
      const turns = record.conversations;
      const first = await environment.reset(taskOf(record));
      expect(first.text).toBe(mapAlfworldObservation({ text: turns[0]!.value }).text);
      expect(first.meta?.task).toBe(taskOf(record).instruction);
      let previous = first;
      let result: Awaited<ReturnType<AlfworldRealEnvironment['step']>> | undefined;
      for (let index = 1; index < turns.length; index += 2) {
        const command = turns[index]!.value;
        expect(previous.actions).toContain(command);
        result = await environment.step(command);
        expect(result.observation.text).toBe(
          mapAlfworldObservation({ text: turns[index + 1]!.value }).text,
        );
        expect(result.info.invalidAction).toBe(false);
        const last = index === turns.length - 2;
        expect(result.done).toBe(last);
        expect(result.reward).toBe(last ? 1 : 0);
        previous = result.observation;
      }
      expect(result?.info.won).toBe(true);
    },
    90_000,
  );

  it('answers an invalid command with "Nothing happens." and flags it', async () => {
    const first = await environment.reset(taskOf(lookAtLight));
    expect(first.actions!.length).toBeGreaterThan(10);
    for (const command of ['xyzzy', 'take moon from sky', 'put alarmclock 2 in/on shelf 1']) {
      const result = await environment.step(command);
      expect(result.observation.text).toBe('Nothing happens.');
      expect(result.info).toMatchObject({ invalidAction: true, won: false });
      expect(result.reward).toBe(0);
      expect(result.done).toBe(false);
      expect(result.observation.actions).toEqual(first.actions);
    }
  }, 60_000);

  it('ends the episode with truncated after maxSteps actions', async () => {
    const short = await connectAlfworldReal({ url: server.url, maxSteps: 2 });
    try {
      await short.reset(taskOf(lookAtLight));
      expect((await short.step('look')).done).toBe(false);
      const last = await short.step('look');
      expect(last).toMatchObject({ done: true, truncated: true, reward: 0, info: { won: false } });
      await expect(short.step('look')).rejects.toSatisfy(EnvironmentStateError.isInstance);
    } finally {
      await short.close();
    }
  }, 60_000);

  it('gives the planner expert plan when asked', async () => {
    const planned = await connectAlfworldReal({ url: server.url, expertPlan: true });
    try {
      expect(planned.expertPlan()).toBeUndefined();
      await planned.reset(taskOf(lookAtLight));
      let plan = planned.expertPlan()!;
      expect(plan.length).toBeGreaterThan(0);
      let won = false;
      for (let step = 0; step < 10 && !won; step += 1) {
        const result = await planned.step(plan[0]!);
        won = result.info.won === true;
        plan = planned.expertPlan()!;
      }
      expect(won).toBe(true);
    } finally {
      await planned.close();
    }
  }, 60_000);

  it('rejects a game that is not in the data directory and a generated task, naming them', async () => {
    const missing = TaskSchema.parse({
      id: 'train/pick_and_place_simple-Nothing-None-Nowhere-1/trial_missing',
      domain: 'alfworld',
      instruction: 'put nothing nowhere.',
    });
    await expect(environment.reset(missing)).rejects.toThrow(
      /answered 404: no game file game\.tw-pddl for game 'train\/pick_and_place_simple-Nothing-None-Nowhere-1\/trial_missing'/,
    );
    const generated = { ...taskOf(lookAtLight), id: 'g1', origin: 'generated' as const };
    expect(() => alfworldGameOf(generated)).toThrow(ConfigError);
    const nameless = TaskSchema.parse({ id: 'task-7', domain: 'alfworld', instruction: 'x' });
    expect(() => alfworldGameOf(nameless)).toThrow(/<split>\/<task>\/<trial>.*"task-7"/);
  }, 30_000);
});

describe('ALFWorld real engine: server lifecycle', () => {
  it('restarts a killed server: the episode fails with a clear error, the next reset works', async () => {
    const environment = await connectAlfworldReal({ dataDir });
    try {
      const task = taskOf(lookAtLight);
      const [first, second] = commandsOf(lookAtLight);
      await environment.reset(task);
      await environment.step(first!);
      const pid = environment.serverPid!;
      process.kill(pid, 'SIGKILL');
      const error = await environment.step(second!).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(EnvironmentError.isInstance(error)).toBe(true);
      expect((error as Error).message).toMatch(
        /ALFWorld server was killed by SIGKILL during the episode of task train\/.* and was restarted \(new process \d+\)\. The episode is lost: call reset\(\) to play again\./,
      );
      // The lost episode keeps failing the same way until the next reset.
      await expect(environment.step(second!)).rejects.toThrow(/The episode is lost/);
      expect(environment.restarts).toBe(1);
      expect(environment.serverPid).not.toBe(pid);
      await environment.reset(task);
      const result = await environment.step(first!);
      expect(result.observation.text).toBe(
        mapAlfworldObservation({ text: lookAtLight.conversations[2]!.value }).text,
      );
    } finally {
      await environment.close();
    }
    const pid = environment.serverPid!;
    expect(() => process.kill(pid, 0)).toThrow();
    await environment.close();
    await expect(environment.reset(taskOf(lookAtLight))).rejects.toSatisfy(
      EnvironmentStateError.isInstance,
    );
  }, 120_000);

  it('kills and restarts a server that stops answering, instead of hanging', async () => {
    // Long enough for the restarted server's first reset (it parses the game: about 3 s
    // quiet, 5 s at p90, more on a loaded machine), short enough to see the hang quickly.
    const environment = await connectAlfworldReal({ dataDir, requestTimeoutMs: 20_000 });
    try {
      const task = taskOf(lookAtLight);
      const [first] = commandsOf(lookAtLight);
      await environment.reset(task);
      const pid = environment.serverPid!;
      process.kill(pid, 'SIGSTOP');
      const started = Date.now();
      await expect(environment.step(first!)).rejects.toThrow(
        /ALFWorld server did not answer within 20000 ms, was killed during the episode of task .* and was restarted/,
      );
      expect(Date.now() - started).toBeLessThan(60_000);
      expect(environment.serverPid).not.toBe(pid);
      await environment.reset(task);
      expect((await environment.step(first!)).info.invalidAction).toBe(false);
    } finally {
      await environment.close();
    }
  }, 120_000);

  it('says what to do when the data, the Python or the server is missing', async () => {
    await expect(connectAlfworldReal({ dataDir: '/nonexistent/alfworld' })).rejects.toSatisfy(
      DatasetNotFoundError.isInstance,
    );
    await expect(
      connectAlfworldReal({ dataDir, pythonPath: '/nonexistent/bin/python' }),
    ).rejects.toThrow(
      /Cannot start the ALFWorld server with \/nonexistent\/bin\/python.*npx @dreamgym\/cli doctor --fix --only python/,
    );
    const closedPort = await freePort();
    await expect(connectAlfworldReal({ url: `http://127.0.0.1:${closedPort}` })).rejects.toThrow(
      `ALFWorld server GET http://127.0.0.1:${closedPort}/health failed: ECONNREFUSED`,
    );
    await expect(connectAlfworldReal({ dataDir, maxSteps: 0 })).rejects.toThrow(
      /Invalid ALFWorld real-engine option `maxSteps`/,
    );
  }, 30_000);
});
