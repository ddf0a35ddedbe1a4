/**
 * The real connector end to end: a real WebArena-Lite config (task 149) played in a real
 * browser on stand-in pages, logged in through a saved storage state, scored by its own
 * evaluators when the agent stops.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Browser,
  BrowserEnvironment,
  launchChromium,
  parseObservationLines,
} from '@dreamgym/browser';
import { ConfigError, type Observation, type Task } from '@dreamgym/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realTasks, startTestSites, type TestSites } from '../sites.test-support.js';
import { connectWebarenaLiteReal } from './connect.js';

let browser: Browser;
let sites: TestSites;
let auth: string;
let task149: Task;

function idOf(observation: Observation, role: string, name: string): number {
  const line = parseObservationLines(observation.text).find(
    (candidate) => candidate.role === role && candidate.name === name,
  );
  if (line?.id === undefined) throw new Error(`no ${role} '${name}' in:\n${observation.text}`);
  return line.id;
}

beforeAll(async () => {
  [browser, sites, auth] = await Promise.all([
    launchChromium(),
    startTestSites(),
    mkdtemp(join(tmpdir(), 'dreamgym-auth-')),
  ]);
  // Task 149 is resolved by the connector: its placeholders stay in the task.
  task149 = (await realTasks([149])).get(149)!;
  // Log in once, as WebArena's auto_login does, and keep the session as the config's storage state.
  const login = await BrowserEnvironment.create({ browser, settleMs: 0 });
  try {
    let observation = await login.reset({
      id: 'login',
      domain: 'webarena-lite',
      instruction: 'Sign in.',
      origin: 'seed',
      meta: { startUrl: `${sites.sites.shopping_admin}/login.html` },
    });
    observation = (
      await login.step(`type [${idOf(observation, 'textbox', 'Username')}] [admin] [0]`)
    ).observation;
    observation = (
      await login.step(`type [${idOf(observation, 'textbox', 'Password')}] [admin1234] [1]`)
    ).observation;
    expect(observation.text).toContain("heading 'Dashboard'");
    await login.saveStorageState(join(auth, 'shopping_admin_state.json'));
  } finally {
    await login.close();
  }
});

afterAll(async () => {
  await browser?.close();
  await sites?.close();
  await rm(auth, { recursive: true, force: true });
});

describe('connectWebarenaLiteReal', () => {
  it('plays task 149 logged in, and scores it with its config: reward 1 when the report is right', async () => {
    const environment = await connectWebarenaLiteReal({
      sites: sites.sites,
      authDirectory: auth,
      sharedBrowser: browser,
      browser: { settleMs: 0 },
    });
    try {
      let observation = await environment.reset(task149);
      expect(observation.text).toMatch(/^Tab 0 \(current\): Dashboard \/ Magento Admin\n/);
      observation = (await environment.step(`click [${idOf(observation, 'link', 'Reports')}]`))
        .observation;
      observation = (
        await environment.step(`type [${idOf(observation, 'textbox', 'From')}] [2/1/23] [0]`)
      ).observation;
      observation = (
        await environment.step(`type [${idOf(observation, 'textbox', 'To')}] [2/28/23] [0]`)
      ).observation;
      const shown = await environment.step(`click [${idOf(observation, 'button', 'Show Report')}]`);
      expect(shown).toMatchObject({ reward: 0, done: false });
      expect(shown.observation.text).toContain("StaticText 'Report for 2/1/23 - 2/28/23'");
      const stopped = await environment.step('stop []');
      expect(stopped).toMatchObject({
        reward: 1,
        done: true,
        truncated: false,
        info: { success: true, evaluation: { status: 'passed', score: 1 } },
      });
      const checks = (stopped.info.evaluation as { checks: { evaluator: string }[] }).checks;
      expect(checks.map((check) => check.evaluator)).toEqual([
        'url_match',
        'program_html',
        'program_html',
      ]);
    } finally {
      await environment.close();
    }
  });

  it('evaluates at the last step of the budget, and truncates', async () => {
    const environment = await connectWebarenaLiteReal({
      sites: sites.sites,
      authDirectory: auth,
      sharedBrowser: browser,
      browser: { settleMs: 0, maxSteps: 1 },
    });
    try {
      await environment.reset(task149);
      const last = await environment.step('scroll [down]');
      expect(last).toMatchObject({
        reward: 0,
        done: true,
        truncated: true,
        info: { success: false, evaluation: { status: 'failed' } },
      });
    } finally {
      await environment.close();
    }
  });

  it("counts the observation budget with the reader's tokenizer", async () => {
    // A tokenizer of single characters: the page fits 250 tokens by the browser's estimate, not
    // in this one's.
    const countCharacters = (text: string) => text.length;
    const environment = await connectWebarenaLiteReal({
      sites: sites.sites,
      authDirectory: auth,
      sharedBrowser: browser,
      browser: { settleMs: 0, maxObservationTokens: 250 },
      countTokens: countCharacters,
    });
    try {
      const observation = await environment.reset(task149);
      expect(observation.text).toMatch(/The observation is cut at its budget of 250 tokens/);
      expect(observation.text.length).toBeLessThanOrEqual(250);
    } finally {
      await environment.close();
    }
  });

  it('says which site URL and which storage state are missing', async () => {
    const withoutSite = await connectWebarenaLiteReal({
      sites: { gitlab: sites.sites.gitlab },
      authDirectory: auth,
      sharedBrowser: browser,
    });
    try {
      const error = await withoutSite.reset(task149).catch((thrown: unknown) => thrown);
      expect(ConfigError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ field: 'sites.shopping_admin' });
    } finally {
      await withoutSite.close();
    }
    const withoutLogin = await connectWebarenaLiteReal({
      sites: sites.sites,
      authDirectory: join(auth, 'missing'),
      sharedBrowser: browser,
    });
    try {
      await expect(withoutLogin.reset(task149)).rejects.toThrow(
        /logs in with the storage state \.\/\.auth\/shopping_admin_state\.json, which is not at .*missing\/shopping_admin_state\.json/,
      );
    } finally {
      await withoutLogin.close();
    }
    await expect(connectWebarenaLiteReal({ sites: { gitlab: 'not a url' } })).rejects.toMatchObject(
      { field: 'real.sites.gitlab' },
    );
  });

  it('reports a generated task as not evaluated, never as passed', async () => {
    const environment = await connectWebarenaLiteReal({
      sites: sites.sites,
      authDirectory: auth,
      sharedBrowser: browser,
      browser: { settleMs: 0 },
    });
    try {
      const { config: _config, ...meta } = task149.meta;
      await environment.reset({
        ...task149,
        id: 'generated',
        origin: 'generated',
        parentId: task149.id,
        meta,
      });
      const stopped = await environment.step('stop [done]');
      expect(stopped).toMatchObject({
        reward: 0,
        done: true,
        info: { evaluation: { status: 'not_evaluated' } },
      });
      expect(stopped.info.success).toBeUndefined();
    } finally {
      await environment.close();
    }
  });
});
