/**
 * Download links of report workbooks too large to attach. Each e-mail of a link run carries a link
 * of its own: `PUBLIC_BASE_URL/downloads/reports/{token}`, the token 32 random bytes (256 bits,
 * base64url), stored only as its SHA-256. A second copy of a recipient's e-mail (a resend after a
 * worker died) gets a new link and the first keeps working, so no copy a person received is dead.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Config } from '../../config.ts';
import type { WorkbookRef } from '../workbook/store.ts';
import { specOfRun, type ReportSpec } from '../types.ts';
import type { ReadClient } from '../../shared/db-errors.ts';

/** The path of a download link below PUBLIC_BASE_URL (outside /api: its holder has no API key). */
export const DOWNLOAD_PATH = '/downloads/reports';

const TOKEN_BYTES = 32;

/** The stored form of a token: hex SHA-256. A token is looked up by it, never compared in JS. */
export const tokenHash = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex');

export const linkUrl = (config: Pick<Config, 'publicBaseUrl'>, token: string): string => `${config.publicBaseUrl}${DOWNLOAD_PATH}/${token}`;

export interface NewLink {
  url: string;
  expiresAt: Date;
}

/** A new link of one recipient of a run, valid for REPORT_LINK_TTL_HOURS from now. */
export async function createLink(prisma: ReadClient, config: Config, runId: string, recipientId: number): Promise<NewLink> {
  const token = randomBytes(TOKEN_BYTES).toString('base64url');
  const expiresAt = new Date(Date.now() + config.reportLinkTtlHours * 3600_000);
  await prisma.reportLink.create({ data: { tokenHash: tokenHash(token), reportRunId: runId, recipientId, expiresAt } });
  return { url: linkUrl(config, token), expiresAt };
}

/** What a valid link downloads: the run's stored workbook and what its file is called. */
export interface DownloadTarget {
  tokenHash: string;
  recipientId: number;
  workbook: WorkbookRef;
  bytes: number;
  spec: ReportSpec;
  generatedAt: Date;
}

/**
 * The workbook behind a token, or undefined when the token is unknown, expired or its workbook gone
 * (one answer for all of them). Any text is hashed and looked up alike, a malformed token included.
 */
export async function findDownload(prisma: ReadClient, token: string): Promise<DownloadTarget | undefined> {
  const hash = tokenHash(token);
  const link = await prisma.reportLink.findFirst({
    where: { tokenHash: hash, expiresAt: { gt: new Date() } },
    select: {
      recipientId: true,
      reportRun: {
        select: {
          id: true, brokerId: true, apiKeyId: true, reportType: true, startDate: true, endDate: true, statusFilter: true, generatedAt: true,
          workbookBuild: true, workbookChunks: true, workbookBytes: true, workbookDeletedAt: true,
        },
      },
    },
  });
  const run = link?.reportRun;
  if (!link || !run || run.workbookBuild === null || run.workbookChunks === null || run.workbookBytes === null || run.workbookDeletedAt !== null) return undefined;
  return {
    tokenHash: hash,
    recipientId: link.recipientId,
    workbook: { runId: run.id, build: run.workbookBuild, chunks: run.workbookChunks },
    bytes: run.workbookBytes,
    spec: specOfRun(run),
    generatedAt: run.generatedAt,
  };
}

/** Records one download (before its body is sent: a download that starts is on record). */
export async function recordDownload(prisma: ReadClient, target: DownloadTarget, ip: string): Promise<void> {
  await prisma.reportDownload.create({ data: { recipientId: target.recipientId, tokenHash: target.tokenHash, ip } });
}
