import { describe, expect, it } from 'vitest';
import {
  cleanAnswer,
  exactMatch,
  mustExclude,
  mustInclude,
  mustIncludeAny,
  satisfiesCondition,
  unescapeHtml,
  wordTokens,
} from './text-matching.js';
import { urlMatches } from './url-match.js';

describe('text matching', () => {
  it('cleans answers: trims, removes one pair of quotes, lower-cases', () => {
    expect(cleanAnswer('  "Quest Lumaflex™ Band" ')).toBe('quest lumaflex™ band');
    expect(cleanAnswer("'N/A'")).toBe('n/a');
    expect(cleanAnswer('"')).toBe('"');
    expect(exactMatch('Quest Lumaflex™ Band', '"quest lumaflex™ band"')).toBe(true);
    expect(exactMatch('Sprite', 'Sprite Stasis Ball')).toBe(false);
  });

  it('matches a one-token phrase only as a whole token, longer phrases as substrings', () => {
    expect(wordTokens('It costs $25.99, t-shirts: 1,000.')).toEqual([
      'It',
      'costs',
      '$',
      '25.99',
      ',',
      't-shirts',
      ':',
      '1,000',
      '.',
    ]);
    expect(mustInclude('0', 'There are 10 reviews')).toBe(false);
    expect(mustInclude('0', 'There are 0 reviews')).toBe(true);
    expect(mustInclude('Overnight Duffle', 'Impulse Duffle, overnight duffle and more')).toBe(true);
    expect(mustIncludeAny('65 |OR| 3', 'Around 3.1 stars')).toBe(false);
    expect(mustIncludeAny('65 |OR| 3', 'about 3 stars (65%)')).toBe(true);
    expect(mustExclude('refund', 'no refund given')).toBe(false);
  });

  it('checks numeric conditions', () => {
    expect(satisfiesCondition(5, '>= 3')).toBe(true);
    expect(satisfiesCondition(2, '>= 3')).toBe(false);
    expect(satisfiesCondition(13, '== 12 |OR| == 13')).toBe(true);
    expect(() => satisfiesCondition(1, 'about 3')).toThrow(/not a condition/);
  });

  it('decodes HTML entities', () => {
    expect(unescapeHtml('Order &amp; Account &#8482; &#x2122; &unknown;')).toBe(
      'Order & Account ™ ™ &unknown;',
    );
  });
});

describe('urlMatches', () => {
  const reference =
    'http://127.0.0.1:8023/kkroening/ffmpeg-python/-/issues/?sort=created_date&state=opened&label_name%5B%5D=question&first_page_size=20';

  it('GOLD in PRED: the reference path inside the page path, and its query values, in any order', () => {
    expect(
      urlMatches(
        reference,
        'http://localhost:8023/kkroening/ffmpeg-python/-/issues/?state=opened&first_page_size=20&label_name%5B%5D=question&sort=created_date',
        'GOLD in PRED',
      ),
    ).toBe(true);
    expect(
      urlMatches(
        reference,
        'http://127.0.0.1:8023/kkroening/ffmpeg-python/-/issues/?state=closed&label_name%5B%5D=question&sort=created_date&first_page_size=20',
        'GOLD in PRED',
      ),
    ).toBe(false);
    expect(
      urlMatches(
        'http://127.0.0.1:9999/f/nyc',
        'http://127.0.0.1:9999/f/nyc/12345/comment/678/',
        'GOLD in PRED',
      ),
    ).toBe(true);
    expect(urlMatches('http://a/x |OR| http://a/y', 'http://a/y/z', 'GOLD in PRED')).toBe(true);
  });

  it('EXACT (the default): equal up to a trailing slash and localhost', () => {
    expect(
      urlMatches(
        'http://127.0.0.1:8023/a11yproject/a11yproject.com/-/issues/719',
        'http://localhost:8023/a11yproject/a11yproject.com/-/issues/719/',
      ),
    ).toBe(true);
    expect(
      urlMatches('http://127.0.0.1:8023/a/-/issues/719', 'http://127.0.0.1:8023/a/-/issues/7190'),
    ).toBe(false);
  });
});
