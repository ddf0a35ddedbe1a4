/**
 * Test support: a WebShop environment server on 127.0.0.1 speaking the AgentGym WebShop
 * protocol over real HTTP, with a five-product catalogue, WebShop's page flow and `text`
 * observations as WebShop renders them (visible texts of its templates joined by
 * ` [SEP] `), and injectable faults: error answers, hangs and dropped connections.
 * Not exported from the package.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readRequestBody, sendJson } from '@dreamgym/openai-wire';
import {
  type WebshopGoal,
  type WebshopProduct,
  webshopPurchaseReward,
} from '../reward/purchase-reward.js';

interface CatalogueProduct extends WebshopProduct {
  asin: string;
  price: number;
  options: Record<string, string[]>;
}

export const TEST_CATALOGUE: CatalogueProduct[] = [
  {
    asin: 'B08CZ8WS38',
    name: 'Otium Wireless Earbuds Stereo Sound Bluetooth Headphones',
    title: 'Otium Wireless Earbuds Stereo Sound Bluetooth Headphones',
    query: 'headphones',
    productCategory: 'Electronics › Headphones › Earbud Headphones',
    attributes: ['stereo sound', 'noise cancelling'],
    bulletPoints: ['Stereo sound with deep bass', 'IPX7 waterproof'],
    description: 'Wireless earbuds with stereo sound.',
    price: 4.89,
    options: { color: ['black', 'red', 'white'] },
  },
  {
    asin: 'B07PR2D333',
    name: 'Wired Earbud Headphones In-Ear',
    title: 'Wired Earbud Headphones In-Ear with Microphone',
    query: 'headphones',
    productCategory: 'Electronics › Headphones › Earbud Headphones',
    attributes: ['hands free'],
    bulletPoints: ['Microphone for calls'],
    description: 'Wired earbuds.',
    price: 59.99,
    options: { color: ['blue', 'red'] },
  },
  {
    asin: 'B096FSTFLS',
    name: 'Sport Silicone Band Compatible with Apple Watch',
    title: 'Stainless Steel Strap Compatible with Apple Watch Band',
    query: 'wearable technology',
    productCategory: 'Electronics › Wearable Technology › Arm & Wristband Accessories',
    attributes: ['stainless steel'],
    bulletPoints: ['Stainless steel links'],
    description: 'A teal stainless steel strap.',
    price: 11.98,
    options: { color: ['teal', 'black'], size: ['38 | 40 | 41 mm', '42 | 44 | 45 mm'] },
  },
  {
    asin: 'B09F3V2HVT',
    name: 'Birthday Candles for Cake',
    title: 'Birthday Candles for Birthday Cake, 24 Pack',
    query: 'party supplies',
    productCategory: 'Home & Kitchen › Home Décor Products › Candles & Holders',
    attributes: ['birthday cake'],
    bulletPoints: ['24 candles'],
    description: 'Candles for a birthday cake.',
    price: 8.99,
    options: {},
  },
  {
    asin: 'B0868KF3ZB',
    name: 'Walking Shoes for Women Canvas Loafers',
    title: 'Walking Shoes for Women, Canvas Slip on Loafers',
    query: "women's loafers & slip-ons",
    productCategory: 'Clothing, Shoes & Jewelry › Women › Shoes › Loafers & Slip-Ons',
    attributes: ['rubber sole'],
    bulletPoints: ['Breathable canvas'],
    description: 'Loafers for teen girls.',
    price: 17.92,
    options: { size: ['7', '8', '9'], color: ['z2-pink', 'z1-black'] },
  },
];

interface TestGoal extends WebshopGoal {
  instructionText: string;
}

/** The server's goals in index order: goal 0 is solved by the earbuds in red. */
export const TEST_GOALS: TestGoal[] = [
  {
    instructionText:
      'i am looking for a red stereo sound earbud headphones, and price lower than 50.00 dollars',
    query: 'headphones',
    name: 'Otium Wireless Earbuds Stereo Sound Bluetooth Headphones',
    productCategory: 'Electronics › Headphones › Earbud Headphones',
    attributes: ['stereo sound'],
    goalOptions: ['red'],
    priceUpper: 50,
  },
  {
    instructionText:
      'i am looking for a teal color stainless steel strap, and price lower than 20.00 dollars',
    query: 'wearable technology',
    name: 'Sport Silicone Band Compatible with Apple Watch',
    productCategory: 'Electronics › Wearable Technology › Arm & Wristband Accessories',
    attributes: ['stainless steel'],
    goalOptions: ['teal'],
    priceUpper: 20,
  },
];

type Page = 'index' | 'results' | 'item' | 'sub' | 'done';
interface Session {
  goal: TestGoal | undefined;
  page: Page;
  keywords: string[];
  pageNumber: number;
  results: CatalogueProduct[];
  asin: string | undefined;
  options: Record<string, string>;
  section: string;
  reward: number;
}

/** A fault for the next matching request. */
export type Fault =
  | { kind: 'status'; status: number; body?: string }
  | { kind: 'hang'; ms: number }
  | { kind: 'drop' }
  | { kind: 'forget' };

/** The running test server. */
export interface AgentgymWebshopTestServer {
  url: string;
  /** Requests received, as `METHOD /path`. */
  requests: string[];
  /** Makes the next `count` requests to `path` fail with `fault`. */
  inject(path: string, fault: Fault, count?: number): void;
  close(): Promise<void>;
}

const SEP = ' [SEP] ';

function productPrice(product: CatalogueProduct): string {
  return `$${product.price}`;
}

function render(session: Session): string {
  const instruction = session.goal?.instructionText ?? '';
  const head = ['Instruction:', instruction, 'Back to Search'];
  switch (session.page) {
    case 'index':
      return ['WebShop', 'Instruction:', instruction, 'Search'].join(SEP);
    case 'results': {
      const shown = session.results.slice((session.pageNumber - 1) * 10, session.pageNumber * 10);
      return [
        ...head,
        `Page ${session.pageNumber} (Total results: ${session.results.length})`,
        ...(session.pageNumber > 1 ? ['< Prev'] : []),
        'Next >',
        ...shown.flatMap((product) => [product.asin, product.title, productPrice(product)]),
      ].join(SEP);
    }
    case 'item': {
      const product = TEST_CATALOGUE.find((candidate) => candidate.asin === session.asin)!;
      return [
        ...head,
        '< Prev',
        ...Object.entries(product.options).flatMap(([name, values]) => [name, ...values]),
        product.title,
        `Price: ${productPrice(product)}`,
        'Rating: N.A.',
        'Description',
        'Features',
        'Reviews',
        'Buy Now',
      ].join(SEP);
    }
    case 'sub': {
      const product = TEST_CATALOGUE.find((candidate) => candidate.asin === session.asin)!;
      const text =
        session.section === 'features' ? product.bulletPoints.join(' ') : product.description;
      return [...head, '< Prev', text].join(SEP);
    }
    case 'done':
      return [
        'Thank you for shopping with us!',
        'Your code:',
        'None',
        '(Paste it in your MTurk interface.)',
        'Purchased',
        'asin',
        session.asin ?? '',
        'options',
        JSON.stringify(session.options),
        'Your score (min 0.0, max 1.0)',
        String(session.reward),
        'Reward Details',
        'None',
      ].join(SEP);
  }
}

function clickables(session: Session): { has_search_bar: boolean; clickables: string[] } {
  switch (session.page) {
    case 'index':
      return { has_search_bar: true, clickables: ['search'] };
    case 'results': {
      const shown = session.results.slice((session.pageNumber - 1) * 10, session.pageNumber * 10);
      return {
        has_search_bar: false,
        clickables: [
          'back to search',
          ...(session.pageNumber > 1 ? ['< prev'] : []),
          'next >',
          ...shown.map((product) => product.asin.toLowerCase()),
        ],
      };
    }
    case 'item': {
      const product = TEST_CATALOGUE.find((candidate) => candidate.asin === session.asin)!;
      return {
        has_search_bar: false,
        clickables: [
          'back to search',
          '< prev',
          'description',
          'features',
          'reviews',
          'buy now',
          ...Object.values(product.options).flat(),
        ],
      };
    }
    case 'sub':
      return { has_search_bar: false, clickables: ['back to search', '< prev'] };
    case 'done':
      return { has_search_bar: false, clickables: [] };
  }
}

function search(keywords: string[]): CatalogueProduct[] {
  const scored = TEST_CATALOGUE.map((product, index) => {
    const text = `${product.title} ${product.attributes.join(' ')}`.toLowerCase();
    return { product, index, hits: keywords.filter((word) => text.includes(word)).length };
  }).filter((entry) => entry.hits > 0);
  scored.sort((a, b) => b.hits - a.hits || a.index - b.index);
  return scored.map((entry) => entry.product);
}

/** WebShop's `WebAgentTextEnv.step`, on a {@link Session}. */
function step(session: Session, action: string): { reward: number; done: boolean } {
  const match = /^(.+)\[(.+)\]$/.exec(action);
  const name = match?.[1];
  const argument = match?.[2]?.toLowerCase();
  if (name === 'search' && argument) {
    session.keywords = argument.split(' ');
    session.results = search(session.keywords);
    session.pageNumber = 1;
    session.page = 'results';
    session.asin = undefined;
    session.options = {};
    return { reward: 0, done: false };
  }
  if (name !== 'click' || !argument || argument === 'search') return { reward: 0, done: false };
  if (!clickables(session).clickables.includes(argument)) return { reward: 0, done: false };
  if (argument === 'buy now') {
    const product = TEST_CATALOGUE.find((candidate) => candidate.asin === session.asin)!;
    session.reward = webshopPurchaseReward({
      goal: session.goal!,
      product,
      price: product.price,
      options: session.options,
    }).reward;
    session.page = 'done';
    return { reward: session.reward, done: true };
  }
  if (argument === 'back to search') session.page = 'index';
  else if (argument === 'next >' && session.page === 'results') session.pageNumber += 1;
  else if (argument === '< prev' && session.page === 'results') session.pageNumber -= 1;
  else if (argument === '< prev' && session.page === 'sub') session.page = 'item';
  else if (argument === '< prev' && session.page === 'item') session.page = 'results';
  else if (['description', 'features', 'reviews'].includes(argument)) {
    session.section = argument;
    session.page = 'sub';
  } else if (session.page === 'results') {
    session.asin = argument.toUpperCase();
    session.page = 'item';
  } else {
    const product = TEST_CATALOGUE.find((candidate) => candidate.asin === session.asin)!;
    const option = Object.entries(product.options).find(([, values]) => values.includes(argument));
    if (option) session.options[option[0]] = argument;
  }
  return { reward: 0, done: false };
}

async function readJson(request: IncomingMessage): Promise<unknown> {
  const text = await readRequestBody(request);
  return text === '' ? undefined : JSON.parse(text);
}

/** Starts the server on a free port of 127.0.0.1. */
export async function startAgentgymWebshopTestServer(): Promise<AgentgymWebshopTestServer> {
  const sessions = new Map<number, Session>();
  let nextId = 7;
  const faults: Array<{ path: string; fault: Fault; count: number }> = [];
  const requests: string[] = [];
  const hanging = new Set<ServerResponse>();

  const json = (response: ServerResponse, status: number, value: unknown) =>
    sendJson(response, status, value);
  const server = createServer((request, response) => {
    void (async () => {
      const url = new URL(request.url ?? '/', 'http://127.0.0.1');
      requests.push(`${request.method} ${url.pathname}`);
      const fault = faults.find((entry) => entry.path === url.pathname && entry.count > 0);
      if (fault) {
        fault.count -= 1;
        if (fault.fault.kind === 'status') {
          response.writeHead(fault.fault.status, { 'content-type': 'text/plain' });
          response.end(fault.fault.body ?? 'Internal Server Error');
          return;
        }
        if (fault.fault.kind === 'drop') {
          request.socket.destroy();
          return;
        }
        if (fault.fault.kind === 'forget') sessions.clear();
        if (fault.fault.kind === 'hang') {
          hanging.add(response);
          await new Promise((done) => setTimeout(done, (fault.fault as { ms: number }).ms));
          hanging.delete(response);
          if (response.destroyed) return;
        }
      }
      const body = (await readJson(request)) as Record<string, unknown> | undefined;
      const environment = Number(url.searchParams.get('env_idx') ?? body?.env_idx);
      const session = sessions.get(environment);
      // FastAPI answers an exception (a KeyError for an unknown env_idx) with a bare 500.
      const missing = () => {
        response.writeHead(500, { 'content-type': 'text/plain' });
        response.end('Internal Server Error');
      };
      switch (`${request.method} ${url.pathname}`) {
        case 'GET /':
          return json(response, 200, 'ok');
        case 'GET /list_envs':
          return json(response, 200, [...sessions.keys()]);
        case 'POST /create': {
          const id = nextId;
          nextId += 11;
          sessions.set(id, {
            goal: TEST_GOALS[0],
            page: 'index',
            keywords: [],
            pageNumber: 1,
            results: [],
            asin: undefined,
            options: {},
            section: '',
            reward: 0,
          });
          return json(response, 200, id);
        }
        case 'POST /reset': {
          if (!session) return missing();
          const goal = TEST_GOALS[Number(body?.session_id ?? 0)];
          if (!goal) return missing();
          Object.assign(session, {
            goal,
            page: 'index',
            keywords: [],
            results: [],
            asin: undefined,
            options: {},
          });
          return json(response, 200, [render(session), null]);
        }
        case 'POST /step': {
          if (!session) return missing();
          if (typeof body?.action !== 'string') {
            return json(response, 422, {
              detail: [{ loc: ['body', 'action'], msg: 'field required' }],
            });
          }
          const { reward, done } = step(session, body.action);
          return json(response, 200, { state: render(session), reward, done, info: null });
        }
        case 'GET /available_actions':
          return session ? json(response, 200, clickables(session)) : missing();
        case 'GET /observation':
          return session ? json(response, 200, render(session)) : missing();
        case 'GET /instruction_text':
          return session
            ? json(response, 200, `Instruction: ${session.goal?.instructionText}`)
            : missing();
        case 'POST /close': {
          const closed = sessions.delete(environment);
          return json(response, 200, { closed });
        }
        default:
          return json(response, 404, { detail: 'Not Found' });
      }
    })().catch((error: unknown) => {
      if (!response.headersSent) {
        response.writeHead(500, { 'content-type': 'text/plain' });
        response.end(String(error));
      }
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    inject(path, fault, count = 1) {
      faults.push({ path, fault, count });
    },
    async close() {
      for (const response of hanging) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}
