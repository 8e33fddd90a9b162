// The PostgreSQL schema pg-boss keeps its tables in. A module of its own so stores that delete queue
// jobs with their rows (the thread TTL sweep) can name it without importing workers/boss.ts back.
export const BOSS_SCHEMA = 'pgboss';
