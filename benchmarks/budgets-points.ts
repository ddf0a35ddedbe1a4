/**
 * A learning curve's points on disk, for the budgets experiments (`budgets-driver.ts`): each point's folder keeps
 * the policy as it was when the point was reached and `cost.json` (what reaching it took).
 * Points are kept from the loop's `onIteration` as its run crosses them, so a resumed run
 * keeps exactly the points its checkpoint does not cover.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { EvaluationMetrics, IterationMetrics } from '@dreamgym/core';
import {
  type BudgetCondition,
  type CurvePoint,
  greedyOn,
  type SplitResult,
} from './budgets-report.js';

/** What reaching a curve point took, from the starting policy. */
export interface PointCost {
  realTransitions: number;
  syntheticTransitions: number;
  /** Policy updates (loop iterations). */
  updates: number;
  /** Training wall time (evaluations and behaviour cloning not counted). */
  wallSeconds: number;
  /** A synthetic run's updates were given (`--dreamgym-updates`), not matched to its seed's real-env GRPO. */
  updatesGiven?: boolean;
}

/** The cost a point's folder records, or nothing when the point was not reached yet. */
export async function readCost(directory: string): Promise<PointCost | undefined> {
  const file = join(directory, 'cost.json');
  return existsSync(file) ? (JSON.parse(await readFile(file, 'utf8')) as PointCost) : undefined;
}

/** Records a point as reached (written after its policy, so a point with a cost is whole). */
export async function writeCost(directory: string, cost: PointCost): Promise<void> {
  await mkdir(directory, { recursive: true });
  await writeFile(join(directory, 'cost.json'), `${JSON.stringify(cost)}\n`);
}

/** The run's iteration records so far (the loop appends each before `onIteration`). */
export async function runMetrics(runDirectory: string): Promise<IterationMetrics[]> {
  return (await readFile(join(runDirectory, 'metrics.jsonl'), 'utf8'))
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as IterationMetrics);
}

/** The marks the last iteration of `records` crossed: past the one before, up to its own. */
export function marksCrossed(
  records: readonly IterationMetrics[],
  wanted: readonly number[],
): number[] {
  const before = records.at(-2)?.realTransitions ?? 0;
  const after = records.at(-1)!.realTransitions;
  return wanted.filter((mark) => before < mark && mark <= after);
}

/** The point of `condition` and `seed` kept at `mark` real transitions. */
export function findPoint(
  curves: readonly CurvePoint[],
  condition: BudgetCondition,
  seed: number,
  mark: number,
): CurvePoint | undefined {
  return curves.find(
    (point) => point.condition === condition && point.seed === seed && point.mark === mark,
  );
}

/**
 * Whether every evaluation of `point` on `splits` is in the results (a final point's sampled
 * and gap ones too).
 */
export function measured(
  point: CurvePoint | undefined,
  final: boolean,
  splits: readonly string[],
): boolean {
  if (!point || !splits.every((split) => greedyOn(point, split))) return false;
  if (!final) return true;
  return Boolean(
    splits.every((split) => point.sampled?.[split]) &&
      point.syntheticToRealGap?.synthetic !== undefined &&
      point.syntheticToRealGap.real !== undefined,
  );
}

/** An evaluation's success on one split, as a point records it. */
export function splitResult(metrics: EvaluationMetrics): SplitResult {
  return {
    successRate: metrics.successRate,
    interval: [...metrics.successInterval95],
    episodes: metrics.episodes,
  };
}
