import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    'mdp/index': 'src/mdp/index.ts',
    'models/index': 'src/models/index.ts',
    'policy/index': 'src/policy/index.ts',
    'replay/index': 'src/replay/index.ts',
    'rollout/index': 'src/rollout/index.ts',
    'experience/index': 'src/experience/index.ts',
    'curriculum/index': 'src/curriculum/index.ts',
    'eval/index': 'src/eval/index.ts',
    'training/index': 'src/training/index.ts',
    'annotate/index': 'src/annotate/index.ts',
    'testing/index': 'src/testing/index.ts',
    'testing/vitest': 'src/testing/vitest.ts',
    // Helpers for the @dreamgym/* packages only; no compatibility promise.
    'internal/index': 'src/internal/index.ts',
  },
  format: ['esm', 'cjs'],
  // Entries share one copy of each module (chunks) in CommonJS as in ESM: a class imported
  // from the root and from a subpath entry is the same class.
  splitting: true,
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  external: ['vitest', 'faiss-node'],
});
