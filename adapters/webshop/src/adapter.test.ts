import { ActionParseError, SeededRandom, type Task } from '@dreamgym/core';
import { describeAdapterConformance } from '@dreamgym/core/testing/vitest';
import { describe, expect, it } from 'vitest';
import { checkWebshopAction, parseWebshopAction } from './action-grammar.js';
import { createWebshopAdapter } from './adapter.js';
import { loadWebshopGoalQueryMap } from './datasets/goal-query-map.js';
import { normalizeWebshopInstruction, webshopGoalTask } from './datasets/human-goals.js';
import { webshopSearchQueries } from './search-queries.js';
import { mapWebshopObservation } from './state-mapper.js';
import { webshopDataDirectory } from './test-data-directory.js';

const dataDir = webshopDataDirectory();
const adapter = createWebshopAdapter({ dataDir });

const START =
  'WebShop [SEP] Instruction: [SEP] i am looking for a red stereo sound earbud headphones, and price lower than 50.00 dollars [SEP] Search';
const RESULTS =
  'Instruction: [SEP] i am looking for a red stereo sound earbud headphones, and price lower than 50.00 dollars [SEP] Back to Search [SEP] Page 2 (Total results: 50) [SEP] < Prev [SEP] Next > [SEP] B08CZ8WS38 [SEP] Otium Wireless Earbuds [2 Pack] Stereo Sound [SEP] $4.89 [SEP] B07PR2D333 [SEP] Wired Earbud Headphones [SEP] $12.0 to $15.0';
const ITEM =
  'Instruction: [SEP] i am looking for a red stereo sound earbud headphones, and price lower than 50.00 dollars [SEP] Back to Search [SEP] < Prev [SEP] color [SEP] black [SEP] red [SEP] size [SEP] small [SEP] large [SEP] Otium Wireless Earbuds [SEP] Price: $4.89 [SEP] Rating: N.A. [SEP] Description [SEP] Features [SEP] Reviews [SEP] Buy Now';
const ITEM_CLICKABLES = [
  'back to search',
  '< prev',
  'description',
  'features',
  'reviews',
  'buy now',
  'black',
  'red',
  'small',
  'large',
];
const RICH_ITEM = `Instruction:\ni need red earbuds\n[button] Back to Search [button_]\n[button] < Prev [button_]\ncolor\n  [button] black [button_]\n  [clicked button] red [clicked button_]\nOtium Wireless Earbuds\nPrice: $4.89\nRating: N.A.\n[button] Description [button_]\n[button] Features [button_]\n[button] Reviews [button_]\n[button] Buy Now [button_]\n`;
const HTML_RESULTS = `<!DOCTYPE html><html><head><title>WebShop</title></head><body><div class="container py-5"><div id="instruction-text" class="text-center"><h4>Instruction:<br>i need red earbuds</h4></div>
<form><button type="submit" class="btn btn-success">Back to Search</button></form><div class="display-4"><h3>Page 1 (Total results: 50)</h3></div>
<form><button type="submit" class="btn btn-primary">Next &gt;</button></form>
<div class="searched-product"><h4 class="product-asin"><a class="product-link" href="/x">B08CZ8WS38</a></h4><h4 class="product-title">Otium &amp; Co Earbuds</h4><h5 class="product-price">$4.89</h5></div></div></body></html>`;
const HTML_ITEM = `<html><body><div id="instruction-text"><h4>Instruction:<br>i need red earbuds</h4></div><button class="btn btn-success">Back to Search</button><button class="btn btn-primary">&lt; Prev</button>
<h4>color</h4><div class="radio-toolbar"><input type="radio" id="radio_color0" name="color" value="black"><label for="radio_color0">black</label><input type="radio" id="radio_color1" name="color" value="red"><label for="radio_color1">red</label></div>
<h2>Otium Wireless Earbuds</h2><h4>Price: $4.89</h4><h4>Rating: N.A.</h4><button class="btn btn-primary">Description</button><button class="btn btn-lg purchase">Buy Now</button>
<script>let options = JSON.parse(\`{"color": "red"}\`);</script></body></html>`;
const DONE =
  'Thank you for shopping with us! [SEP] Your code: [SEP] None [SEP] (Paste it in your MTurk interface.) [SEP] Purchased [SEP] asin [SEP] B08CZ8WS38 [SEP] options [SEP] {"color": "red"} [SEP] attrs [SEP] None [SEP] Your score (min 0.0, max 1.0) [SEP] 0.6666666666666666 [SEP] Reward Details [SEP] None';

const tasks: Task[] = [
  webshopGoalTask('i need a long clip-in hair extension which is natural looking', 1500),
  webshopGoalTask(
    'i want a small black t-shirt that is machine washable, and price lower than 30.00 dollars',
    1501,
  ),
];

describeAdapterConformance('webshop', {
  adapter,
  validActions: [
    'search[red earbuds]',
    'click[Buy Now]',
    'Click[ b08cz8ws38 ]',
    'click[38 | 40 | 41 mm]',
    'click[< Prev]',
  ],
  invalidActions: [
    '',
    'buy now',
    'click[]',
    'search',
    'purchase[B08CZ8WS38]',
    'click[a] extra',
    'click[a [b] c]',
  ],
  rawObservations: [
    START,
    RESULTS,
    { observation: ITEM, availableActions: { has_search_bar: false, clickables: ITEM_CLICKABLES } },
    RICH_ITEM,
    HTML_RESULTS,
    HTML_ITEM,
    DONE,
  ],
  tasks,
  malformedDatasets: [
    {
      description: 'a human goal that is not a string',
      loader: 'tasks',
      files: { 'human_goals.json': '[\n  "i need a hat",\n  42\n]\n' },
      expected: { file: 'human_goals.json', line: 3, field: '1' },
    },
    {
      description: 'human goals that are not JSON',
      loader: 'tasks',
      files: { 'human_goals.json': '[\n  "i need a hat",\n  "a scarf"\n  "gloves"\n]\n' },
      expected: { file: 'human_goals.json', line: 4 },
    },
    {
      description: 'a session line that is not JSON',
      loader: 'trajectories',
      files: {
        'human_goals.json': '["a hat"]',
        'mturk_sessions/s.jsonl': '{"page": "index", "url": "u", "goal": {}}\n{"page": \n',
      },
      expected: { file: 'mturk_sessions/s.jsonl', line: 1, field: 'goal.asin' },
    },
    {
      description: 'a purchase without its reward',
      loader: 'trajectories',
      files: {
        'human_goals.json': '["a hat"]',
        'mturk_sessions/s.jsonl': `${JSON.stringify({ page: 'index', url: 'http://x/s', goal: { asin: 'B0', category: 'c', query: 'q', name: 'n', product_category: 'a', instruction_text: 'a hat', attributes: [], price_upper: 10, goal_options: [] } })}\n${JSON.stringify({ page: 'done', url: 'http://x/done', goal: { asin: 'B0', category: 'c', query: 'q', name: 'n', product_category: 'a', instruction_text: 'a hat', attributes: [], price_upper: 10, goal_options: [] }, content: { asin: 'B0', options: {}, price: 3 } })}\n`,
      },
      expected: { file: 'mturk_sessions/s.jsonl', line: 2, field: 'reward' },
    },
  ],
  datasetDirectory: dataDir,
});

describe('state mapper', () => {
  it('maps the text-mode start page to the search bar, with queries from the instruction', () => {
    const observation = mapWebshopObservation(START);
    expect(observation.text).toBe('WebShop search page.\nSearch bar: search[<query>]');
    expect(observation.actions![0]).toBe('search[red stereo sound earbud headphones]');
    expect(observation.meta).toMatchObject({
      page: 'search',
      instruction:
        'i am looking for a red stereo sound earbud headphones, and price lower than 50.00 dollars',
    });
  });

  it('lists results with title and price, brackets only around clickables', () => {
    const observation = mapWebshopObservation({ observation: RESULTS, query: 'red earbuds' });
    expect(observation.text).toBe(
      'Search results for "red earbuds", page 2 (50 results).\n[Back to Search] [< Prev] [Next >]\n[B08CZ8WS38] Otium Wireless Earbuds (2 Pack) Stereo Sound | $4.89\n[B07PR2D333] Wired Earbud Headphones | $12.0 to $15.0',
    );
    expect(observation.actions).toEqual([
      'click[Back to Search]',
      'click[< Prev]',
      'click[Next >]',
      'click[B08CZ8WS38]',
      'click[B07PR2D333]',
    ]);
  });

  it('groups item options by the clickables, marks the chosen ones', () => {
    const observation = mapWebshopObservation({
      observation: ITEM,
      availableActions: { has_search_bar: false, clickables: ITEM_CLICKABLES },
      asin: 'B08CZ8WS38',
      selectedOptions: { color: 'red' },
    });
    expect(observation.text).toBe(
      'Item B08CZ8WS38: Otium Wireless Earbuds\nPrice: $4.89. Rating: N.A.\n[Back to Search] [< Prev]\ncolor: [black] [red] (selected: red)\nsize: [small] [large]\n[Description] [Features] [Reviews] [Buy Now]',
    );
    expect(observation.actions).toContain('click[large]');
    // Without clickables, known option names still start the groups.
    expect(mapWebshopObservation(ITEM).text).toContain('size: [small] [large]');
  });

  it('reads text_rich and HTML pages to the same element list', () => {
    expect(mapWebshopObservation(RICH_ITEM).text).toContain('color: [black] [red] (selected: red)');
    const results = mapWebshopObservation(HTML_RESULTS);
    expect(results.text).toBe(
      'Search results, page 1 (50 results).\n[Back to Search] [Next >]\n[B08CZ8WS38] Otium & Co Earbuds | $4.89',
    );
    expect(results.meta!.instruction).toBe('i need red earbuds');
    const item = mapWebshopObservation(HTML_ITEM);
    expect(item.text).toContain('color: [black] [red] (selected: red)');
    expect(item.text).toContain('Item (unknown ASIN): Otium Wireless Earbuds');
    expect(mapWebshopObservation(DONE)).toMatchObject({
      text: 'Purchase complete. Score: 0.6667 (1 is a perfect match).',
      actions: [],
      meta: { page: 'done', score: 0.6666666666666666, purchasedOptions: { color: 'red' } },
    });
  });
});

describe('action grammar', () => {
  it('canonicalises case and spacing', () => {
    expect(parseWebshopAction('Click[buy now]')).toEqual({
      type: 'click',
      args: ['Buy Now'],
      text: 'click[Buy Now]',
    });
    expect(parseWebshopAction(' search[ Red   Earbuds ] ').text).toBe('search[red earbuds]');
    expect(parseWebshopAction('click[b08cz8ws38]').text).toBe('click[B08CZ8WS38]');
  });

  it('checks actions against the page', () => {
    const page = { hasSearchBar: false, clickables: ITEM_CLICKABLES };
    expect(checkWebshopAction('click[Red]', page).text).toBe('click[red]');
    expect(() => checkWebshopAction('click[blue]', page)).toThrow(
      /"blue" is not clickable on this page\. Clickable: click\[Back to Search\]/,
    );
    expect(() => checkWebshopAction('search[hat]', page)).toThrow(/no search bar/);
    const error = (() => {
      try {
        checkWebshopAction('click[search]', { hasSearchBar: true, clickables: ['search'] });
      } catch (thrown) {
        return thrown;
      }
    })();
    expect(ActionParseError.isInstance(error)).toBe(true);
  });
});

describe('candidate actions', () => {
  it('reads clickables back from synthetic states and adds queries where the search bar is', () => {
    const start = tasks[1]!.initialObservation!;
    const synthetic = { text: start.text };
    const candidates = adapter.candidateActions(synthetic, [
      { observation: start, action: 'search[t-shirt]', reward: 0, done: false },
    ]);
    expect(candidates[0]).toBe('search[small black t-shirt machine washable]');
    expect(candidates).toContain('search[t-shirt]');
    const results = {
      text: 'Search results for "x", page 1.\n[Back to Search] [Next >]\n[B08CZ8WS38] Earbuds | $4.89',
    };
    expect(adapter.candidateActions(results, [])).toEqual([
      'click[Back to Search]',
      'click[Next >]',
      'click[B08CZ8WS38]',
    ]);
    // A state without a page falls back on the last page the episode showed.
    expect(
      adapter.candidateActions({ text: 'Nothing happens.' }, [
        { observation: results, action: 'click[x]', reward: 0, done: false },
      ]),
    ).toContain('click[B08CZ8WS38]');
  });

  it('proposes the human query of a train goal from goal_query_map.json, never one of an eval goal', async () => {
    const queryMap = await loadWebshopGoalQueryMap(dataDir);
    const pick = async (split: string) => {
      for await (const task of adapter.datasets.tasks.load(dataDir, { splits: [split] })) {
        const queries = queryMap.get(normalizeWebshopInstruction(task.instruction));
        if (queries) return { task, query: queries[0]! };
      }
      throw new Error(`no ${split} goal in goal_query_map.json`);
    };
    for (const [split, expected] of [
      ['train', true],
      ['eval', false],
    ] as const) {
      const { task, query } = await pick(split);
      const start = task.initialObservation!;
      const candidates = adapter.candidateActions({ text: start.text, meta: start.meta! }, []);
      const fromInstruction = webshopSearchQueries(task.instruction).map(
        (entry) => `search[${entry}]`,
      );
      if (expected) expect(candidates[0]).toBe(parseWebshopAction(`search[${query}]`).text);
      else expect(candidates).toEqual(fromInstruction);
    }
  });
});

describe('mutateTask', () => {
  it('changes one constraint within the item vocabulary', () => {
    const random = new SeededRandom(3);
    const kinds = new Set<string>();
    for (const task of tasks) {
      for (let round = 0; round < 8; round += 1) {
        const child = adapter.mutateTask(task, random)!;
        expect(child.instruction).not.toBe(task.instruction);
        expect(child.meta.goalIndex).toBeUndefined();
        expect(child.meta.baseGoalIndex).toBe(task.meta.goalIndex);
        expect(child.initialObservation!.meta!.instruction).toBe(child.instruction);
        kinds.add(child.meta.mutation as string);
      }
    }
    expect([...kinds].sort()).toEqual(['attribute', 'color', 'price', 'size']);
    const priced = adapter.mutateTask(tasks[1]!, new SeededRandom(1))!;
    expect(priced.instruction).toMatch(/t-shirt/);
  });
});
