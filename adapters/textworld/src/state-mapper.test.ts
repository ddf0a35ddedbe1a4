import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { mapTextworldObservation, type TextworldRawObservation } from './state-mapper.js';

const raw = JSON.parse(
  readFileSync(
    join(dirname(fileURLToPath(import.meta.url)), '__fixtures__', 'raw-observations.json'),
    'utf8',
  ),
).observations as (TextworldRawObservation & { note: string })[];
const byNote = (note: string) => raw.find((entry) => entry.note === note)!;

describe('mapTextworldObservation', () => {
  it('keeps the room and drops the banner, the objective, the prompt and the status line', () => {
    const start = byNote('start of train/cooking-r2-s1');
    expect(start.text).toContain('$$$$');
    expect(start.text).toMatch(/-= Kitchen =-0\/1$/);
    const observation = mapTextworldObservation(start);
    expect(observation.text).toMatch(/^-= Kitchen =-\nYou've just walked into a kitchen\./);
    expect(observation.text).not.toMatch(/\$|You are hungry|0\/1|\n>/);
    expect(observation.actions).toEqual([...start.admissibleCommands!].sort());
  });

  it('gives one text to one state: the move counter of the status line is gone', () => {
    const inventory = mapTextworldObservation(byNote("after 'inventory' (cooking-r1-s0)"));
    expect(inventory.text).toBe('You are carrying nothing.');
    const refused = mapTextworldObservation(byNote("after 'eat knife' (cooking-r1-s0)"));
    expect(refused.text).toBe("That's plainly inedible.");
    const scored = mapTextworldObservation(
      byNote("after 'take carrot from fridge' (cooking-r1-s0)"),
    );
    expect(scored.text).toBe(
      'You take the carrot from the fridge.\n\nYour score has just gone up by one point.',
    );
  });

  it('ends a won or lost game with its verdict, without the score summary and restart menu', () => {
    const won = mapTextworldObservation(byNote("after 'eat meal' (walkthrough)"));
    expect(won.text).toBe(
      'You eat the meal. Not bad.\n\nYour score has just gone up by one point.\n\n*** The End ***',
    );
    // The second time the carrot is cooked.
    const lost = mapTextworldObservation(
      raw.findLast((entry) => entry.note === "after 'cook carrot with oven' (cooking-r1-s0)")!,
    );
    expect(lost.text).toBe('You burned the carrot!\n\n*** You lost! ***');
  });

  it('maps a bare text without actions', () => {
    expect(
      mapTextworldObservation('\nYou drop the knife on the ground.\n\n>  -= Kitchen =-0/9'),
    ).toEqual({
      text: 'You drop the knife on the ground.',
    });
  });
});
