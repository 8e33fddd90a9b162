// Small pieces shared by pages.
import type { ComponentChildren } from 'preact';
import type { ApiError } from './api.js';

export function ErrorNote({ error }: { error: ApiError | null }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {error.message}
    </p>
  );
}

export function Loading({ when }: { when: boolean }) {
  return when ? (
    <p class="muted" role="status" aria-live="polite">
      Loading…
    </p>
  ) : null;
}

export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge badge-${status.toLowerCase()}`}>{status}</span>;
}

export function PageHeader({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="page-header">
      <h1>{title}</h1>
      {children}
    </div>
  );
}

/** A column heading of a TableHead: its label, right-aligned when numeric, a tooltip when it needs one. */
type Column = string | { label: ComponentChildren; num?: boolean; title?: string };

/** A table's header row, each column a `<th scope="col">` (what screen readers announce per cell). */
export function TableHead({ columns }: { columns: Column[] }) {
  return (
    <thead>
      <tr>
        {columns.map((column) =>
          typeof column === 'string' ? (
            <th scope="col">{column}</th>
          ) : (
            <th scope="col" class={column.num ? 'num' : undefined} title={column.title}>
              {column.label}
            </th>
          ),
        )}
      </tr>
    </thead>
  );
}
