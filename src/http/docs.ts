import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type { Express, RequestHandler } from 'express';
import helmet from 'helmet';
import type { Contract } from './contract.ts';
import { byDay, datedTexts } from './dated-examples.ts';
import { ROOT_DIR } from '../root.ts';

export const DOCS_FILE = path.join(ROOT_DIR, 'docs', 'index.html');

/** The images Redoc's page loads from its CDN (its footer logo, in two sizes). */
const REDOC_LOGOS = ['https://cdn.redoc.ly/redoc/logo-mini.svg', 'https://cdn.redoc.ly/redoc/logo-mini-full.svg'];

/** The codings offered, in the server's order of preference. */
const CODINGS = ['br', 'gzip', 'deflate'] as const;
type Coding = (typeof CODINGS)[number];

/**
 * A published document, made once: its bytes, a strong validator per representation and, the first
 * time a client asks for a coding, that coding of it, kept (the reference is megabytes of HTML:
 * compressing it again for every request held the server's CPU each time). Compression runs in
 * libuv's thread pool, never on the event loop.
 */
export class PublishedDocument {
  readonly etag: string;
  readonly lastModified: string;
  private readonly coded = new Map<Coding, Promise<Buffer>>();

  constructor(
    readonly body: Buffer,
    readonly type: string,
    modified: Date,
  ) {
    this.etag = createHash('sha256').update(body).digest('base64url').slice(0, 27);
    this.lastModified = new Date(Math.floor(modified.getTime() / 1000) * 1000).toUTCString();
  }

  /** The document in `coding`, compressed the first time it is asked for. */
  encoded(coding: Coding): Promise<Buffer> {
    let done = this.coded.get(coding);
    if (!done) {
      done = compress(coding, this.body);
      // A failed compression is tried again by the next request, not kept.
      done.catch(() => this.coded.delete(coding));
      this.coded.set(coding, done);
    }
    return done;
  }
}

function compress(coding: Coding, body: Buffer): Promise<Buffer> {
  if (coding === 'br') {
    return brotli(body, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 9, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length } });
  }
  return coding === 'gzip' ? gzip(body, { level: 9 }) : deflate(body, { level: 9 });
}

const brotli = promisify(zlib.brotliCompress);
const gzip = promisify(zlib.gzip);
const deflate = promisify(zlib.deflate);

/**
 * Serves a published document: the client's preferred coding of it (or as it is), with `ETag` (one
 * per representation), `Last-Modified`, `Vary: Accept-Encoding` and `Cache-Control: no-cache`
 * (a cache may keep it and asks again), and `304 Not Modified` to a request whose validators match.
 * `compressed: true`: the document is compressed already (a .tgz), sent as it is whatever the client accepts.
 */
export function servePublished(document: () => PublishedDocument, { compressed = false } = {}): RequestHandler {
  return (req, res, next) => {
    const doc = document();
    let coding: Coding | undefined;
    if (!compressed) {
      res.vary('Accept-Encoding');
      const accepted = req.acceptsEncodings([...CODINGS, 'identity']);
      coding = typeof accepted === 'string' && accepted !== 'identity' ? (accepted as Coding) : undefined;
    }
    res.setHeader('Content-Type', doc.type);
    res.setHeader('ETag', coding ? `"${doc.etag}-${coding}"` : `"${doc.etag}"`);
    res.setHeader('Last-Modified', doc.lastModified);
    res.setHeader('Cache-Control', 'no-cache');
    if (req.fresh) {
      res.status(304).end();
      return;
    }
    const body = coding ? doc.encoded(coding) : Promise.resolve(doc.body);
    body.then((bytes) => {
      if (coding) res.setHeader('Content-Encoding', coding);
      res.setHeader('Content-Length', String(bytes.length));
      res.end(req.method === 'HEAD' ? undefined : bytes);
    }, next);
  };
}

/**
 * The published reference (Redoc) and the contract itself, outside /api and without a key. Each is
 * made again once a UTC day, with the contract's dated examples set to that day (dated-examples.ts).
 */
export function registerDocs(app: Express, contract: Contract, now: () => Date = () => new Date()): void {
  const started = new Date();
  const modifiedOn = (day: string) => new Date(Math.max(started.getTime(), Date.parse(day)));
  let dateContract: ((day: string) => string[]) | undefined;
  const contractOfToday = byDay(now, (day) => {
    dateContract ??= datedTexts(contract.document, [contract.yaml, JSON.stringify(contract.document, null, 2)]);
    const [yaml, json] = dateContract(day);
    return {
      yaml: new PublishedDocument(Buffer.from(yaml!, 'utf8'), 'application/yaml; charset=utf-8', modifiedOn(day)),
      json: new PublishedDocument(Buffer.from(json!, 'utf8'), 'application/json; charset=utf-8', modifiedOn(day)),
    };
  });
  app.get('/openapi.yaml', servePublished(() => contractOfToday().yaml));
  app.get('/openapi.json', servePublished(() => contractOfToday().json));
  // The one HTML page: helmet's full default set, with a CSP that lets Redoc's bundle run its
  // inline scripts and its web workers from blob: URLs, and show the one image it fetches from
  // elsewhere: the Redocly logo of its "API docs by" footer (those two files only, not the host).
  const htmlHeaders = helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'", "'unsafe-inline'", 'blob:'],
        styleSrc: ["'self'", "'unsafe-inline'"],
        imgSrc: ["'self'", 'data:', ...REDOC_LOGOS],
        workerSrc: ['blob:'],
        fontSrc: ["'self'", 'data:'],
        frameAncestors: ["'none'"],
      },
    },
    xFrameOptions: { action: 'deny' },
    xPoweredBy: false,
  });
  // Read once, when first asked for (a server without docs/ still serves the API).
  let dateDocs: ((day: string) => string[]) | undefined;
  const docsDocument = byDay(now, (day) => {
    if (!existsSync(DOCS_FILE)) throw new Error('docs/index.html is missing: run npm run docs');
    dateDocs ??= datedTexts(contract.document, [readFileSync(DOCS_FILE, 'utf8')]);
    const modified = statSync(DOCS_FILE).mtime;
    return new PublishedDocument(Buffer.from(dateDocs(day)[0]!, 'utf8'), 'text/html; charset=utf-8', new Date(Math.max(modified.getTime(), Date.parse(day))));
  });
  const serveDocs = servePublished(docsDocument);
  // Browsers ask for /favicon.ico on their own for every page they show (/docs). The API has no
  // icon: 204 (not an error, so the error envelope does not apply; the contract's 404 rule is for
  // paths under /api), cacheable for a day so a browser does not keep asking.
  app.get('/favicon.ico', (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=86400');
    res.status(204).end();
  });
  app.get('/docs', htmlHeaders, (req, res, next) => {
    try {
      serveDocs(req, res, next);
    } catch (err) {
      next(err);
    }
  });
}
