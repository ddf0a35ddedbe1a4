import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, EnvironmentError } from '@dreamgym/core';
import { describe, expect, it } from 'vitest';
import { downloadAlfworldData } from './download.js';

/** A 127.0.0.1 port with nothing listening: bind one, note it, release it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('downloadAlfworldData', () => {
  it('validates its arguments', async () => {
    await expect(downloadAlfworldData('')).rejects.toSatisfy(ConfigError.isInstance);
    await expect(downloadAlfworldData(tmpdir(), { url: 'not a url' })).rejects.toSatisfy(
      (error: unknown) => ConfigError.isInstance(error) && error.field === 'url',
    );
  });

  it('fails with an EnvironmentError naming the URL when the server is unreachable', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'alfworld-download-'));
    const url = `http://127.0.0.1:${await closedPort()}/json_2.1.1_tw-pddl.zip`;
    try {
      const error = await downloadAlfworldData(directory, { url }).catch((caught) => caught);
      expect(EnvironmentError.isInstance(error)).toBe(true);
      expect(error.message).toContain(url);
      expect(error.message).toContain('ECONNREFUSED');
      expect(await readdir(directory)).toEqual([]);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});
