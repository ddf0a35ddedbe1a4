/**
 * The evaluators on real configs (WebArena-Lite's, and a sample of WebArena's) against
 * stand-in pages at the URLs those configs name, in a real browser.
 */
import { type Browser, launchChromium, type Page } from '@dreamgym/browser';
import type { Task } from '@dreamgym/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebarenaConfig } from '../config/config-schema.js';
import { readWebarenaConfigFile, webarenaConfigToTask } from '../datasets/task-configs.js';
import {
  realTasks,
  startTestSites,
  type TestSites,
  WEBARENA_SAMPLE_FILE,
} from '../sites.test-support.js';
import { evaluateWebarenaTask } from './evaluate-task.js';

let browser: Browser;
let sites: TestSites;
let tasks: Map<number, Task>;
let original: Map<number, Task>;
let page: Page;

beforeAll(async () => {
  [browser, sites] = await Promise.all([launchChromium(), startTestSites()]);
  tasks = await realTasks([25, 104, 110, 112, 133, 149], sites.sites);
  original = new Map(
    (await readWebarenaConfigFile(WEBARENA_SAMPLE_FILE)).map((located) => [
      located.config.task_id,
      webarenaConfigToTask(located, sites.sites),
    ]),
  );
  const context = await browser.newContext();
  await context.addCookies([
    { name: 'admin_session', value: 'admin', url: sites.sites.shopping_admin },
  ]);
  page = await context.newPage();
});

afterAll(async () => {
  await browser?.close();
  await sites?.close();
});

async function evaluate(task: Task, finalUrl: string, answer = '') {
  await page.goto(finalUrl);
  return evaluateWebarenaTask({
    config: task.meta.config as WebarenaConfig,
    answer,
    page,
    sites: sites.sites,
    timeoutMs: 10_000,
  });
}

describe('evaluateWebarenaTask on real configs', () => {
  it('task 25 (url_match, GOLD in PRED): the query may come in any order; another filter fails', async () => {
    const issues = `${sites.sites.gitlab}/kkroening/ffmpeg-python/-/issues/`;
    const passed = await evaluate(
      tasks.get(25)!,
      `${issues}?state=opened&first_page_size=20&label_name%5B%5D=question&sort=created_date`,
    );
    expect(passed).toMatchObject({ status: 'passed', score: 1 });
    const failed = await evaluate(tasks.get(25)!, `${issues}?state=opened&sort=created_date`);
    expect(failed).toMatchObject({
      status: 'failed',
      score: 0,
      checks: [{ evaluator: 'url_match', kind: 'GOLD in PRED', passed: false }],
    });
  });

  it('task 110 (program_html on a given URL): opens the order page and reads #order_status', async () => {
    const result = await evaluate(tasks.get(110)!, `${sites.sites.shopping_admin}/`);
    expect(result).toMatchObject({
      status: 'passed',
      checks: [{ kind: 'exact_match', reference: 'Canceled', actual: 'Canceled' }],
    });
    expect(page.url()).toBe(`${sites.sites.shopping_admin}/sales/order/view/order_id/302/`);
  });

  it('task 149 (url_match + program_html on the last page): reads the report form the agent filled', async () => {
    const report = `${sites.sites.shopping_admin}/reports/report_sales/sales/`;
    expect(
      await evaluate(tasks.get(149)!, `${report}?from=2%2F1%2F23&to=2%2F28%2F23`),
    ).toMatchObject({ status: 'passed' });
    const wrong = await evaluate(tasks.get(149)!, `${report}?from=2%2F1%2F23&to=3%2F1%2F23`);
    expect(wrong.status).toBe('failed');
    expect(wrong.checks.map((check) => check.passed)).toEqual([true, true, false]);
  });

  it('task 112 (func:gitlab_get_project_memeber_role): reads the role in the members table', async () => {
    expect(await evaluate(tasks.get(112)!, `${sites.sites.gitlab}/`)).toMatchObject({
      status: 'passed',
      checks: [{ actual: 'Guest' }],
    });
    // WebArena task 481: that member is a Developer, not a Guest.
    expect(await evaluate(original.get(481)!, `${sites.sites.gitlab}/`)).toMatchObject({
      status: 'failed',
      checks: [{ actual: 'Developer' }],
    });
  });

  it('task 133 (func:reddit_get_post_url): from a comment page to its post', async () => {
    const result = await evaluate(
      tasks.get(133)!,
      `${sites.sites.reddit}/f/nyc/12345/comment/678/`,
    );
    expect(result.status).toBe('passed');
    expect(page.url()).toBe(`${sites.sites.reddit}/f/nyc/12345/`);
  });

  it('task 104 (func:shopping_get_latest_order_url): asks the shop REST API, opens the order', async () => {
    sites.restRequests.length = 0;
    const result = await evaluate(
      tasks.get(104)!,
      `${sites.sites.shopping}/sales/order/view/order_id/190/`,
    );
    expect(result.status).toBe('passed');
    expect(sites.restRequests).toEqual([
      'POST /rest/default/V1/integration/admin/token',
      'GET /rest/V1/orders',
    ]);
  });

  it('WebArena task 585 (latest review rating and author through the REST API)', async () => {
    const result = await evaluate(
      original.get(585)!,
      `${sites.sites.shopping}/sales/order/view/order_id/190/`,
    );
    expect(result).toMatchObject({
      status: 'passed',
      checks: [{ actual: '100' }, { actual: 'Emma Lopez' }],
    });
    // The helpers log in with the shop admin's account: wrong credentials fail the check, with the reason.
    const denied = await evaluateWebarenaTask({
      config: original.get(585)!.meta.config as WebarenaConfig,
      answer: '',
      page,
      sites: sites.sites,
      accounts: { shopping_site_admin: { username: 'admin', password: 'wrong' } },
    });
    expect(denied.status).toBe('failed');
    expect(denied.checks[0]!.note).toMatch(/HTTP 401/);
  });

  it('a locator that finds nothing fails the check', async () => {
    const result = await evaluate(tasks.get(110)!, `${sites.sites.shopping_admin}/`);
    expect(result.status).toBe('passed');
    const config = structuredClone(tasks.get(110)!.meta.config as WebarenaConfig);
    config.eval.program_html![0]!.url = 'last';
    await page.goto(`${sites.sites.gitlab}/kkroening/ffmpeg-python/-/issues/`);
    const missing = await evaluateWebarenaTask({ config, answer: '', page, sites: sites.sites });
    expect(missing).toMatchObject({ status: 'failed', checks: [{ actual: '', passed: false }] });
  });
});
