/**
 * The LanceDB table that replicas of a served run share their write-backs through
 * (`serve --shared-buffer URI`). One row per written-back batch: the writer (a replica's run
 * of the process), its sequence number, the batch's transitions as JSON (as the worker
 * protocol carries them), their count and when the batch reached the writer's buffer.
 *
 * `@lancedb/lancedb` is an optional peer: it is imported when a shared buffer is asked for,
 * from the server's own installation or, failing that, from the working directory's project
 * (a CLI installed apart from the project). Only the few calls used here are typed.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError } from '@dreamgym/core';

/** The columns of the shared table, in order, with the Arrow type each must have. */
export const SHARED_TABLE_COLUMNS = [
  ['writer', 'Utf8'],
  ['sequence', 'Float64'],
  ['count', 'Float64'],
  ['writtenAt', 'Float64'],
  ['transitions', 'Utf8'],
] as const;

/** One row of the shared table: a written-back batch. */
export interface SharedBatchRow {
  /** The replica run that wrote it (`<replicaId>.<start>`). */
  writer: string;
  /** 1, 2, 3 ... per writer, in the order the batches were written. */
  sequence: number;
  /** Transitions in the batch. */
  count: number;
  /** When the batch reached the writer's buffer (milliseconds since the epoch). */
  writtenAt: number;
  /** The batch's transitions, a JSON array. */
  transitions: string;
}

interface LanceQuery {
  where(filter: string): LanceQuery;
  select(columns: string[]): LanceQuery;
  toArray(): Promise<Record<string, unknown>[]>;
}

interface LanceTable {
  add(rows: Record<string, unknown>[]): Promise<unknown>;
  checkoutLatest(): Promise<void>;
  version(): Promise<number>;
  schema(): Promise<{ fields: { name: string; type: unknown }[] }>;
  query(): LanceQuery;
  optimize(options: { cleanupOlderThan: Date }): Promise<unknown>;
  close(): void;
}

interface LanceConnection {
  tableNames(): Promise<string[]>;
  openTable(name: string): Promise<LanceTable>;
  createEmptyTable(
    name: string,
    schema: unknown,
    options: { mode: 'create'; existOk: boolean },
  ): Promise<LanceTable>;
  close(): void;
}

/** The part of `@lancedb/lancedb` used here. */
export interface LanceDbModule {
  connect(
    uri: string,
    options?: { storageOptions?: Record<string, string> },
  ): Promise<LanceConnection>;
  makeArrowTable(rows: Record<string, unknown>[]): { schema: unknown };
}

const PACKAGE = '@lancedb/lancedb';

/**
 * Imports `@lancedb/lancedb`: beside this package, else from the project in `cwd`.
 * @throws ConfigError saying how to install it.
 */
export async function loadLanceDb(cwd: string, where: string): Promise<LanceDbModule> {
  // A variable specifier: bundlers leave the optional peer alone.
  const name: string = PACKAGE;
  try {
    return (await import(name)) as LanceDbModule;
  } catch (besideServer) {
    try {
      const resolved = createRequire(join(cwd, 'package.json')).resolve(name);
      return (await import(pathToFileURL(resolved).href)) as LanceDbModule;
    } catch {
      throw new ConfigError(
        `${where} needs the ${PACKAGE} package (LanceDB), which is not installed: npm install ${PACKAGE} apache-arrow@18.1.0 in your project (Node >= 20.11 loads its native binary; npm warns that it asks for Node 22).`,
        { field: 'sharedBuffer', cause: besideServer },
      );
    }
  }
}

/** A writer id or table name is put in SQL filters and paths: a safe alphabet only. */
export const SAFE_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

function quoted(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** The shared table, opened (or created empty) and checked. */
export class SharedBufferTable {
  private constructor(
    private readonly connection: LanceConnection,
    private readonly table: LanceTable,
    /** `URI` and table name, for messages. */
    readonly where: string,
  ) {}

  /**
   * Connects to `uri`, opens `name` there (created empty when missing) and checks its
   * columns.
   * @throws ConfigError naming the URI: one LanceDB cannot open, or a table of another schema.
   */
  static async open(
    lancedb: LanceDbModule,
    options: { uri: string; table: string; storageOptions?: Record<string, string>; flag: string },
  ): Promise<SharedBufferTable> {
    const where = `${options.flag} ${options.uri} (table ${options.table})`;
    let connection: LanceConnection;
    let table: LanceTable;
    try {
      connection = await lancedb.connect(
        options.uri,
        options.storageOptions ? { storageOptions: options.storageOptions } : {},
      );
      const sample = Object.fromEntries(
        SHARED_TABLE_COLUMNS.map(([column, type]) => [column, type === 'Utf8' ? '' : 0]),
      );
      const schema = lancedb.makeArrowTable([sample]).schema;
      try {
        table = await connection.createEmptyTable(options.table, schema, {
          mode: 'create',
          existOk: true,
        });
      } catch (creating) {
        // Another replica created it at the same moment.
        if (!(await connection.tableNames()).includes(options.table)) throw creating;
        table = await connection.openTable(options.table);
      }
    } catch (error) {
      const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
      throw new ConfigError(
        `${where}: LanceDB cannot open it: ${reason}. Give a folder, or a URI LanceDB accepts (s3://bucket/path, gs://..., az://...), that this machine can write.`,
        { field: 'sharedBuffer.uri', cause: error },
      );
    }
    const fields = (await table.schema()).fields.map((field) => [field.name, String(field.type)]);
    const wanted = SHARED_TABLE_COLUMNS.map(([column, type]) => `${column}: ${type}`);
    const found = fields.map(([column, type]) => `${column}: ${type}`);
    if (wanted.some((column) => !found.includes(column))) {
      table.close();
      connection.close();
      throw new ConfigError(
        `${where} is not a DreamGym shared-buffer table: its columns are {${found.join(', ')}}, and it needs {${wanted.join(', ')}}. Name another table (sharedBuffer.table) or another URI.`,
        { field: 'sharedBuffer.table' },
      );
    }
    return new SharedBufferTable(connection, table, where);
  }

  /** Appends batches (one commit). */
  async append(rows: readonly SharedBatchRow[]): Promise<void> {
    await this.table.add(rows.map((row) => ({ ...row })));
  }

  /**
   * Merges the table's fragments (each append adds one, and a read visits them all) and
   * removes versions older than `keepMilliseconds`: readers check the newest out every poll,
   * so none still reads one that old.
   */
  async compact(keepMilliseconds: number): Promise<void> {
    await this.table.optimize({ cleanupOlderThan: new Date(Date.now() - keepMilliseconds) });
  }

  /** The newest version of the table (it changes with every commit, any replica's). */
  async latestVersion(): Promise<number> {
    await this.table.checkoutLatest();
    return this.table.version();
  }

  /**
   * Rows not written by `exclude` that come after `seen` (writer -> highest sequence already
   * taken), in each writer's order.
   */
  rowsAfter(exclude: string, seen: ReadonlyMap<string, number>): Promise<SharedBatchRow[]> {
    const known = [exclude, ...seen.keys()];
    return this.rows(
      [
        `writer NOT IN (${known.map(quoted).join(', ')})`,
        ...[...seen].map(
          ([writer, sequence]) => `(writer = ${quoted(writer)} AND sequence > ${sequence})`,
        ),
      ].join(' OR '),
    );
  }

  /** `writer`'s rows with a sequence in (`after`, `upTo`], in order. */
  rowsOf(writer: string, after: number, upTo: number): Promise<SharedBatchRow[]> {
    return this.rows(`writer = ${quoted(writer)} AND sequence > ${after} AND sequence <= ${upTo}`);
  }

  /** Each writer's highest sequence in the table (reads the two small columns only). */
  async writerHeads(): Promise<Map<string, number>> {
    const heads = new Map<string, number>();
    for (const row of await this.table.query().select(['writer', 'sequence']).toArray()) {
      const writer = String(row.writer);
      heads.set(writer, Math.max(heads.get(writer) ?? 0, Number(row.sequence)));
    }
    return heads;
  }

  private async rows(filter: string): Promise<SharedBatchRow[]> {
    const rows = await this.table.query().where(filter).toArray();
    return (
      rows
        .map((row) => ({
          writer: String(row.writer),
          sequence: Number(row.sequence),
          count: Number(row.count),
          writtenAt: Number(row.writtenAt),
          transitions: String(row.transitions),
        }))
        .sort((a, b) =>
          a.writer === b.writer ? a.sequence - b.sequence : a.writer < b.writer ? -1 : 1,
        )
        // An append that failed after it had committed was appended again: the same batch twice.
        .filter(
          (row, index, sorted) =>
            index === 0 ||
            row.writer !== sorted[index - 1]!.writer ||
            row.sequence !== sorted[index - 1]!.sequence,
        )
    );
  }

  close(): void {
    this.table.close();
    this.connection.close();
  }
}
