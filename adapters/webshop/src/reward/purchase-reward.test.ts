import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readWebshopSession } from '../datasets/mturk-sessions.js';
import { webshopDataDirectory } from '../test-data-directory.js';
import {
  combinePurchaseReward,
  matchOptions,
  priceWithinBound,
  productTypeFactor,
  webshopPurchaseReward,
} from './purchase-reward.js';

describe('productTypeFactor', () => {
  it('follows WebShop: 1 on any match, 0.5 on none, 0.1 below a 0.1 title score, 0 at 0', () => {
    expect(productTypeFactor({ queryMatch: false, categoryMatch: true, titleScore: 0.125 })).toBe(
      1,
    );
    expect(productTypeFactor({ queryMatch: false, categoryMatch: false, titleScore: 0.2 })).toBe(
      0.5,
    );
    expect(productTypeFactor({ queryMatch: true, categoryMatch: true, titleScore: 0.05 })).toBe(
      0.1,
    );
    expect(productTypeFactor({ queryMatch: true, categoryMatch: true, titleScore: 0 })).toBe(0);
  });
});

describe('webshopPurchaseReward', () => {
  const goal = {
    query: 'headphones',
    name: 'Otium Wireless Earbuds Stereo Sound Bluetooth Headphones',
    productCategory: 'Electronics › Headphones › Earbud Headphones',
    attributes: ['stereo sound', 'waterproof'],
    goalOptions: ['red', 'large'],
    priceUpper: 50,
  };
  const product = {
    query: 'headphones',
    name: 'Wireless Earbuds Bluetooth Headphones',
    productCategory: 'Electronics › Headphones',
    attributes: ['Stereo Sound'],
    title: 'Wireless Earbuds',
    bulletPoints: ['IPX7 Waterproof earbuds'],
    description: '',
  };

  it('adds attribute, option and price matches over their count, times the type factor', () => {
    const result = webshopPurchaseReward({
      goal,
      product,
      price: 49.99,
      options: { color: 'dark red', size: 'x-small' },
    });
    // stereo sound (attribute list) and waterproof (bullet points); red (normalised from
    // 'dark red'... to 'dark', so no), large (x-small: no); price yes.
    expect(result.attributeMatches).toBe(2);
    expect(result.optionMatches).toBe(0);
    expect(result.rPrice).toBe(true);
    expect(result.rType).toBe(1);
    expect(result.reward).toBeCloseTo(3 / 5, 12);
    const perfect = webshopPurchaseReward({
      goal,
      product,
      price: 20,
      options: { color: 'z1-red', size: 'large' },
    });
    expect(perfect.reward).toBe(1);
  });

  it('reproduces every reward and reward_info logged in the real human sessions', async () => {
    const folder = join(webshopDataDirectory(), 'mturk_sessions');
    let purchases = 0;
    let exact = 0;
    for (const name of (await readdir(folder)).sort()) {
      for (const { record } of await readWebshopSession(join(folder, name))) {
        if (record.page !== 'done') continue;
        purchases += 1;
        const { goal, content, reward_info: info } = record;
        // The purchased product's catalogue record is not logged, so its attribute matches
        // and type match come from the log; options and price are recomputed.
        const options = matchOptions(Object.values(content.options), goal.goal_options);
        const priceWithin = priceWithinBound(content.price, goal.price_upper);
        const optionCount = Array.isArray(goal.goal_options)
          ? goal.goal_options.length
          : Object.keys(goal.goal_options).length;
        const result = combinePurchaseReward({
          typeMatch: {
            queryMatch: info.query_match,
            categoryMatch: info.category_match,
            titleScore: info.title_score,
          },
          attributeMatches: Math.round(info.r_att * goal.attributes.length),
          attributeCount: goal.attributes.length,
          optionMatches: options.matches,
          optionCount,
          priceWithin,
        });
        const same =
          result.reward === record.reward &&
          result.rType === info.r_type &&
          result.rAtt === info.r_att &&
          result.rOption === info.r_option &&
          result.rPrice === info.r_price;
        expect({
          name,
          reward: result.reward,
          rOption: result.rOption,
          rType: result.rType,
        }).toEqual({
          name,
          reward: record.reward,
          rOption: info.r_option,
          rType: info.r_type,
        });
        if (same) exact += 1;
      }
    }
    expect(purchases).toBe(9);
    expect(exact).toBe(9);
  });
});
