import { defineConfig } from 'tsup';

export default defineConfig({
  // The worker entry of `serve --workers` is a file of its own: worker threads load it by URL.
  entry: { index: 'src/index.ts', 'serve-worker': 'src/serve-worker.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  shims: true,
});
