import { randomBytes, randomUUID } from 'node:crypto';
import type { PrismaClient } from '../../generated/prisma/client.ts';
import { tokenHash } from '../../src/reports/delivery/links.ts';
import { broker } from './factories.ts';

export interface DownloadLinkOptions {
  /** The bytes of each stored chunk. */
  workbook: Buffer<ArrayBuffer>;
  /** Chunks the run says its workbook has (default 1). */
  chunks?: number;
  /** Chunks actually stored (default `chunks`): fewer makes a download that fails mid-body. */
  stored?: number;
  /** The link's token (default: 32 random bytes, base64url). */
  token?: string;
  recipient?: string;
}

/** A completed link-delivery run of a new broker, its workbook stored, and a live link to it; returns the token. */
export async function downloadLink(prisma: PrismaClient, o: DownloadLinkOptions): Promise<string> {
  const chunks = o.chunks ?? 1;
  const brk = await broker(prisma);
  const build = randomUUID();
  const run = await prisma.reportRun.create({
    data: {
      brokerId: brk.id,
      reportType: 'invoices',
      startDate: new Date('2025-01-01'),
      endDate: new Date('2025-01-31'),
      status: 'completed',
      delivery: 'link',
      workbookBuild: build,
      workbookBytes: o.workbook.length * chunks,
      workbookChunks: chunks,
      workbookSha256: 'c'.repeat(64),
      recipients: { create: [{ email: o.recipient ?? 'links@broker.example', status: 'sent', attempts: 1 }] },
    },
    include: { recipients: true },
  });
  for (let seq = 0; seq < (o.stored ?? chunks); seq++) {
    await prisma.reportWorkbookChunk.create({ data: { reportRunId: run.id, build, seq, data: o.workbook } });
  }
  const token = o.token ?? randomBytes(32).toString('base64url');
  await prisma.reportLink.create({
    data: { tokenHash: tokenHash(token), reportRunId: run.id, recipientId: run.recipients[0]!.id, expiresAt: new Date(Date.now() + 3600_000) },
  });
  return token;
}
