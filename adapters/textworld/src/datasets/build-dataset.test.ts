import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Trajectory } from '@dreamgym/core';
import { describe, expect, it } from 'vitest';
import { recipeDirections, type TextworldIngredient } from '../recipe.js';
import { TEST_DATASET_TIMEOUT_MS, textworldTestDataset } from '../test-data-directory.js';
import { loadTextworldTrajectories } from './trajectories.js';

const { dir } = await textworldTestDataset();

describe('buildTextworldDataset', () => {
  it(
    'generates nothing and plays nothing again for games already there',
    async () => {
      const before = await readFile(join(dir, 'tasks.jsonl'), 'utf8');
      const { summary } = await textworldTestDataset();
      expect(summary).toMatchObject({
        tasks: { train: 4, valid: 1, test: 1 },
        trajectories: 4,
        generated: 0,
        skipped: 6,
        recorded: 0,
      });
      expect(await readFile(join(dir, 'tasks.jsonl'), 'utf8')).toBe(before);
    },
    TEST_DATASET_TIMEOUT_MS,
  );

  it('records walkthroughs that win, and recipes that say what the cookbook says', async () => {
    const walkthroughs: Trajectory[] = [];
    for await (const trajectory of loadTextworldTrajectories(dir)) walkthroughs.push(trajectory);
    expect(walkthroughs.map((entry) => entry.task.id)).toEqual([
      'train/cooking-r1-s0',
      'train/cooking-r2-s1',
      'train/cooking-r3-s2',
      'train/cooking-r4-s3',
    ]);
    for (const trajectory of walkthroughs) {
      expect(trajectory.success).toBe(true);
      expect(trajectory.steps.at(-1)).toMatchObject({ action: 'eat meal', reward: 1, done: true });
      // Every command was admissible where it was played.
      for (const step of trajectory.steps) expect(step.observation.actions).toContain(step.action);
      const read = trajectory.steps.findIndex((step) => step.action === 'examine cookbook');
      const cookbook = trajectory.steps[read + 1]!.observation.text;
      const ingredients = trajectory.task.meta.ingredients as TextworldIngredient[];
      for (const direction of recipeDirections(ingredients)) expect(cookbook).toContain(direction);
      for (const { name } of ingredients) expect(cookbook).toContain(name);
    }
  });
});
