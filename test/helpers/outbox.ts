import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { simpleParser, type ParsedMail } from 'mailparser';

/** Whether a parsed mail is addressed (To:) to `address`, compared case-insensitively. */
function addressedTo(mail: ParsedMail, address: string): boolean {
  const to = Array.isArray(mail.to) ? mail.to : mail.to ? [mail.to] : [];
  return to.some((group) => group.value.some((a) => a.address?.toLowerCase() === address.toLowerCase()));
}

/**
 * The e-mails in `$DATA_DIR/outbox` addressed to `address`, parsed. Only finished `.eml` files are
 * read: the mailer writes `.<name>.eml.partial` first and renames it, and reading the partial file
 * raced the writer (a mail cut after its headers). Polls until `expected` mails are there, up to
 * 60 s (a loaded CI box delivers slowly); with `expected` 0 it looks for 2 s and returns what it saw.
 */
export async function outboxMailsTo(dataDir: string, address: string, expected = 1): Promise<ParsedMail[]> {
  const dir = path.join(dataDir, 'outbox');
  let found: ParsedMail[] = [];
  for (let i = 0; i < (expected === 0 ? 20 : 600); i += 1) {
    const files = (await readdir(dir).catch(() => [] as string[])).filter((f) => f.endsWith('.eml') && !f.startsWith('.'));
    const mails = await Promise.all(files.map(async (f) => simpleParser(await readFile(path.join(dir, f)))));
    found = mails.filter((m) => addressedTo(m, address));
    if (expected > 0 && found.length >= expected) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return found;
}
