// Bulk export resources as the wire shows them (snake_case; credentials never).
import type { ExportDestination } from '../services/exports/destinations.service.js';
import type { BulkExport, BulkExportRun } from '../services/exports/exports.service.js';

const iso = (value: Date | null) => (value ? value.toISOString() : null);

export function presentDestination(destination: ExportDestination) {
  return {
    id: destination.id,
    tenant_id: destination.workspaceId,
    destination_type: destination.destinationType,
    display_name: destination.displayName,
    config: destination.config,
    credentials_keys: destination.credentials ? ['access_key_id', 'secret_access_key'] : [],
    created_at: iso(destination.createdAt),
    updated_at: iso(destination.updatedAt),
  };
}

export function presentExport(row: BulkExport) {
  return {
    id: row.id,
    tenant_id: row.workspaceId,
    bulk_export_destination_id: row.destinationId,
    session_id: row.sessionId,
    start_time: iso(row.startTime),
    end_time: iso(row.endTime),
    filter: row.filter,
    format_version: row.formatVersion,
    compression: row.compression,
    export_fields: row.exportFields.length ? row.exportFields : null,
    interval_hours: row.intervalHours,
    status: row.status,
    source_bulk_export_id: row.sourceBulkExportId,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
    finished_at: iso(row.finishedAt),
  };
}

export function presentExportRun(run: BulkExportRun) {
  return {
    id: run.id,
    bulk_export_id: run.bulkExportId,
    status: run.status,
    retry_number: run.retryNumber,
    errors: run.errors,
    metadata: run.metadata,
    start_time: iso(run.startTime),
    end_time: iso(run.endTime),
    created_at: iso(run.createdAt),
    updated_at: iso(run.updatedAt),
    finished_at: iso(run.finishedAt),
  };
}
