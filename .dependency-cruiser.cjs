/**
 * The import rules CI checks (`npm run check:imports`): no import circles anywhere, the
 * packages depend downwards only, and inside `@dreamgym/core` every folder imports only from
 * its own layer or the layers below it. Test files and test support may import anything.
 */

/** `@dreamgym/core`'s layers, lowest first: a file may import from its layer and those below. */
const CORE_LAYERS = [
  ['errors\\.ts', 'parse-options\\.ts', 'random/', 'files/'],
  ['mdp/'],
  ['adapter\\.ts', 'models/'],
  ['policy/', 'replay/'],
  ['rollout/'],
  ['experience/', 'curriculum/'],
  ['eval/'],
  ['training/'],
  ['annotate/'],
  ['testing/', 'internal/', 'index\\.ts'],
];
const core = (parts) => `^packages/core/src/(${parts.join('|')})`;

const layerRules = CORE_LAYERS.slice(0, -1).map((layer, index) => ({
  name: `core-layer-${index}-imports-upward`,
  comment: `${layer.join(', ')} may not import from a higher layer of @dreamgym/core (${CORE_LAYERS.slice(
    index + 1,
  )
    .flat()
    .join(', ')})`,
  severity: 'error',
  from: { path: core(layer) },
  to: { path: core(CORE_LAYERS.slice(index + 1).flat()) },
}));

/**
 * The workspace packages, lowest first, as [folder, package names]: a package may import only
 * the packages before it (they are imported by name, through node_modules).
 */
const PACKAGE_LAYERS = [
  ['packages/openai-wire', ['openai-wire']],
  ['packages/core', ['core']],
  ['packages/(browser|llama)', ['browser', 'llama']],
  ['adapters/[^/]+', ['alfworld', 'miniwob', 'webarena-lite', 'webshop']],
  ['packages/server', ['server']],
  ['packages/run', ['run']],
  ['packages/cli', ['cli']],
];
const packageRules = PACKAGE_LAYERS.slice(0, -1).map(([folder], index) => {
  const higher = PACKAGE_LAYERS.slice(index + 1).flatMap(([, names]) => names);
  return {
    name: `package-layer-${index}-imports-upward`,
    comment: `${folder} may not import @dreamgym/{${higher.join(',')}}`,
    severity: 'error',
    from: { path: `^${folder}/` },
    to: { path: `^node_modules/@dreamgym/(${higher.join('|')})/` },
  };
});

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'An import circle: split the shared piece out into a lower module.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...layerRules,
    ...packageRules,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: {
      path: '(\\.test\\.ts$|\\.test-support\\.ts$|/test-support/|^(packages|adapters)/[^/]+/dist/|/templates/)',
    },
    tsPreCompilationDeps: true,
    // Workspace packages stay node_modules/@dreamgym/NAME, so the package rules can name them.
    preserveSymlinks: true,
    tsConfig: { fileName: 'tsconfig.base.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.d.ts'],
    },
  },
};
