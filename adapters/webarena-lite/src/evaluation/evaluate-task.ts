/**
 * Evaluating an episode of a WebArena task the way its config says: every evaluator of
 * `eval.eval_types` in order, on the agent's answer and the live page, combined into one
 * status (all checks must pass, as WebArena multiplies their scores).
 */

import type { Page } from '@dreamgym/browser';
import type { ChatModel } from '@dreamgym/core/models';
import type { WebarenaConfig } from '../config/config-schema.js';
import type { WebarenaSites } from '../config/sites.js';
import { combineChecks, type EvaluationCheck, type TaskEvaluation } from './evaluation-result.js';
import { type WebarenaAccountsInput, WebarenaAccountsSchema } from './helper-functions.js';
import { evaluateProgramHtml } from './program-html.js';
import { evaluateStringMatch } from './string-match.js';
import { evaluateUrlMatch } from './url-match.js';

/** What {@link evaluateWebarenaTask} needs. */
export interface WebarenaEvaluationInput {
  /** The task's config, site placeholders resolved. */
  config: WebarenaConfig;
  /** The agent's final answer (`stop [answer]`; empty when the episode was cut by its budget). */
  answer: string;
  /** The tab the episode ended on. `program_html` checks may navigate it. */
  page: Page;
  /** The site URLs (for the shop's REST API). */
  sites?: WebarenaSites;
  /** LLM judge of `fuzzy_match`; without it those checks are not evaluated. */
  judge?: ChatModel;
  /** Accounts of the evaluation helpers. */
  accounts?: WebarenaAccountsInput;
  /** Milliseconds for a check's page load or REST request. Default 30 000. */
  timeoutMs?: number;
}

/**
 * Evaluates an episode: `string_match` on the answer, `url_match` on the page's URL,
 * `program_html` in the page (which it may navigate, so it runs last).
 *
 * @example
 * const evaluation = await evaluateWebarenaTask({ config, answer: 'Sprite', page, judge });
 * evaluation.status; // 'passed' | 'failed' | 'not_evaluated'
 */
export async function evaluateWebarenaTask(
  input: WebarenaEvaluationInput,
): Promise<TaskEvaluation> {
  const { config, page } = input;
  const spec = config.eval;
  const timeoutMs = input.timeoutMs ?? 30_000;
  const checks: EvaluationCheck[] = [];
  const finalUrl = page.url();
  if (spec.eval_types.includes('string_match') && spec.reference_answers) {
    checks.push(
      ...(await evaluateStringMatch({
        referenceAnswers: spec.reference_answers,
        intent: config.intent,
        stringNote: spec.string_note ?? null,
        answer: input.answer,
        ...(input.judge ? { judge: input.judge } : {}),
      })),
    );
  }
  if (spec.eval_types.includes('url_match') && spec.reference_url) {
    checks.push(evaluateUrlMatch(spec.reference_url, finalUrl, spec.url_note));
  }
  if (spec.eval_types.includes('program_html')) {
    checks.push(
      ...(await evaluateProgramHtml(spec.program_html ?? [], {
        page,
        sites: input.sites ?? {},
        accounts: WebarenaAccountsSchema.parse(input.accounts ?? {}),
        timeoutMs,
        navigationTimeoutMs: timeoutMs,
        intent: config.intent,
        ...(input.judge ? { judge: input.judge } : {}),
      })),
    );
  }
  return combineChecks(checks);
}
