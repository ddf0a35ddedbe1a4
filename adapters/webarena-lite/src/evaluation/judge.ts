/**
 * The LLM judge of WebArena's fuzzy checks, through any `ChatModel`: whether an answer means
 * the same as a reference (`fuzzy_match`), and whether an agent's report on an unachievable
 * task names the reason it cannot be done (`ua_match`). Verdicts are structured output.
 */
import type { ChatModel } from '@dreamgym/core/models';
import { z } from 'zod';

const FuzzyVerdictSchema = z.object({
  verdict: z.enum(['correct', 'partially correct', 'incorrect']),
});

const ReasonVerdictSchema = z.object({
  verdict: z.enum(['same', 'different']),
});

/**
 * True when `model` grades `answer` as fully correct for `question` against `reference`
 * (a partially correct answer fails, as in WebArena).
 */
export async function judgeFuzzyMatch(
  model: ChatModel,
  input: { question: string; reference: string; answer: string },
): Promise<boolean> {
  const response = await model.completeStructured({
    messages: [
      {
        role: 'system',
        content:
          'You grade answers to questions about websites. Wording may differ from the reference; judge whether the answer means the same thing. "N/A" stands for "the task cannot be done".',
      },
      {
        role: 'user',
        content: `Question: ${input.question}\nReference answer: ${input.reference}\nAnswer to grade: ${input.answer}\n\nIs the answer correct, partially correct or incorrect? Reply with JSON {"verdict": "correct" | "partially correct" | "incorrect"}.`,
      },
    ],
    schema: FuzzyVerdictSchema,
    schemaName: 'fuzzy_match_verdict',
    temperature: 0,
  });
  return response.value.verdict === 'correct';
}

/**
 * True when `model` finds that `report` (the agent's answer on a task that cannot be done)
 * refers to `reason`, the reason the task cannot be done, even implicitly.
 */
export async function judgeUnachievableReason(
  model: ChatModel,
  input: { task: string; reason: string; report: string },
): Promise<boolean> {
  const response = await model.completeStructured({
    messages: [
      {
        role: 'system',
        content:
          'You compare why a web task cannot be done with what an agent reported after trying it.',
      },
      {
        role: 'user',
        content: `Task: ${input.task}\nWhy it cannot be done: ${input.reason}\nThe agent's report: ${input.report}\n\nDoes the report refer to that reason, even implicitly? Reply with JSON {"verdict": "same" | "different"}.`,
      },
    ],
    schema: ReasonVerdictSchema,
    schemaName: 'unachievable_reason_verdict',
    temperature: 0,
  });
  return response.value.verdict === 'same';
}
