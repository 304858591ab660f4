/**
 * The reports module's one door: the rest of src imports this file and nothing else of
 * src/reports (eslint.config.js keeps it so). Inside, by stage: runs/ (the run records, the
 * broker's bounds, the run as answered), kinds/ (what each report counts and mails), workbook/
 * (the xlsx writer, its build thread and the stored workbook), delivery/ (the build and e-mail
 * jobs, download links, the reconciler).
 */
export { registerReportRoutes } from './adapter.ts';
export { registerDownloadRoute } from './delivery/downloads.ts';
export { tokenHash } from './delivery/links.ts';
export { createReportJobs, REPORTS_QUEUE, type SendJobData } from './jobs.ts';
export { reportKinds } from './kinds/registry.ts';
export { specOfRun } from './types.ts';
export { storeWorkbook } from './workbook/build.ts';
export { discardOtherBuilds, openChunkReader, type ChunkReader, type ReadChunk } from './workbook/store.ts';
