/**
 * A small static file server on 127.0.0.1: serves test pages and MiniWoB++'s task pages to
 * the browser over real HTTP (pages behave as on a site: same-origin rules, relative URLs,
 * cookies), with nothing to install.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { EnvironmentError } from '@dreamgym/core';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.htm': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.txt': 'text/plain; charset=utf-8',
};

/** A running static server. */
export interface StaticServer {
  /** Base URL with a trailing slash, e.g. `http://127.0.0.1:41234/`. */
  url: string;
  /** The port it listens on. */
  port: number;
  /** The directory it serves. */
  root: string;
  /** Stops the server (idempotent). */
  close(): Promise<void>;
}

/** Options of {@link serveDirectory}. */
export interface ServeDirectoryOptions {
  /** Interface to listen on. Default `127.0.0.1`. */
  host?: string;
  /** Port; 0 picks a free one. Default 0. */
  port?: number;
}

/**
 * Serves the files under `root` over HTTP (GET and HEAD; `/dir/` serves `dir/index.html`,
 * `/dir` redirects there). Paths outside `root` are refused.
 *
 * @throws EnvironmentError when the port cannot be bound.
 * @example
 * const server = await serveDirectory('test/pages');
 * await page.goto(`${server.url}form.html`);
 * await server.close();
 */
export async function serveDirectory(
  root: string,
  options: ServeDirectoryOptions = {},
): Promise<StaticServer> {
  const base = resolve(root);
  const server: Server = createServer(async (request, response) => {
    try {
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        response.writeHead(405).end();
        return;
      }
      const pathname = decodeURIComponent(new URL(request.url ?? '/', 'http://host').pathname);
      let file = normalize(join(base, pathname));
      if (file !== base && !file.startsWith(base + sep)) {
        response.writeHead(403).end();
        return;
      }
      let info = await stat(file).catch(() => undefined);
      if (info?.isDirectory() && !pathname.endsWith('/')) {
        // As web servers do: relative links inside resolve against the directory.
        const search = new URL(request.url ?? '/', 'http://host').search;
        response.writeHead(301, { location: `${encodeURI(pathname)}/${search}` }).end();
        return;
      }
      if (info?.isDirectory()) {
        file = join(file, 'index.html');
        info = await stat(file).catch(() => undefined);
      }
      if (!info?.isFile()) {
        response.writeHead(404, { 'content-type': 'text/plain' }).end(`Not found: ${pathname}`);
        return;
      }
      response.writeHead(200, {
        'content-type': CONTENT_TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream',
        'content-length': info.size,
        'cache-control': 'no-store',
      });
      if (request.method === 'HEAD') {
        response.end();
        return;
      }
      createReadStream(file).pipe(response);
    } catch {
      if (!response.headersSent) response.writeHead(400);
      response.end();
    }
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((done, fail) => {
    server.once('error', (error) =>
      fail(
        new EnvironmentError(
          `Could not serve ${base} on ${host}:${options.port ?? 0}: ${error.message}`,
          { cause: error },
        ),
      ),
    );
    server.listen(options.port ?? 0, host, () => done());
  });
  const { port } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}/`,
    port,
    root: base,
    close() {
      closed ??= new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
