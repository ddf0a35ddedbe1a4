import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { replaceFileAtomic, writeFileAtomic } from './atomic-write.js';

let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'dreamgym-atomic-'));
});
afterEach(() => rm(folder, { recursive: true, force: true }));

it('writes text, bytes and byte chunks whole, replacing what was there', async () => {
  const file = join(folder, 'a.bin');
  await writeFileAtomic(file, 'old');
  await writeFileAtomic(file, [Uint8Array.of(1, 2), Uint8Array.of(3)]);
  expect([...(await readFile(file))]).toEqual([1, 2, 3]);
  await writeFileAtomic(file, Uint8Array.of(9));
  expect([...(await readFile(file))]).toEqual([9]);
  expect(await readdir(folder)).toEqual(['a.bin']);
});

it('keeps the old file and leaves no temporary when the write fails', async () => {
  const file = join(folder, 'a.json');
  await writeFile(file, '{"v": 1}');
  await expect(
    replaceFileAtomic(file, async (temporary) => {
      await writeFile(temporary, '{"v": 2, "trunc');
      throw new Error('disk full');
    }),
  ).rejects.toThrow('disk full');
  expect(await readFile(file, 'utf8')).toBe('{"v": 1}');
  expect(await readdir(folder)).toEqual(['a.json']);
});

it('lets concurrent writes of one file from one process each land whole', async () => {
  const file = join(folder, 'n.txt');
  const texts = Array.from({ length: 8 }, (_, index) => String(index).repeat(10_000));
  await Promise.all(texts.map((text) => writeFileAtomic(file, text)));
  expect(texts).toContain(await readFile(file, 'utf8'));
  expect(await readdir(folder)).toEqual(['n.txt']);
});
