import { describe, expect, it } from 'vitest';
import { ConfigError } from '../errors.js';
import { Semaphore } from './semaphore.js';

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('Semaphore', () => {
  it('admits at most `limit` holders and serves waiters first in, first out', async () => {
    const semaphore = new Semaphore(2);
    const order: number[] = [];
    const releases = await Promise.all([semaphore.acquire(), semaphore.acquire()]);
    const waiters = [3, 4, 5].map((label) =>
      semaphore.acquire().then((release) => {
        order.push(label);
        return release;
      }),
    );
    await tick();
    expect(semaphore.inUse).toBe(2);
    expect(semaphore.queued).toBe(3);
    releases[0]?.();
    releases[0]?.(); // a second call must not free a second slot
    await tick();
    expect(order).toEqual([3]);
    expect(semaphore.inUse).toBe(2);
    releases[1]?.();
    (await waiters[0]!)();
    await tick();
    expect(order).toEqual([3, 4, 5]);
  });

  it('never exceeds the limit under load', async () => {
    const semaphore = new Semaphore(3);
    let running = 0;
    let peak = 0;
    await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        semaphore.run(async () => {
          running += 1;
          peak = Math.max(peak, running);
          await new Promise((resolve) => setTimeout(resolve, index % 3));
          running -= 1;
        }),
      ),
    );
    expect(peak).toBe(3);
    expect(semaphore.inUse).toBe(0);
  });

  it('drops a waiter whose signal aborts', async () => {
    const semaphore = new Semaphore(1);
    const release = await semaphore.acquire();
    const controller = new AbortController();
    const waiting = semaphore.acquire(controller.signal);
    controller.abort(new Error('gave up'));
    await expect(waiting).rejects.toThrow('gave up');
    expect(semaphore.queued).toBe(0);
    release();
    expect(semaphore.inUse).toBe(0);
  });

  it('rejects a non-positive limit', () => {
    expect(() => new Semaphore(0)).toThrow(ConfigError);
  });
});
