import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    'testing/index': 'src/testing/index.ts',
    'testing/vitest': 'src/testing/vitest.ts',
    // Helpers for the @dreamgym/* packages only; no compatibility promise.
    'internal/index': 'src/internal/index.ts',
  },
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  external: ['vitest', 'faiss-node'],
});
