import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadWebshopItems } from '../datasets/goal-query-map.js';
import { webshopDataDirectory } from '../test-data-directory.js';
import { fuzzFullProcess, sequenceMatcherRatio, tokenSetRatio } from './fuzzy-match.js';

const python = resolve(import.meta.dirname, '../../../../.venv/bin/python');

describe('tokenSetRatio', () => {
  it('scores as thefuzz does on hand-checked pairs', () => {
    expect(tokenSetRatio('z2-pink', 'pink')).toBe(100);
    expect(tokenSetRatio('38 | 40 | 41 mm', 'teal')).toBe(0);
    expect(tokenSetRatio('', 'teal')).toBe(0);
    expect(tokenSetRatio('Stainless Steel', 'stainless steel')).toBe(100);
    // 'grey' vs 'gray': difflib matches g, r, y: 2*3/8 = 75.
    expect(tokenSetRatio('grey', 'gray')).toBe(75);
    expect(fuzzFullProcess('Café-Crème 8oz!')).toBe('caf crme 8oz');
    expect(sequenceMatcherRatio('abcd', 'bcde')).toBeCloseTo(0.75, 12);
  });

  it('equals thefuzz 0.19.0 (difflib) token_set_ratio on 3,000 pairs of WebShop attributes and options', async () => {
    if (!existsSync(python)) {
      throw new Error(
        `${python} is missing: run bash scripts/setup.sh to create the project virtualenv (it installs thefuzz==0.19.0 from adapters/webshop/python/requirements.txt).`,
      );
    }
    const items = await loadWebshopItems(webshopDataDirectory());
    const phrases = [...new Set([...items.values()].flatMap((item) => item.attributes))];
    phrases.push(
      '38 | 40 | 41 mm',
      'z2-pink',
      'rl56 | 60 silver mist',
      'pack of 12',
      'x-large',
      '3t280',
      'Grey',
      "women's 8.5 wide",
      'a'.repeat(230) + 'b',
    );
    const pairs: Array<[string, string]> = [];
    for (let index = 0; pairs.length < 3000; index += 1) {
      const a = phrases[(index * 7919) % phrases.length]!;
      const b = phrases[(index * 104729 + 13) % phrases.length]!;
      // Every third pair shares words, so scores above 85 are tested too.
      pairs.push(index % 3 === 0 ? [a, `${b.split(' ')[0]} ${a}`] : [a, b]);
    }
    const script = `
import json, sys, warnings
warnings.simplefilter('ignore')
from thefuzz import fuzz
pairs = json.load(sys.stdin)
print(json.dumps([fuzz.token_set_ratio(a, b) for a, b in pairs]))
`;
    const expected = JSON.parse(
      execFileSync(python, ['-c', script], { input: JSON.stringify(pairs), encoding: 'utf8' }),
    ) as number[];
    const mismatches = pairs
      .map(([a, b], index) => ({ a, b, ours: tokenSetRatio(a, b), theirs: expected[index] }))
      .filter((entry) => entry.ours !== entry.theirs);
    expect(mismatches).toEqual([]);
    expect(expected.filter((score) => score > 85).length).toBeGreaterThan(300);
  });
});
