/**
 * The set-up flags as the CLI reads them into a domain set-up (the part `setup.json` keeps).
 */
import { describe, expect, it } from 'vitest';
import type { CommandIo } from './command-arguments.js';
import { domainSetupFromFlags } from './run-flags.js';

const io: CommandIo = {
  stdout: { write: () => true },
  stderr: { write: () => true },
  env: {},
  cwd: '/work',
};

describe('domainSetupFromFlags', () => {
  it('reads --skip-invalid, and leaves it out when absent', () => {
    const lenient = domainSetupFromFlags(
      { domain: 'webarena-lite', data: 'data/webarena-lite', 'skip-invalid': true },
      {},
      io,
      'usage',
    );
    expect(lenient).toMatchObject({
      domain: 'webarena-lite',
      data: '/work/data/webarena-lite',
      skipInvalid: true,
    });
    const strict = domainSetupFromFlags({ domain: 'alfworld', data: 'd' }, {}, io, 'usage');
    expect(strict).not.toHaveProperty('skipInvalid');
  });

  it('reads --target-recall, and refuses one outside (0, 1] naming the flag', () => {
    const tuned = domainSetupFromFlags(
      { domain: 'alfworld', data: 'd', 'target-recall': '0.9' },
      {},
      io,
      'usage',
    );
    expect(tuned.targetRecall).toBe(0.9);
    for (const bad of ['1.5', '0', 'high'])
      expect(() =>
        domainSetupFromFlags({ domain: 'alfworld', data: 'd', 'target-recall': bad }, {}, io, 'u'),
      ).toThrow(/--target-recall must be/);
  });
});
