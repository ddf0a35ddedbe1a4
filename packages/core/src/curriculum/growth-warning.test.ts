import { describe, expect, it } from 'vitest';
import { emptyGrowthWarning } from './growth-warning.js';

describe('emptyGrowthWarning', () => {
  it('says nothing when a task was added or none was expanded', () => {
    expect(emptyGrowthWarning({ expanded: 2, asked: 4, added: 1, rejected: [] })).toBeUndefined();
    expect(emptyGrowthWarning({ expanded: 0, asked: 0, added: 0, rejected: [] })).toBeUndefined();
  });

  it('tallies the reasons, quotes the first rejection and advises on each reason', () => {
    const warning = emptyGrowthWarning({
      expanded: 1,
      asked: 2,
      added: 0,
      rejected: [
        {
          reason: 'mutation-failed',
          parentId: 'p',
          detail: 'mutateTask() returned no task for p.',
        },
        {
          reason: 'near-duplicate',
          parentId: 'p',
          instruction: 'go to room 2',
          detail:
            'cosine similarity 0.950 >= 0.9 to "go to room 3" (task p), from the same first state',
        },
      ],
    });
    expect(warning).toBe(
      'the curriculum added no task: all 2 candidates for 1 expanded task were rejected (1 near-duplicate, 1 mutation-failed), e.g. "p": mutateTask() returned no task for p. What to do: ' +
        "near-duplicates are instructions within the task generator's similarityThreshold of a pool task's from the same first state: instructions that differ only in a number or one word score above 0.9 with the hashing embedder, so raise the threshold for such a domain; the adapter's mutateTask() returned no task for these parents: make it vary them (docs/adding-a-benchmark.md, step 7).",
    );
  });

  it('says when the generator wrote nothing and rejected nothing', () => {
    expect(emptyGrowthWarning({ expanded: 3, asked: 6, added: 0, rejected: [] })).toBe(
      'the curriculum added no task: the task generator wrote none of the 6 asked for 3 expanded tasks, and rejected none. Check that it can vary these tasks (docs/adding-a-benchmark.md, step 7).',
    );
  });
});
