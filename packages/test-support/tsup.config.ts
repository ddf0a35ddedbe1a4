import { defineConfig } from 'tsup';

// ESM and types only: the package is private and its consumers are this repository's
// ESM tests (vitest reads src/ directly; tsc reads the built types).
export default defineConfig({
  entry: { index: 'src/index.ts' },
  format: ['esm'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
});
