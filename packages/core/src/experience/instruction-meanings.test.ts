import { describe, expect, it } from 'vitest';
import { InstructionMeanings } from './instruction-meanings.js';
import { actsOn } from './outcome-facts.js';

const cook = (item: string, appliance: string) => ({ type: 'cook', args: [item, appliance] });
const take = (item: string) => ({ type: 'take', args: [item] });

describe('InstructionMeanings', () => {
  it('reads what a word asks of the item after it from the acts that go with it, and only those', () => {
    const meanings = new InstructionMeanings();
    const items = ['carrot', 'potato', 'onion', 'pepper', 'leek', 'yam'];
    items.forEach((item, index) => {
      const [word, appliance] = index % 2 === 0 ? ['roast', 'oven'] : ['fry', 'stove'];
      meanings.add(
        `${word} the ${item}`,
        [take(`${item} 1`), cook(`${item} 1`, appliance)],
        [item],
      );
    });
    const learned = meanings.meanings();
    expect([...(learned.get('roast') ?? [])]).toEqual(['cook/0|oven']);
    expect([...(learned.get('fry') ?? [])]).toEqual(['cook/0|stove']);
    // `take` goes with every item, so it is no word's meaning.
    expect(learned.size).toBe(2);
  });

  it('reads nothing from a word seen with fewer than three items', () => {
    const meanings = new InstructionMeanings();
    meanings.add('roast the carrot', [cook('carrot', 'oven')], ['carrot']);
    meanings.add('fry the leek', [cook('leek', 'stove')], ['leek']);
    expect(meanings.meanings().size).toBe(0);
  });

  it('names an act by its type, the item slot and the other arguments', () => {
    expect([
      ...actsOn('red potato', [take('red potato 1'), cook('red potato 1', 'oven 2')]),
    ]).toEqual(['take/0|', 'cook/0|oven']);
  });
});
