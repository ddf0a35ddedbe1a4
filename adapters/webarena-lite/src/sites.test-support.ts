/**
 * Test support: stand-ins for WebArena's sites on 127.0.0.1. Pages come from
 * `src/__fixtures__/sites/<site>/` (see its README); the shop's REST API answers the admin
 * token, latest-order and product-review requests of WebArena's helpers in Magento's JSON
 * shapes, after checking the admin's credentials and bearer token. Not exported.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveDirectory } from '@dreamgym/browser';
import type { Task } from '@dreamgym/core';
import type { WebarenaSites } from './config/sites.js';
import { readWebarenaConfigFile, webarenaConfigToTask } from './datasets/task-configs.js';
import { webarenaDataDirectory } from './test-data-directory.js';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '__fixtures__');

/** Running stand-in sites. */
export interface TestSites {
  sites: Required<Pick<WebarenaSites, 'shopping' | 'shopping_admin' | 'gitlab' | 'reddit'>>;
  /** REST requests received, as `METHOD path`. */
  restRequests: string[];
  close(): Promise<void>;
}

/** Starts the stand-in sites, each at the root of its own origin, as WebArena deploys them. */
export async function startTestSites(): Promise<TestSites> {
  const [shopPages, shoppingAdmin, gitlab, reddit] = await Promise.all(
    ['shopping', 'shopping_admin', 'gitlab', 'reddit'].map((site) =>
      serveDirectory(join(FIXTURES, 'sites', site)),
    ),
  );
  const restRequests: string[] = [];
  const token = 'test-admin-token';
  // The storefront answers its REST API itself and forwards pages to the static server.
  const shop = createServer(async (request, response) => {
    const url = new URL(request.url ?? '/', 'http://host');
    const json = (status: number, body: unknown) =>
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (url.pathname.startsWith('/rest/')) {
      restRequests.push(`${request.method} ${url.pathname}`);
      if (
        url.pathname === '/rest/default/V1/integration/admin/token' &&
        request.method === 'POST'
      ) {
        let body = '';
        for await (const chunk of request) body += chunk;
        const credentials = JSON.parse(body) as { username?: string; password?: string };
        if (credentials.username === 'admin' && credentials.password === 'admin1234')
          return json(200, token);
        return json(401, { message: 'The account sign-in was incorrect.' });
      }
      if (request.headers.authorization !== `Bearer ${token}`)
        return json(401, { message: 'not authorized' });
      if (url.pathname === '/rest/V1/orders') {
        const sorted =
          url.searchParams.get('searchCriteria[sortOrders][0][field]') === 'created_at' &&
          url.searchParams.get('searchCriteria[sortOrders][0][direction]') === 'DESC';
        return json(200, {
          items: sorted ? [{ increment_id: '000000190', status: 'pending' }] : [],
        });
      }
      const reviews = /^\/rest\/V1\/products\/([^/]+)\/reviews$/.exec(url.pathname);
      if (reviews) {
        return json(
          200,
          reviews[1] === 'B00J8RZL7I'
            ? [
                { nickname: 'Earlier Reviewer', ratings: [{ rating_name: 'Rating', percent: 60 }] },
                { nickname: 'Emma Lopez', ratings: [{ rating_name: 'Rating', percent: 100 }] },
              ]
            : [],
        );
      }
      return json(404, { message: 'no such route' });
    }
    const forwarded = await fetch(`${shopPages!.url.slice(0, -1)}${url.pathname}${url.search}`, {
      redirect: 'manual',
    });
    const headers: Record<string, string> = {};
    for (const name of ['content-type', 'location']) {
      const value = forwarded.headers.get(name);
      if (value) headers[name] = value;
    }
    response.writeHead(forwarded.status, headers).end(Buffer.from(await forwarded.arrayBuffer()));
  });
  await new Promise<void>((done) => shop.listen(0, '127.0.0.1', () => done()));
  const origin = (url: string) => url.replace(/\/$/, '');
  return {
    sites: {
      shopping: `http://127.0.0.1:${(shop.address() as AddressInfo).port}`,
      shopping_admin: origin(shoppingAdmin!.url),
      gitlab: origin(gitlab!.url),
      reddit: origin(reddit!.url),
    },
    restRequests,
    async close() {
      await new Promise<void>((done) => {
        shop.close(() => done());
        shop.closeAllConnections();
      });
      await Promise.all(
        [shopPages, shoppingAdmin, gitlab, reddit].map((server) => server!.close()),
      );
    },
  };
}

/** The real WebArena-Lite configs of `taskIds`, as tasks (placeholders resolved for `sites`). */
export async function realTasks(
  taskIds: number[],
  sites: WebarenaSites = {},
): Promise<Map<number, Task>> {
  const configs = await readWebarenaConfigFile(
    join(webarenaDataDirectory(), 'test_webarena_lite.raw.json'),
  );
  const tasks = new Map<number, Task>();
  for (const located of configs) {
    if (taskIds.includes(located.config.task_id))
      tasks.set(located.config.task_id, webarenaConfigToTask(located, sites));
  }
  return tasks;
}

/** The sample of original WebArena configs (see `__fixtures__/webarena-test-sample.json`). */
export const WEBARENA_SAMPLE_FILE = join(FIXTURES, 'webarena-test-sample.json');
