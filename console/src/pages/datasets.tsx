// Datasets of the workspace, and a dataset's experiments side by side: each experiment's average
// scores per feedback key, then its examples with every experiment's output and scores on each.
import { ErrorNote, Loading, PageHeader, TableHead } from '../components.js';
import { formatNumber, formatTime } from '../format.js';
import { useGql } from '../hooks.js';
import { href } from '../router.js';
import type { Session } from '../session.js';

type Stats = Record<string, { n: number; avg: number | null }> | null;
type Experiment = { id: string; name: string; runCount: number; feedbackStats: Stats };
type DatasetSummary = { id: string; name: string; description: string | null; exampleCount: number; modifiedAt: string; experiments: { id: string }[] };

const DATASETS = `query ConsoleDatasets { datasets(limit: 100) { id name description exampleCount modifiedAt experiments { id } } }`;

export function DatasetsPage({ session }: { session: Session }) {
  const { data, error, loading } = useGql<{ datasets: DatasetSummary[] }>(session, DATASETS);
  return (
    <>
      <PageHeader title="Datasets" />
      <ErrorNote error={error} />
      <Loading when={loading && !data} />
      {data && data.datasets.length === 0 && <p>No datasets in this workspace yet: make one with the langsmith SDK (createDataset, createExamples, uploadCsv).</p>}
      {data && data.datasets.length > 0 && (
        <div class="table-wrap">
          <table class="datasets">
            <caption class="visually-hidden">Datasets, newest first</caption>
            <TableHead columns={['Dataset', { label: 'Examples', num: true }, { label: 'Experiments', num: true }, 'Changed']} />
            <tbody>
              {data.datasets.map((dataset) => (
                <tr>
                  <th scope="row">
                    <a href={href(['datasets', dataset.id])}>{dataset.name}</a>
                    {dataset.description && <div class="muted">{dataset.description}</div>}
                  </th>
                  <td class="num">{formatNumber(dataset.exampleCount)}</td>
                  <td class="num">{formatNumber(dataset.experiments.length)}</td>
                  <td>{formatTime(dataset.modifiedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

const PAGE = 50;
/** The most experiments shown side by side (the newest). */
const COMPARED = 6;

const DATASET = `query ConsoleDataset($id: ID!) { dataset(id: $id) { id name description exampleCount experiments { id name runCount feedbackStats } } }`;
const COMPARISON = `query ConsoleComparison($id: ID!, $experiments: [ID!]!, $offset: Int) { dataset(id: $id) {
  comparison(experimentIds: $experiments, limit: ${PAGE}, offset: $offset) {
    example { id inputs outputs }
    results { experimentId run { id traceId outputs error feedbackStats } } } } }`;

type Comparison = {
  example: { id: string; inputs: unknown; outputs: unknown };
  results: { experimentId: string; run: { id: string; traceId: string; outputs: unknown; error: string | null; feedbackStats: Stats } | null }[];
};

const formatScore = (value: number | null | undefined) => (value === null || value === undefined ? '–' : Number.isInteger(value) ? String(value) : value.toFixed(2));
const brief = (value: unknown) => {
  const text = value === null || value === undefined ? '' : JSON.stringify(value);
  return text.length > 160 ? `${text.slice(0, 160)}…` : text;
};

export function DatasetPage({ session, datasetId, params }: { session: Session; datasetId: string; params: URLSearchParams }) {
  const offset = Math.max(0, Number(params.get('offset')) || 0);
  const { data, error, loading } = useGql<{ dataset: { id: string; name: string; description: string | null; exampleCount: number; experiments: Experiment[] } }>(session, DATASET, { id: datasetId });
  const experiments = data ? data.dataset.experiments.slice(-COMPARED) : [];
  const keys = [...new Set(experiments.flatMap((experiment) => Object.keys(experiment.feedbackStats ?? {})))].sort();
  const compared = useGql<{ dataset: { comparison: Comparison[] } }>(session, experiments.length ? COMPARISON : null, {
    id: datasetId,
    experiments: experiments.map((experiment) => experiment.id),
    offset,
  });
  const rows = compared.data?.dataset.comparison ?? [];
  return (
    <>
      <PageHeader title={data ? `Dataset ${data.dataset.name}` : 'Dataset'}>
        <a href={href(['datasets'])}>All datasets</a>
      </PageHeader>
      <ErrorNote error={error ?? compared.error} />
      <Loading when={(loading && !data) || (compared.loading && !compared.data)} />
      {data && experiments.length === 0 && <p>{formatNumber(data.dataset.exampleCount)} examples, no experiments yet: run evaluate() from the langsmith SDK over this dataset.</p>}
      {experiments.length > 0 && (
        <div class="table-wrap">
          <table class="experiments">
            <caption>Experiments (average score per key)</caption>
            <TableHead columns={['Experiment', { label: 'Runs', num: true }, ...keys.map((key) => ({ label: key, num: true }))]} />
            <tbody>
              {experiments.map((experiment) => (
                <tr>
                  <th scope="row">
                    <a href={href(['projects', experiment.id])}>{experiment.name}</a>
                  </th>
                  <td class="num">{formatNumber(experiment.runCount)}</td>
                  {keys.map((key) => (
                    <td class="num">{formatScore(experiment.feedbackStats?.[key]?.avg)}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {rows.length > 0 && (
        <div class="table-wrap">
          <table class="comparison">
            <caption>Examples {offset + 1}–{offset + rows.length}, each experiment’s output and scores</caption>
            <TableHead columns={['Inputs', 'Reference outputs', ...experiments.map((experiment) => experiment.name)]} />
            <tbody>
              {rows.map((row) => (
                <tr>
                  <td><code>{brief(row.example.inputs)}</code></td>
                  <td><code>{brief(row.example.outputs)}</code></td>
                  {row.results.map(({ run }) => (
                    <td>
                      {run ? (
                        <>
                          <a href={href(['traces', run.traceId], { run: run.id })}><code>{run.error ? `error: ${run.error}` : brief(run.outputs)}</code></a>
                          <div class="scores">
                            {Object.entries(run.feedbackStats ?? {}).map(([key, stat]) => (
                              <span class="score">{key} {formatScore(stat.avg)}</span>
                            ))}
                          </div>
                        </>
                      ) : (
                        <span class="muted">not run</span>
                      )}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {(offset > 0 || rows.length === PAGE) && (
        <p class="pager">
          {offset > 0 && <a href={href(['datasets', datasetId], { offset: String(Math.max(0, offset - PAGE)) })}>Previous</a>}{' '}
          {rows.length === PAGE && <a href={href(['datasets', datasetId], { offset: String(offset + PAGE) })}>Next</a>}
        </p>
      )}
    </>
  );
}
