import { defineConfig } from 'tsup';

export default defineConfig({
  // serve-replica: loaded by URL in each worker process of `dreamgym serve --workers`.
  entry: { index: 'src/index.ts', bin: 'src/bin.ts', 'serve-replica': 'src/serve-replica.ts' },
  format: ['esm', 'cjs'],
  // Its public types use Node's (TypeScript 7 includes no @types package unless referred to).
  dts: { banner: '/// <reference types="node" />' },
  clean: true,
  sourcemap: true,
  target: 'node20',
  // import.meta.url in the CJS build too: `new adapter` finds its templates from it.
  shims: true,
});
