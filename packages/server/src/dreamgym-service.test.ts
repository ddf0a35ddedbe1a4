import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CheckpointError, ConfigError, type DomainAdapter, SeededRandom } from '@dreamgym/core';
import { ReasoningExperienceModel } from '@dreamgym/core/experience';
import { OpenAICompatibleChatModel } from '@dreamgym/core/models';
import { CorridorEnvironment } from '@dreamgym/core/testing';
import { CheckpointStore } from '@dreamgym/core/training';
import { startOpenAICompatibleServer } from '@dreamgym/test-support';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { corridorDomain, playEpisode, TestClient } from './corridor-run.test-support.js';
import { EpisodeLogLineSchema } from './serve-config.js';
import { type ServedDreamGym, serveDreamGym } from './serve-dreamgym.js';

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function runDirectory(): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), 'dreamgym-serve-'));
  cleanup.push(() => rm(directory, { recursive: true, force: true }));
  return directory;
}

async function serve(
  options: Partial<Parameters<typeof serveDreamGym>[0]> & { runDirectory: string },
) {
  const domain = await corridorDomain();
  const served = await serveDreamGym({
    ...domain,
    config: {
      seed: 5,
      tasksPerIteration: 2,
      rolloutsPerTask: 4,
      maxSteps: 12,
      curriculum: { lambda: 0.5, tasksToExpand: 2, variantsPerTask: 2 },
    },
    server: { port: 0 },
    ...options,
  });
  cleanup.push(() => served.close());
  return { served, domain };
}

async function status(served: ServedDreamGym) {
  return (await (await fetch(`${served.url}/dreamgym/status`)).json()) as {
    iteration: number;
    episodes: { started: number; finished: number; abandoned: number; successes: number };
    steps: number;
    curriculum: {
      poolSize: number;
      generatedTasks: number;
      observedTasks: number;
      highestVariance: number;
    };
    buffer: { size: number; bySource: Record<string, number>; written: number };
    lastCheckpoint: string | null;
  };
}

/** Plays `groups` GRPO-style groups: each group's first reset draws a task, all of its episodes play it. */
async function playGroups(client: TestClient, groups: number, random: SeededRandom) {
  const played: { taskId: string; success: boolean }[] = [];
  for (let group = 0; group < groups; group += 1) {
    for (let member = 0; member < 4; member += 1) {
      // Half of each group plays well, half badly: the group's rewards vary.
      played.push(await playEpisode(client, { noise: member % 2 === 0 ? 0 : 0.9, random }));
    }
  }
  return played;
}

describe('DreamGymService over OpenEnv', () => {
  it('draws tasks from the curriculum in groups, feeds outcomes back, grows the pool and writes transitions back', async () => {
    const directory = await runDirectory();
    const { served, domain } = await serve({ runDirectory: directory });
    const offline = domain.replayBuffer.size;
    const client = await TestClient.connect(served.url);
    const played = await playGroups(client, 4, new SeededRandom(2));
    // Consecutive draws serve one task rolloutsPerTask times: a group per task.
    for (let group = 0; group < 4; group += 1) {
      const ids = played.slice(group * 4, group * 4 + 4).map((episode) => episode.taskId);
      expect(new Set(ids).size).toBe(1);
    }
    const after = await status(served);
    expect(after.episodes).toMatchObject({ started: 16, finished: 16, abandoned: 0 });
    expect(after.iteration).toBe(2);
    expect(after.curriculum.observedTasks).toBeGreaterThan(0);
    expect(after.curriculum.highestVariance).toBeGreaterThan(0);
    expect(after.curriculum.generatedTasks).toBeGreaterThan(0);
    expect(after.curriculum.poolSize).toBe(
      domain.seedTasks.length + after.curriculum.generatedTasks,
    );
    expect(after.buffer.bySource.synthetic).toBeGreaterThan(0);
    expect(after.buffer.size).toBeGreaterThan(offline);
    expect(after.buffer.written).toBe(after.steps);
    expect(after.lastCheckpoint).toMatch(/^iteration-000002/);

    const lines = (await readFile(join(directory, 'episodes.jsonl'), 'utf8')).trim().split('\n');
    expect(lines).toHaveLength(16);
    expect(lines.map((line) => EpisodeLogLineSchema.parse(JSON.parse(line)).episode)).toEqual(
      Array.from({ length: 16 }, (_, index) => index),
    );
    const experience = (await readFile(join(directory, 'experience.jsonl'), 'utf8'))
      .trim()
      .split('\n');
    expect(experience).toHaveLength(after.steps);
    const transition = JSON.parse(experience[0]!).transition;
    // Every run's trajectory ids: <source>:<iteration>:<episode>.
    expect(transition).toMatchObject({ source: 'synthetic', trajectoryId: 'synthetic:0:0' });

    // Generated tasks now come up in draws, within lambda.
    const generated = (await playGroups(client, 2, new SeededRandom(3))).filter((episode) =>
      episode.taskId.includes('~'),
    );
    expect(generated.length).toBeGreaterThan(0);
    expect(generated.length).toBeLessThanOrEqual(4);
    await client.close();
  });

  it('writes transitions back in batches: at the batch size, on the timer, and before status and checkpoints', async () => {
    const directory = await runDirectory();
    const config = { seed: 5, tasksPerIteration: 50, rolloutsPerTask: 1, maxSteps: 12 };
    // A batch that never fills and a timer that never fires: only status and close write.
    const { served, domain } = await serve({
      runDirectory: directory,
      config: { ...config, writeBackBatch: { transitions: 100_000, milliseconds: 600_000 } },
    });
    const offline = domain.replayBuffer.size;
    const client = await TestClient.connect(served.url);
    let steps = 0;
    for (let episode = 0; episode < 3; episode += 1) steps += (await playEpisode(client)).steps;
    expect(domain.replayBuffer.size).toBe(offline);
    const figures = await status(served);
    expect(figures.buffer.written).toBe(steps);
    expect(domain.replayBuffer.size).toBeGreaterThan(offline);
    const experience = (await readFile(join(directory, 'experience.jsonl'), 'utf8')).trim();
    expect(experience.split('\n')).toHaveLength(steps);
    client.close();

    // A short timer writes without being asked; a batch of one writes every episode at once.
    for (const writeBackBatch of [
      { transitions: 100_000, milliseconds: 20 },
      { transitions: 1, milliseconds: 600_000 },
    ]) {
      const other = await serve({
        runDirectory: await runDirectory(),
        config: { ...config, writeBackBatch },
      });
      const before = other.domain.replayBuffer.size;
      const player = await TestClient.connect(other.served.url);
      await playEpisode(player);
      await vi.waitFor(() => expect(other.domain.replayBuffer.size).toBeGreaterThan(before), {
        timeout: 5000,
        interval: 10,
      });
      player.close();
    }
  });

  it('holds back the answer that ends an episode while 128 finished episodes wait in the write queue, and loses none', async () => {
    const directory = await runDirectory();
    // Every episode is written back at once (a batch of one), and the buffer takes nothing
    // until the gate opens: the write queue stops at the first episode and the rest pile up.
    const { served, domain } = await serve({
      runDirectory: directory,
      config: {
        seed: 5,
        tasksPerIteration: 1_000,
        rolloutsPerTask: 1,
        maxSteps: 12,
        writeBackBatch: { transitions: 1, milliseconds: 600_000 },
      },
    });
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const add = domain.replayBuffer.add.bind(domain.replayBuffer);
    vi.spyOn(domain.replayBuffer, 'add').mockImplementation(async (transitions) => {
      await gate;
      return add(transitions);
    });
    const client = await TestClient.connect(served.url);
    let answered = 0;
    const playing = (async () => {
      for (let episode = 0; episode < 140; episode += 1) {
        await playEpisode(client);
        answered += 1;
      }
    })();
    cleanup.push(async () => open());
    // 128 episodes are answered (the first, held in its write, and 127 queued behind it); the
    // 129th's last step waits for the queue.
    await vi.waitFor(() => expect(answered).toBe(128), { timeout: 20_000, interval: 20 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(answered).toBe(128);
    open();
    await playing;
    const figures = await status(served);
    expect(figures.episodes.finished).toBe(140);
    expect(figures.buffer.written).toBeGreaterThan(140);
    client.close();
  });

  it('plays a pinned task_id and a seeded draw, and refuses an unknown task', async () => {
    const { served } = await serve({ runDirectory: await runDirectory() });
    const client = await TestClient.connect(served.url);
    const pinned = await client.request({ type: 'reset', data: { task_id: 'corridor-4-3-0' } });
    expect((pinned.data.observation as { metadata: { task_id: string } }).metadata.task_id).toBe(
      'corridor-4-3-0',
    );
    const seeded = async () =>
      (
        (await client.request({ type: 'reset', data: { seed: 11 } })).data.observation as {
          metadata: { task_id: string };
        }
      ).metadata.task_id;
    expect(await seeded()).toBe(await seeded());
    const refused = await client.request({ type: 'reset', data: { task_id: 'corridor-9-9-9' } });
    expect(refused.data).toMatchObject({ code: 'VALIDATION_ERROR' });
    await client.close();
  });

  it('checkpoints at shutdown and resumes: counters, curriculum and the run experience come back', async () => {
    const directory = await runDirectory();
    const first = await serve({ runDirectory: directory });
    const client = await TestClient.connect(first.served.url);
    await playGroups(client, 3, new SeededRandom(4));
    const before = await status(first.served);
    await client.close();
    await first.served.close();

    await expect(serve({ runDirectory: directory })).rejects.toThrow(ConfigError);
    await expect(
      serve({ runDirectory: directory, resume: true, config: { seed: 6 } }),
    ).rejects.toThrow(CheckpointError);

    const second = await serve({ runDirectory: directory, resume: true });
    const resumed = await status(second.served);
    expect(resumed.episodes.finished).toBe(before.episodes.finished);
    expect(resumed.iteration).toBe(before.iteration);
    expect(resumed.curriculum.poolSize).toBe(before.curriculum.poolSize);
    expect(resumed.buffer.bySource.synthetic).toBe(before.buffer.bySource.synthetic);
    expect(resumed.buffer.size).toBe(before.buffer.size);
    const again = await TestClient.connect(second.served.url);
    await playGroups(again, 1, new SeededRandom(5));
    expect((await status(second.served)).episodes.finished).toBe(before.episodes.finished + 4);
    await again.close();
  });

  it('resumes a run folder whose checkpoint counted the steps played as `steps` (before the run ledger)', async () => {
    const directory = await runDirectory();
    const first = await serve({ runDirectory: directory });
    const client = await TestClient.connect(first.served.url);
    await playGroups(client, 3, new SeededRandom(4));
    const before = await status(first.served);
    await client.close();
    await first.served.close();
    // The checkpoint as the earlier server wrote it: the same figures, `steps` for the transitions.
    const store = new CheckpointStore(join(directory, 'checkpoints'));
    const checkpoint = (await store.load())!;
    const { realTransitions, syntheticTransitions, ...counters } =
      checkpoint.json<Record<string, number>>('counters');
    expect(realTransitions).toBe(0);
    await store.save(checkpoint.name, {
      counters: { ...counters, steps: syntheticTransitions },
      curriculum: checkpoint.json('curriculum'),
      draw: checkpoint.json('draw'),
    });

    const second = await serve({ runDirectory: directory, resume: true });
    const resumed = await status(second.served);
    expect(resumed.steps).toBe(before.steps);
    expect(resumed.episodes.finished).toBe(before.episodes.finished);
    expect(resumed.buffer.size).toBe(before.buffer.size);
  });

  it('logs a warning, why and what to do, when the curriculum rejects every variant of an iteration', async () => {
    const directory = await runDirectory();
    const domain = await corridorDomain();
    // A mutation that changes only what neither the instruction nor the first state shows.
    const adapter: DomainAdapter = {
      ...domain.adapter,
      mutateTask: (task, random) => ({
        ...task,
        id: `${task.id}~${random.int(1e6)}`,
        origin: 'generated',
        parentId: task.id,
        meta: { ...task.meta, variant: random.int(1e6) },
      }),
    };
    const logged: { level: string; event: string; fields?: Record<string, unknown> }[] = [];
    const { served } = await serve({
      runDirectory: directory,
      adapter,
      logger: {
        log: (level, event, fields) => logged.push({ level, event, ...(fields ? { fields } : {}) }),
      },
    });
    const client = await TestClient.connect(served.url);
    await playGroups(client, 2, new SeededRandom(2));
    const after = await status(served);
    expect(after.iteration).toBe(1);
    expect(after.curriculum.generatedTasks).toBe(0);
    const warnings = logged.filter((line) => line.event === 'curriculum.no_task_added');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 'warn', fields: { iteration: 0 } });
    // The curriculum's own warning, as `dreamgym train` prints it.
    expect(warnings[0]!.fields!.warning).toMatch(
      /^the curriculum added no task: all \d+ candidates for \d+ expanded tasks? were rejected \(\d+ exact-duplicate\), .* What to do: .*\(docs\/adding-a-benchmark\.md, step 7\)\.$/,
    );
    await client.close();
  });

  it('serves the real environment with --real: seed tasks only, transitions written back as real', async () => {
    const directory = await runDirectory();
    const { served } = await serve({
      runDirectory: directory,
      mode: 'real',
      realEnvironment: () => new CorridorEnvironment({ maxSteps: 12 }),
    });
    const client = await TestClient.connect(served.url);
    const played = await playGroups(client, 2, new SeededRandom(6));
    expect(played.filter((episode) => episode.success).length).toBeGreaterThanOrEqual(4);
    const after = await status(served);
    expect(after.curriculum.generatedTasks).toBe(0);
    expect(after.buffer.written).toBe(after.steps);
    expect(after.buffer.bySource.real).toBeGreaterThan(0);
    expect(after.buffer.bySource.synthetic).toBe(0);
    await client.close();
  });

  it('serves an LLM experience model (ReasoningExperienceModel over an OpenAI-compatible server)', async () => {
    // A real local HTTP server in the OpenAI protocol; its "model" walks the corridor and
    // ends the episode on the third action.
    const llm = await startOpenAICompatibleServer({
      chat: (request) => {
        const prompt = request.messages.map((message) => String(message.content)).join('\n');
        const steps = (prompt.match(/Action:/g) ?? []).length;
        return JSON.stringify({
          reasoning: 'The agent moves along the corridor.',
          nextState: `You walk on. You are in room ${steps}.`,
          done: steps >= 3,
          success: steps >= 3,
          reward: steps >= 3 ? 1 : 0,
        });
      },
    });
    cleanup.push(() => llm.close());
    const { served, domain } = await serve({
      runDirectory: await runDirectory(),
      experienceModel: new ReasoningExperienceModel({
        chat: new OpenAICompatibleChatModel({ baseURL: llm.url, model: 'test-model' }),
        environmentDescription: 'A corridor of numbered rooms.',
      }),
    });
    expect(domain.seedTasks.length).toBeGreaterThan(0);
    const client = await TestClient.connect(served.url);
    const reset = await client.request({ type: 'reset', data: {} });
    expect(reset.type).toBe('observation');
    let reply = reset;
    let steps = 0;
    while (!reply.data.done && steps < 12) {
      reply = await client.request({ type: 'step', data: { action: 'go right' } });
      expect(reply.type, JSON.stringify(reply)).toBe('observation');
      steps += 1;
    }
    expect(reply.data.done).toBe(true);
    expect(llm.requestsTo('/v1/chat/completions').length).toBe(steps);
    const after = await status(served);
    expect(after.episodes.finished).toBe(1);
    expect(after.buffer.written).toBe(steps);
    await client.close();
  });
});
