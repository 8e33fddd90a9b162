// Query-string helpers for the agent server: the SDK sends booleans as "true"/"1" and lists either as
// repeated keys or as one JSON array.
import { z } from 'zod';
import { STREAM_MODES } from '../services/runs/runs.schemas.js';
import { parseInput } from '../../validate.js';
export const queryFlag = (value: unknown): boolean => value === 'true' || value === '1' || value === true;

function queryList(value: unknown): string[] | undefined {
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

const StreamModes = z.object({ stream_mode: z.array(z.enum(STREAM_MODES)).optional() });

/** `stream_mode` of a stream request: a list of known modes, as run create takes (VALIDATION_FAILED otherwise). */
export const queryStreamModes = (value: unknown): string[] | undefined =>
  parseInput(StreamModes, { stream_mode: queryList(value) }, 'query').stream_mode;
