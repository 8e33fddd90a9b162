// A page of a search (threads, assistants): the items, how many match in all, where the next page
// starts, and which fields the caller selected (validated by the search's schema).

export type SearchPage<T> = {
  items: T[];
  total: number;
  /** The offset of the next page; null on the last page. */
  nextOffset: number | null;
  /** The fields to return (all when null). */
  select: readonly string[] | null;
};

export function searchPage<T>(items: T[], total: number, query: { offset: number; select?: readonly string[] | null }): SearchPage<T> {
  const end = query.offset + items.length;
  return { items, total, nextOffset: end < total ? end : null, select: query.select?.length ? query.select : null };
}
