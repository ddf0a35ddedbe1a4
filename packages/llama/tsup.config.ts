import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts' },
  format: ['esm', 'cjs'],
  // Its public types use Node's (TypeScript 7 includes no @types package unless referred to).
  dts: { banner: '/// <reference types="node" />' },
  clean: true,
  sourcemap: true,
  target: 'node20',
  shims: true,
});
