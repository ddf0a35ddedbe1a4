/**
 * `string_match`: the agent's final answer (`stop [answer]`) against the config's reference
 * answers.
 */
import type { ChatModel } from '@dreamgym/core/models';
import type { ReferenceAnswers } from '../config/config-schema.js';
import type { EvaluationCheck } from './evaluation-result.js';
import { judgeFuzzyMatch, judgeUnachievableReason } from './judge.js';
import {
  cleanAnswer,
  exactMatch,
  mustExclude,
  mustIncludeAny,
  parseInteger,
  satisfiesCondition,
} from './text-matching.js';

/** What {@link evaluateStringMatch} reads. */
export interface StringMatchInput {
  referenceAnswers: ReferenceAnswers;
  /** The task's intent (the judge's question). */
  intent: string;
  /** Why the task cannot be done, for `fuzzy_match: "N/A"`. */
  stringNote?: string | null;
  /** The agent's answer. */
  answer: string;
  /** The judge for `fuzzy_match`; without it those checks are not evaluated. */
  judge?: ChatModel;
}

const NO_JUDGE = 'needs an LLM judge: configure `judge` (a ChatModel) to evaluate fuzzy_match';

async function judged(
  call: () => Promise<boolean>,
): Promise<{ passed: boolean | undefined; note?: string }> {
  try {
    return { passed: await call() };
  } catch (error) {
    return {
      passed: undefined,
      note: `the judge failed: ${(error as Error).message.split('\n')[0]}`,
    };
  }
}

/** Runs every string check of the reference answers. */
export async function evaluateStringMatch(input: StringMatchInput): Promise<EvaluationCheck[]> {
  const checks: EvaluationCheck[] = [];
  const answer = input.answer;
  const add = (kind: string, reference: string, passed: boolean | undefined, note?: string) =>
    checks.push({
      evaluator: 'string_match',
      kind,
      reference,
      actual: answer,
      passed,
      ...(note ? { note } : {}),
    });
  const answers = input.referenceAnswers;
  if (answers.exact_match !== undefined)
    add('exact_match', answers.exact_match, exactMatch(answers.exact_match, answer));
  for (const phrase of answers.must_include ?? [])
    add('must_include', phrase, mustIncludeAny(phrase, answer));
  for (const phrase of answers.must_exclude ?? [])
    add('must_exclude', phrase, mustExclude(phrase, answer));
  if (answers.one_of) {
    add(
      'one_of',
      answers.one_of.join(' | '),
      answers.one_of.some((phrase) => cleanAnswer(answer).includes(cleanAnswer(phrase))),
    );
  }
  for (const condition of answers.required_values ?? []) {
    const value = parseInteger(answer);
    add('required_values', condition, value !== undefined && satisfiesCondition(value, condition));
  }
  const fuzzy = answers.fuzzy_match;
  if (fuzzy === 'N/A') {
    if (exactMatch('N/A', answer)) add('fuzzy_match', 'N/A', true);
    else if (!input.judge) add('ua_match', input.stringNote ?? '', undefined, NO_JUDGE);
    else {
      const judge = input.judge;
      const verdict = await judged(() =>
        judgeUnachievableReason(judge, {
          task: input.intent,
          reason: input.stringNote ?? '',
          report: cleanAnswer(answer),
        }),
      );
      add('ua_match', input.stringNote ?? '', verdict.passed, verdict.note);
    }
  } else if (fuzzy !== undefined) {
    const reference = fuzzy.join(', ');
    if (cleanAnswer(answer) === '') add('fuzzy_match', reference, reference === '');
    else if (!input.judge) add('fuzzy_match', reference, undefined, NO_JUDGE);
    else {
      const judge = input.judge;
      const verdict = await judged(() =>
        judgeFuzzyMatch(judge, { question: input.intent, reference, answer: cleanAnswer(answer) }),
      );
      add('fuzzy_match', reference, verdict.passed, verdict.note);
    }
  }
  return checks;
}
