/**
 * The benches' SMTP sink, in a process of its own so its work is not counted in the server's:
 * `node --import tsx bench/smtp-sink.ts` with an IPC channel (bench/report-kit.ts starts it).
 *
 * It accepts every message and reads it as it streams by, one line at a time, without keeping
 * it: the message's size in bytes, each attachment's name and decoded size (counted from its
 * base64 lines), and the download links in its text parts (`…/downloads/…`, after undoing
 * quoted-printable or base64). So the bench learns whether a report went out as an attachment or
 * as a link from what was received, whatever the server's version. `{ save: path }` writes the
 * next attachment received, decoded, to that file (to read the workbook back).
 *
 * IPC: sends `{ ready: port }` once listening; answers `'stats'` with `{ stats: SinkStats }`;
 * `'reset'` forgets the messages so far.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMessage {
  bytes: number;
  attachments: Array<{ filename: string; bytes: number }>;
  links: string[];
  /** When the sink accepted it (epoch ms). */
  at: number;
}

export interface SinkStats {
  messages: number;
  largest_message_bytes: number;
  with_attachment: number;
  with_link: number;
  largest_attachment_bytes: number;
  links: string[];
  first_at: number | null;
  last_at: number | null;
}

interface Part {
  headers: string;
  kind: 'attachment' | 'text';
  base64: boolean;
  filename: string;
  /** Base64 characters counted (attachments). */
  chars: number;
  padding: number;
  /** Kept text (text parts), bounded. */
  text: string[];
  textBytes: number;
}

const TEXT_LIMIT = 1024 * 1024;

/** A streaming reader of one MIME message: fed chunks, it keeps figures, not the message. */
class MessageScanner {
  private bytes = 0;
  private carry = '';
  private boundaries: string[] = [];
  private state: 'headers' | 'body' = 'headers';
  private headerLines: string[] = [];
  private part: Part | undefined;
  private readonly done: ReceivedMessage['attachments'] = [];
  private readonly texts: string[] = [];
  private save: WriteStream | undefined;
  private saveCarry = '';

  constructor(private savePath: string | undefined) {}

  push(chunk: Buffer): void {
    this.bytes += chunk.length;
    const text = this.carry + chunk.toString('latin1');
    const lines = text.split('\n');
    this.carry = lines.pop() ?? '';
    for (const line of lines) this.line(line.endsWith('\r') ? line.slice(0, -1) : line);
  }

  async end(): Promise<ReceivedMessage> {
    if (this.carry) this.line(this.carry);
    this.closePart();
    if (this.save) {
      const s = this.save;
      await new Promise<void>((resolve) => s.end(resolve));
    }
    const links = new Set<string>();
    for (const t of this.texts) for (const m of t.matchAll(/https?:\/\/[^\s"'<>()]+\/downloads\/[^\s"'<>()]+/g)) links.add(m[0]);
    return { bytes: this.bytes, attachments: this.done, links: [...links], at: Date.now() };
  }

  private line(line: string): void {
    if (line.startsWith('--') && this.boundaries.some((b) => line === `--${b}` || line === `--${b}--`)) {
      this.closePart();
      this.state = line.endsWith('--') && !this.boundaries.includes(line.slice(2)) ? 'body' : 'headers';
      this.headerLines = [];
      return;
    }
    if (this.state === 'headers') {
      if (line === '') {
        this.openPart(this.headerLines.join('\n').replace(/\n[ \t]+/g, ' '));
        this.state = 'body';
      } else {
        this.headerLines.push(line);
      }
      return;
    }
    const p = this.part;
    if (!p) return;
    if (p.kind === 'attachment') {
      const data = line.trim();
      p.chars += data.length;
      if (data.endsWith('==')) p.padding = 2;
      else if (data.endsWith('=')) p.padding = 1;
      if (this.save) {
        const all = this.saveCarry + data;
        const whole = all.length - (all.length % 4);
        this.save.write(Buffer.from(all.slice(0, whole), 'base64'));
        this.saveCarry = all.slice(whole);
      }
    } else if (p.textBytes < TEXT_LIMIT) {
      p.text.push(line);
      p.textBytes += line.length + 1;
    }
  }

  private openPart(headers: string): void {
    const boundary = /boundary="?([^";\s]+)"?/i.exec(headers)?.[1];
    if (boundary) this.boundaries.push(boundary);
    const filename = /filename="?([^";\n]+)"?/i.exec(headers)?.[1] ?? '';
    const attachment = /content-disposition:\s*attachment/i.test(headers) || filename !== '';
    const base64 = /content-transfer-encoding:\s*base64/i.test(headers);
    this.part = { headers, kind: attachment ? 'attachment' : 'text', base64, filename, chars: 0, padding: 0, text: [], textBytes: 0 };
    if (attachment && this.savePath) {
      this.save = createWriteStream(this.savePath);
      this.savePath = undefined;
    }
  }

  private closePart(): void {
    const p = this.part;
    this.part = undefined;
    if (!p) return;
    if (p.kind === 'attachment') {
      this.done.push({ filename: p.filename, bytes: p.base64 ? Math.floor((p.chars * 3) / 4) - p.padding : p.chars });
      if (this.save && this.saveCarry) this.save.write(Buffer.from(this.saveCarry, 'base64'));
      this.saveCarry = '';
      return;
    }
    let text = p.text.join('\n');
    if (p.base64) text = Buffer.from(text.replace(/\s+/g, ''), 'base64').toString('utf8');
    else if (/content-transfer-encoding:\s*quoted-printable/i.test(p.headers)) {
      text = text.replace(/=\n/g, '').replace(/=([0-9A-Fa-f]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
    }
    this.texts.push(text);
  }
}

let received: ReceivedMessage[] = [];
let savePath: string | undefined;

function stats(): SinkStats {
  const links = received.flatMap((m) => m.links);
  return {
    messages: received.length,
    largest_message_bytes: Math.max(0, ...received.map((m) => m.bytes)),
    with_attachment: received.filter((m) => m.attachments.length > 0).length,
    with_link: received.filter((m) => m.links.length > 0).length,
    largest_attachment_bytes: Math.max(0, ...received.flatMap((m) => m.attachments.map((a) => a.bytes))),
    links,
    first_at: received.length ? Math.min(...received.map((m) => m.at)) : null,
    last_at: received.length ? Math.max(...received.map((m) => m.at)) : null,
  };
}

const server = new SMTPServer({
  secure: false,
  authOptional: true,
  disabledCommands: ['STARTTLS', 'AUTH'],
  logger: false,
  size: 1024 * 1024 * 1024,
  onData(stream, _session, callback) {
    const scanner = new MessageScanner(savePath);
    savePath = undefined;
    stream.on('data', (chunk: Buffer) => scanner.push(chunk));
    stream.on('end', () => {
      scanner.end().then(
        (m) => {
          received.push(m);
          callback();
        },
        (err: unknown) => callback(err as Error),
      );
    });
  },
});

process.on('message', (m: unknown) => {
  if (m === 'stats') process.send?.({ stats: stats() });
  else if (m === 'reset') received = [];
  else if (m && typeof m === 'object' && 'save' in m) savePath = String((m as { save: string }).save);
});
process.on('disconnect', () => process.exit(0));
server.listen(0, '127.0.0.1', () => {
  const address = server.server.address();
  process.send?.({ ready: typeof address === 'object' && address ? address.port : 0 });
});
