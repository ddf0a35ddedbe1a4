/**
 * What a curriculum growth that added no task says: every candidate of the iteration was
 * rejected (or none was written), why, and what to do. A run whose every variant is rejected
 * trains on its seed tasks only, which nothing else would show.
 */
import type { TaskRejection, TaskRejectionReason } from './task-generator.js';

/** What to do about each kind of rejection, in the order the advice is given. */
const ADVICE: Record<TaskRejectionReason, string> = {
  'exact-duplicate':
    "a variant is a duplicate when its instruction is a pool task's (case and spacing ignored) and both start from the same first state (or one records none): make the generator change what the instruction says (its goal, its entities), or give tasks that share a sentence their own first state (`initialObservation`)",
  'near-duplicate':
    "near-duplicates are instructions within the task generator's similarityThreshold of a pool task's from the same first state: instructions that differ only in a number or one word score above 0.9 with the hashing embedder, so raise the threshold for such a domain",
  'mutation-failed':
    "the adapter's mutateTask() returned no task for these parents: make it vary them",
  invalid: "the generated instructions failed validation: see the task generator's rules",
  'malformed-output':
    "the task generator's model did not answer in the asked format: check the model and its server",
  surplus: 'the generator wrote more tasks than asked for',
};

/**
 * A warning for a growth that expanded `expanded` tasks, asked the generator for `asked`
 * new ones and added none, or undefined when it added some.
 *
 * @example
 * emptyGrowthWarning({ expanded: 2, asked: 4, added: 0, rejected })
 * // 'the curriculum added no task: all 4 candidates for 2 expanded tasks were rejected (4 exact-duplicate), e.g. ... What to do: ...'
 */
export function emptyGrowthWarning(growth: {
  expanded: number;
  asked: number;
  added: number;
  rejected: readonly TaskRejection[];
}): string | undefined {
  const { expanded, asked, added, rejected } = growth;
  if (added > 0 || expanded === 0) return undefined;
  const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`;
  const where = `for ${plural(expanded, 'expanded task')}`;
  if (rejected.length === 0) {
    return `the curriculum added no task: the task generator wrote none of the ${asked} asked ${where}, and rejected none. Check that it can vary these tasks (docs/adding-a-benchmark.md, step 7).`;
  }
  const counts = new Map<TaskRejectionReason, number>();
  for (const rejection of rejected) {
    counts.set(rejection.reason, (counts.get(rejection.reason) ?? 0) + 1);
  }
  const reasons = (Object.keys(ADVICE) as TaskRejectionReason[]).filter((reason) =>
    counts.has(reason),
  );
  const tally = reasons.map((reason) => `${counts.get(reason)} ${reason}`).join(', ');
  const example = rejected[0]!;
  const instance = `e.g. "${example.instruction ?? example.parentId}": ${example.detail.replace(/\.$/, '')}`;
  const advice = reasons.map((reason) => ADVICE[reason]).join('; ');
  return `the curriculum added no task: all ${plural(rejected.length, 'candidate')} ${where} were rejected (${tally}), ${instance}. What to do: ${advice} (docs/adding-a-benchmark.md, step 7).`;
}
