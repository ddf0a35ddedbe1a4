/**
 * Model selection on the real ALFWorld data and the real local model: the flags, the parts
 * they build (one shared SmolLM2 for every LLM part), synthetic ALFWorld steps predicted by
 * the reasoning LLM and by the grounded hybrid, and the same model reached over HTTP.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  ConfigError,
  JudgedExperienceModel,
  MutationTaskGenerator,
  SyntheticEnvironment,
  type Task,
} from '@dreamgym/core';
import { LlmTaskGenerator } from '@dreamgym/core/curriculum';
import { GroundedHybridExperienceModel, ReasoningExperienceModel } from '@dreamgym/core/experience';
import { OpenAICompatibleChatModel } from '@dreamgym/core/models';
import { ChatModelPolicy } from '@dreamgym/core/policy';
import {
  type DomainSetup,
  loadLlamaRuntime,
  openChatModel,
  type SelectedModels,
  selectModels,
  setUpDomain,
  usesChatModel,
} from '@dreamgym/run';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODEL_SELECTION_FLAGS, parseModelSelection } from './model-flags.js';

function alfworldData(): string {
  const root = process.env.DREAMGYM_DATA_DIR;
  if (!root || !existsSync(join(root, 'alfworld'))) {
    throw new Error('Set DREAMGYM_DATA_DIR to the shared data folder (it must hold alfworld/).');
  }
  return resolve(root, 'alfworld');
}

const where = { env: process.env, cwd: process.cwd() };

describe('parseModelSelection', () => {
  it('defaults to the embedded parts and the local model', () => {
    const selection = parseModelSelection({});
    expect(selection).toEqual({
      experience: 'embedded',
      policy: 'linear',
      taskGenerator: 'mutation',
      embedder: 'hashing',
      model: 'local',
      experienceTemperature: 0,
    });
    expect(usesChatModel(selection)).toBe(false);
    expect(Object.keys(MODEL_SELECTION_FLAGS)).toEqual(
      expect.arrayContaining([
        'experience',
        'policy',
        'task-generator',
        'embedder',
        'model',
        'base-url',
      ]),
    );
  });

  it('names the flag at fault', () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ experience: 'dream' }, /--experience must be embedded or llm or hybrid, got "dream"/],
      [{ policy: 'gpt' }, /--policy must be linear or llm/],
      [{ 'task-generator': 'x' }, /--task-generator must be mutation or llm/],
      [{ 'base-url': 'http://127.0.0.1:8000/v1' }, /--base-url needs --model NAME/],
      [{ 'base-url': 'ftp://x', model: 'm' }, /--base-url must be an http\(s\) URL/],
      [
        { 'base-url': 'http://127.0.0.1:8000/v1', model: 'local' },
        /is a local model; drop --base-url/,
      ],
      [{ embedder: 'openai' }, /--embedder openai needs --embedding-model NAME/],
      [{ 'experience-temperature': '3' }, /between 0 and 2/],
      [{ 'model-concurrency': 'two' }, /--model-concurrency must be an integer/],
    ];
    for (const [values, message] of cases) {
      expect(() => parseModelSelection(values), String(message)).toThrow(message);
      try {
        parseModelSelection(values);
      } catch (error) {
        expect(ConfigError.isInstance(error)).toBe(true);
      }
    }
    expect(
      parseModelSelection({
        'base-url': 'http://127.0.0.1:8000/v1',
        model: 'Qwen/Qwen2.5-7B-Instruct',
        policy: 'llm',
      }),
    ).toMatchObject({
      baseUrl: 'http://127.0.0.1:8000/v1',
      model: 'Qwen/Qwen2.5-7B-Instruct',
      policy: 'llm',
    });
  });
});

describe('selectModels on ALFWorld with the local SmolLM2', () => {
  let domain: DomainSetup;
  let models: SelectedModels;
  let task: Task;
  let actions: string[];

  beforeAll(async () => {
    domain = await setUpDomain({
      domain: 'alfworld',
      data: alfworldData(),
      offlineLimit: 300,
      trainTasks: 1,
      evalTasks: 1,
    });
    const trajectory = domain.offlineTrajectories.at(-1)!;
    task = { ...trajectory.task, initialObservation: trajectory.steps[0]!.observation };
    actions = trajectory.steps.map((step) => step.action);
    models = await selectModels(
      parseModelSelection({
        experience: 'hybrid',
        policy: 'llm',
        'task-generator': 'llm',
        'model-concurrency': '1',
      }),
      { ...where, adapter: domain.adapter, grounding: domain.experienceGrounding },
    );
  }, 120_000);
  afterAll(async () => {
    await models?.dispose();
    await domain?.replayBuffer.close();
  });

  it('builds every LLM part on one shared in-process model', () => {
    expect(models.local?.name).toBe('smollm2-135m-instruct');
    expect(models.chat).toBe(models.local);
    expect(models.scorer).toBe(models.local);
    // The hybrid writes the next state; the domain's learned judge decides the outcome.
    expect(models.experienceModel).toBeInstanceOf(JudgedExperienceModel);
    expect((models.experienceModel as JudgedExperienceModel).base).toBeInstanceOf(
      GroundedHybridExperienceModel,
    );
    expect(models.policy).toBeInstanceOf(ChatModelPolicy);
    expect(models.taskGenerator).toBeInstanceOf(LlmTaskGenerator);
    expect(models.describe().join('\n')).toMatch(
      /grounded hybrid of retrieval and the reasoning LLM smollm2-135m-instruct in process .*compact prompt/,
    );
  });

  it('steps synthetic ALFWorld with the grounded hybrid: recollections and grounded or LLM predictions', async () => {
    const environment = new SyntheticEnvironment({
      model: models.experienceModel,
      retriever: domain.replayBuffer,
      adapter: domain.adapter,
      k: 4,
      maxSteps: 5,
    });
    const first = await environment.reset(task);
    expect(first.text).toBe(task.initialObservation!.text);
    const ways = new Set<string>();
    for (const action of actions.slice(0, 2)) {
      const result = await environment.step(action);
      expect(result.observation.text.length).toBeGreaterThan(0);
      ways.add(String(result.info?.hybrid));
      if (result.done) break;
    }
    for (const way of ways) expect(['history', 'grounded', 'llm', 'overruled']).toContain(way);
    const hybrid = (models.experienceModel as JudgedExperienceModel)
      .base as GroundedHybridExperienceModel;
    const counts = hybrid.stats();
    expect(Object.values(counts).reduce((sum, value) => sum + value, 0)).toBeGreaterThanOrEqual(1);
  }, 240_000);

  it('steps synthetic ALFWorld with the reasoning LLM alone: a schema-valid prediction', async () => {
    const llm = await selectModels(
      parseModelSelection({ experience: 'llm', 'model-concurrency': '1' }),
      {
        ...where,
        adapter: domain.adapter,
        grounding: domain.experienceGrounding,
      },
    );
    try {
      expect((llm.experienceModel as JudgedExperienceModel).base).toBeInstanceOf(
        ReasoningExperienceModel,
      );
      expect(llm.taskGenerator).toBeInstanceOf(MutationTaskGenerator);
      expect(llm.policy).toBeUndefined();
      const environment = new SyntheticEnvironment({
        model: llm.experienceModel,
        retriever: domain.replayBuffer,
        adapter: domain.adapter,
        k: 3,
        maxSteps: 3,
      });
      await environment.reset(task);
      const result = await environment.step(actions[0]!);
      expect(result.info?.experienceModelFailure).toBeUndefined();
      expect(result.info?.structuredMode).toBe('json_schema');
      expect(result.observation.text.length).toBeGreaterThan(0);
    } finally {
      await llm.dispose();
    }
  }, 240_000);

  it('reaches the same model over HTTP with --base-url', async () => {
    const runtime = await loadLlamaRuntime();
    const server = await runtime.startLlamaServer({ model: models.local! });
    try {
      const selection = parseModelSelection({
        'base-url': server.baseURL,
        model: server.modelName,
        policy: 'llm',
      });
      const opened = await openChatModel(selection, where);
      expect(opened.chat).toBeInstanceOf(OpenAICompatibleChatModel);
      expect(opened.local).toBeUndefined();
      const { scores } = await opened.scorer.scoreContinuations({
        messages: [{ role: 'user', content: 'You see a fridge 1. What next?' }],
        continuations: ['go to fridge 1', 'go to moon 7'],
      });
      expect(scores).toHaveLength(2);
      expect(scores[0]!.logprob).toBeLessThan(0);
    } finally {
      await server.close();
    }
  }, 60_000);
});
