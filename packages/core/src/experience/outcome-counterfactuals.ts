/**
 * The counterfactual negatives of the outcome judge: what the real engine never shows (a
 * `put` of something not held is not admissible, so it never appears in real data), made
 * from each successful final step.
 */
import type { SeededRandom } from '../random/seeded-random.js';
import {
  actsOn,
  instructionRelation,
  mentionContexts,
  mentions,
  nameOf,
  type Parsed,
  words,
} from './outcome-facts.js';

/** A successful final step: the instruction, the history before it, and its action. */
export interface Final {
  instruction: string;
  history: Parsed[];
  action: NonNullable<Parsed>;
}

/**
 * Negatives the real engine never shows, made from one successful final step:
 * - its history without one of the steps that acted on two or more entities, one of them an
 *   argument of the step or an entity the instruction names (the object never taken, never
 *   heated, the first of two never placed). Steps on one entity (navigation, opening) are
 *   kept: an expert's path has detours whose removal changes nothing;
 * - the step with one argument replaced by another entity the episode acted on (the wrong
 *   object or receptacle);
 * - an act the instruction asks for by name ("dice the lettuce") done as another act of the
 *   same arity (sliced);
 * - an act an instruction word means done with another argument ("roast the potato": cooked
 *   with the stove, not the oven), where the data used another there;
 * - the same act on an element whose label the instruction names less of, where the grammar
 *   keeps labels;
 * - each other type of action in its place (from `others`, actions of the data grouped by
 *   type): what the episode did before makes no success by itself, only the right act does;
 * - an entity the instruction names swapped, in the whole episode, for one it does not name.
 */
export function addCounterfactuals(
  final: Final,
  others: readonly (readonly NonNullable<Parsed>[])[],
  meanings: ReadonlyMap<string, ReadonlySet<string>>,
  random: SeededRandom,
  add: (
    instruction: string,
    history: readonly Parsed[],
    action: Parsed,
    done: boolean,
    success: boolean,
  ) => void,
): number {
  const { instruction, history, action } = final;
  let added = 0;
  const present = new Set(words(instruction));
  const involved = (argument: string) =>
    action.args.includes(argument) || instructionRelation(argument, present) === 'all';
  history.forEach((step, index) => {
    if (step === undefined || step.args.length < 2 || !step.args.some(involved)) return;
    add(
      instruction,
      history.filter((_, other) => other !== index),
      action,
      false,
      false,
    );
    added += 1;
  });
  const entities = [
    ...new Set(history.flatMap((step) => (step === undefined ? [] : step.args))),
  ].filter((entity) => !action.args.includes(entity) && nameOf(entity) !== '');
  if (entities.length > 0 && action.args.length > 0) {
    const slot = random.int(action.args.length);
    const replacement = entities[random.int(entities.length)]!;
    if (nameOf(replacement) !== nameOf(action.args[slot]!)) {
      const args = action.args.map((argument, index) => (index === slot ? replacement : argument));
      add(instruction, history, { type: action.type, args }, false, false);
      added += 1;
    }
  }
  // An act the instruction asks for by name done otherwise ("dice the lettuce": sliced).
  const sequence = words(instruction);
  const asked = new Set(
    [...new Set(history.flatMap((step) => step?.args ?? []))].flatMap((entity) => [
      ...mentionContexts(nameOf(entity), sequence),
    ]),
  );
  const types = others.map((examples) => examples[0]!);
  history.forEach((step, index) => {
    if (step === undefined || !asked.has(step.type)) return;
    const alike = types.filter(
      (other) => other.type !== step.type && other.args.length === step.args.length,
    );
    if (alike.length === 0) return;
    const swapped = { type: alike[random.int(alike.length)]!.type, args: step.args };
    add(
      instruction,
      history.map((other, at) => (at === index ? swapped : other)),
      action,
      false,
      false,
    );
    added += 1;
  });
  // An act a word of the instruction means, done with another argument than the one it needs.
  history.forEach((step, index) => {
    if (step === undefined || step.args.length < 2) return;
    const slot = step.args.findIndex((argument) => {
      const name = nameOf(argument);
      const [act] = actsOn(name, [step]);
      return [...mentionContexts(name, sequence)].some((context) =>
        meanings.get(context)?.has(act!),
      );
    });
    if (slot < 0) return;
    const other = slot === 0 ? 1 : 0;
    const replacements = others
      .flat()
      .filter(
        (example) =>
          example.type === step.type &&
          example.args.length === step.args.length &&
          nameOf(example.args[other]!) !== nameOf(step.args[other]!),
      );
    if (replacements.length === 0) return;
    const replacement = replacements[random.int(replacements.length)]!.args[other]!;
    const swapped = {
      type: step.type,
      args: step.args.map((argument, at) => (at === other ? replacement : argument)),
    };
    add(
      instruction,
      history.map((kept, at) => (at === index ? swapped : kept)),
      action,
      false,
      false,
    );
    added += 1;
  });
  // The same act on an element labelled otherwise, one the instruction names less of (`button
  // 'Cancel'` for "Click OK"); a label the instruction names no less of may be right too.
  if (action.label !== undefined) {
    const named = (label: readonly string[]) =>
      label.filter((word) => mentions(present, word)).length;
    const own = named(action.label);
    const relabelled = others
      .flat()
      .filter(
        (example) =>
          example.type === action.type && example.label !== undefined && named(example.label) < own,
      );
    if (relabelled.length > 0) {
      const { label: other } = relabelled[random.int(relabelled.length)]!;
      add(
        instruction,
        history,
        { type: action.type, args: action.args, label: other! },
        false,
        false,
      );
      added += 1;
    }
  }
  for (const examples of others) {
    if (examples[0]!.type === action.type) continue;
    add(instruction, history, examples[random.int(examples.length)]!, false, false);
    added += 1;
  }
  // The object the instruction names swapped for another throughout the episode: the same
  // acts on the wrong object (`take keychain 2`, then the lamp, for "look at creditcard").
  const named = [
    ...new Set([...history.flatMap((step) => step?.args ?? []), ...action.args]),
  ].filter((entity) => instructionRelation(entity, present) === 'all');
  const strangers = others
    .flatMap((examples) => examples.flatMap((example) => example.args))
    .filter((entity) => nameOf(entity) !== '' && instructionRelation(entity, present) === 'none');
  if (named.length > 0 && strangers.length > 0) {
    const from = named[random.int(named.length)]!;
    const to = strangers[random.int(strangers.length)]!;
    const rename = (step: Parsed): Parsed =>
      step && {
        type: step.type,
        args: step.args.map((argument) => (argument === from ? to : argument)),
      };
    add(instruction, history.map(rename), rename(action), false, false);
    added += 1;
  }
  return added;
}
