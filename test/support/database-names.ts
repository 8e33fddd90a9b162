// Names of the test run's databases on the test PostgreSQL (see test/support/global-setup.ts).
export const TEST_DATABASE_PREFIX = 'agent_platform_test_';
/** The migrated database each test file's own database is copied from. Nothing connects to it. */
export const TEMPLATE_DATABASE = `${TEST_DATABASE_PREFIX}template`;
