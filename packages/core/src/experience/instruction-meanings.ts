/**
 * What an instruction's words ask to be done, learned from successful episodes: "roast the
 * potato" is met by `cook potato with oven`, "fry" by the stove, in a domain whose grammar has
 * no `roast` act. The word before each mention of an item (`mentionContexts`) is read against
 * the acts the successful episodes did to that item; an act that goes with the word almost
 * always, and almost never without it, is what the word means.
 */
import { actsOn, mentionContexts, type Parsed, words } from './outcome-facts.js';

/** Fewest items with (and without) a word before its acts are read as the word's meaning. */
const MIN_ITEMS = 3;
/** Share of the word's items an act must be done to. */
const WITH_SHARE = 0.8;
/** Most share of the other items the act may be done to. */
const WITHOUT_SHARE = 0.2;

/** Tallies of successful episodes' acts per instruction word, and the meanings they show. */
export class InstructionMeanings {
  private items = 0;
  private readonly withWord = new Map<string, number>();
  private readonly withAct = new Map<string, number>();
  private readonly withBoth = new Map<string, Map<string, number>>();
  private learned: Map<string, Set<string>> | undefined;

  /** Counts one successful episode: for each item it names, the words before it and the acts done to it. */
  add(instruction: string, steps: readonly Parsed[], named: Iterable<string>): void {
    const sequence = words(instruction);
    for (const name of named) {
      const contexts = [...mentionContexts(name, sequence)].filter((word) => word !== '');
      const acts = actsOn(name, steps);
      this.items += 1;
      for (const act of acts) this.withAct.set(act, (this.withAct.get(act) ?? 0) + 1);
      for (const word of contexts) {
        this.withWord.set(word, (this.withWord.get(word) ?? 0) + 1);
        const both = this.withBoth.get(word) ?? new Map<string, number>();
        for (const act of acts) both.set(act, (both.get(act) ?? 0) + 1);
        this.withBoth.set(word, both);
      }
    }
    this.learned = undefined;
  }

  /** Each word's meaning: the acts done to nearly every item it precedes and to few others. */
  meanings(): ReadonlyMap<string, ReadonlySet<string>> {
    if (this.learned !== undefined) return this.learned;
    const learned = new Map<string, Set<string>>();
    for (const [word, items] of this.withWord) {
      const rest = this.items - items;
      if (items < MIN_ITEMS || rest < MIN_ITEMS) continue;
      for (const [act, both] of this.withBoth.get(word) ?? []) {
        const without = (this.withAct.get(act) ?? 0) - both;
        if (both / items < WITH_SHARE || without / rest > WITHOUT_SHARE) continue;
        const acts = learned.get(word) ?? new Set<string>();
        acts.add(act);
        learned.set(word, acts);
      }
    }
    this.learned = learned;
    return learned;
  }
}
