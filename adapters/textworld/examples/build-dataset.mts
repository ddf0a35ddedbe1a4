/**
 * Generates a TextWorld data directory: `npx tsx adapters/textworld/examples/build-dataset.mts
 * DIR [--train 40] [--valid 20] [--test 20] [--rooms 1]`. Games already there are kept.
 */
import { parseArgs } from 'node:util';
import { buildTextworldDataset } from '@dreamgym/textworld';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    train: { type: 'string', default: '40' },
    valid: { type: 'string', default: '20' },
    test: { type: 'string', default: '20' },
    rooms: { type: 'string', default: '1' },
  },
});
const dir = positionals[0] ?? `${process.env.DREAMGYM_DATA_DIR ?? 'data'}/textworld`;
const summary = await buildTextworldDataset({
  dir,
  train: Number(values.train),
  valid: Number(values.valid),
  test: Number(values.test),
  rooms: Number(values.rooms) as 1 | 6 | 9 | 12,
  onProgress: ({ phase, game, created, seconds }) => {
    if (created) process.stderr.write(`${phase} ${game} ${seconds.toFixed(1)} s\n`);
  },
});
console.log(JSON.stringify(summary));
