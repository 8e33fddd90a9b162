// Identifiers we mint are UUID v7: time-ordered, so B-tree inserts stay local and ids sort by creation.
import { v7 } from 'uuid';

export const newId = (): string => v7();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID.test(value);
