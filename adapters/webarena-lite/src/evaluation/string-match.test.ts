import { OpenAICompatibleChatModel } from '@dreamgym/core/models';
import { type OpenAICompatibleServer, startOpenAICompatibleServer } from '@dreamgym/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebarenaConfig } from '../config/config-schema.js';
import { realTasks } from '../sites.test-support.js';
import { evaluateStringMatch } from './string-match.js';

let judgeServer: OpenAICompatibleServer;
/** The verdict the judge gives next, and the prompts it saw. */
let verdict: string;
const prompts: string[] = [];
let configs: Map<number, WebarenaConfig>;

beforeAll(async () => {
  judgeServer = await startOpenAICompatibleServer({
    chat: (request) => {
      prompts.push(String(request.messages.at(-1)?.content));
      return JSON.stringify({ verdict });
    },
  });
  const tasks = await realTasks([0, 1, 27, 81, 114]);
  configs = new Map([...tasks].map(([id, task]) => [id, task.meta.config as WebarenaConfig]));
});

afterAll(async () => {
  await judgeServer?.close();
});

const judge = () =>
  new OpenAICompatibleChatModel({ baseURL: judgeServer.url, model: 'judge', maxRetries: 0 });

function check(id: number, answer: string, withJudge = false) {
  const config = configs.get(id)!;
  return evaluateStringMatch({
    referenceAnswers: config.eval.reference_answers!,
    intent: config.intent,
    stringNote: config.eval.string_note ?? null,
    answer,
    ...(withJudge ? { judge: judge() } : {}),
  });
}

describe('evaluateStringMatch on real WebArena-Lite configs', () => {
  it('task 0 (must_include, three products): passes only with all three', async () => {
    const passed = await check(
      0,
      'Impulse Duffle, Overnight Duffle and Hawkeye Yoga Short-32-Blue',
    );
    expect(passed.map((result) => result.passed)).toEqual([true, true, true]);
    const partial = await check(0, 'Impulse Duffle and Overnight Duffle');
    expect(partial.map((result) => result.passed)).toEqual([true, true, false]);
    expect(partial[2]).toMatchObject({
      evaluator: 'string_match',
      kind: 'must_include',
      reference: 'Hawkeye Yoga Short-32-Blue',
    });
  });

  it('task 27 (exact_match N/A) and task 81 (must_include written as one string)', async () => {
    expect((await check(27, 'n/a'))[0]!.passed).toBe(true);
    expect((await check(27, 'There is one negative review'))[0]!.passed).toBe(false);
    expect((await check(81, 'Only yjlou has access'))[0]!.passed).toBe(true);
  });

  it('task 1 (fuzzy_match): not evaluated without a judge, never passed', async () => {
    const [result] = await check(1, 'Pittsburgh International Airport, Findlay Township, 15231');
    expect(result).toMatchObject({ kind: 'fuzzy_match', passed: undefined });
    expect(result!.note).toMatch(/needs an LLM judge/);
  });

  it('task 1 (fuzzy_match): the judge decides; partially correct fails', async () => {
    verdict = 'correct';
    expect(
      (await check(1, 'Pittsburgh International Airport, Findlay Township, 15231', true))[0]!
        .passed,
    ).toBe(true);
    expect(prompts.at(-1)).toContain(
      'Reference answer: Pittsburgh International Airport, Southern Beltway',
    );
    expect(prompts.at(-1)).toContain(
      'Question: Tell me the full address of all international airports',
    );
    verdict = 'partially correct';
    expect((await check(1, 'Pittsburgh', true))[0]!.passed).toBe(false);
    // An empty answer fails without asking the judge.
    const asked = prompts.length;
    expect((await check(1, '', true))[0]!.passed).toBe(false);
    expect(prompts.length).toBe(asked);
  });

  it('task 114 (fuzzy_match N/A): N/A passes at once; another report goes to the judge with the reason', async () => {
    expect((await check(114, 'N/A'))[0]).toMatchObject({ kind: 'fuzzy_match', passed: true });
    expect((await check(114, 'I cannot add order history here'))[0]).toMatchObject({
      kind: 'ua_match',
      passed: undefined,
    });
    verdict = 'same';
    expect((await check(114, 'I cannot add order history here', true))[0]).toMatchObject({
      kind: 'ua_match',
      passed: true,
    });
    expect(prompts.at(-1)).toContain(
      'Why it cannot be done: System message: We cannot add order history.',
    );
    verdict = 'different';
    expect((await check(114, 'Done, I added it', true))[0]!.passed).toBe(false);
  });

  it('a judge that answers nonsense leaves the check undecided, with the reason', async () => {
    verdict = 'maybe';
    const [result] = await check(1, 'Pittsburgh International Airport', true);
    expect(result!.passed).toBeUndefined();
    expect(result!.note).toMatch(/the judge failed/);
  });
});
