import { describe, expect, it } from 'vitest';
import type { GoalCheckInput } from '../mdp/goal-check.js';
import type { Step, Trajectory } from '../mdp/schemas.js';
import { earned } from './earned.test-support.js';
import type { ExperienceModel } from './experience-model.js';
import { JudgedExperienceModel } from './judged-experience-model.js';
import { outcomeFacts } from './outcome-facts.js';
import { OutcomeJudge } from './outcome-judge.js';

/** `verb a from/in b` commands: `take key 1 from table 1`, `put key 1 in box 1`, `go to box 1`. */
function parse(text: string) {
  const match = /^(take|put|go to) (.+?)(?: (?:from|in) (.+))?$/.exec(text);
  if (!match) throw new Error(`not a command: ${text}`);
  return { type: match[1]!, args: [match[2]!, ...(match[3] ? [match[3]] : [])], text };
}

function trajectory(
  instruction: string,
  actions: string[],
  end: 'success' | 'failure' | 'truncated' | 'open',
): Trajectory {
  const steps: Step[] = actions.map((action, index) => {
    const last = index === actions.length - 1;
    return {
      observation: { text: `step ${index}` },
      action,
      reward: last && end === 'success' ? 1 : 0,
      done: last && end !== 'open',
      ...(last && end === 'truncated' ? { info: { truncated: true } } : {}),
    };
  });
  return {
    task: { id: instruction, domain: 'toy', instruction, origin: 'seed', meta: {} },
    steps,
    source: 'offline',
    success: end === 'success',
  };
}

/** Successes put the named object in the box after taking it; exploration puts other things there. */
function toyData(): Trajectory[] {
  const data: Trajectory[] = [];
  for (const [object, other] of [
    ['key', 'pen'],
    ['cup', 'key'],
    ['pen', 'cup'],
    ['book', 'pen'],
  ] as const) {
    const instruction = `put a ${object} in box.`;
    for (let copy = 0; copy < 5; copy += 1) {
      data.push(
        trajectory(
          instruction,
          [
            `go to table 1`,
            `take ${object} 1 from table 1`,
            'go to box 1',
            `put ${object} 1 in box 1`,
          ],
          'success',
        ),
      );
      data.push(
        trajectory(
          instruction,
          [
            `take ${other} 1 from table 1`,
            'go to box 1',
            `put ${other} 1 in box 1`,
            'go to table 1',
          ],
          'truncated',
        ),
      );
    }
  }
  return data;
}

describe('outcomeFacts', () => {
  it('relates the action to the instruction and to what the episode did with its arguments', () => {
    const facts = outcomeFacts(
      'put a key in box.',
      [parse('take key 1 from table 1'), parse('go to box 1')],
      parse('put key 1 in box 1'),
    );
    expect(facts.instructionWords).toEqual(['put', 'a', 'key', 'in', 'box']);
    expect(facts.atoms).toEqual(
      expect.arrayContaining([
        'a:put',
        'a:put:0:instr=all',
        'a:put:0:last=take/0',
        'a:put:0:ever=take/0',
        'a:put:1:instr=all',
        'a:put:1:last=go to/0',
        's:take/0:instr=all',
      ]),
    );
    const unheld = outcomeFacts('put a key in box.', [], parse('put pen 1 in box 1'));
    expect(unheld.atoms).toEqual(
      expect.arrayContaining(['a:put:0:instr=none', 'a:put:0:last=none']),
    );
  });

  it('says nothing of the state of a thing the instruction does not name (a tool in hand)', () => {
    // A policy that picks the knife up again before the meal eats it as well as one that put
    // it down; the demonstrations always put it down, so a fact about it would tell them apart.
    const steps = ['take key 1 from table 1', 'take pen 1 from table 1', 'go to box 1'];
    const withPen = outcomeFacts(
      'put a key in box.',
      steps.map(parse),
      parse('put key 1 in box 1'),
    );
    const without = outcomeFacts(
      'put a key in box.',
      steps.filter((step) => !step.includes('pen')).map(parse),
      parse('put key 1 in box 1'),
    );
    expect(withPen.atoms.filter((atom) => atom.startsWith('s:')).sort()).toEqual(
      without.atoms.filter((atom) => atom.startsWith('s:')).sort(),
    );
    // Entities known by an id alone (a web element) are still described.
    const ids = outcomeFacts('click the button.', [parse('take 12 from 3')], parse('go to 4'));
    expect(ids.atoms.some((atom) => atom.startsWith('s:take/0'))).toBe(true);
  });
});

describe('OutcomeJudge', () => {
  const judge = OutcomeJudge.train(toyData(), { parseAction: parse })!;
  const ask = (instruction: string, history: string[], action: string) =>
    judge.judge({ task: { instruction }, history: history.map((a) => ({ action: a })), action });

  it('pays the named object put after it was taken, and nothing else', () => {
    expect(judge.summary).toMatchObject({ trajectories: 40, doneSteps: 20, successSteps: 20 });
    expect(
      ask('put a key in box.', ['take key 1 from table 1', 'go to box 1'], 'put key 1 in box 1')
        .success,
    ).toBe(true);
    // Wrong object, though it was taken: exploration showed it.
    expect(
      ask('put a key in box.', ['take pen 1 from table 1', 'go to box 1'], 'put pen 1 in box 1')
        .success,
    ).toBe(false);
    // The right object, never taken: only the counterfactual negatives show it.
    expect(ask('put a key in box.', ['go to box 1'], 'put key 1 in box 1').success).toBe(false);
    expect(ask('put a key in box.', ['take key 1 from table 1'], 'go to box 1').done).toBe(false);
  });

  it('needs the counterfactuals for the never-taken put', () => {
    const plain = OutcomeJudge.train(toyData(), { parseAction: parse, counterfactuals: false })!;
    const verdict = plain.judge({
      task: { instruction: 'put a key in box.' },
      history: [{ action: 'go to box 1' }],
      action: 'put key 1 in box 1',
    });
    expect(verdict.success).toBe(true);
  });

  it('does not learn termination from truncated episodes', () => {
    const truncatedOnly = toyData().filter((item) => !item.success);
    expect(OutcomeJudge.train(truncatedOnly, { parseAction: parse })).toBeUndefined();
    // The same episodes with their cut-off unmarked read as real endings.
    const unmarked = truncatedOnly.map((item) => ({
      ...item,
      steps: item.steps.map(({ info: _info, ...step }) => step),
    }));
    expect(OutcomeJudge.train(unmarked, { parseAction: parse })!.summary.doneSteps).toBe(20);
  });
});

/** `put away the key, the cup and the pen in the box.`: every named item taken and put. */
function putAwayEpisodes(items: readonly string[], copies: number): Trajectory[] {
  const list =
    items.length === 1
      ? `the ${items[0]}`
      : `the ${items.slice(0, -1).join(', the ')} and the ${items.at(-1)}`;
  const instruction = `put away ${list} in the box.`;
  const actions = items.flatMap((item) => [
    'go to table 1',
    `take ${item} 1 from table 1`,
    'go to box 1',
    `put ${item} 1 in box 1`,
  ]);
  const data: Trajectory[] = [];
  for (let copy = 0; copy < copies; copy += 1) {
    data.push(trajectory(instruction, actions, 'success'));
    // Exploration: all but the last item put away, then the episode is cut off.
    data.push(trajectory(instruction, [...actions.slice(0, -4), 'go to table 1'], 'truncated'));
  }
  return data;
}

describe('OutcomeJudge on counted goals', () => {
  const pool = ['key', 'cup', 'pen', 'book', 'lamp', 'sock', 'coin', 'ball', 'fork', 'shoe'];
  // Goals of one, two and three named items in training; four only when judged.
  const data = [1, 2, 3].flatMap((count) =>
    pool.flatMap((_, start) =>
      putAwayEpisodes(
        Array.from({ length: count }, (_, index) => pool[(start + index * 3) % pool.length]!),
        2,
      ),
    ),
  );
  const judge = OutcomeJudge.train(data, { parseAction: parse })!;
  const four = ['shoe', 'key', 'lamp', 'coin'];
  const steps = (items: readonly string[]) =>
    items.flatMap((item) => [
      'go to table 1',
      `take ${item} 1 from table 1`,
      'go to box 1',
      `put ${item} 1 in box 1`,
    ]);
  const instruction = 'put away the shoe, the key, the lamp and the coin in the box.';
  const ask = (history: string[], action: string) =>
    judge.judge({ task: { instruction }, history: history.map((a) => ({ action: a })), action });

  it('pays the put that handles the last of four named items, a count it never saw', () => {
    const all = steps(four);
    expect(ask(all.slice(0, -1), all.at(-1)!).success).toBe(true);
  });

  it('pays no put while a named item is still to be handled', () => {
    for (const handled of [1, 2, 3]) {
      const some = steps(four.slice(0, handled));
      const verdict = ask(some.slice(0, -1), some.at(-1)!);
      expect({ handled, success: verdict.success }).toEqual({ handled, success: false });
    }
  });

  it('pays the second of two and refuses the first on a pair it never saw', () => {
    const pair = 'put away the fork and the book in the box.';
    const both = steps(['fork', 'book']);
    const verdict = (history: string[], action: string) =>
      judge.judge({
        task: { instruction: pair },
        history: history.map((a) => ({ action: a })),
        action,
      });
    expect(verdict(both.slice(0, 3), both[3]!).success).toBe(false);
    expect(verdict(both.slice(0, -1), both.at(-1)!).success).toBe(true);
  });
});

describe('OutcomeJudge on labelled elements', () => {
  /** `click [3] # button 'ok'`: the id is the argument; the role and name are the label. */
  const parseClick = (text: string) => {
    const match = /^click \[(\d+)\]/.exec(text);
    if (!match) throw new Error(`not a click: ${text}`);
    return { type: 'click', args: [match[1]!], text };
  };
  const labels = ['ok', 'yes', 'no', 'next', 'previous', 'cancel', 'close', 'open'];
  const data: Trajectory[] = labels.flatMap((label, index) => {
    const other = labels[(index + 3) % labels.length]!;
    const instruction = `Click the ${label} button.`;
    return [0, 1, 2].flatMap((copy) => [
      trajectory(instruction, [`click [${copy + 1}] # button '${label}'`], 'success'),
      trajectory(instruction, [`click [${copy + 4}] # button '${other}'`], 'failure'),
    ]);
  });
  const judge = OutcomeJudge.train(data, { parseAction: parseClick })!;
  const ask = (label: string, clicked: string) =>
    judge.judge({
      task: { instruction: `Click the ${label} button.` },
      history: [],
      action: `click [7] # button '${clicked}'`,
    }).success;

  it('pays the click on the element the instruction names, for names it never saw', () => {
    expect(ask('submit', 'submit')).toBe(true);
    expect(ask('submit', 'reset')).toBe(false);
  });
});

describe('OutcomeJudge on recipes', () => {
  /** `take pepper`, `dice pepper with knife`, `prepare meal`, `eat meal`. */
  const parseCommand = (text: string) => {
    const match = /^(take|dice|slice|cook|prepare|eat) (.+?)(?: with (.+))?$/.exec(text);
    if (!match) throw new Error(`not a command: ${text}`);
    return { type: match[1]!, args: [match[2]!, ...(match[3] ? [match[3]] : [])], text };
  };
  const cuts = ['dice', 'slice'] as const;
  /** How the directions cook, and the appliance that does it: the grammar has only `cook`. */
  const cooking = [
    ['fry', 'stove'],
    ['roast', 'oven'],
    ['grill', 'barbecue'],
  ] as const;
  /** A recipe: each ingredient taken, cut and cooked as the directions say, then the meal. */
  const recipe = (items: readonly string[], shift = 0) => {
    const directions = items.flatMap((item, index) => [
      `${cuts[index % 2]} the ${item}`,
      `${cooking[(index + shift) % 3]![0]} the ${item}`,
    ]);
    const instruction = `Ingredients (${items.length}): ${items.join(', ')}. Directions: ${[...directions, 'prepare meal', 'eat meal'].join(', ')}.`;
    const actions = [
      ...items.flatMap((item, index) => [
        `take ${item}`,
        `${cuts[index % 2]} ${item} with knife`,
        `cook ${item} with ${cooking[(index + shift) % 3]![1]}`,
      ]),
      'prepare meal',
      'eat meal',
    ];
    return { instruction, actions };
  };
  const pool = ['pepper', 'carrot', 'potato', 'onion', 'apple', 'tomato', 'chop', 'salt'];
  const data = [1, 2, 3].flatMap((count) =>
    pool.map((_, start) => {
      const { instruction, actions } = recipe(
        Array.from({ length: count }, (_, index) => pool[(start + index * 3) % pool.length]!),
        start,
      );
      return trajectory(instruction, actions, 'success');
    }),
  );
  const judge = OutcomeJudge.train(data, { parseAction: parseCommand })!;
  const { instruction, actions } = recipe(['lettuce', 'bean', 'leek', 'yam']);
  const ask = (history: readonly string[]) =>
    judge.judge({
      task: { instruction },
      history: history.map((action) => ({ action })),
      action: 'eat meal',
    }).success;

  it('pays the meal of four ingredients, every direction followed', () => {
    expect(ask(actions.slice(0, -1))).toBe(true);
  });

  it('pays no meal with a direction left out, on ingredients it never saw', () => {
    const skipped = [
      'slice bean with knife',
      'cook leek with barbecue',
      'slice yam with knife',
    ].map((left) => ask(actions.slice(0, -1).filter((action) => action !== left)));
    expect(skipped).toEqual([false, false, false]);
  });

  it('pays no meal whose item was cut otherwise than the recipe says', () => {
    // The recipe dices the lettuce; slicing it is another act (the real game is lost there).
    const sliced = actions
      .slice(0, -1)
      .map((action) =>
        action === 'dice lettuce with knife' ? 'slice lettuce with knife' : action,
      );
    expect(ask(sliced)).toBe(false);
  });

  it('pays no meal whose item was cooked otherwise than the recipe says, where the grammar has one cook', () => {
    // "roast the bean" is the oven; the words' meanings are learned from the successes.
    const fried = actions
      .slice(0, -1)
      .map((action) => (action === 'cook bean with oven' ? 'cook bean with stove' : action));
    expect(ask(fried)).toBe(false);
  });
});

describe('OutcomeJudge.learn', () => {
  it('learns from real episodes as they come, and reads a rollout cut by its step limit as no ending', () => {
    // Trained on successes alone, every end is a success; a real failure that ends (a wrong
    // submission) teaches the success head that ends can fail.
    const successes = toyData().filter((item) => item.success);
    const judge = OutcomeJudge.train(successes, { parseAction: parse })!;
    const wrongEnd = (copy: number): Trajectory => ({
      ...trajectory(
        'put a key in box.',
        ['take pen 1 from table 1', `put pen ${copy} in box 1`],
        'failure',
      ),
      source: 'real',
    });
    const ask = () =>
      judge.judge({
        task: { instruction: 'put a key in box.' },
        history: [{ action: 'take pen 1 from table 1' }],
        action: 'put pen 1 in box 1',
      });
    expect(ask().successProbability).toBe(1);
    judge.learn([wrongEnd(1), wrongEnd(1), wrongEnd(1)], 20);
    expect(ask().done).toBe(true);
    expect(ask().success).toBe(false);
    expect(judge.summary.doneSteps).toBe(20 + 3);
    // A rollout record cut at its step limit (meta.truncated) ends nothing.
    const cut: Trajectory = {
      ...trajectory('put a key in box.', ['go to table 1'], 'failure'),
      source: 'real',
      meta: { truncated: true },
    };
    judge.learn([cut]);
    expect(judge.summary.doneSteps).toBe(23);
  });
});

describe('JudgedExperienceModel', () => {
  const judge = OutcomeJudge.train(toyData(), { parseAction: parse })!;
  /** A model that pays every step, as a retrieval vote over expert puts did. */
  const generous: ExperienceModel = {
    id: 'generous',
    predict: async () => ({
      reasoning: 'every put ends it',
      observation: { text: 'You put it in the box.' },
      reward: 1,
      done: true,
      success: true,
    }),
    initialState: async () => ({ text: 'a room' }),
  };
  const model = new JudgedExperienceModel(generous, judge);
  const input = (history: string[], action: string) => ({
    task: {
      id: 't',
      domain: 'toy',
      instruction: 'put a key in box.',
      origin: 'seed' as const,
      meta: {},
    },
    history: history.map((a) => ({ observation: { text: '' }, action: a, reward: 0, done: false })),
    state: { text: '' },
    action,
    demos: [],
  });

  it("keeps the base model's next state and replaces its outcome with the judge's", async () => {
    const exploit = earned(
      model,
      await model.predict(input(['go to box 1'], 'put pen 1 in box 1')),
    );
    expect(exploit).toMatchObject({
      observation: { text: 'You put it in the box.' },
      reward: 0,
      done: false,
      success: false,
    });
    expect(exploit.info?.outcomeJudge).toMatchObject({ baseDone: true, baseSuccess: true });
    const right = await model.predict(
      input(['take key 1 from table 1', 'go to box 1'], 'put key 1 in box 1'),
    );
    expect(earned(model, right)).toMatchObject({ reward: 1, done: true, success: true });
    expect(model.id).toBe('generous+judge');
    expect(await model.initialState!({ task: input([], '').task, demos: [] })).toEqual({
      text: 'a room',
    });
  });

  it("lets the domain's goal check settle a step: true pays it, false refuses the judge's success", async () => {
    const seen: GoalCheckInput[] = [];
    // The domain knows a key put in the box is the goal only once the box was opened.
    const checked = new JudgedExperienceModel(generous, judge, {
      goalCheck: (step) => {
        seen.push(step);
        if (!step.action.startsWith('put')) return undefined;
        return step.history.some((earlier) => earlier.action === 'open box 1');
      },
    });
    const right = ['take key 1 from table 1', 'go to box 1'];
    // The judge pays this put; the domain's check refuses it (the box is closed)...
    const refused = await checked.predict(input(right, 'put key 1 in box 1'));
    expect(earned(checked, refused)).toMatchObject({ reward: 0, done: false, success: false });
    expect(refused.info?.outcomeJudge).toMatchObject({ goalCheck: false });
    // ...and pays the put of a pen after the box was opened, which the judge refuses.
    const paid = await checked.predict(input([...right, 'open box 1'], 'put pen 1 in box 1'));
    expect(earned(checked, paid)).toMatchObject({ reward: 1, done: true, success: true });
    // Where it has no opinion, the judge decides.
    expect(await checked.predict(input(right, 'go to box 1'))).toMatchObject({ done: false });
    expect(seen[0]).toMatchObject({
      task: { instruction: 'put a key in box.' },
      action: 'put key 1 in box 1',
      nextState: { text: 'You put it in the box.' },
    });
    expect(seen[0]!.history.map((step) => step.action)).toEqual(right);
  });

  it('in model mode (graded endings), pays a judged failed ending its partial reward and nothing else the base model voted', async () => {
    /** A judge stub: the verdict each test step asks for (the judge itself is tested above). */
    const verdictOf = (done: boolean, success: boolean) =>
      ({
        refusal: undefined,
        learn: () => {},
        judge: () => ({ done, success, doneProbability: 0.5, successProbability: 0.5 }),
      }) as unknown as OutcomeJudge;
    const partial: ExperienceModel = {
      id: 'partial',
      predict: async () => ({
        reasoning: 'a purchase matching some attributes',
        observation: { text: 'You bought it.' },
        reward: 0.4,
        done: true,
        success: false,
      }),
    };
    const step = input([], 'buy item 1');
    const graded = async (done: boolean, success: boolean) => {
      const judged = new JudgedExperienceModel(partial, verdictOf(done, success), {
        reward: { mode: 'model' },
      });
      return earned(judged, await judged.predict(step));
    };
    expect(await graded(true, false)).toMatchObject({ reward: 0.4, done: true });
    expect(await graded(true, true)).toMatchObject({ reward: 1, success: true });
    expect(await graded(false, false)).toMatchObject({ reward: 0, done: false });
    // The default outcome reward: a failed ending earns nothing.
    const binary = new JudgedExperienceModel(partial, verdictOf(true, false));
    expect(earned(binary, await binary.predict(step))).toMatchObject({
      reward: 0,
      done: true,
      success: false,
    });
  });
});
