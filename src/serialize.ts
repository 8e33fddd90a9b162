// JSON as the agent-server protocol writes it: LangChain messages (and anything with `toDict`) become
// plain `{...data, type}` objects, not LangChain's constructor envelope; errors become {error, message}.
export function serializeJson(value: unknown): string {
  return JSON.stringify(value ?? null, function replacer(key, current) {
    const raw = (this as Record<string, unknown>)[key];
    if (raw !== null && typeof raw === 'object') {
      const withDict = raw as { toDict?: () => { type: string; data: Record<string, unknown> } };
      if (typeof withDict.toDict === 'function') {
        const { type, data } = withDict.toDict();
        return { ...data, type };
      }
      if (raw instanceof Error) return { error: raw.name, message: raw.message };
    }
    if (typeof current === 'bigint') return current.toString();
    return current;
  });
}

/** Plain JSON data (messages flattened), for storing in jsonb columns and GraphQL. */
export const toPlainJson = <T = unknown>(value: unknown): T => JSON.parse(serializeJson(value)) as T;

/** The `{error, message}` shape the SDK reads from `error` events and `__error__`. */
export function serializeError(error: unknown): { error: string; message: string } {
  if (error instanceof Error) return { error: error.name || 'Error', message: error.message };
  return { error: 'Error', message: typeof error === 'string' ? error : JSON.stringify(error) };
}
