import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import WebSocket from 'ws';
import { runCli } from '../cli.js';
import { captureIo, dataRoot } from '../cli.test-support.js';

const repository = resolve(import.meta.dirname, '../../../..');

const capture = () => captureIo();

let directory: string;
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'dreamgym-serve-cli-'));
});
afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('dreamgym serve flags', () => {
  it('prints its usage', async () => {
    const io = capture();
    expect(await runCli(['serve', '--help'], io)).toBe(0);
    expect(io.out()).toMatch(/--experience embedded\|llm\|hybrid\|openai/);
    expect(io.out()).toMatch(/--model local\|PATH\.gguf\|NAME/);
    expect(io.out()).toMatch(/--real /);
    const all = capture();
    await runCli(['--help'], all);
    expect(all.out()).toMatch(/serve +serve a domain over the OpenEnv protocol/);
  });

  it.each([
    [['serve'], /--domain is required/],
    [
      ['serve', '--domain', 'alfworld', '--experience', 'magic'],
      /--experience must be embedded, llm, hybrid or openai/,
    ],
    [
      ['serve', '--domain', 'alfworld', '--experience', 'openai'],
      /--experience openai needs --base-url/,
    ],
    [['serve', '--domain', 'alfworld', '--model', 'm'], /--model is for an LLM experience model/],
    [
      [
        'serve',
        '--domain',
        'alfworld',
        '--experience',
        'llm',
        '--base-url',
        'ftp://x',
        '--model',
        'm',
      ],
      /--base-url must be an http\(s\) URL/,
    ],
    [
      ['serve', '--domain', 'alfworld', '--experience', 'hybrid', '--model-threads', 'two'],
      /--model-threads must be an integer/,
    ],
    [
      ['serve', '--domain', 'alfworld', '--experience', 'llm', '--api-key-env', 'HOME'],
      /--api-key-env is for a model server/,
    ],
    [
      ['serve', '--domain', 'alfworld', '--real', '--experience', 'embedded'],
      /--real .* no --experience/,
    ],
    [['serve', '--domain', 'alfworld', '--log-level', 'loud'], /--log-level must be/],
    [['serve', '--domain', 'alfworld', '--port', 'eighty'], /--port must be an integer/],
    [['serve', '--domain', 'alfworld', '--session-timeout=-1'], /--session-timeout must be >= 0/],
    [['serve', '--domain', 'alfworld', '--data', '/nonexistent'], /does not exist/],
    [['serve', '--domain', 'alfworld', '--workers', '0'], /--workers must be >= 1/],
    [
      ['serve', '--domain', 'alfworld', '--workers', '2', '--real'],
      /--workers serves the synthetic/,
    ],
    [
      ['serve', '--domain', 'alfworld', '--workers', '2', '--experience', 'llm'],
      /--workers runs the embedded experience model/,
    ],
    [
      ['serve', '--domain', 'alfworld', '--write-back-batch', '0'],
      /--write-back-batch must be >= 1/,
    ],
    [
      ['serve', '--domain', 'alfworld', '--shared-buffer', 'x', '--shared-poll-ms', '0'],
      /--shared-poll-ms must be >= 1/,
    ],
    [
      ['serve', '--domain', 'alfworld', '--shared-buffer', 'x', '--replica-id', "a'b"],
      /--replica-id takes letters, digits/,
    ],
    [
      ['serve', '--domain', 'alfworld', '--replica-id', 'a'],
      /--replica-id is for a shared buffer: add --shared-buffer URI/,
    ],
  ])('refuses %j', async (args, message) => {
    const io = capture();
    io.env = { DREAMGYM_DATA_DIR: dataRoot() };
    expect(await runCli(args, io)).toBe(2);
    expect(io.err()).toMatch(message);
  });
});

/**
 * Starts `dreamgym serve` from the sources; resolves with its URL once it listens. `cwd`: the
 * project it runs in (the repository by default).
 */
function startServe(
  args: string[],
  cwd = repository,
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  // One process (node with tsx's loader), so that SIGTERM reaches the server itself.
  const tsx = pathToFileURL(join(repository, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
  const child = spawn(
    process.execPath,
    ['--import', tsx, join(repository, 'packages', 'cli', 'src', 'bin.ts'), 'serve', ...args],
    { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } },
  );
  let out = '';
  let err = '';
  child.stderr!.on('data', (chunk) => (err += chunk));
  return new Promise((resolveStart, reject) => {
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match) resolveStart({ child, url: match[1]!, output: () => out + err });
    });
    child.on('exit', (code) =>
      reject(new Error(`dreamgym serve exited with ${code}:\n${out}\n${err}`)),
    );
  });
}

/**
 * moto's S3 server (the project virtualenv's `moto_server`) on a free port of 127.0.0.1, with
 * one bucket; `env` points LanceDB's object store at it.
 */
async function startS3Server(
  bucket: string,
): Promise<{ child: ChildProcess; env: Record<string, string> }> {
  const child = spawn(
    join(repository, '.venv', 'bin', 'moto_server'),
    ['-H', '127.0.0.1', '-p', '0'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  const endpoint = await new Promise<string>((resolveStart, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk;
      const match = /Running on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match) resolveStart(match[1]!);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`moto_server exited with ${code}:\n${output}`)));
  });
  const created = await fetch(`${endpoint}/${bucket}`, { method: 'PUT' });
  expect(created.status).toBe(200);
  return {
    child,
    env: {
      AWS_ENDPOINT: endpoint,
      AWS_ALLOW_HTTP: 'true',
      AWS_ACCESS_KEY_ID: 'dreamgym-test',
      AWS_SECRET_ACCESS_KEY: 'dreamgym-test',
      AWS_REGION: 'us-east-1',
    },
  };
}

function stop(child: ChildProcess): Promise<number | null> {
  return new Promise((resolveExit) => {
    child.once('exit', (code) => resolveExit(code));
    child.kill('SIGTERM');
  });
}

/** `serve` flags of a small ALFWorld run in `runDirectory`: a port of its own, a few offline transitions and tasks. */
function smallAlfworldRun(runDirectory: string, offline = 200, trainTasks = 8): string[] {
  return [
    '--domain',
    'alfworld',
    '--data',
    join(dataRoot(), 'alfworld'),
    '--port',
    '0',
    '--run-dir',
    runDirectory,
    '--offline-limit',
    String(offline),
    '--train-tasks',
    String(trainTasks),
  ];
}

async function playEpisode(url: string): Promise<number> {
  const socket = new WebSocket(`${url.replace(/^http/, 'ws')}/ws`);
  await new Promise((resolveOpen) => socket.once('open', resolveOpen));
  const request = (message: unknown) =>
    new Promise<{ data: { done: boolean; observation: { actions: string[] } } }>((resolveReply) => {
      socket.once('message', (data) => resolveReply(JSON.parse(data.toString())));
      socket.send(JSON.stringify(message));
    });
  let reply = await request({ type: 'reset', data: {} });
  let steps = 0;
  while (!reply.data.done) {
    reply = await request({ type: 'step', data: { action: reply.data.observation.actions[0] } });
    steps += 1;
  }
  socket.close();
  return steps;
}

describe('dreamgym serve', () => {
  it('serves ALFWorld, checkpoints on SIGTERM and resumes the run', async () => {
    const runDirectory = join(directory, 'run');
    const args = [
      ...smallAlfworldRun(runDirectory),
      '--max-steps',
      '6',
      '--tasks-per-iteration',
      '1',
      '--rollouts-per-task',
      '2',
      '--buffer-cap',
      '100000',
    ];
    const first = await startServe(args);
    const played = (await playEpisode(first.url)) + (await playEpisode(first.url));
    expect(played).toBeLessThanOrEqual(12);
    // Prometheus text: the steps served, their latency histogram, sessions, memory, the buffer.
    const metrics = await (await fetch(`${first.url}/metrics`)).text();
    const metricIn = (text: string, name: string) =>
      Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    const value = (name: string) => metricIn(metrics, name);
    expect(value('dreamgym_steps_total')).toBe(played);
    expect(value('dreamgym_step_duration_seconds_count')).toBe(played);
    expect(metrics).toMatch(/^dreamgym_step_duration_seconds_bucket\{le="\+Inf"\} \d+$/m);
    expect(metrics).toMatch(/^# TYPE dreamgym_steps_total counter$/m);
    expect(value('dreamgym_replay_buffer_capacity')).toBe(100000);
    expect(value('dreamgym_replay_buffer_transitions')).toBeGreaterThan(0);
    expect(value('dreamgym_process_resident_memory_bytes')).toBeGreaterThan(10_000_000);
    // A session counts until the server has handled the client's close frame: wait for it.
    await vi.waitFor(
      async () => {
        const now = await (await fetch(`${first.url}/metrics`)).text();
        expect(metricIn(now, 'dreamgym_websocket_sessions')).toBe(0);
      },
      { timeout: 10_000, interval: 100 },
    );
    expect(await stop(first.child)).toBe(0);
    expect(first.output()).toMatch(/stopped; resume with --resume/);
    expect(first.output()).toMatch(/"event":"run.closed"/);
    expect(await readdir(join(runDirectory, 'checkpoints'))).toContain('LATEST');

    // The run folder is taken without --resume.
    await expect(startServe(args)).rejects.toThrow(/already holds a served run/);
    expect(JSON.parse(await readFile(join(runDirectory, 'run.json'), 'utf8'))).toMatchObject({
      command: 'serve',
      setup: { domain: 'alfworld', offlineLimit: 200, trainTasks: 8, bufferCapacity: 100000 },
      server: { port: 0 },
    });

    // The run resumes from its folder alone: run.json and the service's configuration.
    const second = await startServe(['--run-dir', runDirectory, '--resume']);
    const status = (await (await fetch(`${second.url}/dreamgym/status`)).json()) as {
      iteration: number;
      episodes: { finished: number };
      buffer: { bySource: { synthetic: number } };
    };
    expect(status.episodes.finished).toBe(2);
    expect(status.iteration).toBe(1);
    expect(status.buffer.bySource.synthetic).toBeGreaterThan(0);
    expect(await stop(second.child)).toBe(0);
  }, 120_000);

  it('serves ALFWorld from two worker processes (--workers 2): sessions on both, every write-back in every replica', async () => {
    const served = await startServe([
      ...smallAlfworldRun(join(directory, 'workers-run')),
      '--max-steps',
      '5',
      '--workers',
      '2',
      '--write-back-batch',
      '3',
    ]);
    const played = await Promise.all([playEpisode(served.url), playEpisode(served.url)]);
    const status = (await (await fetch(`${served.url}/dreamgym/status`)).json()) as {
      episodes: { finished: number };
      buffer: { size: number; written: number };
      workers: {
        alive: number;
        workers: { pid: number; bufferSize: number; appliedSequence: number }[];
      };
    };
    expect(status.episodes.finished).toBe(2);
    expect(status.buffer.written).toBe(played[0]! + played[1]!);
    expect(status.workers.alive).toBe(2);
    for (const worker of status.workers.workers) {
      expect(worker.bufferSize).toBe(status.buffer.size);
      expect(worker.appliedSequence).toBeGreaterThan(0);
    }
    expect(await stop(served.child)).toBe(0);
    // The workers leave with the serving process.
    for (const { pid } of status.workers.workers) expect(() => process.kill(pid, 0)).toThrow();
  }, 180_000);

  it.each([
    ['in a folder', 'folder'],
    ["on S3 (moto's S3 server on 127.0.0.1)", 's3'],
  ] as const)(
    'serves two replicas sharing one buffer %s (--shared-buffer): an episode on each reaches the other',
    async (_, store) => {
      // LanceDB as a project installs it: the replicas run in the folder the tests' copy is in.
      const project = join(repository, 'packages', 'server', 'test', 'lancedb');
      const s3 = store === 's3' ? await startS3Server('dreamgym-test') : undefined;
      if (s3) onTestFinished(() => void s3.child.kill());
      const uri = s3 ? 's3://dreamgym-test/shared-buffer' : join(directory, 'shared-buffer');
      const replica = (name: string) =>
        startServe(
          [
            ...smallAlfworldRun(join(directory, `replica-${store}-${name}`)),
            '--max-steps',
            '5',
            '--write-back-ms',
            '0',
            '--shared-buffer',
            uri,
            '--shared-poll-ms',
            '100',
            '--replica-id',
            name,
          ],
          project,
          s3?.env,
        );
      const [a, b] = await Promise.all([replica('a'), replica('b')]);
      const [playedOnA, playedOnB] = await Promise.all([playEpisode(a.url), playEpisode(b.url)]);
      type Status = { buffer: { size: number }; sharedBuffer: { pulled: { transitions: number } } };
      const status = async (url: string) =>
        (await (await fetch(`${url}/dreamgym/status`)).json()) as Status;
      await vi.waitFor(
        async () => {
          const [onA, onB] = await Promise.all([status(a.url), status(b.url)]);
          expect(onB.sharedBuffer.pulled.transitions).toBe(playedOnA);
          expect(onA.sharedBuffer.pulled.transitions).toBe(playedOnB);
          expect(onA.buffer.size).toBe(onB.buffer.size);
        },
        { timeout: 20_000, interval: 100 },
      );
      const metrics = await (await fetch(`${b.url}/metrics`)).text();
      expect(metrics).toMatch(
        new RegExp(`^dreamgym_shared_buffer_transitions_pulled_total ${playedOnA}$`, 'm'),
      );
      expect(await stop(a.child)).toBe(0);
      expect(await stop(b.child)).toBe(0);
    },
    180_000,
  );

  it('serves the reasoning LLM in process (--experience llm --model local): SmolLM2 predicts each step', async () => {
    const served = await startServe([
      ...smallAlfworldRun(join(directory, 'llm-run'), 100, 4),
      '--max-steps',
      '1',
      '--experience',
      'llm',
      '--model',
      'local',
      '--model-threads',
      '1',
    ]);
    expect(served.output()).toMatch(/synthetic, [^)]*reasoning/i);
    expect(served.output()).toMatch(/SmolLM2-135M-Instruct|smollm2/i);
    expect(await playEpisode(served.url)).toBe(1);
    const status = (await (await fetch(`${served.url}/dreamgym/status`)).json()) as {
      episodes: { finished: number };
    };
    expect(status.episodes.finished).toBe(1);
    expect(await stop(served.child)).toBe(0);
  }, 240_000);
});

/** Train tasks of each ALFWorld task type whose perturbed expert sequences are played. */
const TASKS_PER_TYPE = 2;

/** One ALFWorld episode to play over the protocol: a train task and the actions sent. */
interface ScriptedEpisode {
  taskId: string;
  instruction: string;
  /** What the sequence is: the expert's, or how it was perturbed. */
  kind: string;
  actions: string[];
}

/** An expert trajectory of the dataset: its game (the task id), instruction and commands. */
interface ExpertRecord {
  game: string;
  taskType: string;
  instruction: string;
  actions: string[];
  /** The observation each action was sent in (the first is the game's initial one). */
  observations: string[];
}

const TAKE = /^take (.+) from (.+)$/;
const PREPARE = /^(heat|cool|clean) (.+) with (.+)$/;
const PUT = /^put (.+) in\/on (.+)$/;
/** `bowl` of `bowl 3`. */
const objectType = (object: string) => object.replace(/ \d+$/, '');

/** The expert trajectories of the dataset's train games (those with a game file), by task type. */
async function alfworldExperts(data: string): Promise<Map<string, ExpertRecord[]>> {
  const games = new Set<string>();
  for (const directory of await readdir(join(data, 'train'))) {
    for (const trial of await readdir(join(data, 'train', directory)))
      games.add(`train/${directory}/${trial}`);
  }
  const byType = new Map<string, ExpertRecord[]>();
  const lines = (await readFile(join(data, 'expert_trajectories.jsonl'), 'utf8')).split('\n');
  for (const line of lines) {
    if (!line.trim()) continue;
    const record = JSON.parse(line) as {
      game: string;
      task_type: string;
      conversations: { from: string; value: string }[];
    };
    if (!games.has(record.game)) continue;
    const turns = record.conversations;
    const expert: ExpertRecord = {
      game: record.game,
      taskType: record.task_type,
      instruction: /Your task is to: (.*)$/s.exec(turns[0]!.value)![1]!.trim(),
      actions: turns.filter((turn) => turn.from === 'gpt').map((turn) => turn.value),
      observations: turns.filter((turn) => turn.from === 'human').map((turn) => turn.value),
    };
    byType.set(expert.taskType, [...(byType.get(expert.taskType) ?? []), expert]);
  }
  return byType;
}

/**
 * Action sequences of `expert`'s task that the real engine never rewards, each built from the
 * expert's own commands: the final put (or `use desklamp`) without the take of its object, with
 * another object of the take's receptacle in its place, without the heat/cool/clean, or the
 * first of two objects put and nothing more.
 */
function unrewardedSequences(expert: ExpertRecord): ScriptedEpisode[] {
  const { actions } = expert;
  const episode = (kind: string, sequence: string[]): ScriptedEpisode => ({
    taskId: expert.game,
    instruction: expert.instruction,
    kind: `${expert.taskType} ${kind}`,
    actions: sequence,
  });
  const last = actions.length - 1;
  const takeAt = actions.findLastIndex((action) => TAKE.test(action));
  const [, object, source] = TAKE.exec(actions[takeAt]!)!;
  const episodes = [
    episode(
      expert.taskType === 'look_at_obj_in_light' ? 'use desklamp empty-handed' : 'put never taken',
      actions.filter((_, index) => index !== takeAt),
    ),
  ];
  // Another object the expert saw where it took its own: of another type, and no receptacle
  // or lamp the expert's commands go to or use.
  const fixtures = new Set(
    actions.flatMap((action) => /^(?:go to|use|open) (.+)$/.exec(action)?.slice(1) ?? []),
  );
  const seen = [...expert.observations[takeAt]!.matchAll(/\ban? ([a-z]+ \d+)/g)].map(
    (match) => match[1]!,
  );
  const other = seen.find(
    (name) => objectType(name) !== objectType(object!) && !fixtures.has(name),
  );
  if (other) {
    const swapped = actions.map((action, index) =>
      index < takeAt ? action : action.replace(new RegExp(`\\b${object}\\b`, 'g'), other),
    );
    expect(swapped[takeAt]).toBe(`take ${other} from ${source}`);
    episodes.push(episode(`wrong object (${other})`, swapped));
  }
  const prepareAt = actions.findIndex((action) => PREPARE.test(action));
  if (prepareAt >= 0) {
    episodes.push(
      episode(
        'put without the preparation',
        actions.filter((_, index) => index !== prepareAt),
      ),
    );
  }
  if (expert.taskType === 'pick_two_obj_and_place') {
    const target = PUT.exec(actions[last]!)!;
    const firstPut = actions.findIndex((action) => {
      const put = PUT.exec(action);
      return put !== null && objectType(put[1]!) === objectType(target[1]!) && put[2] === target[2];
    });
    expect(firstPut).toBeLessThan(last);
    episodes.push(episode('first of two put', actions.slice(0, firstPut + 1)));
  }
  return episodes;
}

/** Plays `episode` over the WebSocket: the rewards and successes of its replies. */
async function playScripted(
  url: string,
  episode: ScriptedEpisode,
): Promise<{ steps: number; reward: number; success: boolean; done: boolean }> {
  const socket = new WebSocket(`${url.replace(/^http/, 'ws')}/ws`);
  await new Promise((resolveOpen) => socket.once('open', resolveOpen));
  type Reply = {
    type: string;
    data: {
      done: boolean;
      reward: number | null;
      observation: { instruction: string; metadata: { task_id: string; success: boolean } };
    };
  };
  const request = (message: unknown) =>
    new Promise<Reply>((resolveReply) => {
      socket.once('message', (data) => resolveReply(JSON.parse(data.toString())));
      socket.send(JSON.stringify(message));
    });
  try {
    let reply = await request({ type: 'reset', data: { task_id: episode.taskId } });
    expect(reply.type, JSON.stringify(reply)).toBe('observation');
    expect(reply.data.observation.metadata.task_id).toBe(episode.taskId);
    expect(reply.data.observation.instruction).toBe(episode.instruction);
    let reward = 0;
    let success = false;
    let steps = 0;
    for (const action of episode.actions) {
      reply = await request({ type: 'step', data: { action } });
      expect(reply.type, JSON.stringify(reply)).toBe('observation');
      steps += 1;
      reward += reply.data.reward ?? 0;
      success ||= reply.data.observation.metadata.success;
      if (reply.data.done) break;
    }
    return { steps, reward, success, done: reply.data.done };
  } finally {
    socket.close();
  }
}

/**
 * A served synthetic ALFWorld pays what the real engine pays: played on the real engine, none
 * of these perturbed expert sequences is rewarded and every expert sequence is. The retrieval
 * model without its outcome judge (what `serve` once handed out) pays 24 of the 31.
 */
describe('dreamgym serve pays what the real engine pays', () => {
  it('pays nothing over OpenEnv for ALFWorld action sequences the real engine never rewards, and the expert its reward', async () => {
    const data = join(dataRoot(), 'alfworld');
    const experts = await alfworldExperts(data);
    const episodes: ScriptedEpisode[] = [];
    for (const type of [
      'look_at_obj_in_light',
      'pick_and_place_simple',
      'pick_clean_then_place_in_recep',
      'pick_cool_then_place_in_recep',
      'pick_heat_then_place_in_recep',
      'pick_two_obj_and_place',
    ]) {
      const ofType = experts.get(type)!;
      expect(ofType.length, type).toBeGreaterThanOrEqual(TASKS_PER_TYPE);
      for (const expert of ofType.slice(0, TASKS_PER_TYPE))
        episodes.push(...unrewardedSequences(expert));
    }
    const sanity = experts.get('pick_heat_then_place_in_recep')![0]!;
    const longest = Math.max(
      ...episodes.map((episode) => episode.actions.length),
      sanity.actions.length,
    );
    // Every offline trajectory (about 20 s to load alone, three minutes beside the whole suite
    // on two cores: hence the test's limit): the file is ordered by task type, and a judge that
    // never saw a type's endings pays on it (the first 1,000 hold two of the six).
    const served = await startServe([
      '--domain',
      'alfworld',
      '--data',
      data,
      '--port',
      '0',
      '--run-dir',
      join(directory, 'unrewarded-run'),
      '--max-steps',
      String(longest + 1),
      '--no-write-back',
    ]);
    try {
      const paid: string[] = [];
      for (const episode of episodes) {
        const result = await playScripted(served.url, episode);
        if (result.reward > 0 || result.success)
          paid.push(
            `${episode.taskId} ${episode.kind}: reward ${result.reward} after ${result.steps} steps`,
          );
      }
      expect(episodes.length).toBeGreaterThanOrEqual(25);
      expect(paid, `paid ${paid.length} of ${episodes.length}`).toEqual([]);
      const expert = await playScripted(served.url, {
        taskId: sanity.game,
        instruction: sanity.instruction,
        kind: 'expert',
        actions: sanity.actions,
      });
      expect(expert).toEqual({
        steps: sanity.actions.length,
        reward: 1,
        success: true,
        done: true,
      });
      // The model every other command trains and measures on: retrieval judged by the learned judge.
      expect(served.output()).toMatch(/synthetic, retrieval\+judge\)/);
    } finally {
      expect(await stop(served.child)).toBe(0);
    }
  }, 480_000);
});
