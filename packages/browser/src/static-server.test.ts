import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { serveDirectory } from './static-server.js';
import { TEST_PAGES_DIRECTORY } from './test-pages.test-support.js';

describe('serveDirectory', () => {
  it('serves files with their content type, refuses paths outside the root, 404s the rest', async () => {
    const server = await serveDirectory(TEST_PAGES_DIRECTORY);
    try {
      const page = await fetch(`${server.url}form.html`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(await page.text()).toContain('<title>Order form</title>');
      expect((await fetch(`${server.url}missing.html`)).status).toBe(404);
      expect((await fetch(`${server.url}..%2f..%2fpackage.json`)).status).toBe(403);
      expect((await fetch(`${server.url}form.html`, { method: 'POST' })).status).toBe(405);
    } finally {
      await server.close();
      await server.close();
    }
  });

  it('redirects a directory without its slash, and serves its index.html', async () => {
    const root = await mkdtemp(join(tmpdir(), 'dreamgym-static-'));
    await mkdir(join(root, 'shop', 'cart'), { recursive: true });
    await writeFile(join(root, 'shop', 'cart', 'index.html'), '<title>Cart</title>');
    const server = await serveDirectory(root);
    try {
      const moved = await fetch(`${server.url}shop/cart?item=1`, { redirect: 'manual' });
      expect(moved.status).toBe(301);
      expect(moved.headers.get('location')).toBe('/shop/cart/?item=1');
      expect(await (await fetch(`${server.url}shop/cart?item=1`)).text()).toBe(
        '<title>Cart</title>',
      );
    } finally {
      await server.close();
      await rm(root, { recursive: true, force: true });
    }
  });

  it('fails with the address when the port is taken', async () => {
    const first = await serveDirectory(TEST_PAGES_DIRECTORY);
    try {
      await expect(serveDirectory(TEST_PAGES_DIRECTORY, { port: first.port })).rejects.toThrow(
        new RegExp(`Could not serve .* on 127\\.0\\.0\\.1:${first.port}`),
      );
    } finally {
      await first.close();
    }
  });
});
