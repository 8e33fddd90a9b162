// Named prepared statements for the statements this process runs again and again. PostgreSQL parses
// and plans an unnamed statement on every execution; for the platform's larger statements (a run's
// create, claim and outcome, pg-boss's fetch and complete) that costs more server CPU than executing
// them. A statement's text is given a name the second time it is seen, after which each connection
// parses it once and PostgreSQL may settle on a generic plan.
//
// Only parameterised statements are named (they use the extended protocol anyway, so they are single
// statements). Texts built per call, such as search filters, mostly stay unnamed: a text must recur
// to be named, and the number of names is capped, which also caps each connection's statements.
import { createHash } from 'node:crypto';
import pg from 'pg';

const MAX_NAMED = 1000;
const MAX_SEEN_ONCE = 5000;

const named = new Map<string, string>();
const seenOnce = new Set<string>();

/** The statement name for `text`, once it has recurred; undefined while it has not (or at the cap). */
function statementName(text: string): string | undefined {
  const name = named.get(text);
  if (name !== undefined || named.size >= MAX_NAMED) return name;
  if (!seenOnce.has(text)) {
    if (seenOnce.size >= MAX_SEEN_ONCE) seenOnce.clear();
    seenOnce.add(text);
    return undefined;
  }
  seenOnce.delete(text);
  const fresh = `ap_${createHash('sha1').update(text).digest('base64url')}`;
  named.set(text, fresh);
  return fresh;
}

type QueryConfigLike = { text?: unknown; values?: unknown; name?: unknown; submit?: unknown };

/** A pg client that names recurring parameterised statements (see above). Used as the pool's Client. */
export class PreparingClient extends pg.Client {
  override query(...args: unknown[]): never {
    const [first, second] = args;
    if (typeof first === 'string' && Array.isArray(second) && second.length) {
      const name = statementName(first);
      if (name) args = [{ name, text: first, values: second }, ...args.slice(2)];
    } else if (first && typeof first === 'object') {
      const config = first as QueryConfigLike;
      const values = Array.isArray(second) ? second : config.values;
      if (typeof config.submit !== 'function' && config.name === undefined && typeof config.text === 'string' && Array.isArray(values) && values.length) {
        const name = statementName(config.text);
        if (name) args = [{ ...config, name }, ...args.slice(1)];
      }
    }
    return (super.query as (...a: unknown[]) => never)(...args);
  }
}
