/**
 * The budgets report's final table and claims read the points the protocol asks for: each
 * condition's final mark only, and a synthetic run's matched updates before given ones.
 */
import { describe, expect, it } from 'vitest';
import {
  type BudgetCondition,
  budgetClaims,
  budgetTable,
  type CurvePoint,
  finalMark,
  finalPoints,
} from '../benchmarks/budgets-report.js';

const settings = {
  splits: ['eval'],
  labels: { domain: 'Test', environment: 'the real environment', trainingTasks: 'training tasks' },
  finalBudget: 80_000,
  s2rBudget: 5_000,
  marks: [3_000, 80_000],
  gapTaskCount: 0,
  startHow: 'behaviour cloning',
};

/** A final point with `successes` of 100 greedy episodes on `eval`. */
function point(
  condition: BudgetCondition,
  seed: number,
  successes: number,
  extra: Partial<CurvePoint> = {},
): CurvePoint {
  const mark = finalMark(condition, settings);
  return {
    condition,
    seed,
    mark,
    realTransitions: mark,
    syntheticTransitions: 0,
    updates: 1_000,
    wallSeconds: 60,
    final: true,
    eval: { successRate: successes / 100, interval: [0, 1], episodes: 100 },
    ...extra,
  } as CurvePoint;
}

describe('budgets report final points', () => {
  it('leaves out a given-updates point while a seed has a matched one', () => {
    const curves = [
      point('dreamgym', 1, 80, { updates: 1_956 }),
      point('dreamgym', 2, 40, { updates: 1_230, updatesGiven: true }),
    ];
    expect(finalPoints(curves, 'dreamgym', settings).map((p) => p.seed)).toEqual([1]);
    const row = budgetTable(curves, settings).find((r) => r.condition === 'dreamgym')!;
    expect(row.seeds).toEqual([1]);
    expect(row.updates).toBe(1_956);
    expect(row.greedy.get('eval')?.successRate).toBe(0.8);
  });

  it('pools given-updates points when no seed has a matched one', () => {
    const curves = [
      point('dreamgym', 1, 80, { updatesGiven: true }),
      point('dreamgym', 2, 40, { updatesGiven: true }),
    ];
    const row = budgetTable(curves, settings).find((r) => r.condition === 'dreamgym')!;
    expect(row.seeds).toEqual([1, 2]);
    expect(row.greedy.get('eval')?.successRate).toBe(0.6);
  });

  it('never pools a run stopped at an earlier mark with one at the final mark', () => {
    const curves = [
      point('real-grpo', 1, 90),
      point('real-grpo', 2, 50, { mark: 3_000, realTransitions: 3_000 }),
    ];
    expect(finalPoints(curves, 'real-grpo', settings).map((p) => p.seed)).toEqual([1]);
  });

  it('states the claims from the matched points', () => {
    const curves = [
      point('start', 1, 50),
      point('real-grpo', 1, 90),
      point('dreamgym', 1, 88),
      point('dreamgym', 2, 10, { updatesGiven: true }),
      point('dreamgym-s2r', 1, 70),
    ];
    const [premise, matches, beats] = budgetClaims(curves, settings);
    expect(premise?.supported).toBe(true);
    expect(matches?.supported).toBe(true);
    expect(matches?.note).toContain('88.0%');
    expect(beats?.supported).toBe(false);
  });

  it('states each claim against PPO as well as GRPO once PPO has a final point', () => {
    const grpoOnly = [
      point('start', 1, 50),
      point('real-grpo', 1, 80),
      point('dreamgym', 1, 75),
      point('dreamgym-s2r', 1, 79),
    ];
    expect(budgetClaims(grpoOnly, settings).map((claim) => claim.baseline)).toEqual([
      'real-grpo',
      'real-grpo',
      'real-grpo',
    ]);
    // PPO well above DreamGym: DreamGym matches GRPO (within 10%) but not PPO.
    const claims = budgetClaims([...grpoOnly, point('real-ppo', 1, 95)], settings);
    expect(claims.map((claim) => [claim.baseline, claim.supported])).toEqual([
      ['real-grpo', true],
      ['real-ppo', true],
      ['real-grpo', true],
      ['real-ppo', false],
      ['real-grpo', false],
      ['real-ppo', false],
    ]);
    const againstPpo = claims[3]!;
    expect(againstPpo.claim).toContain('real-env PPO');
    expect(againstPpo.note).toContain('95.0%');
    expect(againstPpo.note).toContain('(seed 1)');
    expect(againstPpo.figures.realRl?.successRate).toBe(0.95);
  });

  it("reads a baseline's premise against the start of its own seeds", () => {
    // Seed 2's start is far better than seed 1's; PPO ran on seed 1 only.
    const curves = [
      point('start', 1, 20),
      point('start', 2, 80),
      point('real-grpo', 1, 60),
      point('real-grpo', 2, 60),
      point('real-ppo', 1, 45),
    ];
    const [grpo, ppo] = budgetClaims(curves, settings);
    expect(grpo?.baseline).toBe('real-grpo');
    expect(grpo?.figures.start?.successRate).toBe(0.5);
    expect(ppo?.baseline).toBe('real-ppo');
    expect(ppo?.figures.start?.successRate).toBe(0.2);
    expect(ppo?.supported).toBe(true);
    expect(ppo?.note).toContain('against the start 20.0% [13.3, 28.9] n=100 (seed 1)');
  });
});
