/**
 * Which MiniWoB++ tasks and seeds a dataset holds: the task set, and the split by seed.
 */

/**
 * The twelve tasks of the MiniWoB++ experiment, chosen before any result was seen, for what
 * a policy that scores candidate actions by hashed word features can learn at all: the
 * element to act on is named by words of the instruction that come from a small vocabulary
 * (`ONE`/`TWO`, `Tab #2`, button labels, ordinals), or is the same on every page (the one
 * button, the dialog's close button, the submit after typing the quoted text). Left out for
 * that reason: tasks whose target is a random string (`click-option`, `click-checkboxes`),
 * a colour, a shape or a position on a canvas, arithmetic, or long multi-step flows.
 */
export const MINIWOB_EXPERIMENT_TASKS = [
  'click-test',
  'click-test-2',
  'click-button',
  'click-button-sequence',
  'click-dialog',
  'click-dialog-2',
  'click-link',
  'click-tab',
  'click-collapsible',
  'focus-text',
  'focus-text-2',
  'enter-text',
] as const;

/** The first seed of the evaluation split; training seeds count up from 0 below it. */
export const MINIWOB_EVAL_SEED_OFFSET = 100_000;

/** The split of a seed: `train` below {@link MINIWOB_EVAL_SEED_OFFSET}, `eval` from it on. */
export function miniwobSplitOf(seed: number): 'train' | 'eval' {
  return seed >= MINIWOB_EVAL_SEED_OFFSET ? 'eval' : 'train';
}

/** The seeds of a dataset: `train` seeds 0..train-1 and `eval` seeds from the offset. */
export function miniwobSeeds(counts: { train: number; eval: number }): {
  train: number[];
  eval: number[];
} {
  return {
    train: Array.from({ length: counts.train }, (_, index) => index),
    eval: Array.from({ length: counts.eval }, (_, index) => MINIWOB_EVAL_SEED_OFFSET + index),
  };
}

/** The id of a MiniWoB++ task instance: `click-button:7`. */
export function miniwobTaskId(name: string, seed: number | string): string {
  return `${name}:${seed}`;
}
