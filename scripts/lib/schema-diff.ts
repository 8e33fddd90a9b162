// Computes the SQL that takes a live PostgreSQL database to the state described by a Prisma schema,
// using Prisma's schema engine compiled to WebAssembly. The native schema-engine binary cannot be
// downloaded here (and is stubbed out by scripts/prisma-generate.mjs), so `prisma migrate diff` is
// unavailable; the wasm build talks to the database through the pg driver adapter instead.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
// Not in package.json: installed as a dependency of @prisma/adapter-pg (same version). Its binder
// adapts an adapter factory to the calling convention the wasm engine expects.
import { bindMigrationAwareSqlAdapterFactory, ColumnTypeEnum } from '@prisma/driver-adapter-utils';
// The "./schema_engine_bg" subpath is the wasm-bindgen glue without the bundler-only
// `import * as wasm from "./schema_engine_bg.wasm"` of the package's main entry, which Node rejects.
import * as glue from '@prisma/schema-engine-wasm/schema_engine_bg';
import type { SchemaEngine } from '@prisma/schema-engine-wasm/schema_engine_bg';

const require = createRequire(import.meta.url);

// The project's lib (ES2023, no DOM) has no WebAssembly typings; declare just what is used here.
type WasmModule = { readonly __brand: 'WebAssembly.Module' };
type WasmImports = Record<string, Record<string, unknown>>;
declare const WebAssembly: {
  compile(bytes: Uint8Array): Promise<WasmModule>;
  instantiate(module: WasmModule, imports: WasmImports): Promise<{ exports: Record<string, unknown> }>;
  Module: { imports(module: WasmModule): { module: string; name: string }[] };
};

let loading: Promise<typeof glue.SchemaEngine> | undefined;

/** Instantiates the wasm module once per process, wiring its imports to the glue's exports by name. */
function loadEngine(): Promise<typeof glue.SchemaEngine> {
  loading ??= (async () => {
    // The glue reports Rust panics here before throwing; without it a panic becomes an opaque TypeError.
    (globalThis as { PRISMA_WASM_PANIC_REGISTRY?: unknown }).PRISMA_WASM_PANIC_REGISTRY = {
      set_message(message: string) {
        process.stderr.write(`schema engine panic: ${message}\n`);
      },
    };
    const wasmPath = require.resolve('@prisma/schema-engine-wasm/schema_engine_bg').replace(/\.js$/, '.wasm');
    const module = await WebAssembly.compile(readFileSync(wasmPath));
    // Every import is a glue function of the same name (all from module "./schema_engine_bg.js").
    const exports = glue as unknown as Record<string, unknown>;
    const imports: WasmImports = {};
    for (const { module: from, name } of WebAssembly.Module.imports(module)) {
      (imports[from] ??= {})[name] = exports[name];
    }
    const instance = await WebAssembly.instantiate(module, imports);
    glue.__wbg_set_wasm(instance.exports);
    (instance.exports.__wbindgen_start as (() => void) | undefined)?.();
    return glue.SchemaEngine;
  })();
  return loading;
}

const PG_CHAR_OID = 18; // the one-byte "char" of pg_catalog (contype, relkind, attidentity, ...)
const PG_TEXT_OID = 25;

type QueryResults = pg.QueryResult | pg.QueryResult[];
type LooseQuery = (...args: unknown[]) => unknown;

/** Row arrays of pg results that had "char" columns, mapped to those columns' indexes. */
const charColumns = new WeakMap<unknown[], number[]>();

/**
 * The engine's catalog queries select "char" columns, which @prisma/adapter-pg 7.10 rejects
 * ("Column type 'char' could not be deserialized"), while the engine reads them as Character
 * values (Text panics: "as char failed"). Step 1, here: relabel them as text so the adapter accepts
 * them (pg has already parsed the values as 1-letter strings) and remember which they were. pg hands
 * the adapter the same `rows` array, which links the two steps. Wraps each pooled client's query(),
 * covering the promise form (the adapter) and the callback form (pg.Pool.query).
 */
function relabelCharColumns(client: pg.PoolClient): void {
  const relabel = (results: QueryResults | undefined) => {
    for (const result of Array.isArray(results) ? results : results ? [results] : []) {
      const indexes: number[] = [];
      (result.fields ?? []).forEach((field, index) => {
        if (field.dataTypeID !== PG_CHAR_OID) return;
        field.dataTypeID = PG_TEXT_OID;
        indexes.push(index);
      });
      if (indexes.length) charColumns.set(result.rows, indexes);
    }
    return results;
  };
  const query = (client.query as unknown as LooseQuery).bind(client);
  (client as unknown as { query: LooseQuery }).query = (...args: unknown[]) => {
    const callback = args.at(-1);
    if (typeof callback === 'function') {
      args[args.length - 1] = (error: Error | null, results?: QueryResults) => callback(error, relabel(results));
      return query(...args);
    }
    const out = query(...args);
    return out instanceof Promise ? out.then((results: QueryResults) => relabel(results)) : out;
  };
}

/** Step 2: report the remembered columns to the engine as Character. */
function withCharacterColumns(factory: PrismaPg): PrismaPg {
  const connect = factory.connect.bind(factory);
  factory.connect = async () => {
    const adapter = await connect();
    const queryRaw = adapter.queryRaw.bind(adapter);
    adapter.queryRaw = async (query) => {
      const resultSet = await queryRaw(query);
      for (const index of charColumns.get(resultSet.rows) ?? []) resultSet.columnTypes[index] = ColumnTypeEnum.Character;
      return resultSet;
    };
    return adapter;
  };
  return factory;
}

/**
 * Returns the SQL migration script that turns the database at `connectionString` into the schema
 * described by `schemaText` (a whole schema.prisma), or '' when they already match.
 */
export async function diffDatabaseToSchema(connectionString: string, schemaText: string): Promise<string> {
  const Engine = await loadEngine();
  const files = [{ path: 'schema.prisma', content: schemaText }];
  // The engine calls adapter methods as plain functions (no `this`) and expects Result objects
  // instead of exceptions; a bare PrismaPg fails with "reading 'externalPool'" of null.
  // Our own pool, so the "char" fix-up applies and we can close it: the engine never disposes it.
  const pool = new pg.Pool({ connectionString, max: 2 });
  pool.on('connect', relabelCharColumns);
  pool.on('error', () => {}); // idle clients die when the caller stops the database; not our concern
  const adapter = bindMigrationAwareSqlAdapterFactory(withCharacterColumns(new PrismaPg(pool)));
  const engine: SchemaEngine = await Engine.new({ datamodels: [['schema.prisma', schemaText]] }, () => {}, adapter);
  try {
    const result = await engine.diff({
      // "The database behind the adapter". The wasm engine rejects { tag: 'url' } ("--from-url and
      // --to-url flags are no longer supported"); configDir only matters for SSL files, unused here.
      from: { tag: 'schemaDatasource', files, configDir: process.cwd() },
      to: { tag: 'schemaDatamodel', files },
      script: true,
      // With exitCode set the engine reports 2 for a non-empty diff; an empty one still has a
      // "-- This is an empty migration." script, which must not become a migration.
      exitCode: true,
      filters: { externalTables: [], externalEnums: [] },
    });
    return result.exitCode === 2 ? (result.stdout ?? '') : '';
  } finally {
    engine.free();
    await pool.end();
  }
}
