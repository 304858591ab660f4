// patches/nodemailer+10.6.0.patch: nodemailer's SMTP DATA encoder (dot-stuffing, bare CR/LF made
// CRLF) visits only the bytes that can need an insert instead of every byte of the message in
// JavaScript, which held the API's event loop while report attachments went out. Its output must
// stay exactly the upstream algorithm's, kept below as the reference, on any input cut anywhere.
import assert from 'node:assert/strict';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { describe, test } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '../..');
const installed = pathToFileURL(path.join(ROOT, 'node_modules/nodemailer/dist/esm/smtp-connection/data-stream.js')).href;
const { default: DataStream } = (await import(installed)) as { default: new () => Transform };

/** nodemailer 10.6.0's `DataStream` before the patch, byte by byte. */
class ReferenceDataStream extends Transform {
  private lastByte: number | false = false;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    const out: Buffer[] = [];
    let lastPos = 0;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i]!;
      const prev = i ? chunk[i - 1]! : this.lastByte;
      let insert: string | undefined;
      if (prev === 0x0d && byte !== 0x0a) insert = byte === 0x2e ? '\n.' : '\n';
      else if (byte === 0x0a && prev !== 0x0d) insert = '\r';
      else if (byte === 0x2e && (prev === 0x0a || prev === false)) insert = '.';
      if (insert !== undefined) {
        out.push(chunk.subarray(lastPos, i), Buffer.from(insert));
        lastPos = i;
      }
    }
    out.push(chunk.subarray(lastPos));
    this.push(Buffer.concat(out));
    this.lastByte = chunk[chunk.length - 1]!;
    done();
  }

  override _flush(done: () => void): void {
    this.push(this.lastByte === 0x0a ? '.\r\n' : this.lastByte === 0x0d ? '\n.\r\n' : '\r\n.\r\n');
    done();
  }
}

async function encode(stream: Transform, pieces: Buffer[]): Promise<string> {
  const out: Buffer[] = [];
  stream.on('data', (d: Buffer) => out.push(Buffer.from(d)));
  const ended = new Promise((resolve) => stream.on('end', resolve));
  for (const piece of pieces) stream.write(piece);
  stream.end();
  await ended;
  return Buffer.concat(out).toString('latin1');
}

/** A deterministic generator, so a failure names a seed that reproduces it. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

describe('SMTP DATA encoding (patched nodemailer DataStream)', () => {
  const cases: Array<[string, string[], string]> = [
    ['CRLF lines pass unchanged', ['a\r\nb\r\n'], 'a\r\nb\r\n.\r\n'],
    ['a bare LF becomes CRLF', ['a\nb'], 'a\r\nb\r\n.\r\n'],
    ['a bare CR becomes CRLF', ['a\rb'], 'a\r\nb\r\n.\r\n'],
    ['a dot at the start of a line is doubled', ['.a\r\n.b'], '..a\r\n..b\r\n.\r\n'],
    ['a dot after a bare CR is doubled', ['a\r.b'], 'a\r\n..b\r\n.\r\n'],
    ['a dot inside a line is kept', ['a.b.c'], 'a.b.c\r\n.\r\n'],
    ['a CR ending one chunk and a dot starting the next', ['a\r', '.b'], 'a\r\n..b\r\n.\r\n'],
    ['a LF ending one chunk and a dot starting the next', ['a\r\n', '.'], 'a\r\n..\r\n.\r\n'],
    ['CR CR LF', ['\r\r\n'], '\r\n\r\n.\r\n'],
  ];
  for (const [name, pieces, expected] of cases) {
    test(name, async () => {
      const bytes = pieces.map((p) => Buffer.from(p, 'latin1'));
      assert.equal(await encode(new DataStream(), bytes), expected);
      assert.equal(await encode(new ReferenceDataStream(), bytes), expected);
    });
  }

  test('the same bytes as the reference for 5,000 random inputs cut at random places', async () => {
    const alphabet = [0x0d, 0x0a, 0x2e, 0x41, 0x20];
    for (let seed = 1; seed <= 5000; seed++) {
      const next = random(seed);
      const bytes = Buffer.from(Array.from({ length: Math.floor(next() * 40) }, () => alphabet[Math.floor(next() * alphabet.length)]!));
      const pieces: Buffer[] = [];
      for (let at = 0; at < bytes.length; ) {
        const size = 1 + Math.floor(next() * 8);
        pieces.push(bytes.subarray(at, at + size));
        at += size;
      }
      assert.equal(await encode(new DataStream(), pieces), await encode(new ReferenceDataStream(), pieces), `seed ${seed}`);
    }
  });

  test('a base64 attachment body of several MB in one piece', async () => {
    const body = Buffer.from(Buffer.alloc(3_000_000, 7).toString('base64').replace(/(.{76})/g, '$1\r\n'));
    assert.equal(await encode(new DataStream(), [body]), await encode(new ReferenceDataStream(), [body]));
  });
});
