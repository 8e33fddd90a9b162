// The checkpointer runs write through. Like the reference server's, it stores the run's metadata
// (and the run's plain configurable values) in every checkpoint's metadata, so
// `POST /threads/{id}/history` with a `metadata` filter finds the checkpoints a run wrote.
//
// Each write is one statement: PostgresSaver sends a checkpoint as BEGIN, one INSERT per channel blob,
// the checkpoint's INSERT and COMMIT (and a task's writes as BEGIN, one INSERT each, COMMIT); here the
// rows go as arrays in a single statement, atomic on its own, the same rows with the same conflict rules.
// A two-node thread run went from 32 checkpoint statements to 6 (bench:runs, statements per run).
import type { RunnableConfig } from '@langchain/core/runnables';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { JsonPlusSerializer } from '@langchain/langgraph-checkpoint';
import type pg from 'pg';
import type { AtRestCipher } from '../services/encryption/at-rest.js';
import { checkpointSelectSql } from '../services/threads/checkpoints.store.js';
import { EncryptedSerde } from './encrypted-serde.js';

const CHECKPOINT_METADATA = { model: 'checkpoint', field: 'metadata' } as const;

// Keys that locate a checkpoint rather than describe the run.
const LOCATION_KEYS = new Set(['checkpoint_ns', 'checkpoint_id', 'checkpoint_map', 'run_id', 'thread_id']);

/** A run config's values that belong in checkpoint metadata: plain configurable values, then its metadata. */
function runCheckpointMetadata(config: RunnableConfig): Record<string, unknown> {
  const configurable = Object.entries(config.configurable ?? {}).filter(
    ([key, value]) => !key.startsWith('__') && !LOCATION_KEYS.has(key) && ['string', 'number', 'boolean'].includes(typeof value),
  );
  return { ...Object.fromEntries(configurable), ...(config.metadata ?? {}) };
}

type PutArguments = Parameters<PostgresSaver['put']>;

/**
 * The configurable key of a run's graph (executor.ts) whose checkpoint writes need not wait for the disk:
 * every run's but one that asked for durability "sync". Any other write (a state update through the API,
 * a thread's seeding) waits, as every other statement does.
 */
export const RELAXED_COMMIT_KEY = '__ap_relaxed_commit';

// A run's checkpoint writes commit without waiting for the WAL to reach the disk (synchronous_commit off
// for that statement alone, set inside it: no extra round trip). That wait was most of a durable run's
// PostgreSQL system time and much of its latency. It is safe because the WAL is one ordered stream: a
// run's outcome and its thread's values are committed synchronously after its checkpoints, and that
// flush takes every earlier record with it, so by the time anyone hears that a run ended, its
// checkpoints are on disk. A crash of PostgreSQL itself (not of this process) can lose only the
// checkpoints of the last moments (wal_writer_delay) of a run still running, which is then run again from
// the one before, as LangGraph's "async" durability already allows.
const RELAXED = `relaxed AS (SELECT set_config('synchronous_commit', 'off', true))`;

/** The two statements, for the checkpoint tables in `schema`, committing synchronously or relaxed. */
function writeStatements(schema: string) {
  const tables = `"${schema}"`;
  const put = (relaxed: boolean) => `WITH blobs AS (
            INSERT INTO ${tables}.checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob)
            SELECT $1, $2, b.channel, b.version, b.type, b.blob FROM unnest($7::text[], $8::text[], $9::text[], $10::bytea[]) AS b(channel, version, type, blob)
            ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO NOTHING)${relaxed ? `, ${RELAXED}` : ''}
          INSERT INTO ${tables}.checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata)
          ${relaxed ? 'SELECT $1::text, $2::text, $3::text, $4::text, $5::jsonb, $6::jsonb FROM relaxed' : 'VALUES ($1, $2, $3, $4, $5, $6)'}
          ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET checkpoint = EXCLUDED.checkpoint, metadata = EXCLUDED.metadata`;
  // As PostgresSaver: writes of special channels (errors, interrupts…) replace, others are kept as first written.
  const putWrites = (replace: boolean, relaxed: boolean) => `${relaxed ? `WITH ${RELAXED} ` : ''}INSERT INTO ${tables}.checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob)
          SELECT $1, $2, $3, $4, w.idx, w.channel, w.type, w.blob FROM unnest($5::int[], $6::text[], $7::text[], $8::bytea[]) AS w(idx, channel, type, blob)${relaxed ? ' CROSS JOIN relaxed' : ''}
          ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) ${replace ? 'DO UPDATE SET channel = EXCLUDED.channel, type = EXCLUDED.type, blob = EXCLUDED.blob' : 'DO NOTHING'}`;
  return {
    put: { sync: put(false), relaxed: put(true) },
    putWrites: { sync: [putWrites(false, false), putWrites(true, false)], relaxed: [putWrites(false, true), putWrites(true, true)] },
  };
}

const commitMode = (config: RunnableConfig) => (config.configurable?.[RELAXED_COMMIT_KEY] === true ? 'relaxed' : 'sync');

export class RunMetadataSaver extends PostgresSaver {
  private readonly statements: ReturnType<typeof writeStatements>;
  private readonly writePool: pg.Pool;
  private readonly encryption: AtRestCipher | undefined;

  /** With `encryption`, blobs and writes are stored sealed, and checkpoint metadata as its JSON rule says. */
  constructor(pool: pg.Pool, options: { schema: string; encryption?: AtRestCipher }) {
    super(pool, options.encryption ? new EncryptedSerde(new JsonPlusSerializer(), options.encryption) : undefined, { schema: options.schema });
    this.encryption = options.encryption;
    const schema = options.schema;
    // History and get state read only the blobs of the checkpoints they return (see checkpointSelectSql).
    // The saver keeps its statements in a private field; list and getTuple both start from SELECT_SQL.
    const statements = (this as unknown as { SQL_STATEMENTS: { SELECT_SQL: string } }).SQL_STATEMENTS;
    statements.SELECT_SQL = checkpointSelectSql(schema);
    this.statements = writeStatements(schema);
    this.writePool = pool;
  }

  // Metadata is a jsonb column the history filter searches: stored as JSON (the saver's serializer
  // round trip), never sealed whole; encryption at rest seals it as other JSON (its keys stay).
  private get jsonSerde() {
    return this.serde instanceof EncryptedSerde ? this.serde.inner : this.serde;
  }

  protected override async _dumpMetadata(metadata: PutArguments[2]): Promise<unknown> {
    const [, serialized] = await this.jsonSerde.dumpsTyped(metadata);
    const plain = JSON.parse(new TextDecoder().decode(serialized).replace(/\0/g, '')) as unknown;
    return this.encryption ? this.encryption.sealJson(plain, CHECKPOINT_METADATA) : plain;
  }

  protected override async _loadMetadata(metadata: Record<string, unknown>): Promise<PutArguments[2]> {
    const [type, dumped] = await this.jsonSerde.dumpsTyped(this.encryption ? await this.encryption.openJson(metadata, CHECKPOINT_METADATA) : metadata);
    return (await this.jsonSerde.loadsTyped(type, dumped)) as PutArguments[2];
  }

  override async put(config: RunnableConfig, checkpoint: PutArguments[1], metadata: PutArguments[2], newVersions: PutArguments[3]): Promise<RunnableConfig> {
    if (config.configurable === undefined) throw new Error('Missing "configurable" field in "config" param');
    const { thread_id: threadId, checkpoint_ns: checkpointNs = '', checkpoint_id: parentId } = config.configurable as Record<string, string | undefined>;
    const [blobs, serializedMetadata] = await Promise.all([
      this._dumpBlobs(threadId!, checkpointNs, checkpoint.channel_values, newVersions),
      this._dumpMetadata({ ...runCheckpointMetadata(config), ...metadata } as PutArguments[2]),
    ]);
    await this.writePool.query(this.statements.put[commitMode(config)], [
      threadId,
      checkpointNs,
      checkpoint.id,
      parentId ?? null,
      this._dumpCheckpoint(checkpoint),
      serializedMetadata,
      blobs.map((blob) => blob[2]),
      blobs.map((blob) => blob[3]),
      blobs.map((blob) => blob[4]),
      blobs.map((blob) => blob[5] ?? null),
    ]);
    return { configurable: { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: checkpoint.id } };
  }

  override async putWrites(config: RunnableConfig, writes: [string, unknown][], taskId: string): Promise<void> {
    const { thread_id: threadId, checkpoint_ns: checkpointNs = '', checkpoint_id: checkpointId } = (config.configurable ?? {}) as Record<string, string | undefined>;
    const rows = await this._dumpWrites(threadId!, checkpointNs, checkpointId!, taskId, writes);
    if (!rows.length) return;
    // Special channels have negative indexes (WRITES_IDX_MAP); only writes all of them special replace.
    const replace = rows.every((row) => row[4] < 0);
    await this.writePool.query(this.statements.putWrites[commitMode(config)][replace ? 1 : 0]!, [
      threadId,
      checkpointNs,
      checkpointId,
      taskId,
      rows.map((row) => row[4]),
      rows.map((row) => row[5]),
      rows.map((row) => row[6]),
      rows.map((row) => row[7]),
    ]);
  }
}
