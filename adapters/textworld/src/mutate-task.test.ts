import { SeededRandom, type Task } from '@dreamgym/core';
import { describe, expect, it } from 'vitest';
import { loadTextworldTasks } from './datasets/tasks.js';
import { mutateTextworldTask } from './mutate-task.js';
import { recipeDirections, type TextworldIngredient, textworldInstruction } from './recipe.js';
import { textworldTestDataset } from './test-data-directory.js';

const { dir } = await textworldTestDataset();
const tasks: Task[] = [];
for await (const task of loadTextworldTasks(dir)) tasks.push(task);

describe('mutateTextworldTask', () => {
  it('makes other recipes in the same kitchen: counts, foods and preparations change', () => {
    const random = new SeededRandom(3);
    const mutations = new Set<string>();
    for (let round = 0; round < 20; round += 1) {
      for (const task of tasks) {
        const child = mutateTextworldTask(task, random);
        if (child === undefined) continue;
        const ingredients = child.meta.ingredients as TextworldIngredient[];
        mutations.add(String(child.meta.mutation));
        expect(child).toMatchObject({
          domain: 'textworld',
          origin: 'generated',
          parentId: task.id,
          initialObservation: task.initialObservation,
          meta: {
            split: 'train',
            baseGame: task.id,
            world: task.id,
            ingredientCount: ingredients.length,
          },
        });
        expect(child.meta.game).toBeUndefined();
        expect(child.id.startsWith(`${task.id}~`)).toBe(true);
        expect(child.instruction).toBe(textworldInstruction(ingredients));
        expect(ingredients.length).toBeGreaterThanOrEqual(1);
        expect(ingredients.length).toBeLessThanOrEqual(4);
        // New foods are ones the kitchen shows.
        for (const { name } of ingredients) {
          const parentNames = (task.meta.ingredients as TextworldIngredient[]).map(
            (entry) => entry.name,
          );
          if (!parentNames.includes(name)) {
            expect(
              `${task.initialObservation!.text} ${task.initialObservation!.actions!.join(' ')}`,
            ).toContain(name);
          }
        }
      }
    }
    expect([...mutations].sort()).toEqual(['add', 'prepare', 'remove', 'swap']);
  });

  it('writes the instruction the cookbook shows, and leaves tasks without a recipe alone', () => {
    const task = tasks.find((entry) => entry.meta.ingredientCount === 2)!;
    const ingredients = task.meta.ingredients as TextworldIngredient[];
    const walkthroughIndependent = recipeDirections(ingredients);
    expect(walkthroughIndependent.at(-1)).toBe('prepare meal');
    expect(task.instruction).toBe(textworldInstruction(ingredients));
    expect(
      mutateTextworldTask({ ...task, meta: { split: 'train' } }, new SeededRandom(1)),
    ).toBeUndefined();
  });
});
