/**
 * `program_html`: content located in the live page after the episode (on the page it ended
 * on, or on a page the check opens) against the required contents.
 */
import type { ChatModel } from '@dreamgym/core/models';
import type { ProgramHtmlCheck } from '../config/config-schema.js';
import type { EvaluationCheck } from './evaluation-result.js';
import { parseHelperCall } from './helper-call.js';
import { type HelperContext, runHelperCall } from './helper-functions.js';
import { judgeFuzzyMatch } from './judge.js';
import {
  exactMatch,
  mustExclude,
  mustIncludeAny,
  parseInteger,
  satisfiesCondition,
  unescapeHtml,
} from './text-matching.js';

/** What {@link evaluateProgramHtml} needs besides the checks. */
export interface ProgramHtmlContext extends HelperContext {
  /** The task's intent, for the judge. */
  intent: string;
  judge?: ChatModel;
  /** Milliseconds a check's page may take to load. */
  navigationTimeoutMs: number;
}

/**
 * Evaluates JavaScript from a config in the page: an expression (`document.querySelector(...)
 * .outerText`), or a function (`() => ...`), which is called, as WebArena's Python harness does.
 */
function evaluateSource(page: ProgramHtmlContext['page'], source: string): Promise<unknown> {
  const isFunction = /^\s*(?:async\s+)?(?:function\b|\([^)]*\)\s*=>|[A-Za-z_$][\w$]*\s*=>)/.test(
    source,
  );
  return page.evaluate(isFunction ? `(${source})()` : source);
}

function helperCall(text: string) {
  const call = parseHelperCall(text);
  // Configs are validated on load; this guards configs built by hand.
  if ('error' in call) throw new Error(call.error);
  return call;
}

/** The located content of one check, or undefined when the page does not have it. */
async function locate(
  check: ProgramHtmlCheck,
  context: ProgramHtmlContext,
): Promise<{ content: string | undefined; url: string }> {
  const { page } = context;
  let target = check.url;
  if (target.startsWith('func:'))
    target = await runHelperCall(helperCall(target.slice(5)), context);
  if (target !== 'last') {
    await page.goto(target, { waitUntil: 'load', timeout: context.navigationTimeoutMs });
  }
  const url = page.url();
  const locator = check.locator;
  if (locator.trim() === '') return { content: unescapeHtml(await page.content()), url };
  if (locator.startsWith('func:'))
    return {
      content: await runHelperCall(helperCall(locator.slice(5)), { ...context, page }),
      url,
    };
  for (const action of check.prep_actions ?? []) {
    await evaluateSource(page, action).catch(() => undefined);
  }
  if (locator.startsWith('lambda:')) {
    const value = await evaluateSource(page, locator.slice('lambda:'.length)).catch(
      () => undefined,
    );
    return {
      content:
        value === undefined || value === null || value === '' || value === false
          ? undefined
          : String(value),
      url,
    };
  }
  // A locator that throws (the element is not there) locates nothing: the page is wrong.
  const value = await evaluateSource(page, locator).catch(() => '');
  return { content: unescapeHtml(value === undefined || value === null ? '' : String(value)), url };
}

/** Runs the `program_html` checks in order; the page navigates as they ask. */
export async function evaluateProgramHtml(
  checks: readonly ProgramHtmlCheck[],
  context: ProgramHtmlContext,
): Promise<EvaluationCheck[]> {
  const results: EvaluationCheck[] = [];
  for (const check of checks) {
    const where = `${check.url} ${check.locator}`.trim();
    const add = (
      kind: string,
      reference: string,
      actual: string,
      passed: boolean | undefined,
      note?: string,
    ) =>
      results.push({
        evaluator: 'program_html',
        kind,
        reference,
        actual,
        passed,
        ...(note ? { note } : {}),
      });
    let located: { content: string | undefined; url: string };
    try {
      located = await locate(check, context);
    } catch (error) {
      add(
        'locate',
        where,
        '',
        false,
        `could not locate the content: ${(error as Error).message.split('\n')[0]}`,
      );
      continue;
    }
    const content = located.content;
    const required = check.required_contents;
    if (content === undefined) {
      add('locate', where, '', false, `nothing found on ${located.url}`);
      continue;
    }
    if (required.exact_match !== undefined)
      add('exact_match', required.exact_match, content, exactMatch(required.exact_match, content));
    for (const phrase of required.must_include ?? [])
      add('must_include', phrase, content, mustIncludeAny(phrase, content));
    for (const phrase of required.must_exclude ?? [])
      add('must_exclude', phrase, content, mustExclude(phrase, content));
    for (const condition of required.required_values ?? []) {
      const value = parseInteger(content);
      add(
        'required_values',
        condition,
        content,
        value !== undefined && satisfiesCondition(value, condition),
      );
    }
    if (required.fuzzy_match !== undefined) {
      const reference = required.fuzzy_match.join(', ');
      if (!context.judge) {
        add(
          'fuzzy_match',
          reference,
          content,
          undefined,
          'needs an LLM judge: configure `judge` (a ChatModel) to evaluate fuzzy_match',
        );
      } else {
        try {
          add(
            'fuzzy_match',
            reference,
            content,
            await judgeFuzzyMatch(context.judge, {
              question: context.intent,
              reference,
              answer: content,
            }),
          );
        } catch (error) {
          add(
            'fuzzy_match',
            reference,
            content,
            undefined,
            `the judge failed: ${(error as Error).message.split('\n')[0]}`,
          );
        }
      }
    }
  }
  return results;
}
