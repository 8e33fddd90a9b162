// Namespace labels as the store's tables hold them. LangGraph's PostgresStore layout joins a namespace's
// labels with ':' into one column and its own search prefix-matches it with LIKE, so ':', '%', '_' and
// '\' cannot be stored as they are; the reference server allows them (`user_123`), so each label is
// encoded on the way in and decoded on the way out. The encoded form has none of those characters, and
// encoding is per label and one-to-one, so prefix search and namespace listing stay exact on whole
// labels. The escape character is '~' (hex code after it), itself escaped; labels never hold '.'.
const ESCAPED = /[:%_\\~]/g;
const ESCAPE = /~([0-9A-F]{2})/g;

export const encodeLabel = (label: string): string =>
  label.replace(ESCAPED, (char) => `~${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);

export const decodeLabel = (stored: string): string => stored.replace(ESCAPE, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
