import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { type ExperienceModel, JudgedExperienceModel } from '@dreamgym/core';
import { GroundedHybridExperienceModel, ReasoningExperienceModel } from '@dreamgym/core/experience';
import {
  createExperienceModel,
  type DomainSetup,
  type DomainSetupOptions,
  selectModels,
  setUpDomain,
} from '@dreamgym/run';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { captureIo, dataRoot } from './cli.test-support.js';
import { serveExperienceModel } from './commands/serve.js';
import { parseModelSelection } from './model-flags.js';
import { createReplica } from './serve-replica.js';

const setup = (options: Partial<DomainSetupOptions> = {}): DomainSetupOptions => ({
  domain: 'alfworld',
  data: join(dataRoot(), 'alfworld'),
  offlineLimit: 200,
  trainTasks: 1,
  evalSplit: 'train',
  evalTasks: 1,
  ...options,
});
// A server nobody asks: building an LLM experience model sends no request.
const server = { 'base-url': 'http://127.0.0.1:9/v1', model: 'served-model' };
const where = { env: {}, cwd: process.cwd() };

/** The model of every door: train/eval/fidelity (`selectModels`), serve (one process, `--workers`). */
async function doorModels(domain: DomainSetup, options: DomainSetupOptions) {
  const io = captureIo();
  const selected = (flags: Record<string, string>) =>
    selectModels(parseModelSelection(flags), {
      ...where,
      adapter: domain.adapter,
      grounding: domain.experienceGrounding,
    });
  const served = async (flags: Record<string, string>) =>
    (await serveExperienceModel(flags, io)(domain)).model;
  const replica = await createReplica({ setup: options });
  await replica.replayBuffer.close();
  return {
    setUpDomain: domain.experienceModel,
    'train/eval/fidelity embedded': (await selected({})).experienceModel,
    'train/eval/fidelity llm': (await selected({ experience: 'llm', ...server })).experienceModel,
    'train/eval/fidelity hybrid': (await selected({ experience: 'hybrid', ...server }))
      .experienceModel,
    'serve embedded': await served({}),
    'serve openai': await served({ experience: 'openai', ...server }),
    'serve llm': await served({ experience: 'llm', ...server }),
    'serve hybrid': await served({ experience: 'hybrid', ...server }),
    'serve --workers replica': replica.experienceModel,
  } satisfies Record<string, ExperienceModel>;
}

describe('createExperienceModel: the one experience model of every door', () => {
  let judged: DomainSetup;
  let unjudged: DomainSetup;
  beforeAll(async () => {
    judged = await setUpDomain(setup());
    unjudged = await setUpDomain(setup({ outcomeJudge: false }));
  }, 60_000);
  afterAll(async () => {
    await judged?.replayBuffer.close();
    await unjudged?.replayBuffer.close();
  });

  it('judges the outcomes of the model every door serves, by default', async () => {
    const models = await doorModels(judged, setup());
    for (const [door, model] of Object.entries(models)) {
      expect(model, door).toBeInstanceOf(JudgedExperienceModel);
      expect(model.id, door).toMatch(/\+judge$/);
    }
    expect(models['serve embedded'].id).toBe('retrieval+judge');
    expect(models['serve --workers replica'].id).toBe('retrieval+judge');
    expect((models['serve openai'] as JudgedExperienceModel).base).toBeInstanceOf(
      ReasoningExperienceModel,
    );
    expect((models['serve hybrid'] as JudgedExperienceModel).base).toBeInstanceOf(
      GroundedHybridExperienceModel,
    );
    // One judge, learned once per domain, behind every model built on it.
    const judges = new Set(
      Object.entries(models)
        .filter(([door]) => door !== 'serve --workers replica')
        .map(([, model]) => (model as JudgedExperienceModel).judge),
    );
    expect(judges.size).toBe(1);
  }, 60_000);

  it('leaves the judge out only where the set-up says outcomeJudge: false', async () => {
    const models = await doorModels(unjudged, setup({ outcomeJudge: false }));
    for (const [door, model] of Object.entries(models)) {
      expect(model, door).not.toBeInstanceOf(JudgedExperienceModel);
      expect(model.id, door).not.toMatch(/\+judge$/);
    }
    expect(createExperienceModel(unjudged.experienceGrounding, { kind: 'embedded' }).id).toBe(
      'retrieval',
    );
  }, 60_000);

  it('exposes no unjudged model on the domain set-up', () => {
    expect(judged).not.toHaveProperty('retrievalModel');
    expect(judged).not.toHaveProperty('outcomeJudge');
    const models = Object.entries(judged).filter(
      ([, value]) => typeof (value as Partial<ExperienceModel>)?.predict === 'function',
    );
    expect(models.map(([field]) => field)).toEqual(['experienceModel']);
    expect(judged.experienceGrounding.judged).toBe(true);
    expect(Object.keys(judged.experienceGrounding)).toEqual(['adapter']);
  });

  it('is the only place in the CLI and the run assembly that builds an experience model or composes the judge', async () => {
    const packages = join(import.meta.dirname, '..', '..');
    const builders: string[] = [];
    for (const source of ['cli/src', 'run/src']) {
      const root = join(packages, source);
      const files = (await readdir(root, { recursive: true }))
        .filter((file) => file.endsWith('.ts') && !/\.test(-support)?\.ts$/.test(file))
        .sort();
      for (const file of files) {
        const text = await readFile(join(root, file), 'utf8');
        if (
          /new (Judged|Retrieval|Reasoning|GroundedHybrid)ExperienceModel\b|OutcomeJudge\.train\b/.test(
            text,
          )
        )
          builders.push(relative(packages, join(root, file)));
      }
    }
    expect(builders).toEqual(['run/src/experience-model.ts']);
  });
});
