// Query-string helpers for the agent server: the SDK sends booleans as "true"/"1" and lists either as
// repeated keys or as one JSON array.
export const queryFlag = (value: unknown): boolean => value === 'true' || value === '1' || value === true;

export function queryList(value: unknown): string[] | undefined {
  if (value === undefined) return undefined;
  const values = (Array.isArray(value) ? value : [value]).map(String);
  const list = values.flatMap((item) => {
    if (item.startsWith('[')) {
      try {
        return (JSON.parse(item) as unknown[]).map(String);
      } catch {
        return [item];
      }
    }
    return item.split(',');
  });
  return list.filter(Boolean);
}
