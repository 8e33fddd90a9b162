// GraphQL documents are parsed recursively by graphql-js: one nested a couple of thousand levels deep
// (selections, list or object literals) overflows the stack before any token or depth limit applies.
// The nesting of brackets is checked on the text first, with the same limit as JSON bodies.
import { GraphQLError } from 'graphql';

/** Throws a GraphQL syntax error when `{`, `[` and `(` nest more than `maxDepth` deep (strings and comments skipped). */
export function assertDocumentNesting(source: string, maxDepth: number): void {
  let depth = 0;
  for (let i = 0; i < source.length; i++) {
    const char = source.charCodeAt(i);
    if (char === 0x23) {
      // # comment, to the end of the line
      while (i < source.length && source.charCodeAt(i) !== 0x0a && source.charCodeAt(i) !== 0x0d) i++;
    } else if (char === 0x22) {
      if (source.startsWith('"""', i)) {
        const end = source.indexOf('"""', i + 3);
        if (end < 0) return; // unterminated: the parser reports it
        i = end + 2;
      } else {
        for (i++; i < source.length && source.charCodeAt(i) !== 0x22; i++) if (source.charCodeAt(i) === 0x5c) i++;
      }
    } else if (char === 0x7b || char === 0x5b || char === 0x28) {
      if (++depth > maxDepth) throw new GraphQLError(`Syntax Error: Document is nested more than ${maxDepth} levels deep.`);
    } else if (char === 0x7d || char === 0x5d || char === 0x29) {
      depth--;
    }
  }
}
