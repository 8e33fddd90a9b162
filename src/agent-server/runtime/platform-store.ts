// The store graphs get as `store`: LangGraph's BaseStore over the platform's own store SQL (the tables
// of LangGraph's PostgresStore in the deployment's schema), so a graph and the API read and write the
// same items with the same rules: embeddings when the config indexes the store, its default ttl and
// refresh-on-read, vector-ranked `query`.
import { BaseStore, type Item, type Operation, type OperationResults, type SearchItem } from '@langchain/langgraph-checkpoint';
import * as sql from '../services/store/store-items.store.js';
import { getStoreItem, putStoreItem, searchStoreItems, type StoreScope } from '../services/store/store-operations.js';

const toItem = (row: sql.StoreItemRow): Item => ({
  namespace: sql.namespaceOf(row),
  key: row.key,
  value: row.value,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

export class PlatformStore extends BaseStore {
  constructor(private readonly scope: StoreScope) {
    super();
  }

  async batch<Op extends readonly Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const results: unknown[] = [];
    for (const operation of operations) results.push(await this.run(operation));
    return results as OperationResults<Op>;
  }

  private async run(operation: Operation): Promise<unknown> {
    const { scope } = this;
    if ('namespacePrefix' in operation) {
      const rows = await searchStoreItems(scope, {
        namespacePrefix: operation.namespacePrefix,
        filter: operation.filter ?? {},
        query: operation.query || null,
        limit: operation.limit ?? 10,
        offset: operation.offset ?? 0,
      });
      return rows.map((row): SearchItem => ({ ...toItem(row), ...(row.score != null ? { score: row.score } : {}) }));
    }
    if ('value' in operation) {
      if (operation.value === null) return sql.deleteItem(scope.db, scope.deploymentId, operation.namespace, operation.key);
      return putStoreItem(scope, { namespace: operation.namespace, key: operation.key, value: operation.value, index: operation.index });
    }
    if ('key' in operation) {
      const row = await getStoreItem(scope, operation.namespace, operation.key);
      return row ? toItem(row) : null;
    }
    const condition = (type: 'prefix' | 'suffix') => operation.matchConditions?.find((match) => match.matchType === type)?.path ?? [];
    return sql.selectNamespaces(scope.db, scope.deploymentId, {
      prefix: condition('prefix'),
      suffix: condition('suffix'),
      maxDepth: operation.maxDepth ?? null,
      limit: operation.limit,
      offset: operation.offset,
    });
  }
}
