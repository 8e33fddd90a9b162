// The name of a deployment's run queue (its options are in queues.ts). A module of its own so
// the runs sweep, which agent-server/jobs/boss.ts schedules, can name the queue without importing boss.ts back.
export const runQueueName = (deploymentId: string) => `runs.execute.${deploymentId}`;
