/**
 * What an evaluation of a WebArena task says: every check with its outcome, and the task's
 * status. A check that needs an LLM judge when none is configured is `undefined`: it is
 * reported as not evaluated, never counted as passed.
 */

/** One check of an evaluator. */
export interface EvaluationCheck {
  evaluator: 'string_match' | 'url_match' | 'program_html';
  /** The kind of check: `exact_match`, `must_include`, `fuzzy_match`, `ua_match`, `GOLD in PRED`... */
  kind: string;
  /** What was expected. */
  reference: string;
  /** What was compared (the answer, the URL, the located content). */
  actual: string;
  /** true or false; undefined when it could not be decided (no judge, or the judge failed). */
  passed: boolean | undefined;
  /** Why it was not decided, or what went wrong. */
  note?: string;
}

/** The evaluation of one episode of a task. */
export interface TaskEvaluation {
  /**
   * `passed`: every check passed; `failed`: one failed (then the task failed whatever the
   * undecided checks would say); `not_evaluated`: none failed but some could not be decided.
   */
  status: 'passed' | 'failed' | 'not_evaluated';
  /** 1, 0, or undefined when not evaluated: WebArena's score. */
  score: 1 | 0 | undefined;
  checks: EvaluationCheck[];
}

/** Combines checks into a {@link TaskEvaluation}. */
export function combineChecks(checks: EvaluationCheck[]): TaskEvaluation {
  if (checks.some((check) => check.passed === false)) return { status: 'failed', score: 0, checks };
  if (checks.some((check) => check.passed === undefined))
    return { status: 'not_evaluated', score: undefined, checks };
  return { status: 'passed', score: 1, checks };
}
