/**
 * The command line every budgets driver (`alfworld-budgets.ts`, `miniwob-budgets.ts`) shares:
 * seeds, conditions, curve marks, budgets, RL settings and folders (`budgets-driver.ts` runs
 * what it names).
 */
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { BUDGET_CONDITIONS, type BudgetCondition } from './budgets-report.js';

/** The flags every budgets driver takes; a domain adds its own. */
const BUDGET_FLAGS = {
  seeds: { type: 'string', default: '1,2' },
  conditions: { type: 'string', default: 'start,real-grpo,dreamgym,dreamgym-s2r' },
  marks: { type: 'string', default: '3000,10000,30000,80000' },
  's2r-budget': { type: 'string', default: '5000' },
  'gap-tasks': { type: 'string', default: '48' },
  'dreamgym-updates': { type: 'string' },
  'entropy-coefficient': { type: 'string' },
  'rl-learning-rate': { type: 'string' },
  scratch: { type: 'string' },
  out: { type: 'string' },
} as const;

/** The whole numbers of a comma-separated flag value; the error names the flag. */
export function wholeNumbers(flag: string, text: string): number[] {
  return text
    .split(',')
    .filter(Boolean)
    .map((item) => {
      const value = Number(item);
      if (!Number.isInteger(value) || value < 0) {
        throw new Error(`--${flag}: ${item} is not a whole number.`);
      }
      return value;
    });
}

/** A flag's value as a positive number; the error names the flag. */
function positiveNumber(flag: string, text: string): number {
  const value = Number(text);
  if (!(value > 0) || !Number.isFinite(value)) {
    throw new Error(`--${flag}: ${text} is not a positive number.`);
  }
  return value;
}

/** What one invocation runs, from `BUDGET_FLAGS`. */
export interface BudgetRun {
  seeds: number[];
  conditions: BudgetCondition[];
  /** Real-env RL's curve points, ascending; the last is its final budget. */
  marks: number[];
  s2rBudget: number;
  /** Training tasks played in both environments at the final points. */
  gapTaskCount: number;
  /**
   * DreamGym's (and its ablations') updates; by default as many as real-env GRPO of the same
   * seed made to reach the final budget. For runs whose real-env GRPO is not made.
   */
  dreamgymUpdates?: number;
  /** RL settings over the domain's (`--entropy-coefficient`, `--rl-learning-rate`). */
  trainer: { entropyCoefficient?: number; learningRate?: number };
  scratch: string;
  resultsDirectory: string;
}

/**
 * The command line: the shared flags and the domain's `extra` ones (string options), and the
 * run the shared ones name; the scratch folder defaults to `scratch/<benchmark>`.
 */
export function budgetCommandLine<Flag extends string>(
  benchmark: string,
  extra: Record<Flag, { type: 'string'; default?: string }>,
): { run: BudgetRun; values: Partial<Record<Flag, string>> } {
  const { values } = parseArgs({ options: { ...BUDGET_FLAGS, ...extra } });
  const strings = values as Partial<Record<keyof typeof BUDGET_FLAGS | Flag, string>>;
  return { run: budgetRun(strings, benchmark), values: strings };
}

function budgetRun(
  values: Partial<Record<keyof typeof BUDGET_FLAGS, string>>,
  benchmark: string,
): BudgetRun {
  const conditions = values.conditions!.split(',').filter(Boolean) as BudgetCondition[];
  for (const condition of conditions) {
    if (!BUDGET_CONDITIONS.includes(condition)) {
      throw new Error(
        `--conditions: unknown condition ${condition} (known: ${BUDGET_CONDITIONS.join(', ')}).`,
      );
    }
  }
  const root = resolve(import.meta.dirname, '..');
  return {
    seeds: wholeNumbers('seeds', values.seeds!),
    conditions,
    marks: wholeNumbers('marks', values.marks!).sort((a, b) => a - b),
    s2rBudget: wholeNumbers('s2r-budget', values['s2r-budget']!)[0]!,
    gapTaskCount: wholeNumbers('gap-tasks', values['gap-tasks']!)[0]!,
    trainer: {
      ...(values['entropy-coefficient'] !== undefined && {
        entropyCoefficient: positiveNumber('entropy-coefficient', values['entropy-coefficient']),
      }),
      ...(values['rl-learning-rate'] !== undefined && {
        learningRate: positiveNumber('rl-learning-rate', values['rl-learning-rate']),
      }),
    },
    ...(values['dreamgym-updates'] !== undefined && {
      dreamgymUpdates: wholeNumbers('dreamgym-updates', values['dreamgym-updates'])[0]!,
    }),
    scratch: resolve(values.scratch ?? join(root, 'scratch', benchmark)),
    resultsDirectory: values.out ? resolve(values.out) : resolve(import.meta.dirname, 'results'),
  };
}
