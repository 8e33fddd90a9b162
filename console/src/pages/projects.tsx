// Tracing projects of the workspace with their run counts, error rate and latency.
import { ErrorNote, Loading, PageHeader, TableHead } from '../components.js';
import { formatDuration, formatNumber, formatPercent, formatTime } from '../format.js';
import { useGql } from '../hooks.js';
import { href } from '../router.js';
import type { Session } from '../session.js';

type Project = {
  id: string;
  name: string;
  runCount: number;
  lastRunStartTime: string | null;
  recentTraceStats: { traces: number; errorRate: number | null; latencyP50: number | null; latencyP99: number | null };
};

const PROJECTS = `query ConsoleProjects { tracingProjects(limit: 1000) {
  id name runCount lastRunStartTime recentTraceStats { traces errorRate latencyP50 latencyP99 } } }`;

export function ProjectsPage({ session }: { session: Session }) {
  const { data, error, loading } = useGql<{ tracingProjects: Project[] }>(session, PROJECTS);
  const projects = data ? [...data.tracingProjects].sort((a, b) => (b.lastRunStartTime ?? '').localeCompare(a.lastRunStartTime ?? '')) : [];
  return (
    <>
      <PageHeader title="Tracing projects" />
      <ErrorNote error={error} />
      <Loading when={loading && !data} />
      {data && projects.length === 0 && <p>No tracing projects in this workspace yet: send traces with the langsmith SDK or OpenTelemetry.</p>}
      {projects.length > 0 && (
        <div class="table-wrap">
          <table class="projects">
            <caption class="visually-hidden">Tracing projects, most recently active first</caption>
            <TableHead columns={['Project', { label: 'Runs', num: true }, { label: 'Error rate', num: true, title: 'Of its newest traces (up to 1,000)' }, { label: 'p50 latency', num: true }, { label: 'p99 latency', num: true }, 'Last run']} />
            <tbody>
              {projects.map((project) => (
                <tr>
                  <th scope="row">
                    <a href={href(['projects', project.id])}>{project.name}</a>
                  </th>
                  <td class="num">{formatNumber(project.runCount)}</td>
                  <td class={`num${(project.recentTraceStats.errorRate ?? 0) > 0 ? ' bad' : ''}`}>{formatPercent(project.recentTraceStats.errorRate)}</td>
                  <td class="num">{formatDuration(project.recentTraceStats.latencyP50)}</td>
                  <td class="num">{formatDuration(project.recentTraceStats.latencyP99)}</td>
                  <td>{formatTime(project.lastRunStartTime)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
