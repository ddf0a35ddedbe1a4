import { ConfigError } from '@dreamgym/core';
import { ALFWORLD_SPLITS, type AlfworldSplit, AlfworldSplitSchema } from '../task-types.js';

/**
 * The splits a loader reads: `['train']` when none are given, so that evaluation data
 * (`valid_unseen` above all) is only read when asked for by name.
 *
 * @throws ConfigError naming the valid splits when one is unknown.
 */
export function resolveSplits(splits: readonly string[] | undefined): AlfworldSplit[] {
  if (splits === undefined) return ['train'];
  return splits.map((split) => {
    const parsed = AlfworldSplitSchema.safeParse(split);
    if (!parsed.success) {
      throw new ConfigError(
        `Unknown ALFWorld split "${split}". Valid splits: ${ALFWORLD_SPLITS.join(', ')}.`,
        { field: 'splits' },
      );
    }
    return parsed.data;
  });
}
