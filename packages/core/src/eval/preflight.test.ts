import { describe, expect, it } from 'vitest';
import { OutcomeJudge } from '../experience/outcome-judge.js';
import type { Step, Trajectory } from '../mdp/schemas.js';
import {
  formatPreflight,
  type OnPolicyPreflight,
  preflightOffline,
  preflightVerdict,
} from './preflight.js';

/** `take key 1 from table 1`, `put key 1 in box 1`, `go to box 1`. */
function parse(text: string) {
  const match = /^(take|put|go to) (.+?)(?: (?:from|in) (.+))?$/.exec(text);
  if (!match) throw new Error(`not a command: ${text}`);
  return { type: match[1]!, args: [match[2]!, ...(match[3] ? [match[3]] : [])], text };
}

function episode(id: string, instruction: string, actions: string[], success: boolean): Trajectory {
  const steps: Step[] = actions.map((action, index) => {
    const last = index === actions.length - 1;
    return {
      observation: { text: `step ${index}` },
      action,
      reward: last && success ? 1 : 0,
      done: last && success,
      ...(last && !success ? { info: { truncated: true } } : {}),
    };
  });
  return {
    task: { id, domain: 'toy', instruction, origin: 'seed', meta: {} },
    steps,
    source: 'offline',
    success,
  };
}

/** Goals of one to three named items put away in a box; exploration stops one item short. */
function putAwayData(): Trajectory[] {
  const pool = ['key', 'cup', 'pen', 'book', 'lamp', 'sock', 'coin', 'ball', 'fork', 'shoe'];
  const data: Trajectory[] = [];
  for (const count of [1, 2, 3]) {
    for (let start = 0; start < pool.length; start += 1) {
      const items = Array.from({ length: count }, (_, index) => pool[(start + index * 3) % 10]!);
      const instruction = `put away the ${items.join(' and the ')} in the box.`;
      const actions = items.flatMap((item) => [
        'go to table 1',
        `take ${item} 1 from table 1`,
        'go to box 1',
        `put ${item} 1 in box 1`,
      ]);
      for (let copy = 0; copy < 3; copy += 1) {
        const id = `${count}-${start}-${copy}`;
        data.push(episode(`${id}`, instruction, actions, true));
        data.push(
          episode(`${id}-explore`, instruction, [...actions.slice(0, -4), 'go to table 1'], false),
        );
      }
    }
  }
  return data;
}

describe('preflightOffline', () => {
  const data = putAwayData();

  it('trusts a judge that recognises held-out successes and pays nothing else', () => {
    const offline = preflightOffline(data, (train) =>
      OutcomeJudge.train(train, { parseAction: parse }),
    )!;
    expect(offline.heldOutTrajectories).toBeGreaterThan(0);
    expect(offline.trainTrajectories + offline.heldOutTrajectories).toBe(data.length);
    expect(offline.evaluation.successes).toBeGreaterThan(5);
    const report = preflightVerdict({ offline });
    expect(report.problems).toEqual([]);
    expect(report.trusted).toBe(true);
    expect(formatPreflight(report).at(-1)).toMatch(/passes every check/);
  });

  it('flags a model that never rewards', () => {
    // Only certainty pays: a judge that recognises no success.
    const offline = preflightOffline(data, (train) =>
      OutcomeJudge.train(train, { parseAction: parse, threshold: 0.999999 }),
    )!;
    const report = preflightVerdict({ offline });
    expect(report.trusted).toBe(false);
    expect(report.problems.join('\n')).toMatch(
      /recognises \d+\/\d+ \(.*\) held-out real successes/,
    );
  });

  it('flags a model that over-rewards', () => {
    // Every ended step reads as a success and half-certain ends pay: the first of two is paid.
    const offline = preflightOffline(data, (train) =>
      OutcomeJudge.train(train, { parseAction: parse, threshold: 0.01, counterfactuals: false }),
    )!;
    const report = preflightVerdict({ offline });
    expect(report.trusted).toBe(false);
    // The first of several items put, the object never taken: the counterfactuals show it.
    expect(report.problems.join('\n')).toMatch(/pays \d+\/\d+ \(.*\) counterfactual failures/);
    expect(formatPreflight(report).join('\n')).toMatch(/cannot be trusted on this domain/);
  });
});

describe('preflightVerdict on small samples', () => {
  const offline = (recalled: number, successes: number, paid: number, steps: number) => ({
    trainTrajectories: 287,
    heldOutTrajectories: 73,
    evaluation: {
      successes,
      recalled,
      otherSteps: steps,
      paidOtherSteps: paid,
      counterfactuals: 71,
      paidCounterfactuals: 0,
    },
    recall: recalled / successes,
    falseSuccessRate: paid / steps,
    counterfactualPaidRate: 0,
  });

  it("refuses only what the sample shows with confidence, not a count's noise", () => {
    // MiniWoB++'s held-out figures: 28/31 recalled, 2/81 paid.
    expect(preflightVerdict({ offline: offline(28, 31, 2, 81) }).trusted).toBe(true);
    // 81% recall and 5% false successes: on a small sample within reach of the thresholds,
    // on ten times the sample past them with confidence.
    expect(preflightVerdict({ offline: offline(25, 31, 4, 81) }).trusted).toBe(true);
    const larger = preflightVerdict({ offline: offline(250, 310, 40, 810) });
    expect(larger.problems).toHaveLength(2);
    expect(larger.problems[0]).toMatch(/recognises 250\/310 \(80\.6%, 95% /);
    expect(larger.problems[1]).toMatch(/pays 40\/810 \(4\.9%, 95% /);
  });
});

describe('preflightVerdict on the starting policy', () => {
  const onPolicy = (synthetic: number, real: number, replayed: number, reallySucceeded: number) =>
    ({
      tasks: 40,
      experienceModelId: 'retrieval+judge',
      syntheticSuccess: {
        rate: synthetic / 40,
        interval95: interval(synthetic, 40),
        successes: synthetic,
        episodes: 40,
      },
      realSuccess: {
        rate: real / 40,
        interval95: interval(real, 40),
        successes: real,
        episodes: 40,
      },
      falseSuccessRate: 0.01,
      trueSuccessRecall: 1,
      realSuccesses: real,
      precision: { replayed, reallySucceeded, rate: reallySucceeded / replayed },
    }) satisfies OnPolicyPreflight;
  /** A rough 95% interval, wide enough for the test's purposes. */
  const interval = (successes: number, episodes: number): [number, number] => {
    const rate = successes / episodes;
    const half = 1.96 * Math.sqrt((rate * (1 - rate)) / episodes) + 0.02;
    return [Math.max(0, rate - half), Math.min(1, rate + half)];
  };

  it("flags the new user's domain: 35 synthetic successes of which 11 real, 87.5% vs 27.5%", () => {
    const report = preflightVerdict({ onPolicy: onPolicy(35, 11, 35, 11) });
    expect(report.trusted).toBe(false);
    expect(report.problems).toHaveLength(2);
    expect(report.problems[0]).toMatch(/synthetic successes, 11\/35 \(31\.4%.*\) succeed/);
    expect(report.problems[1]).toMatch(/87\.5% in the synthetic environment and 27\.5%/);
  });

  it('trusts a synthetic environment whose successes replay as real', () => {
    expect(preflightVerdict({ onPolicy: onPolicy(10, 11, 10, 10) }).trusted).toBe(true);
  });
});
