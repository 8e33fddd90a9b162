// Input schemas of the store area (long-term memory), named after the API nouns.
import { z } from 'zod';

// The reference server's rules for a label: not empty, no '.' (the GET query string joins labels with
// it). Other characters, ':' '%' '_' and backslash included, are stored encoded (NUL, which PostgreSQL
// text cannot hold, is refused for every body by the JSON body parser).
const NamespaceLabel = z
  .string()
  .min(1, 'Namespace labels cannot be empty strings.')
  .refine((label) => !label.includes('.'), { message: "Namespace labels cannot contain '.'." });

/** A namespace naming where items live: at least one label, not rooted at the reserved `langgraph`. */
const Namespace = z
  .array(NamespaceLabel)
  .min(1, 'Namespace cannot be empty.')
  .refine((namespace) => namespace[0] !== 'langgraph', { message: 'Root label for namespace cannot be "langgraph".' });

/** A namespace prefix to search under; empty searches every namespace. */
const NamespacePrefix = z.array(NamespaceLabel).default([]);

/** `index: false` (not indexed), or the value's fields to embed. */
const IndexFields = z.union([z.literal(false), z.array(z.string())]).nullish();

export const StoreItemPut = z.object({
  namespace: Namespace,
  key: z.string().min(1, 'Key cannot be empty.'),
  value: z.record(z.string(), z.unknown()),
  index: IndexFields,
  /** Minutes until the item expires; null or absent: never. */
  ttl: z.number().positive().nullish(),
});
export type StoreItemPut = z.infer<typeof StoreItemPut>;

/** GET /store/items: the namespace comes dot-joined in the query string, as the SDK sends it. */
export const StoreItemGetQuery = z.object({
  namespace: z
    .string()
    .default('')
    .transform((text) => (text === '' ? [] : text.split('.')))
    .pipe(Namespace),
  key: z.string().min(1, 'Key cannot be empty.'),
  refresh_ttl: z
    .union([z.boolean(), z.enum(['true', 'false', '1', '0'])])
    .nullish()
    .transform((value) => (value == null ? undefined : value === true || value === 'true' || value === '1')),
});

export const StoreItemDelete = z.object({ namespace: Namespace, key: z.string().min(1, 'Key cannot be empty.') });

const FILTER_OPERATORS = ['$eq', '$ne', '$gt', '$gte', '$lt', '$lte'] as const;
export type FilterOperator = (typeof FILTER_OPERATORS)[number];

export const StoreSearchRequest = z.object({
  namespace_prefix: NamespacePrefix,
  /** Exact matches on the value's fields, or `{field: {$gt: 3}}` comparisons. */
  filter: z.record(z.string(), z.unknown()).nullish(),
  limit: z.number().int().min(1).max(1000).default(10),
  offset: z.number().int().min(0).default(0),
  query: z.string().max(10_000).nullish(),
  refresh_ttl: z.boolean().nullish(),
});
export type StoreSearchRequest = z.infer<typeof StoreSearchRequest>;

export const isFilterOperator = (key: string): key is FilterOperator => (FILTER_OPERATORS as readonly string[]).includes(key);

/** Namespace listing: `prefix` and `suffix` labels may be `*` (any label). */
const NamespacePattern = z.array(z.string().min(1, 'Namespace labels cannot be empty strings.')).nullish();

export const StoreNamespacesRequest = z.object({
  prefix: NamespacePattern,
  suffix: NamespacePattern,
  max_depth: z.number().int().min(1).nullish(),
  limit: z.number().int().min(1).max(1000).default(100),
  offset: z.number().int().min(0).default(0),
});
export type StoreNamespacesRequest = z.infer<typeof StoreNamespacesRequest>;
