import { describe, expect, it } from 'vitest';
import { addToListing, mentionsEntity, removeFromListing } from './listing.js';

/** ALFWorld's order: names alphabetically, higher numbers first. */
function alfworldOrder(a: string, b: string): number {
  const [nameA, idA] = [a.replace(/ \d+$/, ''), Number(a.split(' ').pop())];
  const [nameB, idB] = [b.replace(/ \d+$/, ''), Number(b.split(' ').pop())];
  return nameA === nameB ? idB - idA : nameA < nameB ? -1 : 1;
}

describe('removeFromListing', () => {
  it('removes an item and keeps the listing well formed', () => {
    expect(removeFromListing('On the desk 1, you see a cd 2, a mug 1, and a pen 2.', 'mug 1')).toBe(
      'On the desk 1, you see a cd 2, and a pen 2.',
    );
    expect(removeFromListing('On the desk 1, you see a mug 1, and a pen 2.', 'mug 1')).toBe(
      'On the desk 1, you see a pen 2.',
    );
    expect(removeFromListing('The microwave 1 is open. In it, you see a apple 1.', 'apple 1')).toBe(
      'The microwave 1 is open. In it, you see nothing.',
    );
  });

  it('is undefined when the entity is not listed', () => {
    expect(removeFromListing('On the desk 1, you see a pen 2.', 'mug 1')).toBeUndefined();
    expect(removeFromListing('On the desk 1, you see nothing.', 'mug 1')).toBeUndefined();
  });
});

describe('addToListing', () => {
  it('fills an empty listing', () => {
    expect(addToListing('On the shelf 1, you see nothing.', 'cd 3')).toBe(
      'On the shelf 1, you see a cd 3.',
    );
  });

  it('inserts in the domain order, with the listing separator', () => {
    expect(
      addToListing(
        'On the desk 1, you see a alarmclock 2, a bowl 2, and a statue 1.',
        'alarmclock 3',
        { compareEntities: alfworldOrder },
      ),
    ).toBe('On the desk 1, you see a alarmclock 3, a alarmclock 2, a bowl 2, and a statue 1.');
    expect(addToListing('On the desk 1, you see a bowl 2.', 'cd 1')).toBe(
      'On the desk 1, you see a bowl 2, and a cd 1.',
    );
  });

  it('is undefined without a listing to extend', () => {
    expect(addToListing('The drawer 1 is closed.', 'cd 1')).toBeUndefined();
  });
});

describe('mentionsEntity', () => {
  it('matches whole names only', () => {
    expect(mentionsEntity('a apple 12', 'apple 1')).toBe(false);
    expect(mentionsEntity('a apple 1.', 'apple 1')).toBe(true);
  });
});
