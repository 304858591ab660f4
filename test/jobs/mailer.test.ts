/**
 * The mailer (src/jobs/mailer.ts): messages are built and sent in a thread of their own, and what
 * comes back across the thread says the same as the transport did: the message id, and for a
 * failure the SMTP reply that tells a retry from a permanent rejection.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { simpleParser } from 'mailparser';
import { loadConfig } from '../../src/config.ts';
import { createMailer, isTransientMailError, type Mailer } from '../../src/jobs/index.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';

let smtp: TestSmtp;
let mailer: Mailer;

before(async () => {
  smtp = await startTestSmtp({ reject: ['gone@customer.example'], tempFail: { 'busy@customer.example': 1 } });
  mailer = createMailer({ ...loadConfig({}), smtpUrl: smtp.url });
});
after(async () => {
  mailer?.close();
  await smtp?.stop();
});

describe('createMailer', () => {
  test('an attachment of several MB arrives byte for byte, with the message id asked for', async () => {
    const workbook = randomBytes(3 * 1024 * 1024 + 17);
    const sent = await mailer.send({
      to: 'big@customer.example',
      subject: 'Invoices report',
      text: 'attached',
      messageId: '<mailer-test.1@capi.example>',
      attachments: [{ filename: 'report.xlsx', content: workbook, contentType: 'application/octet-stream' }],
    });
    assert.equal(sent.messageId, '<mailer-test.1@capi.example>');
    assert.match(sent.response, /^250 /);
    const [mail] = smtp.to('big@customer.example');
    assert.ok(mail);
    assert.equal(mail.parsed.messageId, '<mailer-test.1@capi.example>');
    assert.ok(Buffer.from(mail.parsed.attachments[0]!.content).equals(workbook));
  });

  test('small text and byte attachments arrive as they were given', async () => {
    await mailer.send({
      to: 'small@customer.example',
      subject: 's',
      text: 't',
      attachments: [
        { filename: 'a.txt', content: 'plain text', contentType: 'text/plain' },
        { filename: 'b.bin', content: new Uint8Array([1, 2, 3]), contentType: 'application/octet-stream' },
      ],
    });
    const attachments = smtp.to('small@customer.example')[0]!.parsed.attachments;
    assert.equal(attachments[0]!.content.toString(), 'plain text');
    assert.deepEqual([...attachments[1]!.content], [1, 2, 3]);
  });

  const failures: Array<[string, string, number, boolean]> = [
    ['a rejected recipient: permanent, not retried', 'gone@customer.example', 550, false],
    ['a deferred recipient: transient, retried', 'busy@customer.example', 451, true],
  ];
  for (const [name, to, responseCode, transient] of failures) {
    test(name, async () => {
      const err = await mailer.send({ to, subject: 's', text: 't' }).then(
        () => assert.fail('the send should fail'),
        (e: unknown) => e as Error & { responseCode?: number },
      );
      assert.ok(err instanceof Error);
      assert.equal(err.responseCode, responseCode);
      assert.equal(isTransientMailError(err), transient);
    });
  }

  test('a send whose thread is lost is not known to have failed: transient', () => {
    assert.equal(isTransientMailError({ code: 'ETHREADLOST', message: 'the mail thread stopped' }), true);
  });

  test('without SMTP_URL each message is an .eml file in $DATA_DIR/outbox', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'capi-mailer-'));
    const outboxMailer = createMailer(loadConfig({ DATA_DIR: dataDir }));
    try {
      const sent = await outboxMailer.send({ to: 'file@customer.example', subject: 'To a file', text: 'hello', attachments: [{ filename: 'x.bin', content: randomBytes(200_000) }] });
      assert.equal(outboxMailer.describe, path.join(dataDir, 'outbox'));
      const files = readdirSync(path.join(dataDir, 'outbox'));
      assert.equal(files.length, 1);
      assert.match(sent.response, /written to .*\.eml$/);
      const parsed = await simpleParser(readFileSync(path.join(dataDir, 'outbox', files[0]!)));
      assert.equal(parsed.subject, 'To a file');
      assert.equal(parsed.attachments[0]!.content.length, 200_000);
    } finally {
      outboxMailer.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('SMTP_URL=file:///dir writes each message as an .eml file in that directory, chosen by name', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'capi-mailer-file-'));
    const outbox = path.join(dir, 'chosen');
    const fileMailer = createMailer(loadConfig({ DATA_DIR: path.join(dir, 'data'), SMTP_URL: pathToFileURL(outbox).href }));
    try {
      await fileMailer.send({ to: 'file@customer.example', subject: 'Chosen', text: 'hello' });
      assert.equal(fileMailer.describe, outbox);
      assert.equal(readdirSync(outbox).filter((f) => f.endsWith('.eml')).length, 1);
      assert.throws(() => readdirSync(path.join(dir, 'data', 'outbox')), /ENOENT/);
    } finally {
      fileMailer.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
