/**
 * faiss' distance kernels side by side in one run: the faiss-node addon as the set-up built
 * it (`setup/faiss-node.sh`: AVX2/FMA kernels where the CPU has them) and the same addon built
 * with Debian's generic kernels (the set-up's build with its AVX2 check answering no, into a
 * scratch project). Vectors: phi of ALFWorld's offline transitions (state and action, hashing
 * embedder, 256 dimensions, as `dreamgym train` and `serve` embed them), about 2,000 queries (every
 * tenth distinct state and action, left out of the index). Per addon, interleaved twice: HNSW (M 16, efConstruction 40) insert time
 * per vector, search time at efSearch 16 and 64 (k 16), a flat index's search time, and how
 * often the two addons' flat top-1 agree (float sums in another order can break ties apart).
 *
 * Run: `DREAMGYM_DATA_DIR=../shared/data npx tsx benchmarks/faiss-kernels.ts`. Writes
 * benchmarks/results/faiss-kernels.json; progress on stderr.
 */
import { execFileSync } from 'node:child_process';
import { cp, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createAlfworldAdapter } from '@dreamgym/alfworld';
import { HashingEmbedder, trajectoryToTransitions } from '@dreamgym/core';

const repository = resolve(import.meta.dirname, '..');
const dataDir = resolve(
  process.env.DREAMGYM_DATA_DIR ?? resolve(repository, '../shared/data'),
  'alfworld',
);
const DIMENSION = 256;
const QUERIES = 2000;
const log = (message: string) => process.stderr.write(`${message}\n`);
const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits;

/** What the benchmark uses of a faiss-node module with the DreamGym additions. */
interface FaissIndex {
  addFloat32(vectors: Float32Array): void;
  searchFloat32(query: Float32Array, k: number): { labels: Float64Array };
  setParameter(name: string, value: number): void;
}
interface FaissModule {
  dreamgymDistances?: string;
  MetricType: { METRIC_INNER_PRODUCT: number };
  Index: {
    fromFactory(dimension: number, description: string, metric: number): FaissIndex;
    setThreads(threads: number): void;
  };
}

/** faiss-node built with the generic kernels in a scratch project; returns the project folder. */
async function buildGenericAddon(): Promise<string> {
  const project = await mkdtemp(join(tmpdir(), 'dreamgym-faiss-generic-'));
  const modules = join(project, 'node_modules');
  await mkdir(modules);
  await cp(join(repository, 'node_modules', 'faiss-node'), join(modules, 'faiss-node'), {
    recursive: true,
    filter: (source) => !source.includes(`${join('faiss-node', 'build')}`),
  });
  for (const name of ['bindings', 'file-uri-to-path', 'node-addon-api', 'node-gyp'])
    await symlink(join(repository, 'node_modules', name), join(modules, name));
  const script = join(repository, 'packages', 'cli', 'setup', 'faiss-node.sh');
  execFileSync(
    'bash',
    ['-c', `source "${script}"; faiss_cpu_has_avx2() { return 1; }; faiss_build_from_source`],
    { cwd: project, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  return project;
}

function measure(faiss: FaissModule, data: Float32Array, queries: Float32Array) {
  faiss.Index.setThreads(1);
  const metric = faiss.MetricType.METRIC_INNER_PRODUCT;
  const rows = data.length / DIMENSION;
  const count = queries.length / DIMENSION;
  const hnsw = faiss.Index.fromFactory(DIMENSION, 'HNSW16,Flat', metric);
  hnsw.setParameter('efConstruction', 40);
  let started = performance.now();
  hnsw.addFloat32(data);
  const insertUs = ((performance.now() - started) / rows) * 1000;
  const searchUs: Record<string, number> = {};
  for (const efSearch of [16, 64]) {
    hnsw.setParameter('efSearch', efSearch);
    started = performance.now();
    for (let query = 0; query < count; query += 1)
      hnsw.searchFloat32(queries.subarray(query * DIMENSION, (query + 1) * DIMENSION), 16);
    searchUs[`efSearch${efSearch}`] = ((performance.now() - started) / count) * 1000;
  }
  const flat = faiss.Index.fromFactory(DIMENSION, 'Flat', metric);
  flat.addFloat32(data);
  const top1: number[] = [];
  started = performance.now();
  for (let query = 0; query < count; query += 1)
    top1.push(
      flat.searchFloat32(queries.subarray(query * DIMENSION, (query + 1) * DIMENSION), 1)
        .labels[0]!,
    );
  const flatSearchMs = (performance.now() - started) / count;
  return { insertUs, searchUs, flatSearchMs, top1 };
}

log('building faiss-node with the generic kernels in a scratch project...');
const genericProject = await buildGenericAddon();
try {
  const builtRequire = createRequire(join(repository, 'package.json'));
  const genericRequire = createRequire(join(genericProject, 'package.json'));
  const addons = {
    setUp: builtRequire('faiss-node') as FaissModule,
    generic: genericRequire('faiss-node') as FaissModule,
  };
  log(
    `set-up's addon: ${addons.setUp.dreamgymDistances} kernels; scratch addon: ${addons.generic.dreamgymDistances}`,
  );

  const adapter = createAlfworldAdapter({});
  const texts: string[] = [];
  for await (const trajectory of adapter.datasets.trajectories.load(dataDir, {}))
    for (const transition of trajectoryToTransitions(trajectory))
      texts.push(`${transition.state.text}\n${transition.action}`);
  const distinct = [...new Set(texts)];
  const embedder = new HashingEmbedder({ dimension: DIMENSION });
  const embedded = await embedder.embed(distinct);
  const queryRows = embedded.filter((_, index) => index % 10 === 0).slice(0, QUERIES);
  const dataRows = embedded.filter((_, index) => index % 10 !== 0);
  const flatten = (rows: Float32Array[]) => {
    const out = new Float32Array(rows.length * DIMENSION);
    for (const [index, row] of rows.entries()) out.set(row, index * DIMENSION);
    return out;
  };
  const data = flatten(dataRows);
  const queries = flatten(queryRows);
  log(`${dataRows.length} vectors, ${queryRows.length} queries, ${DIMENSION} dimensions`);

  const rounds: Record<string, ReturnType<typeof measure>[]> = { setUp: [], generic: [] };
  for (let round = 0; round < 2; round += 1) {
    for (const name of ['generic', 'setUp'] as const) {
      const figures = measure(addons[name], data, queries);
      rounds[name]!.push(figures);
      log(
        `${name} (${addons[name].dreamgymDistances}): HNSW insert ${figures.insertUs.toFixed(0)} us/vector, search ${figures.searchUs.efSearch16!.toFixed(0)} us (ef 16) / ${figures.searchUs.efSearch64!.toFixed(0)} us (ef 64), flat search ${figures.flatSearchMs.toFixed(2)} ms`,
      );
    }
  }
  const best = (name: 'setUp' | 'generic') => {
    const runs = rounds[name]!;
    return {
      distances: addons[name].dreamgymDistances,
      hnswInsertUsPerVector: round(Math.min(...runs.map((run) => run.insertUs))),
      hnswSearchUsEf16: round(Math.min(...runs.map((run) => run.searchUs.efSearch16!))),
      hnswSearchUsEf64: round(Math.min(...runs.map((run) => run.searchUs.efSearch64!))),
      flatSearchMs: round(Math.min(...runs.map((run) => run.flatSearchMs)), 3),
    };
  };
  const setUp = best('setUp');
  const generic = best('generic');
  const agree = rounds.setUp![0]!.top1.filter(
    (label, index) => label === rounds.generic![0]!.top1[index],
  ).length;
  const result = {
    benchmark: 'faiss-kernels',
    recordedAt: new Date().toISOString(),
    machine: {
      cpus: cpus().length,
      model: cpus()[0]?.model,
      loadAverage: loadavg().map((value) => round(value, 2)),
    },
    vectors: dataRows.length,
    queries: queryRows.length,
    dimension: DIMENSION,
    note: 'best of two interleaved rounds per addon; one faiss thread',
    generic,
    setUp,
    speedup: {
      hnswInsert: round(generic.hnswInsertUsPerVector / setUp.hnswInsertUsPerVector, 2),
      hnswSearchEf16: round(generic.hnswSearchUsEf16 / setUp.hnswSearchUsEf16, 2),
      hnswSearchEf64: round(generic.hnswSearchUsEf64 / setUp.hnswSearchUsEf64, 2),
      flatSearch: round(generic.flatSearchMs / setUp.flatSearchMs, 2),
    },
    flatTop1Agreement: round(agree / queryRows.length, 4),
  };
  const file = join(repository, 'benchmarks', 'results', 'faiss-kernels.json');
  await writeFile(file, `${JSON.stringify(result, null, 2)}\n`);
  log(
    `speed-up of the set-up's addon over the generic kernels: ${JSON.stringify(result.speedup)}; flat top-1 agreement ${result.flatTop1Agreement}; written to ${file}`,
  );
} finally {
  await rm(genericProject, { recursive: true, force: true });
}
