/**
 * Captured traces as offline trajectories: an AI SDK agent on the real SmolLM2 behind
 * `dreamgym model serve`'s server plays the corridor once inside an episode and once as a
 * deployed agent (outside any), its calls written to a JSONL trace by `onCall` with an outcome
 * line; the import gives back the environment's own steps, and bad records fail at file:line.
 */
import { appendFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { DatasetFormatError, trajectoryToTransitions } from '@dreamgym/core';
import { CorridorEnvironment, corridorTask, createCorridorAdapter } from '@dreamgym/core/testing';
import { LlamaChatModel, type LlamaServer, startLlamaServer } from '@dreamgym/llama';
import { generateText, stepCountIs } from 'ai';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { aiSdkTools } from './ai-sdk.js';
import { type ModelCall, ModelCallCapture } from './capture.js';
import { EnvironmentEpisode } from './environment-episode.js';
import { episodeOutcome, importTraces, type ModelCallRecordSchema } from './trace-import.js';

const adapter = createCorridorAdapter();
const task = corridorTask({ length: 3, keyRoom: 1, doorRoom: 2 });
let model: LlamaChatModel;
let server: LlamaServer;
let directory: string;
let trace: string;
const played: EnvironmentEpisode[] = [];

/** The agent, as deployed: `generateText` with the episode's tools; its loop's end is its own. */
async function playOnce(capture: ModelCallCapture, end?: () => void): Promise<EnvironmentEpisode> {
  const episode = await EnvironmentEpisode.begin({
    environment: new CorridorEnvironment(),
    task,
    adapter,
    maxSteps: 2,
    ...(end ? { onEnd: end } : {}),
  });
  const provider = createOpenAICompatible({
    name: 'local',
    baseURL: server.baseURL,
    fetch: capture.fetch,
  });
  await generateText({
    model: provider(server.modelName),
    system: 'Walk the corridor with the act tool.',
    prompt: episode.prompt,
    tools: aiSdkTools(episode),
    toolChoice: 'required',
    stopWhen: stepCountIs(3),
    maxOutputTokens: 48,
    seed: 5,
  }).catch(() => undefined);
  return episode;
}

function inGrammar(action: string): string {
  try {
    return adapter.parseAction(action).text;
  } catch {
    return action;
  }
}

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'dreamgym-trace-import-'));
  trace = join(directory, 'trace.jsonl');
  model = await LlamaChatModel.load({ model: 'local', contextSize: 2048, concurrency: 1 });
  server = await startLlamaServer({ model });
  const capture = new ModelCallCapture({
    onCall: (call) => appendFileSync(trace, `${JSON.stringify(call)}\n`),
  });
  const { result } = await capture.episode('corridor#1', (end) => playOnce(capture, end));
  played.push(result);
  // The application's outcome line: a reward judged outside, and the last action's result,
  // which no later call carried (the capture answered the agent's call after the end).
  const outcome = { ...episodeOutcome('corridor#1', result), reward: 0.25, success: false };
  appendFileSync(trace, `${JSON.stringify(outcome)}\n`);
  // Deployed: no episode, and the agent's loop runs on after the environment ended (stopWhen).
  played.push(await playOnce(capture));
}, 180_000);
afterAll(async () => {
  await server?.close();
  await model?.dispose();
  await rm(directory, { recursive: true, force: true });
});

describe('importTraces', () => {
  it("gives back each episode's steps from its captured calls, with its outcome", async () => {
    expectTypeOf<ModelCall>().toExtend<import('zod').input<typeof ModelCallRecordSchema>>();
    const { trajectories, calls, withoutActions } = await importTraces([trace], {
      domain: 'corridor',
    });
    expect(calls).toBe((await readFile(trace, 'utf8')).trim().split('\n').length - 1);
    expect(withoutActions).toBe(0);
    expect(trajectories).toHaveLength(2);
    for (const [index, trajectory] of trajectories.entries()) {
      const episode = played[index]!;
      expect(trajectory.task).toMatchObject({ domain: 'corridor', instruction: task.instruction });
      expect(trajectory.source).toBe('offline');
      expect(trajectory.steps[0]!.observation).toEqual(episode.start);
      // The deployed agent may act after the environment ended: those calls are steps too,
      // answered "The episode is over".
      const environmentSteps = trajectory.steps.slice(0, episode.steps.length);
      // Actions are imported as the agent wrote them; the episode kept the grammar's form.
      expect(environmentSteps.map((step) => inGrammar(step.action))).toEqual(
        episode.steps.map((step) => step.action),
      );
      for (const [position, step] of environmentSteps.entries()) {
        expect(step.info?.invalidAction === true).toBe(
          episode.steps[position]!.observation.startsWith('Invalid action:'),
        );
        const next = trajectory.steps[position + 1]?.observation ?? trajectory.finalObservation;
        if (next) {
          const text = next.actions
            ? `${next.text}\nAdmissible actions: ${next.actions.join(', ')}`
            : next.text;
          expect(text).toBe(episode.steps[position]!.observation);
        }
      }
      expect(trajectory.steps.at(-1)!.done).toBe(true);
      const transitions = trajectoryToTransitions(trajectory, { trajectoryId: trajectory.id! });
      expect(transitions).toHaveLength(
        trajectory.steps.length - (trajectory.finalObservation ? 0 : 1),
      );
    }
    expect(trajectories[0]).toMatchObject({ id: 'import:corridor#1', success: false });
    expect(trajectories[0]!.steps.at(-1)!.reward).toBe(0.25);
    // From the outcome line: every step of the episode becomes a transition.
    expect(trajectories[0]!.finalObservation).toBeDefined();
    expect(trajectories[0]!.meta).not.toHaveProperty('outcome');
    expect(trajectories[1]!.meta).toMatchObject({ outcome: 'unknown' });
    expect(trajectories[1]!.steps.every((step) => step.reward === 0)).toBe(true);
  });

  it('names the file, line and field of a bad record', async () => {
    const lines = (await readFile(trace, 'utf8')).trim().split('\n');
    const bad = join(directory, 'bad.jsonl');
    const expectError = async (content: string[], pattern: RegExp, options = {}) => {
      await writeFile(bad, `${content.join('\n')}\n`);
      const error = await importTraces([bad], { domain: 'corridor', ...options }).catch(
        (caught: unknown) => caught,
      );
      expect(DatasetFormatError.isInstance(error)).toBe(true);
      expect((error as Error).message).toMatch(pattern);
    };
    await expectError([lines[0]!, '{"episodeId": 3'], new RegExp(`${bad}:2`));
    await expectError(
      [lines[0]!, JSON.stringify({ ...JSON.parse(lines[1]!), toolCalls: 'act' })],
      /:2.*toolCalls/s,
    );
    await expectError(lines, /tool "act", not of "search".*--tool/s, { tool: 'search' });
    // The first call alone: its action's result is carried by no later call, which is fine for
    // the last action; two calls of one episode with the second's messages cut are not.
    const first = JSON.parse(lines[0]!) as ModelCall;
    const second = { ...(JSON.parse(lines[1]!) as ModelCall), messages: first.messages };
    if (second.toolCalls.length > 0) {
      await expectError(
        [lines[0]!, JSON.stringify(second)],
        new RegExp(`${bad}:1.*no later call`, 'is'),
      );
    }
  });
});
