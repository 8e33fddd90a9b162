// The checkpointer runs write through. Like the reference server's, it stores the run's metadata
// (and the run's plain configurable values) in every checkpoint's metadata, so
// `POST /threads/{id}/history` with a `metadata` filter finds the checkpoints a run wrote.
import type { RunnableConfig } from '@langchain/core/runnables';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { checkpointSelectSql } from '../services/threads/checkpoints.store.js';

// Keys that locate a checkpoint rather than describe the run.
const LOCATION_KEYS = new Set(['checkpoint_ns', 'checkpoint_id', 'checkpoint_map', 'run_id', 'thread_id']);

/** A run config's values that belong in checkpoint metadata: plain configurable values, then its metadata. */
export function runCheckpointMetadata(config: RunnableConfig): Record<string, unknown> {
  const configurable = Object.entries(config.configurable ?? {}).filter(
    ([key, value]) => !key.startsWith('__') && !LOCATION_KEYS.has(key) && ['string', 'number', 'boolean'].includes(typeof value),
  );
  return { ...Object.fromEntries(configurable), ...(config.metadata ?? {}) };
}

type PutArguments = Parameters<PostgresSaver['put']>;

export class RunMetadataSaver extends PostgresSaver {
  constructor(...args: ConstructorParameters<typeof PostgresSaver>) {
    super(...args);
    // History and get state read only the blobs of the checkpoints they return (see checkpointSelectSql).
    // The saver keeps its statements in a private field; list and getTuple both start from SELECT_SQL.
    const statements = (this as unknown as { SQL_STATEMENTS: { SELECT_SQL: string } }).SQL_STATEMENTS;
    statements.SELECT_SQL = checkpointSelectSql(args[2]?.schema ?? 'public');
  }

  override async put(config: RunnableConfig, checkpoint: PutArguments[1], metadata: PutArguments[2], newVersions: PutArguments[3]): Promise<RunnableConfig> {
    return super.put(config, checkpoint, { ...runCheckpointMetadata(config), ...metadata } as PutArguments[2], newVersions);
  }
}
