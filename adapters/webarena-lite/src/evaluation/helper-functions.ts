/**
 * WebArena's evaluation helpers, run against the live sites: the shop's REST API (latest
 * order, a product's latest review), the forum's post URL, a GitLab project member's role.
 */

import type { Page } from '@dreamgym/browser';
import { EnvironmentError } from '@dreamgym/core';
import { z } from 'zod';
import type { WebarenaSites } from '../config/sites.js';
import type { HelperCall } from './helper-call.js';

/** Accounts the helpers log in with (WebArena's `ACCOUNTS`). */
export const WebarenaAccountsSchema = z.object({
  /** The shop's admin, for its REST API. Default WebArena's `admin` / `admin1234`. */
  shopping_site_admin: z
    .object({ username: z.string().min(1), password: z.string().min(1) })
    .default({ username: 'admin', password: 'admin1234' }),
});
/** Accounts as a caller writes them. */
export type WebarenaAccountsInput = z.input<typeof WebarenaAccountsSchema>;
/** Accounts after defaults. */
export type WebarenaAccounts = z.output<typeof WebarenaAccountsSchema>;

/** What the helpers need. */
export interface HelperContext {
  page: Page;
  sites: WebarenaSites;
  accounts: WebarenaAccounts;
  /** Milliseconds for one REST request. */
  timeoutMs: number;
}

function shoppingUrl(context: HelperContext): string {
  const url = context.sites.shopping;
  if (!url) {
    throw new EnvironmentError(
      "This check calls the shop's REST API: configure sites.shopping (e.g. http://127.0.0.1:7770).",
    );
  }
  return url;
}

async function request(url: string, init: RequestInit, context: HelperContext): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(url, { ...init, signal: AbortSignal.timeout(context.timeoutMs) });
  } catch (error) {
    throw new EnvironmentError(
      `${init.method ?? 'GET'} ${url} failed: ${(error as Error).message}`,
      { cause: error },
    );
  }
  if (!response.ok) {
    throw new EnvironmentError(
      `${init.method ?? 'GET'} ${url} answered HTTP ${response.status}: ${(await response.text()).slice(0, 200)}`,
    );
  }
  return response.json();
}

async function adminToken(context: HelperContext): Promise<string> {
  const token = await request(
    `${shoppingUrl(context)}/rest/default/V1/integration/admin/token`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(context.accounts.shopping_site_admin),
    },
    context,
  );
  if (typeof token !== 'string')
    throw new EnvironmentError('The shop answered the admin token request without a token.');
  return token;
}

async function authorized(path: string, context: HelperContext): Promise<unknown> {
  const token = await adminToken(context);
  return request(
    `${shoppingUrl(context)}${path}`,
    { headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } },
    context,
  );
}

const ReviewsSchema = z.array(
  z
    .object({
      nickname: z.string(),
      ratings: z.array(z.object({ percent: z.union([z.number(), z.string()]) })).default([]),
    })
    .loose(),
);

/** The URL of the shop's latest order (the customer-side order page). */
export async function shoppingLatestOrderUrl(context: HelperContext): Promise<string> {
  const params = new URLSearchParams({
    'searchCriteria[sortOrders][0][field]': 'created_at',
    'searchCriteria[sortOrders][0][direction]': 'DESC',
    'searchCriteria[pageSize]': '1',
  });
  const orders = z
    .object({
      items: z.array(z.object({ increment_id: z.union([z.string(), z.number()]) }).loose()).min(1),
    })
    .parse(await authorized(`/rest/V1/orders?${params}`, context));
  return `${shoppingUrl(context)}/sales/order/view/order_id/${Number.parseInt(String(orders.items[0]!.increment_id), 10)}/`;
}

/** The nickname on a product's latest review (`''` without reviews). */
export async function shoppingLatestReviewAuthor(
  sku: string,
  context: HelperContext,
): Promise<string> {
  const reviews = ReviewsSchema.parse(
    await authorized(`/rest/V1/products/${encodeURIComponent(sku)}/reviews`, context),
  );
  return reviews.at(-1)?.nickname ?? '';
}

/** The rating (percent) of a product's latest review (`''` without reviews). */
export async function shoppingLatestReviewRating(
  sku: string,
  context: HelperContext,
): Promise<string> {
  const reviews = ReviewsSchema.parse(
    await authorized(`/rest/V1/products/${encodeURIComponent(sku)}/reviews`, context),
  );
  const rating = reviews.at(-1)?.ratings[0]?.percent;
  return rating === undefined ? '' : String(rating);
}

/** A forum URL cut to its post: `/f/<forum>/<post id>/`, or the URL itself when it is not a post's. */
export function redditPostUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  const parts = parsed.pathname.split('/');
  if (parts.length < 4 || parts[1] !== 'f') return url;
  return `${parsed.protocol}//${parsed.host}/f/${parts[2]}/${parts[3]}/`;
}

/** The role shown for `@account` on a GitLab project's members page open in `page` (`''` when absent). */
export async function gitlabProjectMemberRole(page: Page, account: string): Promise<string> {
  try {
    const role = await page.evaluate((name) => {
      const scope = globalThis as unknown as {
        document: { querySelectorAll(selector: string): ArrayLike<{ innerText: string }> };
      };
      const accounts = scope.document.querySelectorAll(
        "td[data-label='Account'] span.gl-avatar-labeled-sublabel",
      );
      let index = -1;
      for (let at = 0; at < accounts.length; at += 1) {
        if (accounts[at]!.innerText === `@${name}`) {
          index = at;
          break;
        }
      }
      return scope.document.querySelectorAll('td.col-max-role span')[index]?.innerText ?? '';
    }, account);
    return role;
  } catch {
    return '';
  }
}

/** Runs a parsed helper call; `__last_url__` in string arguments is the page's URL. */
export async function runHelperCall(call: HelperCall, context: HelperContext): Promise<string> {
  const strings = call.args.map((argument) =>
    argument.kind === 'string'
      ? argument.value.replaceAll('__last_url__', context.page.url())
      : undefined,
  );
  const string = (index: number) => {
    const value = strings[index];
    if (value === undefined)
      throw new EnvironmentError(`${call.name} needs a string as argument ${index + 1}.`);
    return value;
  };
  switch (call.name) {
    case 'shopping_get_latest_order_url':
      return shoppingLatestOrderUrl(context);
    case 'shopping_get_sku_latest_review_author':
      return shoppingLatestReviewAuthor(string(0), context);
    case 'shopping_get_sku_latest_review_rating':
      return shoppingLatestReviewRating(string(0), context);
    case 'reddit_get_post_url':
      return redditPostUrl(string(0));
    case 'gitlab_get_project_memeber_role':
      return gitlabProjectMemberRole(
        context.page,
        string(call.args.findIndex((argument) => argument.kind === 'string')),
      );
  }
}
